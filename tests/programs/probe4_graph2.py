"""More autograd graph inspection: grad_fn chains for common ops, saved tensors, metadata, node hooks, errors."""
import torch

a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
b = torch.tensor([0.5, -0.5], requires_grad=True)


def chain(t, depth=0, seen=None):
    seen = set() if seen is None else seen
    fn = t.grad_fn if depth == 0 else t
    if fn is None:
        return
    print("  " * depth + type(fn).__name__)
    if id(fn) in seen:
        return
    seen.add(id(fn))
    for nxt, _ in fn.next_functions:
        if nxt is not None:
            chain(nxt, depth + 1, seen)


out = ((a @ b).relu() + a.sum(dim=0).exp()).mean()
chain(out)
out2 = torch.cat([a.t(), a[:, :1]], dim=1).view(-1).pow(2).max()
chain(out2)
out3 = torch.where(a > 2, a.sin(), a.cos() * b).norm()
chain(out3)
out4 = torch.stack([b, b * 2]).softmax(dim=0)[1].sum() / a.numel()
chain(out4)

print(out.grad_fn.metadata, out.grad_fn.name())

calls = []
h = out.grad_fn.register_hook(lambda gin, gout: calls.append(("post", len(gin), len(gout))))
h2 = out.grad_fn.register_prehook(lambda gout: calls.append(("pre", gout[0].item())))
out.backward(retain_graph=True)
print(calls)
h.remove()
h2.remove()
print(a.grad, b.grad)

try:
    out.backward()
    out.backward()
    print("twice ok with retain_graph earlier")
except RuntimeError as e:
    print("RuntimeError:", str(e)[:120])

z = a * 2
try:
    z.backward()
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.autograd.grad(z.sum(), b)
except RuntimeError as e:
    print("RuntimeError:", e)
print(torch.autograd.grad(z.sum(), [a, b], allow_unused=True))
z = a * 2
print(torch.autograd.grad(z.sum(), [a, b], allow_unused=True, materialize_grads=True))
z = a * 2
c = torch.tensor([1, 2])
try:
    c.requires_grad_()
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.ones(2).backward()
except RuntimeError as e:
    print("RuntimeError:", e)
z.backward(torch.ones(2, 2) * 0.5)
print(a.grad)
a.grad.zero_()
w = a.clone()
w[0, 0] = 10.0
print(type(w.grad_fn).__name__, [type(f).__name__ for f, _ in w.grad_fn.next_functions])
w.sum().backward()
print(a.grad)
e = a.expand(3, 2, 2)
print(type(e.grad_fn).__name__, e.shape, e.stride())
u = a.unbind(0)
print([type(t.grad_fn).__name__ for t in u])
q = a.split(1, dim=1)
print([type(t.grad_fn).__name__ for t in q], [t.grad_fn is q[0].grad_fn for t in q])
