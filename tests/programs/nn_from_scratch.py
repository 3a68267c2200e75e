"""A softmax classifier from scratch (weights, log_softmax and nll by hand), checked against F.cross_entropy."""
import math

import torch
import torch.nn.functional as F

n_in, n_out = 6, 3
xb = torch.linspace(-1, 1, 8 * n_in).reshape(8, n_in).sin()
yb = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])

weights = (torch.linspace(-1, 1, n_in * n_out).reshape(n_in, n_out) / math.sqrt(n_in))
weights.requires_grad_()
bias = torch.zeros(n_out, requires_grad=True)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


preds = model(xb)
print(preds[0], preds.shape)
loss_func = nll
print(loss_func(preds, yb), accuracy(preds, yb))

lr = 0.5
for epoch in range(30):
    loss = loss_func(model(xb), yb)
    loss.backward()
    with torch.no_grad():
        weights -= weights.grad * lr
        bias -= bias.grad * lr
        weights.grad.zero_()
        bias.grad.zero_()
    if epoch % 10 == 0:
        print(epoch, f"{loss.item():.4f}")

print(loss_func(model(xb), yb), accuracy(model(xb), yb))
logits = xb @ weights + bias
print(F.cross_entropy(logits, yb))
print(torch.allclose(F.cross_entropy(logits, yb), loss_func(model(xb), yb)))
print(torch.allclose(log_softmax(logits), F.log_softmax(logits, dim=-1)))
