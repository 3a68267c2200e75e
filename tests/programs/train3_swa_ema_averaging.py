"""A small regression MLP trained with SGD, its weights averaged by SWA (SWALR) and an EMA (AveragedModel)."""
import torch
import torch.nn as nn
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn

torch.manual_seed(0)
torch.set_printoptions(precision=3)
X = torch.randn(64, 4)
y = (X * torch.tensor([1.0, -2.0, 0.5, 3.0])).sum(1, keepdim=True) + 0.1 * torch.randn(64, 1)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
swa = AveragedModel(model)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
swa_sched = SWALR(opt, swa_lr=0.01, anneal_epochs=3, anneal_strategy="linear")
loss_fn = nn.MSELoss()
batches = [(X[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
for epoch in range(8):
    for xb, yb in batches:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        ema.update_parameters(model)
    if epoch >= 4:
        swa.update_parameters(model)
        swa_sched.step()
    else:
        sched.step()
    print(f"epoch {epoch} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.6f}")
print(swa)
print(swa.n_averaged, ema.n_averaged)
print(list(swa.state_dict().keys()))
update_bn(batches, swa)  # no BatchNorm in this model: nothing to do
swa.eval()
model.eval()
ema.eval()
with torch.no_grad():
    print(f"model {loss_fn(model(X), y).item():.4f}")
    print(f"swa {loss_fn(swa(X), y).item():.4f}")
    print(f"ema {loss_fn(ema(X), y).item():.4f}")
print(swa.module[0].weight)
print(ema.module[0].bias)
print(ema.module[2].weight.grad)
print(swa_sched.state_dict()["_anneal_strategy"], swa_sched.get_last_lr())
