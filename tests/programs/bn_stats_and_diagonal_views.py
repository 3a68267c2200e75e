"""Batch-norm statistics to the last bit, and writing through diagonal views (a tutorial-style check)."""
import torch
import torch.nn as nn

torch.manual_seed(0)

# --- BatchNorm1d: the running statistics after a few training-mode passes
bn = nn.BatchNorm1d(6)
for step in range(3):
    batch = torch.randn(20, 6) * (step + 1) + step
    out = bn(batch)
    print(f"step {step}: out.sum={out.sum().item():.9g} out.std={out.std().item():.9g}")
print("running_mean", [v.hex() for v in bn.running_mean.tolist()])
print("running_var ", [v.hex() for v in bn.running_var.tolist()])
print("batches tracked", bn.num_batches_tracked.item())

bn.eval()
test = torch.randn(4, 6)
print(bn(test))

# --- BatchNorm2d on images, double precision, cumulative average (momentum=None)
bn2 = nn.BatchNorm2d(3, momentum=None, dtype=torch.float64)
for _ in range(2):
    imgs = torch.randn(5, 3, 7, 7, dtype=torch.float64)
    y = bn2(imgs)
print("bn2 mean", [v.hex() for v in bn2.running_mean.tolist()])
print("bn2 var ", [v.hex() for v in bn2.running_var.tolist()])
print("bn2 out corner", y[0, :, 0, 0].tolist())

# --- diagonal views: writes reach the matrix
m = torch.zeros(4, 4)
m.diagonal().fill_(2.0)
m.diagonal(1).add_(torch.arange(3.0))
m.diagonal(-1).copy_(torch.tensor([-1.0, -2.0, -3.0]))
print(m)
d = m.diagonal()
print("diag stride", d.stride(), "contiguous", d.is_contiguous())
m[2, 2] = 9.0
print("view sees base write:", d.tolist())

batch = torch.ones(2, 3, 3)
torch.diagonal(batch, dim1=1, dim2=2).mul_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
print(batch)

# --- gradient through a write into a diagonal
w = torch.randn(3, 3, requires_grad=True)
a = w.clone()
a.diagonal().mul_(3.0)
a.diagonal().add_(w.sum(0))
loss = (a * a).sum()
loss.backward()
print(a.grad_fn.name(), f"loss={loss.item():.6f}")
print(w.grad)
