"""A small training script: decay groups, a setup_context Function, global hooks, parameters_to_vector, freezing."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(42)


class SquarePlus(torch.autograd.Function):
    @staticmethod
    def forward(x, b):
        return 0.5 * (x + torch.sqrt(x * x + b))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, b = inputs
        ctx.save_for_backward(x)
        ctx.b = b

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 0.5 * (1 + x / torch.sqrt(x * x + ctx.b)), None


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        h = SquarePlus.apply(self.norm(self.fc1(x)), 4.0)
        return self.fc2(h)


model = MLP()
decay, no_decay = [], []
for name, _ in model.named_parameters():
    (no_decay if name.endswith("bias") or "norm" in name else decay).append(name)
print("decay", decay)
print("no_decay", no_decay)
params = dict(model.named_parameters())
opt = torch.optim.AdamW([
    {"params": [params[n] for n in decay], "weight_decay": 0.1},
    {"params": [params[n] for n in no_decay], "weight_decay": 0.0},
], lr=3e-3)

X = torch.randn(24, 4)
y = (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()
print("labels", y.bincount().tolist())

counts = {}


def count_calls(module, inputs, output):
    counts[type(module).__name__] = counts.get(type(module).__name__, 0) + 1


handle = nn.modules.module.register_module_forward_hook(count_calls)
for epoch in range(4):
    model.train()
    perm = torch.randperm(24)
    total = 0.0
    for i in range(0, 24, 8):
        idx = perm[i:i + 8]
        logits = model(X[idx])
        loss = F.cross_entropy(logits, y[idx], label_smoothing=0.05)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    model.eval()
    with torch.no_grad():
        acc = (model(X).argmax(dim=1) == y).float().mean().item()
    print(f"epoch {epoch} loss {total / 3:.4f} acc {acc:.3f}")
handle.remove()
print("forward calls", dict(sorted(counts.items())))

vec = parameters_to_vector(model.parameters())
print("n params", vec.numel(), vec.shape, round(vec.norm().item(), 3))
vector_to_parameters(torch.zeros_like(vec), model.parameters())
print(model.fc2.bias, model.fc1.weight.abs().sum().item())
vector_to_parameters(vec, model.parameters())

model.zero_grad(set_to_none=False)
print([None if p.grad is None else float(p.grad.abs().sum()) for p in model.parameters()][:3])
model.zero_grad()
print([p.grad for p in model.parameters()][:2])

model.fc1.requires_grad_(False)
print([n for n, p in model.named_parameters() if p.requires_grad])
out = model(X[:2]).sum()
out.backward()
print(model.fc1.weight.grad is None, model.fc2.weight.grad.shape)
print("training:", model.training, model.fc1.training)
model.train()
print("training:", model.training, model.norm.training)
print(sum(p.numel() for p in model.parameters() if p.requires_grad))
