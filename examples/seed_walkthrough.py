"""The PyTorch autograd tutorial (the project's seed), run on symgrad.

Everything above the ``FORMULAS`` marker is the tutorial's code with ``import torch`` replaced by
``import symgrad as torch`` and its two typos fixed (``requires_grad``; the last backward is
``out3.backward()``). It prints exactly what PyTorch 2.x prints (tests/test_examples.py checks
this against real torch). Below the marker: the formulas behind every gradient it printed.
"""
import symgrad as torch

# 5. 代码验证 (checking the code)
x = torch.ones(2, 2, requires_grad=True)
print(x)
print(x.grad_fn)

y = x + 2
print(y)
print(y.grad_fn)

print(x.is_leaf, y.is_leaf)

z = y * y * 3
out = z.mean()
print(z)
print(out)

a = torch.randn(2, 2)  # requires_grad is False by default
a = ((a * 3) / (a - 1))
print(a.requires_grad)  # False
a.requires_grad_(True)
print(a.requires_grad)  # True
b = (a * a).sum()
print(b.grad_fn)

# 6. 求梯度 (gradients)
out.backward()  # same as out.backward(torch.tensor(1.))
print(x.grad)

out2 = x.sum()
out2.backward()  # gradients accumulate
print(x.grad)

out3 = x.sum()
x.grad.data.zero_()
out3.backward()
print(x.grad)

# 7. backward() on a non-scalar: a weighted sum with v
x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
y = 2 * x
z = y.view(2, 2)
print(z)

v = torch.tensor([[1.0, 0.1], [0.01, 0.001]], dtype=torch.float)
z.backward(v)
print(x.grad)

# 8. stopping gradient tracking
x = torch.tensor(1.0, requires_grad=True)
y1 = x ** 2
with torch.no_grad():
    y2 = x ** 3
y3 = y1 + y2

print(x.requires_grad)
print(y1, y1.requires_grad)  # True
print(y2, y2.requires_grad)  # False
print(y3, y3.requires_grad)  # True

y3.backward()
print(x.grad)

try:
    y2.backward()
except RuntimeError as e:
    print("RuntimeError:", e)

x = torch.ones(1, requires_grad=True)
print(x.data)  # still a tensor
print(x.data.requires_grad)  # but outside the graph

y = 2 * x
x.data *= 100  # changes the value only; not recorded, so the gradient is unaffected

y.backward()
print(x)  # the value changed
print(x.grad)

# FORMULAS ---------------------------------------------------------------------------------------
# What PyTorch cannot show: the derivative symgrad derived and evaluated for each gradient above.
print()
print("== the formulas behind the gradients ==")
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
z = y * y * 3
out = z.mean()
print("out             =", torch.formula(out))
print("d(out)/dx       =", torch.grad_formula(out, x))
print("  as LaTeX:       ", torch.grad_formula(out, x).latex())
out.backward()
print("x.grad          =", torch.grad_formula(x), " (at x = 1:", x.grad[0, 0].item(), ")")
x.sum().backward()
print("after x.sum().backward(), x.grad =", torch.grad_formula(x))

x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
z = (2 * x).view(2, 2)
z.backward(v)
print("z.backward(v):    x.grad =", torch.grad_formula(x), " (v is the weight tensor)")

x = torch.tensor(1.0, requires_grad=True)
y1 = x ** 2
with torch.no_grad():
    y2 = x ** 3
y3 = y1 + y2
print("y3              =", torch.formula(y3), " (y2 was computed under no_grad: a constant)")
print("d(y3)/dx        =", torch.grad_formula(y3, x))
print()
print(torch.grad_formula(out.detach().sum() + (x * torch.sin(x)).sum(), x).pretty())
