"""Peeking at what each autograd node saved for backward (grad_fn._saved_*), and inference tensors in autograd."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(4, 3, requires_grad=True)
w = torch.randn(3, 2, requires_grad=True)
b = torch.zeros(2, requires_grad=True)

y = x * w.sum(1)
print(y.grad_fn.name(), y.grad_fn._saved_self is x, y.grad_fn._saved_other.shape)
print("scaled by a number:", (x * 0.5).grad_fn._saved_other, (x * 0.5).grad_fn._saved_self)

z = x.exp()
print("exp saves its result:", torch.equal(z.grad_fn._saved_result, z), z.grad_fn._saved_result is z)
print("pow:", x.pow(3).grad_fn._saved_exponent, (2 ** x).grad_fn._saved_self, x.pow(2).grad_fn._saved_self is x)
s = x.sum(1, keepdim=True)
print("sum:", s.grad_fn._saved_dim, s.grad_fn._saved_keepdim, s.grad_fn._saved_self_sym_sizes)
print("sum(-1):", x.sum(-1).grad_fn._saved_dim, "mean:", x.mean().grad_fn._saved_self_sym_numel)
print("relu:", torch.relu(x).grad_fn._saved_result.shape, "softmax dim:", F.softmax(x, dim=1).grad_fn._saved_dim)
print("log_softmax(-1) dim:", x.log_softmax(-1).grad_fn._saved_dim)
print("clamp:", x.clamp(min=0.0).grad_fn._saved_min, x.clamp(min=0.0).grad_fn._saved_max)

h = F.linear(x, w.t(), b)
g = h.grad_fn
print(g.name(), g._saved_mat1 is x, g._saved_mat1_sym_sizes, g._saved_mat2_sym_strides, g._saved_alpha)
mm = x.mm(w.detach())
print("mm with a constant:", mm.grad_fn._saved_self, mm.grad_fn._saved_mat2_sym_sizes,
      mm.grad_fn._saved_mat2_sym_strides)

rows = torch.tensor([2, 0])
picked = x[rows]
print("index:", picked.grad_fn._saved_indices[0] is rows, picked.grad_fn._saved_self_sym_sizes)
print("slice:", x[1:3].grad_fn._saved_start, x[1:3].grad_fn._saved_end, x[-1].grad_fn._saved_index)
print("view:", x.view(12).grad_fn._saved_self_sym_sizes)

target = torch.tensor([0, 1, 1, 0])
loss = F.cross_entropy(h, target)
print(loss.grad_fn.name(), loss.grad_fn._saved_target is target, loss.grad_fn._saved_ignore_index,
      loss.grad_fn._saved_total_weight, loss.grad_fn._saved_reduction)
saved_names = [a for a in dir(loss.grad_fn) if a.startswith("_saved_")]
print(saved_names)

mse = F.mse_loss(h, torch.ones(4, 2))
print("mse:", mse.grad_fn._saved_reduction, mse.grad_fn._saved_self.shape)
mse.backward()
try:
    _ = mse.grad_fn._saved_self
except RuntimeError as e:
    print("after backward:", str(e)[:80])
print("sizes survive:", s.grad_fn._saved_self_sym_sizes)

# a hook on one saved tensor: pack now, unpack when backward needs it
p = x * w[:, 0].sum()
p.grad_fn._raw_saved_self.register_hooks(lambda t: t * 1, lambda t: (print("  unpacking", tuple(t.shape)), t)[1])
p.sum().backward()
print("x.grad row 0:", x.grad[0])

with torch.inference_mode():
    frozen = torch.ones(4, 3)
print("frozen is inference:", frozen.is_inference())
print("add is fine:", (frozen + x).sum().item() > 0)
try:
    (frozen * x).sum().backward()
except RuntimeError as e:
    print("mul:", str(e)[:60])
(frozen.clone() * x).sum().backward()
print("with a clone:", x.grad.shape)
