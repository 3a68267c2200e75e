"""torch.func transforms composed: vmap(grad(f)) per-sample gradients, jacrev, jacfwd(jacrev(f)) and hessian."""
import torch
from torch.func import grad, hessian, jacfwd, jacrev, vmap


def loss(w, x, y):
    pred = (w * x).sum()
    return (pred - y) ** 2


w = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
xs = torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, -1.0], [2.0, 0.5, 0.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
ys = torch.tensor([1.0, 0.0, -1.0, 2.0], dtype=torch.float64)

print(grad(loss)(w, xs[0], ys[0]))
per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(w, xs, ys)
print(per_sample)
print(per_sample.mean(0))


def f(x):
    return torch.stack([x[0] ** 2 * x[1], torch.sin(x[1]) + x[2], x[0] * x[2]])


x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
print(jacrev(f)(x))
print(jacfwd(f)(x))
print(vmap(jacrev(f))(torch.stack([x, x * 0.5])))


def scalar(x):
    return (x ** 3).sum() + x[0] * x[1]


print(jacfwd(jacrev(scalar))(x))
print(hessian(scalar)(x))
g0, g1 = grad(lambda a, b: (a * b ** 2).sum(), argnums=(0, 1))(x, x + 1)
print(g0, g1)
