"""Autograd graph inspection: is_leaf, grad_fn and next_functions, retain_grad, requires_grad_, _version, _base."""
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = x * w
z = y.sum()
print("x leaf:", x.is_leaf, "y leaf:", y.is_leaf, "z leaf:", z.is_leaf)
print("grad_fn:", type(z.grad_fn).__name__, z.grad_fn.name())
print("next:", [(type(f).__name__ if f is not None else None, i) for f, i in z.grad_fn.next_functions])
mul = y.grad_fn
print("mul next:", [type(f).__name__ for f, _ in mul.next_functions])
print("acc var is x:", mul.next_functions[0][0].variable is x)
y.retain_grad()
print("retains_grad:", y.retains_grad, x.retains_grad)
z.backward()
print("x.grad", x.grad)
print("y.grad", y.grad)
print("z.grad_fn after backward", z.grad_fn is not None)

a = torch.ones(2, 2)
print("a.requires_grad", a.requires_grad)
a.requires_grad_()
print("a.requires_grad", a.requires_grad, a.is_leaf)
b = a * 2
print(b)
print(b.grad_fn)
try:
    b.requires_grad_(False)
except RuntimeError as e:
    print("RuntimeError:", e)

v = torch.zeros(3)
print("version", v._version)
v.add_(1)
v[0] = 5
print("version", v._version)
v.mul_(2)
print("version", v._version, v)

p = torch.tensor([1.0, 2.0], requires_grad=True)
q = p.exp()
q.add_(1)
try:
    q.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).split("\n")[0][:200])

try:
    p.add_(1)
except RuntimeError as e:
    print("RuntimeError:", e)

r = p * 2
s = r.view(2)
print(type(s.grad_fn).__name__, s._base is r)
u = p.sigmoid()
u2 = u * 1
u.mul_(3)
print(type(u.grad_fn).__name__)
try:
    (u2 * u).sum().backward()
    print("ok", p.grad)
except RuntimeError as e:
    print("RuntimeError:", str(e)[:160])

t = torch.tensor([3.0], requires_grad=True)
out = t.pow(2) * 3
print(out.grad_fn, out.requires_grad)
d = out.detach()
print(d.requires_grad, d.grad_fn, d.is_leaf)
with torch.no_grad():
    e = t * 2
print(e.requires_grad, e.grad_fn)
print(torch.is_grad_enabled())
