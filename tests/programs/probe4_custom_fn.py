"""Custom autograd.Function: needs_input_grad, mark_dirty / non_differentiable, materialize_grads, double backward."""
import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class ScaledCube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x ** 3 * scale

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        print("  needs_input_grad:", ctx.needs_input_grad)
        return grad_out * 3 * x ** 2 * ctx.scale, None


x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
y = ScaledCube.apply(x, 2.0)
print("y", y, type(y.grad_fn).__name__)
y.sum().backward()
print("x.grad", x.grad)

# double backward through a Function written with differentiable ops
x.grad = None
y = ScaledCube.apply(x, 1.0)
(g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
print("g", g, g.requires_grad)
(gg,) = torch.autograd.grad(g.sum(), x)
print("gg", gg)


class AddOneInplace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        x.add_(1)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


a = torch.tensor([1.0, 2.0], requires_grad=True)
b = a * 1
c = AddOneInplace.apply(b)
print("c is b:", c is b, c, type(c.grad_fn).__name__)
(c * c).sum().backward()
print("a.grad", a.grad)


class SortWithIdx(Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return vals, idx

    @staticmethod
    def backward(ctx, gv, gi):
        (idx,) = ctx.saved_tensors
        print("  gi:", gi)
        out = torch.zeros_like(gv)
        out[idx] = gv
        return out


s = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
v, i = SortWithIdx.apply(s)
print("v", v, "i", i, i.requires_grad)
(v * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
print("s.grad", s.grad)


class TwoOut(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        print("  g1 is None:", g1 is None, "g2 is None:", g2 is None)
        total = torch.zeros(2)
        if g1 is not None:
            total = total + 2 * g1
        if g2 is not None:
            total = total + 3 * g2
        return total


t = torch.tensor([1.0, 1.0], requires_grad=True)
p, q = TwoOut.apply(t)
p.sum().backward()
print("t.grad", t.grad)


class ClampGrad(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x > 0).float()


z = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
out = ClampGrad.apply(z)
(gz,) = torch.autograd.grad(out.sum(), z, create_graph=True)
print("gz", gz, gz.requires_grad)
try:
    gz.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)

# gradcheck on a double Function
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


xd = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
print("gradcheck", torch.autograd.gradcheck(Square.apply, (xd,)))
print("gradgradcheck", torch.autograd.gradgradcheck(Square.apply, (xd,)))
