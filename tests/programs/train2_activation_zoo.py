"""Small MLPs with different activations (PReLU, CELU, Hardswish, GLU, ...) trained side by side with SGD."""
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(16, 3)
y = (x[:, :1] - 2 * x[:, 1:2]).sin()


def make(act, width=6):
    hidden = 2 * width if isinstance(act, nn.GLU) else width
    return nn.Sequential(nn.Linear(3, hidden), act, nn.Linear(width, 1))


activations = {
    "relu": nn.ReLU(),
    "prelu": nn.PReLU(),
    "prelu per unit": nn.PReLU(6, init=0.1),
    "celu": nn.CELU(alpha=0.5),
    "hardswish": nn.Hardswish(),
    "hardsigmoid": nn.Hardsigmoid(),
    "softsign": nn.Softsign(),
    "tanhshrink": nn.Tanhshrink(),
    "softshrink": nn.Softshrink(0.2),
    "glu": nn.GLU(),
}
for name, act in activations.items():
    torch.manual_seed(1)
    model = make(act)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for _ in range(8):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    print(f"{name:15s} {model[1]}  loss {loss.item():.5f}")
    print(model[0].bias.grad)
    if isinstance(act, nn.PReLU):
        print(act.weight, act.weight.grad)

torch.manual_seed(2)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
with torch.no_grad():
    net[0].bias[2] = -20.0  # a dead unit: its gradients are exactly zero
out = net(x)
loss = (out - 3.0).pow(2).mean()
loss.backward()
print(net[0].weight.grad)
print(net[0].bias.grad)
print(nn.functional.threshold(out[:4].detach(), 0.0, -1.0).flatten())
print(nn.Softmin(dim=1)(x[:2]))
h = x[:4].clone().requires_grad_()
(-nn.functional.hardtanh(h * 2)).sum().backward()
print(h.grad)
