"""Gradients through indexing and selection: gather, masks, where, sort/topk values, cumsum, scatter and slicing."""
import torch

logits = torch.tensor([[1.0, 2.0, 0.5], [0.3, -1.0, 2.5], [0.0, 0.0, 1.0]], requires_grad=True)
target = torch.tensor([1, 2, 0])
logp = logits.log_softmax(dim=1)
nll = -logp.gather(1, target.unsqueeze(1)).mean()
nll.backward()
print(nll, logits.grad)

x = torch.tensor([-2.0, -0.5, 0.0, 1.5, 3.0], requires_grad=True)
y = torch.where(x > 0, x ** 2, -x)
y.sum().backward()
print(y, x.grad)

x.grad = None
z = x.masked_fill(x < 0, 0.0) * 3
z.sum().backward()
print(z, x.grad)

x.grad = None
sel = x[x.abs() > 1]
(sel ** 3).sum().backward()
print(sel, x.grad)

x.grad = None
vals, idx = x.sort(descending=True)
(vals * torch.arange(5.0)).sum().backward()
print(vals, idx, x.grad)

x.grad = None
top = x.topk(2).values
top.sum().backward()
print(top, x.grad)

x.grad = None
c = x.cumsum(0)
(c * c).sum().backward()
print(c, x.grad)

w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
out = w[:, 1] * 2 + w[0].sum()
out.sum().backward()
print(out, w.grad)

src = torch.tensor([5.0, 6.0, 7.0], requires_grad=True)
base = torch.zeros(4, requires_grad=True)
placed = base.scatter(0, torch.tensor([3, 0, 1]), src)
(placed * torch.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
print(placed, base.grad, src.grad)

m = torch.tensor([[2.0, -1.0], [0.5, 4.0]], requires_grad=True)
mx = m.max(dim=1).values.sum() + m.amin() + m.clamp(0.0, 3.0).sum()
mx.backward()
print(mx, m.grad)

p = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
q = p.index_select(0, torch.tensor([0, 0, 3])).prod()
q.backward()
print(q, p.grad)
p.grad = None
r = torch.stack([p[:2], p[2:]]).t().reshape(-1).flip(0)
(r * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
print(r, r.grad_fn.name(), p.grad)
p.grad = None
e = torch.einsum("i,i->", p, p.detach().roll(1)) + p.cumprod(0)[-1]
e.backward()
print(e, p.grad)
