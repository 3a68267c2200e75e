"""Jacobians through Python control flow on values: a loop that doubles until the norm exceeds 1000."""
import torch
from torch.autograd.functional import jacobian


def grow(x):
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    return y


def piecewise(x):
    if x.sum() > 0:
        return x ** 2
    return -x


x = torch.tensor([0.25, -0.5, 1.0])
print(grow(x))
print(jacobian(grow, x))
print(jacobian(grow, torch.tensor([100.0, 200.0, 300.0])))
print(jacobian(piecewise, torch.tensor([1.0, 2.0])))
print(jacobian(piecewise, torch.tensor([-1.0, -2.0])))

x = torch.tensor([0.25, -0.5, 1.0], requires_grad=True)
y = grow(x)
y.backward(torch.tensor([1.0, 1.0, 1.0]))
print(x.grad)
