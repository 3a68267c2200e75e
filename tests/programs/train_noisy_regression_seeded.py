"""Seeded synthetic data (y = 1.5 x - 0.5 + noise) fit by nn.Linear with SGD, mini-batches from torch.randperm."""
import torch
import torch.nn as nn
from torch import optim

torch.manual_seed(1)
N = 64
X = torch.rand(N, 1) * 4 - 2
y = 1.5 * X - 0.5 + 0.1 * torch.randn(N, 1)
print(X[:3].squeeze(), y[:3].squeeze())

model = nn.Linear(1, 1)
print("init:", model.weight.item(), model.bias.item())
opt = optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()

for epoch in range(10):
    perm = torch.randperm(N)
    total = 0.0
    for i in range(0, N, 16):
        idx = perm[i:i + 16]
        opt.zero_grad()
        loss = loss_fn(model(X[idx]), y[idx])
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    if epoch % 3 == 0:
        print(f"epoch {epoch}: mean loss {total / N:.4f}")

print(f"weight {model.weight.item():.4f} bias {model.bias.item():.4f}")
