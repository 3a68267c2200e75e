"""torch.manual_seed then randn, rand, randint, randperm, normal, and reproducibility of a reseeded stream."""
import torch

torch.manual_seed(0)
print(torch.randn(2, 3))
print(torch.rand(3))
print(torch.randint(0, 10, (5,)))
print(torch.randperm(6))
print(torch.normal(mean=2.0, std=0.5, size=(2, 2)))
print(torch.normal(torch.zeros(3), torch.ones(3)))
print(torch.randn(2, dtype=torch.float64))
print(torch.rand(2, 2).uniform_(-1, 1))
print(torch.empty(3).normal_(0, 2))
print(torch.randint(5, (2, 3)))
print(torch.randn_like(torch.zeros(2)))
print(torch.rand(1).item())

torch.manual_seed(123)
a = torch.randn(4)
torch.manual_seed(123)
b = torch.randn(4)
print(torch.equal(a, b), a)

g = torch.Generator().manual_seed(7)
print(torch.randn(3, generator=g))
print(torch.initial_seed())
x = torch.randn(3, requires_grad=True)
(x ** 2).sum().backward()
print(torch.equal(x.grad, 2 * x.detach()))
