"""Summary statistics, numerics checks and small helpers on a toy dataset of exam scores."""
import torch

scores = torch.tensor([[62.0, 71.5, 88.0, 45.0, 93.5, 70.0],
                       [55.0, 80.0, 79.5, 60.0, 91.0, 66.5],
                       [70.5, 68.0, 90.0, 52.5, 85.0, 74.0]])

print("float32 eps:", torch.finfo(torch.float32).eps)
print(torch.finfo(torch.float64))
print(torch.iinfo(torch.int64).max, torch.iinfo(torch.uint8))
print("is float:", torch.is_floating_point(scores), torch.can_cast(torch.float32, torch.int32))

print("median-ish per exam:", torch.quantile(scores, 0.5, dim=1))
print("quartiles overall:", torch.quantile(scores, torch.tensor([0.25, 0.5, 0.75])))
q = torch.quantile(scores, 0.9, dim=0, keepdim=True, interpolation="nearest")
print(q, q.shape)
with_gap = scores.clone()
with_gap[1, 2] = float("nan")
print("nanquantile:", torch.nanquantile(with_gap, 0.5, dim=1))

print("cov:\n", torch.cov(scores))
print("corrcoef:\n", torch.corrcoef(scores))
print("weighted cov:\n", torch.cov(scores, fweights=torch.tensor([1, 2, 1, 1, 3, 1])))

best = torch.cummax(scores[0], dim=0)
print(best)
print("running worst:", torch.cummin(scores, dim=1).values)

grades = torch.bucketize(scores, torch.tensor([50.0, 65.0, 80.0]))
print("grade counts:", torch.bincount(grades.flatten(), minlength=4))
print("passed:", torch.isin(grades, torch.tensor([2, 3])))
print("all passed 50:", torch.all(scores > 50, dim=1), torch.any(scores > 90))
print("top cells:", torch.argwhere(scores > 88))
print("runs:", torch.unique_consecutive(torch.tensor([3, 3, 1, 1, 1, 2, 3, 3]), return_counts=True))

t = torch.linspace(0, 1, 5)
y = t ** 2
print("area:", torch.trapezoid(y, t), torch.trapezoid(y, dx=0.25))
print("cumulative:", torch.cumulative_trapezoid(y, t))

x = torch.tensor([0.2, -1.5, 3.0, 0.0], requires_grad=True)
out = torch.clamp_min(x, 0.0) + torch.fmax(x, torch.tensor([1.0, float("nan"), 2.0, 0.5]))
out = out + torch.logit(torch.sigmoid(x), eps=1e-6) + torch.copysign(x, -1.0)
print(out)
out.sum().backward()
print("grad:", x.grad)

w = torch.tensor([[3.0, 4.0], [0.3, 0.4]], requires_grad=True)
r = torch.renorm(w, 2, 0, 1.0)
print(r)
(r * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
print(w.grad)

a = torch.arange(6.0).reshape(2, 3)
print(torch.tensordot(a, a, dims=([1], [1])), torch.inner(a, a[0]))
print(torch.rot90(a), torch.take(a, torch.tensor([0, 5, -2])))
print(torch.tril_indices(3, 3), torch.combinations(torch.tensor([1, 2, 3])))
print(torch.cartesian_prod(torch.tensor([0, 1]), torch.tensor([5, 6])))
print(torch.vander(torch.tensor([1.0, 2.0, 3.0]), N=3))
print(torch.hsplit(a, 3)[2], torch.index_fill(a, 1, torch.tensor([0]), -1.0))
print(torch.unravel_index(torch.tensor([4, 1]), (2, 3)))
print(torch.broadcast_tensors(torch.tensor([1.0, 2.0]), torch.zeros(3, 1))[0])

torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
try:
    torch.testing.assert_close(scores[0], scores[0] + torch.tensor([0, 0, 0.01, 0, 0, 0]))
except AssertionError as err:
    print(err)
