"""XOR with a 2-4-1 Tanh/Sigmoid network, nn.BCELoss, SGD with momentum and model.zero_grad(); fixed init."""
import torch
import torch.nn as nn
from torch import optim

X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
Y = torch.tensor([[0.0], [1.0], [1.0], [0.0]])


class XorNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(2, 4)
        self.out = nn.Linear(4, 1)
        self.act = nn.Tanh()

    def forward(self, x):
        return torch.sigmoid(self.out(self.act(self.hidden(x))))


net = XorNet()
with torch.no_grad():
    net.hidden.weight.copy_(torch.tensor([[1.0, -1.0], [-1.0, 1.0], [0.5, 0.5], [1.0, 1.0]]))
    net.hidden.bias.copy_(torch.tensor([0.0, 0.0, -0.5, -1.5]))
    net.out.weight.copy_(torch.tensor([[0.5, 0.5, -0.5, 0.25]]))
    net.out.bias.fill_(0.0)
print(net)

criterion = nn.BCELoss()
optimizer = optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
for epoch in range(200):
    net.zero_grad()
    loss = criterion(net(X), Y)
    loss.backward()
    optimizer.step()
    if epoch % 40 == 0:
        print(f"epoch {epoch:3d} loss {loss.item():.5f}")

net.eval()
with torch.no_grad():
    probs = net(X)
print(probs)
print((probs > 0.5).long().squeeze().tolist())
print(net.out.weight.grad)
