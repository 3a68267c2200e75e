"""Curve fitting with LBFGS (strong Wolfe), a weight-normed LazyConv2d + InstanceNorm2d net, scheduler state_dicts."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.simplefilter("ignore")
torch.manual_seed(0)

# fit a * exp(-b x) + c with LBFGS
x = torch.linspace(0, 3, 25)
y = 2.0 * torch.exp(-1.3 * x) + 0.4 + 0.02 * torch.randn(25)
params = torch.tensor([1.0, 1.0, 0.0], requires_grad=True)
opt = torch.optim.LBFGS([params], lr=1, max_iter=30, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    a, b, c = params
    loss = (a * torch.exp(-b * x) + c - y).pow(2).mean()
    loss.backward()
    return loss


for outer in range(3):
    loss = opt.step(closure)
    print(f"outer {outer}: loss {loss.item():.6f} params {[round(v, 3) for v in params.tolist()]}")
state = opt.state[params]
print(state["n_iter"], state["func_evals"], sorted(state))
print(opt)

# a small conv net whose input channels are found on the first call
net = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.InstanceNorm2d(4, affine=True), nn.ReLU(),
                    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LazyLinear(2))
print(net)
images = torch.randn(6, 3, 5, 5)
targets = torch.tensor([0, 1, 1, 0, 1, 0])
print(net(images).shape)
print(net)
nn.utils.weight_norm(net[5])
print(sorted(n for n, _ in net.named_parameters()))
print(net[5].weight_g.flatten(), net[5].weight.grad_fn)
opt = torch.optim.Adam(net.parameters(), lr=0.05)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3)
for step in range(6):
    opt.zero_grad()
    loss = F.cross_entropy(net(images), targets)
    loss.backward()
    opt.step()
    sched.step()
    print(f"step {step}: {loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}")
print(net[1].weight.grad)
nn.utils.remove_weight_norm(net[5])
print(list(net[5].state_dict()), net[5].weight.shape)
sd = sched.state_dict()
print(sorted(sd), sd["T_cur"], sd["last_epoch"])

cyc = torch.optim.lr_scheduler.CyclicLR(torch.optim.SGD([params], lr=0.1, momentum=0.9), 0.01, 0.1,
                                        step_size_up=3, mode="exp_range", gamma=0.9)
moms = []
for _ in range(7):
    cyc.optimizer.step()
    cyc.step()
    moms.append(round(cyc.optimizer.param_groups[0]["momentum"], 4))
print([round(v, 4) for v in cyc.get_last_lr()], moms)
poly = torch.optim.lr_scheduler.PolynomialLR(torch.optim.SGD([params], lr=0.1), total_iters=4, power=0.5)
print([round(poly.get_last_lr()[0], 5)] + [round((poly.optimizer.step(), poly.step(), poly.get_last_lr()[0])[2], 5)
                                           for _ in range(5)])
