"""torch.autograd.gradcheck and gradgradcheck on float64 inputs, for built-in ops and a custom Function."""
import torch
from torch.autograd import Function, gradcheck, gradgradcheck


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


class BadCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x ** 2 * g


x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.double, requires_grad=True)
y = torch.tensor([1.5, 0.5, -0.7], dtype=torch.double, requires_grad=True)

print(gradcheck(torch.sin, (x,)))
print(gradcheck(lambda a, b: (a * b).exp().sum(), (x, y), eps=1e-6, atol=1e-4))
print(gradcheck(Cube.apply, (x,)))
print(gradgradcheck(lambda a: (a ** 4).sum(), (x,)))
print(gradcheck(BadCube.apply, (x,), raise_exception=False))
try:
    gradcheck(BadCube.apply, (x,))
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
