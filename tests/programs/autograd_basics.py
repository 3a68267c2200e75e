"""Autograd basics: leaves, requires_grad, grad_fn names, backward on a scalar, reading .grad."""
import torch

w = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
x = torch.tensor([1.0, 2.0])
print(w)
print(x)
print("w.is_leaf:", w.is_leaf, "requires_grad:", w.requires_grad, "grad_fn:", w.grad_fn)
print("x.is_leaf:", x.is_leaf, "requires_grad:", x.requires_grad)

h = w @ x
print(h)
print(h.grad_fn)

a = h.relu()
s = a * 3 + 1
loss = s.sum() / 4
print(a)
print(s)
print(loss)
print("is_leaf after ops:", h.is_leaf, a.is_leaf, loss.is_leaf)
print("grad before backward:", w.grad)

loss.backward()
print("grad of w:")
print(w.grad)
print(w.grad.shape, w.grad.dtype)

b = torch.ones(3, requires_grad=True)
out = (b * b * 2 + b).mean()
out.backward()
print(out.item())
print(b.grad)
print(type(out.grad_fn).__name__, type(out.grad_fn.next_functions[0][0]).__name__)
