"""Learning-rate schedulers: StepLR, ExponentialLR, CosineAnnealingLR and LambdaLR, read back with get_last_lr()."""
import torch
from torch import optim
from torch.optim.lr_scheduler import CosineAnnealingLR, ExponentialLR, LambdaLR, StepLR


def make_optimizer(lr):
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
    return w, optim.SGD([w], lr=lr)


def run(name, make_scheduler, lr=0.1, epochs=8):
    w, opt = make_optimizer(lr)
    sched = make_scheduler(opt)
    lrs = []
    for _ in range(epochs):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
        lrs.append(sched.get_last_lr()[0])
        sched.step()
    print(name, [f"{v:.6f}" for v in lrs])
    print("  final lr", opt.param_groups[0]["lr"], "w", w.data)


run("StepLR", lambda o: StepLR(o, step_size=3, gamma=0.5))
run("ExponentialLR", lambda o: ExponentialLR(o, gamma=0.9))
run("CosineAnnealingLR", lambda o: CosineAnnealingLR(o, T_max=6, eta_min=0.01))
run("LambdaLR", lambda o: LambdaLR(o, lr_lambda=lambda epoch: 1.0 / (epoch + 1)))
run("LambdaLR warmup", lambda o: LambdaLR(o, lambda e: min(1.0, (e + 1) / 4)), lr=0.2, epochs=6)

w, opt = make_optimizer(1.0)
sched = StepLR(opt, step_size=2, gamma=0.1)
print(sched.state_dict()["step_size"], sched.state_dict()["gamma"], sched.last_epoch)
print(type(sched).__name__, opt.param_groups[0]["initial_lr"])
