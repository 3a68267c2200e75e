"""A custom nn.Module with nn.Parameter, a submodule and a buffer: print(model), named_parameters(), state_dict()."""
import torch
import torch.nn as nn


class Affine(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n))
        self.shift = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return x * self.scale + self.shift


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Affine(3)
        self.head = nn.Linear(3, 2, bias=False)
        self.register_buffer("steps", torch.tensor(0))

    def forward(self, x):
        self.steps += 1
        return self.head(torch.tanh(self.norm(x)))


model = TinyNet()
with torch.no_grad():
    model.head.weight.copy_(torch.tensor([[1.0, 0.5, -0.5], [0.25, -1.0, 2.0]]))
print(model)
print(sum(p.numel() for p in model.parameters()), "parameters")
for name, param in model.named_parameters():
    print(name, param.shape, param.requires_grad)
for key, value in model.state_dict().items():
    print(key, value)
print(list(model.state_dict().keys()))
print(type(model.norm.scale).__name__, isinstance(model.norm.scale, torch.Tensor))
print(model.norm.scale)

out = model(torch.tensor([[0.5, -1.0, 2.0]]))
print(out)
out.sum().backward()
print(model.norm.scale.grad)
print(model.steps)

clone = TinyNet()
result = clone.load_state_dict(model.state_dict())
print(result)
print(torch.equal(clone.head.weight, model.head.weight), clone.steps)
