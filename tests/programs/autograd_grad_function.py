"""torch.autograd.grad: several inputs, grad_outputs, only_inputs=True, allow_unused=True, create_graph."""
import torch

a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
b = torch.tensor([0.5, -0.5, 2.0], dtype=torch.float64, requires_grad=True)
c = torch.tensor(4.0, dtype=torch.float64, requires_grad=True)

out = (a * b).sum() + (a ** 2).mean()
ga, gb = torch.autograd.grad(out, [a, b], retain_graph=True)
print(ga)
print(gb)
print("leaves untouched:", a.grad, b.grad)

(ga2,) = torch.autograd.grad(out, a, only_inputs=True, retain_graph=True)
print(torch.equal(ga, ga2))

ga3, gc = torch.autograd.grad(out, (a, c), allow_unused=True, retain_graph=True)
print(ga3, gc)

try:
    torch.autograd.grad(out, [a, c], retain_graph=True)
except RuntimeError as e:
    print("RuntimeError:", e)

vec = a * b * 2
(gv,) = torch.autograd.grad(vec, a, grad_outputs=torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64))
print(gv)

z = (a ** 3).sum()
(g1,) = torch.autograd.grad(z, a, create_graph=True)
print(g1, g1.requires_grad)
(g2,) = torch.autograd.grad(g1.sum(), a)
print(g2)

x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
f = x * y + y ** 2
gx, gy = torch.autograd.grad(outputs=f, inputs=(x, y))
print(gx, gy)
