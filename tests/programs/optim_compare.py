"""Optimizers on the Rosenbrock function in float64: SGD, momentum, Nesterov, Adam, AdamW, RMSprop, Adagrad."""
import torch
from torch import optim


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


configs = [
    ("SGD", lambda ps: optim.SGD(ps, lr=1e-3)),
    ("SGD momentum", lambda ps: optim.SGD(ps, lr=1e-3, momentum=0.9)),
    ("SGD nesterov", lambda ps: optim.SGD(ps, lr=1e-3, momentum=0.9, nesterov=True)),
    ("SGD weight_decay", lambda ps: optim.SGD(ps, lr=1e-3, weight_decay=0.1)),
    ("Adam", lambda ps: optim.Adam(ps, lr=0.05)),
    ("Adam amsgrad", lambda ps: optim.Adam(ps, lr=0.05, amsgrad=True)),
    ("AdamW", lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.01)),
    ("RMSprop", lambda ps: optim.RMSprop(ps, lr=0.01)),
    ("Adagrad", lambda ps: optim.Adagrad(ps, lr=0.3)),
]

for name, make in configs:
    p = torch.tensor([-1.0, 1.5], dtype=torch.float64, requires_grad=True)
    opt = make([p])
    for step in range(100):
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        opt.step()
        if step == 0:
            first = p.detach().clone()
    print(f"{name:17s} after 1: {first.tolist()}")
    print(f"{name:17s} after 100: [{p[0].item():.8f}, {p[1].item():.8f}] loss {rosenbrock(p).item():.8f}")

p = torch.tensor([1.0, 2.0], requires_grad=True)
opt = optim.Adam([p], lr=0.1)
print(opt)
print(opt.param_groups[0]["lr"], opt.param_groups[0]["betas"], len(opt.state))
(p ** 2).sum().backward()
opt.step()
print(sorted(opt.state[p].keys()), opt.state[p]["step"])
opt.zero_grad()
print(p.grad)
(p ** 2).sum().backward()
opt.zero_grad(set_to_none=False)
print(p.grad)
