"""torch.autograd.functional.jacobian and hessian of small float64 functions, with one and several inputs."""
import torch
from torch.autograd.functional import hessian, jacobian


def polar_to_cartesian(p):
    r, theta = p[0], p[1]
    return torch.stack([r * torch.cos(theta), r * torch.sin(theta)])


p = torch.tensor([2.0, 0.5], dtype=torch.float64)
print(jacobian(polar_to_cartesian, p))


def f(x, y):
    return x ** 2 * y + torch.exp(x) * y.sum()


x = torch.tensor([1.0, 2.0], dtype=torch.float64)
y = torch.tensor([0.5, -1.0], dtype=torch.float64)
jx, jy = jacobian(f, (x, y))
print(jx)
print(jy)


def rosen(v):
    return ((1 - v[:-1]) ** 2 + 100 * (v[1:] - v[:-1] ** 2) ** 2).sum()


v = torch.tensor([0.5, 1.5, -0.5], dtype=torch.float64)
print(jacobian(rosen, v))
print(hessian(rosen, v))


def energy(a, b):
    return (a * b).sum() ** 2 + (a ** 3).sum()


H = hessian(energy, (x, y))
print(len(H), len(H[0]))
print(H[0][0])
print(H[0][1])
print(H[1][1])

J = jacobian(lambda t: t.sin() * t, torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64), create_graph=True)
print(J)
print(torch.autograd.functional.jacobian(torch.exp, torch.tensor(1.0, dtype=torch.float64)))
