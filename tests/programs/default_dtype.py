"""torch.set_default_dtype(torch.float64): what creation functions, literals and nn layers produce afterwards."""
import torch
import torch.nn as nn

print(torch.get_default_dtype())
print(torch.tensor([1.0, 2.0]).dtype, torch.ones(2).dtype, torch.tensor([1, 2]).dtype)

torch.set_default_dtype(torch.float64)
print(torch.get_default_dtype())
a = torch.tensor([1.0, 2.0])
print(a, a.dtype)
print(torch.zeros(2, 2).dtype, torch.arange(3).dtype, torch.arange(3.0).dtype, torch.linspace(0, 1, 3))
print(torch.tensor(1 / 3))
print(torch.tensor(1 / 3).item())
lin = nn.Linear(2, 2)
print(lin.weight.dtype)
nn.init.constant_(lin.weight, 1 / 3)
nn.init.zeros_(lin.bias)
print(lin(a))
print((torch.tensor([0.1, 0.2]) * 3).sum().item())

torch.set_default_dtype(torch.float32)
print(torch.tensor([1.0]).dtype, torch.tensor(1 / 3))
print(torch.tensor(1 / 3).item())
