"""Param groups with own lr / weight decay, SequentialLR, ChainedScheduler, ReduceLROnPlateau, accumulation."""
import torch
import torch.nn as nn
from torch.optim import lr_scheduler

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
opt = torch.optim.SGD([
    {"params": model[0].parameters(), "lr": 0.05},
    {"params": model[2].parameters(), "weight_decay": 1e-2},
], lr=0.1, momentum=0.9)
print(len(opt.param_groups), [g["lr"] for g in opt.param_groups], [g["weight_decay"] for g in opt.param_groups])
print(opt)

warm = lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
sched = lr_scheduler.SequentialLR(opt, schedulers=[warm, decay], milestones=[3])

x = torch.linspace(-1, 1, 12).reshape(4, 3)
y = (x ** 2).sum(dim=1, keepdim=True)
accum = 2
for epoch in range(6):
    opt.zero_grad()
    for k in range(accum):
        xb, yb = x[k * 2:(k + 1) * 2], y[k * 2:(k + 1) * 2]
        loss = nn.functional.mse_loss(model(xb), yb) / accum
        loss.backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    opt.step()
    sched.step()
    print(epoch, [round(g["lr"], 5) for g in opt.param_groups], round(float(total), 3), round(loss.item(), 3))
print("last_lr", [round(v, 6) for v in sched.get_last_lr()])

grads_before = [p.grad.clone() for p in model.parameters()]
nn.utils.clip_grad_value_(model.parameters(), clip_value=0.01)
print([round(float(g.abs().max()), 4) for g in grads_before])
print([round(float(p.grad.abs().max()), 4) for p in model.parameters()])
norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=float("inf"))
print("inf norm", round(float(norm), 4))

opt2 = torch.optim.Adam(model.parameters(), lr=1.0)
plateau = lr_scheduler.ReduceLROnPlateau(opt2, mode="min", factor=0.5, patience=1, threshold=0.01)
for val in [1.0, 0.9, 0.95, 0.94, 0.96, 0.5, 0.6, 0.7, 0.8]:
    plateau.step(val)
    print("plateau", val, opt2.param_groups[0]["lr"], plateau.num_bad_epochs)

opt3 = torch.optim.SGD(model.parameters(), lr=1.0)
chain = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(opt3, factor=0.5, total_iters=2),
                                        lr_scheduler.StepLR(opt3, step_size=2, gamma=0.1)])
for i in range(5):
    opt3.step()
    chain.step()
    print("chain", i, round(opt3.param_groups[0]["lr"], 6))

opt.add_param_group({"params": [nn.Parameter(torch.zeros(2))], "lr": 0.3})
print(len(opt.param_groups), opt.param_groups[-1]["momentum"], opt.param_groups[-1]["lr"])
sd = opt.state_dict()
print([g["params"] for g in sd["param_groups"]], sorted(sd["state"]))
try:
    torch.optim.SGD([{"params": model.parameters()}, {"params": model[0].parameters()}], lr=0.1)
except ValueError as e:
    print("ValueError:", e)
