"""Freezing part of a model: requires_grad_(False), an optimizer over only the trainable parameters, grads stay None."""
import torch
import torch.nn as nn
from torch import optim

backbone = nn.Linear(3, 3)
head = nn.Linear(3, 1)
with torch.no_grad():
    backbone.weight.copy_(torch.eye(3) * 0.5)
    backbone.bias.fill_(0.1)
    head.weight.fill_(0.2)
    head.bias.fill_(0.0)
model = nn.Sequential(backbone, nn.ReLU(), head)

for p in backbone.parameters():
    p.requires_grad_(False)
trainable = [p for p in model.parameters() if p.requires_grad]
print(len(trainable), [n for n, p in model.named_parameters() if p.requires_grad])

opt = optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1)
x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]])
target = torch.tensor([[1.0], [0.0]])
for _ in range(20):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), target)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.5f}")
print(backbone.weight.grad, backbone.weight)
print(head.weight, head.bias)

out = model(x)
print(out.requires_grad, out.grad_fn is not None)
head.requires_grad_(False)
out = model(x)
print(out.requires_grad, out.grad_fn)
