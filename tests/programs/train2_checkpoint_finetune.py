"""Train a model, checkpoint it with torch.save, reload it into a bigger model (strict=False), fine-tune the head."""
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(3, 6), nn.Tanh())
        self.head = nn.Linear(6, 1)

    def forward(self, x):
        return self.head(self.features(x))


x = torch.randn(12, 3)
y = (x[:, :1] * 2 - x[:, 1:2]).tanh()

model = Backbone()
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for _ in range(10):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print("pretrain loss", loss.item())

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 10}, path)
    checkpoint = torch.load(path)
print(sorted(checkpoint.keys()), checkpoint["epoch"])
print(list(checkpoint["model"].keys()))
print(checkpoint["model"]["head.bias"])

restored = Backbone()
print(restored.load_state_dict(checkpoint["model"]))
print(torch.equal(restored.head.weight, model.head.weight))
opt2 = torch.optim.Adam(restored.parameters(), lr=0.05)
opt2.load_state_dict(checkpoint["optimizer"])
print(opt2.state_dict()["state"][3]["step"])


class Bigger(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(3, 6), nn.Tanh())
        self.head = nn.Linear(6, 2)
        self.extra = nn.Linear(2, 1)

    def forward(self, x):
        return self.extra(self.head(self.features(x)))


big = Bigger()
features_only = {k: v for k, v in checkpoint["model"].items() if k.startswith("features")}
result = big.load_state_dict(features_only, strict=False)
print(result)
print(result.missing_keys, result.unexpected_keys)
try:
    big.load_state_dict(checkpoint["model"])
except RuntimeError as err:
    print("RuntimeError:", err)

big.features.requires_grad_(False)
print([(n, p.requires_grad) for n, p in big.named_parameters()])
trainable = [p for p in big.parameters() if p.requires_grad]
print(len(trainable), sum(p.numel() for p in trainable))
ft = torch.optim.SGD(trainable, lr=0.1)
before = big.features[0].weight.clone()
for step in range(8):
    ft.zero_grad()
    loss = nn.functional.mse_loss(big(x), y)
    loss.backward()
    ft.step()
    if step % 2 == 0:
        print(f"finetune {step} {loss.item():.5f}")
print(loss)
print(big.features[0].weight.grad, torch.equal(before, big.features[0].weight))
print(big.head.weight.grad)
print(big.extra.bias)
