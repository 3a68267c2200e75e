"""Tensor hooks: register_hook on a leaf and a non-leaf, a hook that rewrites the gradient, handle.remove()."""
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = x * 2
y = (h ** 2).sum()


def show(name):
    def hook(grad):
        print(f"hook on {name}: {grad}")
    return hook


hx = x.register_hook(show("x"))
hh = h.register_hook(show("h"))
y.backward()
print("x.grad:", x.grad)

x.grad = None
hh.remove()
h2 = x * 2
h2.register_hook(lambda g: g * 10)
(h2 ** 2).sum().backward()
print("x.grad with a scaled hook:", x.grad)

hx.remove()
x.grad = None
(x * x).sum().backward()
print("after remove:", x.grad)

a = torch.tensor([0.5, -0.5], requires_grad=True)
b = a.exp()
b.retain_grad()
b.register_hook(lambda g: g.clamp(min=0))
c = (b * torch.tensor([1.0, -1.0])).sum()
c.backward()
print("b.grad (retain_grad):", b.grad)
print("a.grad:", a.grad)

order = []
w = torch.tensor(2.0, requires_grad=True)
w.register_hook(lambda g: order.append(("first", g.item())))
w.register_hook(lambda g: order.append(("second", g.item())))
(w ** 3).backward()
print(order)
