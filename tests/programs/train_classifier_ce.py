"""A 3-class softmax classifier with nn.CrossEntropyLoss, argmax accuracy and softmax probabilities."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

X = torch.tensor([
    [1.0, 0.1], [0.9, -0.2], [1.2, 0.3],
    [-1.0, 0.8], [-0.8, 1.1], [-1.1, 0.9],
    [0.1, -1.2], [-0.2, -0.9], [0.2, -1.0],
])
labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
print(labels.dtype, labels.shape)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return self.fc2(x)


net = Classifier()
with torch.no_grad():
    net.fc1.weight.copy_(torch.linspace(-1, 1, 12).reshape(6, 2))
    net.fc1.bias.copy_(torch.linspace(0.0, 0.5, 6))
    net.fc2.weight.copy_(torch.linspace(0.5, -0.5, 18).reshape(3, 6))
    net.fc2.bias.zero_()

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.5)
for epoch in range(100):
    optimizer.zero_grad()
    outputs = net(X)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    if epoch % 25 == 0:
        _, predicted = torch.max(outputs, 1)
        correct = (predicted == labels).sum().item()
        print(f"[{epoch}] loss: {loss.item():.4f} correct: {correct}/9")

with torch.no_grad():
    logits = net(X)
    print(logits.argmax(dim=1))
    print(F.softmax(logits[:3], dim=1))
    print(F.log_softmax(logits[-1], dim=0))
    print(F.cross_entropy(logits, labels, reduction="none"))
