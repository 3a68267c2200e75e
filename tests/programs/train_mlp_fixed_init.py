"""An MLP with ReLU trained by Adam, every weight set by model.apply(init_fn) so no random numbers are drawn."""
import torch
import torch.nn as nn
from torch import optim


def init_fn(m):
    if isinstance(m, nn.Linear):
        n = m.weight.numel()
        with torch.no_grad():
            vals = torch.linspace(-0.8, 0.9, n).reshape(m.weight.shape)
            m.weight.copy_(vals)
        nn.init.constant_(m.bias, 0.01)


model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
model.apply(init_fn)
print(model)

X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, 0.5], [0.2, 0.8]])
y = (X[:, :1] * 2 - X[:, 1:] + 0.5)

opt = optim.Adam(model.parameters(), lr=0.02, betas=(0.9, 0.99))
mse = nn.MSELoss()
for epoch in range(150):
    opt.zero_grad()
    loss = mse(model(X), y)
    loss.backward()
    opt.step()
    if epoch % 30 == 0:
        print(f"epoch {epoch}: {loss.item():.4f}")

print(f"final loss: {mse(model(X), y).item():.4f}")
for name, p in model.named_parameters():
    print(name, tuple(p.shape), f"{p.detach().abs().sum().item():.2f}")
print(model[0].weight.grad)
