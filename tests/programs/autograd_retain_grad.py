"""Non-leaf tensors keep no .grad unless retain_grad() is called."""
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x * x
h.retain_grad()
k = h + 1
out = (k * k).sum()
print("retains_grad:", x.retains_grad, h.retains_grad, k.retains_grad)
out.backward()
print("x.grad:", x.grad)
print("h.grad:", h.grad)
print("k.grad:", k.grad)
print("h.is_leaf:", h.is_leaf, "k.is_leaf:", k.is_leaf)

a = torch.tensor(2.0, requires_grad=True)
b = a * 3
b.retain_grad()
c = b ** 2
c.backward(retain_graph=True)
print(a.grad, b.grad)
c.backward()
print(a.grad, b.grad)
