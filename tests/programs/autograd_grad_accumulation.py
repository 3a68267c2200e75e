"""Gradients accumulate across backward calls until .grad.zero_(); retain_graph=True allows a second pass."""
import torch

p = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)

for step in range(3):
    loss = (p * p).sum()
    loss.backward()
    print(f"step {step}: loss={loss.item():.4f} grad={p.grad}")

p.grad.zero_()
print("after zero_:", p.grad)

y = (p ** 3).sum()
y.backward(retain_graph=True)
print("first pass:", p.grad)
y.backward()
print("second pass (accumulated):", p.grad)

p.grad = None
print("grad reset to None:", p.grad)
(2 * p).sum().backward()
print(p.grad)

q = torch.tensor(3.0, requires_grad=True)
total = 0
for k in range(1, 5):
    out = q ** k
    out.backward()
    total += k * 3.0 ** (k - 1)
    print(k, q.grad, total)
q.grad.data.zero_()
print(q.grad)
