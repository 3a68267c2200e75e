"""Saving and loading a model the tutorial way: torch.save(model.state_dict(), path), torch.load, load_state_dict."""
import os
import tempfile

import torch
import torch.nn as nn


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(self.body(x))


model = Regressor()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5 + i, p.numel()).reshape(p.shape))
x = torch.tensor([[1.0, -1.0], [0.5, 2.0]])
before = model(x)
print(before)

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "model.pt")
    torch.save(model.state_dict(), path)
    state = torch.load(path)
    print(type(state).__name__, list(state.keys()))
    print(state["out.weight"])

    restored = Regressor()
    print(restored.load_state_dict(state))
    restored.eval()
    with torch.no_grad():
        after = restored(x)
    print(after)
    print(torch.equal(before.detach(), after))

    torch.save({"epoch": 3, "weights": model.out.weight.detach(), "note": "checkpoint"}, path)
    ckpt = torch.load(path)
    print(ckpt["epoch"], ckpt["note"], ckpt["weights"])

try:
    Regressor().load_state_dict({"out.weight": torch.zeros(1, 3)})
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
print(Regressor().load_state_dict({"out.weight": torch.zeros(1, 3)}, strict=False))
