"""A small residual CNN (Conv2d, BatchNorm2d, inplace ReLU, MaxPool2d, AdaptiveAvgPool2d, Dropout2d), SGD."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += idt
        return self.relu(out)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.drop = nn.Dropout2d(0.1)
        self.fc = nn.Linear(16, 5)
    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        x = self.drop(x)
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


torch.manual_seed(0)
net = Net()
x = torch.randn(4, 3, 16, 16)
y = torch.randint(0, 5, (4,))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    opt.zero_grad()
    out = net(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}", out.grad_fn.__class__.__name__)
net.eval()
with torch.no_grad():
    print(net(x)[0])
print(net.stem)
print(sum(p.numel() for p in net.parameters()))
