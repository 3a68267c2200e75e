"""Linear regression by hand: w and b as leaves, manual updates with w.data -= lr * w.grad, then zero_()."""
import torch

x = torch.linspace(0, 1, 20).unsqueeze(1)
noise = 0.05 * torch.sin(17 * x)
y = 3 * x + 2 + noise

w = torch.zeros(1, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.5

for epoch in range(100):
    pred = x @ w + b
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    w.data -= lr * w.grad
    b.data -= lr * b.grad
    w.grad.zero_()
    b.grad.zero_()
    if epoch % 20 == 0 or epoch == 99:
        print(f"epoch {epoch:3d} loss {loss.item():.4f}")

print("w:", w)
print("b:", b)
print(f"w={w.item():.4f} b={b.item():.4f}")
