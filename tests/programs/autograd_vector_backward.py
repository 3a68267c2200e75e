"""backward() on a non-scalar output needs gradient=: a vector-Jacobian product, with a data-dependent loop."""
import torch

x = torch.tensor([0.5, -1.25, 3.0], requires_grad=True)
y = x * 2
steps = 0
while y.data.norm() < 1000:
    y = y * 2
    steps += 1
print("doublings:", steps)
print(y)

v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)

z = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
m = (z * z).view(2, 2)
print(m)
m.backward(gradient=torch.tensor([[1.0, 0.0], [0.5, -1.0]]))
print(z.grad)

try:
    m2 = (z * 3).view(2, 2)
    m2.backward()
except RuntimeError as e:
    print("RuntimeError:", e)

q = torch.tensor([2.0, 3.0], requires_grad=True)
r = q ** 3
r.backward(torch.ones_like(r))
print(q.grad)
