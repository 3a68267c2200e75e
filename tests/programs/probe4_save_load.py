"""torch.save / torch.load of a state_dict, an optimizer and a checkpoint dict through BytesIO; resuming training."""
import io

import torch
import torch.nn as nn

torch.manual_seed(3)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(16, 4)
y = x.sum(dim=1, keepdim=True)

for _ in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))

buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3, "note": "ckpt"}, buf)
print("bytes written > 0:", buf.tell() > 0)
buf.seek(0)
ckpt = torch.load(buf)
print(sorted(ckpt.keys()), ckpt["epoch"], ckpt["note"])
print(list(ckpt["model"].keys()))
osd = ckpt["opt"]
print(sorted(osd.keys()))
print(osd["param_groups"][0]["lr"], osd["param_groups"][0]["betas"], osd["param_groups"][0]["params"])
print(sorted(osd["state"].keys()), sorted(osd["state"][0].keys()))
print("step", osd["state"][0]["step"])
print(osd["state"][1]["exp_avg"].shape, osd["state"][1]["exp_avg"].dtype)

model2 = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt2 = torch.optim.Adam(model2.parameters(), lr=0.5)
print(model2.load_state_dict(ckpt["model"]))
opt2.load_state_dict(ckpt["opt"])
print("lr after load", opt2.param_groups[0]["lr"])
same = all(torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters()))
print("same params", same)

for m, o in ((model, opt), (model2, opt2)):
    o.zero_grad()
    l = nn.functional.mse_loss(m(x), y)
    l.backward()
    o.step()
print("in sync", all(torch.allclose(a, b) for a, b in zip(model.parameters(), model2.parameters())))

t = torch.arange(6).reshape(2, 3)
b2 = io.BytesIO()
torch.save([t, t[0], {"w": torch.tensor([1.5, 2.5], dtype=torch.float64)}], b2)
b2.seek(0)
lst = torch.load(b2, weights_only=True)
print(lst[0], lst[1], lst[2]["w"])
print(lst[0].dtype, lst[2]["w"].dtype)

p = nn.Parameter(torch.ones(2))
b3 = io.BytesIO()
torch.save(p, b3)
b3.seek(0)
p2 = torch.load(b3)
print(type(p2).__name__, p2.requires_grad, p2)
