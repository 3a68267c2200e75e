"""Higher derivatives with create_graph=True: grad of grad, and a second derivative that is itself a graph."""
import torch

x = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
y = x ** 4 - 3 * x ** 2 + torch.sin(x)

(dy,) = torch.autograd.grad(y, x, create_graph=True)
print("dy/dx  =", dy)
(d2y,) = torch.autograd.grad(dy, x, create_graph=True)
print("d2y/dx2 =", d2y)
(d3y,) = torch.autograd.grad(d2y, x)
print("d3y/dx3 =", d3y)
print(f"{dy.item():.10f} {d2y.item():.10f} {d3y.item():.10f}")

t = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
f = (t.exp() * t).sum()
f.backward(create_graph=True)
g = t.grad.clone()
print("grad:", g)
print(t.grad.requires_grad, t.grad.grad_fn is not None)
t.grad = None
g.sum().backward()
print("grad of sum of grad:", t.grad)

p = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
energy = p[0] ** 2 * p[1] + p[1] ** 3
(gp,) = torch.autograd.grad(energy, p, create_graph=True)
rows = [torch.autograd.grad(gp[i], p, retain_graph=True)[0] for i in range(2)]
print(torch.stack(rows))
