"""A custom autograd Function for the Legendre polynomial P3 used to fit a curve; grad_fn carries the class name."""
import torch
from torch.autograd import Function


class LegendreP3(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (5 * x ** 3 - 3 * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * x ** 2 - 1)


x = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
p3 = LegendreP3.apply
y = p3(x)
print(y)
print(type(y.grad_fn).__name__)
print(y.grad_fn)
y.sum().backward()
print(x.grad)

xs = torch.linspace(-1, 1, 50, dtype=torch.float64)
target = 0.3 + 0.8 * (0.5 * (5 * xs ** 3 - 3 * xs))
a = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
b = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
lr = 0.05
for step in range(100):
    pred = a + b * p3(xs)
    loss = ((pred - target) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        a -= lr * a.grad
        b -= lr * b.grad
        a.grad.zero_()
        b.grad.zero_()
    if step % 25 == 0:
        print(step, f"{loss.item():.8f}")
print(f"a={a.item():.6f} b={b.item():.6f}")
