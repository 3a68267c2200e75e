"""LazyLinear + InstanceNorm1d trained with MultiMarginLoss (Rprop, ASGD + CyclicLR); multi-label losses."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import CosineAnnealingWarmRestarts, CyclicLR, PolynomialLR

torch.manual_seed(0)

# three classes of short 2-channel signals
labels = torch.randint(0, 3, (12,))
t = torch.linspace(0, 1, 6)
signals = torch.stack([torch.sin((labels + 1).float()[:, None] * 3 * t), torch.cos(labels.float()[:, None] * t)], 1)
signals = signals + 0.1 * torch.randn(12, 2, 6)
print(signals.shape)


class SignalNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm1d(2, affine=True)
        self.head = nn.LazyLinear(3)

    def forward(self, x):
        return self.head(self.norm(x).flatten(1))


model = SignalNet()
print(model)
print(model.head.weight)
out = model(signals)
print(model)
print(model.head.weight.shape, model.head.bias)
print(out.grad_fn, F.instance_norm(signals[:2]).grad_fn)

criterion = nn.MultiMarginLoss(margin=0.5)
print(criterion, criterion(out, labels))
opt = torch.optim.Rprop(model.parameters(), lr=0.01)
print(opt)
for step in range(8):
    opt.zero_grad()
    loss = criterion(model(signals), labels)
    loss.backward()
    opt.step()
    if step % 3 == 0:
        print(f"rprop step {step}: {loss.item():.5f}")
print(opt.state[model.head.bias]["step_size"])
print((model(signals).argmax(1) == labels).float().mean())

opt = torch.optim.ASGD(model.parameters(), lr=0.05, t0=3, lambd=1e-3)
sched = CyclicLR(opt, base_lr=0.01, max_lr=0.05, step_size_up=2, mode="triangular2", cycle_momentum=False)
for step in range(6):
    opt.zero_grad()
    loss = F.multi_margin_loss(model(signals), labels, p=2, weight=torch.tensor([1.0, 2.0, 1.0]))
    loss.backward()
    opt.step()
    sched.step()
    print(f"asgd step {step}: {loss.item():.5f} lr {sched.get_last_lr()[0]:.4f}")
print(opt.state[model.head.bias]["ax"], opt.state[model.head.bias]["eta"])

# multi-label tags for the same signals
tags = torch.stack([labels == 0, labels != 1, labels == 2], 1).float()
tag_head = nn.Linear(12, 3)
soft = nn.MultiLabelSoftMarginLoss()
opt = torch.optim.SGD(tag_head.parameters(), lr=0.5, momentum=0.9)
sched = PolynomialLR(opt, total_iters=4, power=2.0)
feats = F.instance_norm(signals).flatten(1)
for step in range(5):
    opt.zero_grad()
    loss = soft(tag_head(feats), tags)
    loss.backward()
    opt.step()
    sched.step()
    print(f"tags step {step}: {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")  # 4 places: the head is a matmul
index_targets = torch.tensor([[0, 2, -1], [1, -1, 0], [2, 1, 0]])
scores = tag_head(feats[:3])
print(F.multilabel_margin_loss(scores, index_targets), nn.MultiLabelMarginLoss(reduction="none")(scores, index_targets))

norm = nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5)
norm(signals)
print(norm.running_mean, norm.running_var)
norm.eval()
print(norm(signals[:1]).flatten()[:4])

opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
warm = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)
lrs = []
for _ in range(8):
    opt.step()
    warm.step()
    lrs.append(round(warm.get_last_lr()[0], 5))
print(lrs, warm.T_i, warm.T_cur)
