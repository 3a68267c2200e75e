"""Custom Functions with non-tensor arguments (ctx attributes), ctx.needs_input_grad and None gradients."""
import torch
from torch.autograd import Function


class ScaledAdd(Function):
    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.alpha = alpha
        return a + alpha * b

    @staticmethod
    def backward(ctx, grad):
        print("needs_input_grad:", ctx.needs_input_grad)
        grad_a = grad if ctx.needs_input_grad[0] else None
        grad_b = grad * ctx.alpha if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None


class ClampSTE(Function):
    """Clamp in the forward pass, identity gradient in the backward pass (straight-through estimator)."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None, None


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
c = torch.tensor([3.0, 4.0])
out = ScaledAdd.apply(a, b, 0.5)
print(out)
out.sum().backward()
print(a.grad, b.grad)

out2 = ScaledAdd.apply(a, c, 2.0)
(out2 * out2).sum().backward()
print(a.grad)

x = torch.tensor([-2.0, -0.5, 0.5, 2.0], requires_grad=True)
y = ClampSTE.apply(x, -1.0, 1.0)
print(y)
(y * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
print(x.grad)

z = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
e = MyExp.apply(z)
print(e)
print(type(e.grad_fn).__name__)
e.backward(torch.ones(3, dtype=torch.float64))
print(z.grad)
print(torch.allclose(z.grad, z.detach().exp()))
