"""Stopping gradients: no_grad, detach, requires_grad_(), set_grad_enabled, enable_grad inside no_grad."""
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

with torch.no_grad():
    y = x * 2
print(y, y.requires_grad, y.grad_fn)

z = x * 2
print(z.requires_grad)
d = z.detach()
print(d, d.requires_grad, d.is_leaf)

u = x.detach() ** 2 + x
u.sum().backward()
print("grad through the non-detached path only:", x.grad)

print(torch.is_grad_enabled())
torch.set_grad_enabled(False)
w = x + 1
print(w.requires_grad, torch.is_grad_enabled())
torch.set_grad_enabled(True)
print(torch.is_grad_enabled())

with torch.no_grad():
    with torch.enable_grad():
        e = x * 3
    f = x * 3
print(e.requires_grad, f.requires_grad)

with torch.set_grad_enabled(False):
    g = x ** 2
print(g.requires_grad)

a = torch.tensor([2.0, 4.0])
print(a.requires_grad)
a.requires_grad_()
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
b.backward()
print(a.grad)

@torch.no_grad()
def scaled(t):
    return t * 10

s = scaled(x)
print(s, s.requires_grad)

x2 = torch.ones(2, requires_grad=True)
print(x2.data, x2.data.requires_grad)
