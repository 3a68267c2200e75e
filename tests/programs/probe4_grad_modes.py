"""Grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode) and dtype changes with .to / .type / .float."""
import torch
import torch.nn as nn

x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = x * 2
    with torch.enable_grad():
        z = x * 3
    print("inside no_grad:", torch.is_grad_enabled())
print(y.requires_grad, z.requires_grad, torch.is_grad_enabled())

with torch.set_grad_enabled(False):
    a = x + 1
print(a.requires_grad)
torch.set_grad_enabled(False)
b = x + 1
torch.set_grad_enabled(True)
print(b.requires_grad, (x + 1).requires_grad)

for flag in (True, False):
    with torch.set_grad_enabled(flag):
        print("flag", flag, (x * x).requires_grad)


@torch.no_grad()
def evaluate(t):
    return (t * 10).sum()


print(evaluate(x), evaluate(x).requires_grad)

with torch.inference_mode():
    c = x * 4
    print("inference", torch.is_inference_mode_enabled(), torch.is_grad_enabled())
print(c.requires_grad, c.is_inference(), x.is_inference(), torch.is_inference_mode_enabled())
with torch.inference_mode(False):
    print("mode off", torch.is_inference_mode_enabled(), (x * 2).requires_grad)


@torch.inference_mode()
def predict(m, t):
    return m(t)


torch.manual_seed(1)
net = nn.Linear(2, 1)
out = predict(net, torch.ones(1, 2))
print(out.requires_grad, out.is_inference(), out.shape)
try:
    c.add_(1)
except RuntimeError as e:
    print("RuntimeError:", e)

# dtype changes
i = torch.tensor([1, 2, 3])
print(i.dtype, i.float().dtype, i.to(torch.float64).dtype, i.to(dtype=torch.int8).dtype)
f = torch.tensor([1.7, -2.5, 3.49])
print(f.long(), f.int(), f.to(torch.int16), f.bool(), f.type(torch.int32))
print(f.type(), f.double().type(), i.type(), f.to(torch.uint8))
print(i / 2, i // 2, (i / 2).dtype, i.true_divide(2).dtype)
print((i + 0.5).dtype, (i * True).dtype, (i.to(torch.int8) + torch.tensor(3, dtype=torch.int16)).dtype)
print(torch.tensor([True, False]).sum(), torch.tensor([True, False]).float().mean())
w = torch.tensor([0.1, 0.2], requires_grad=True)
wd = w.double()
print(wd.dtype, wd.requires_grad, type(wd.grad_fn).__name__)
wd.sum().backward()
print(w.grad, w.grad.dtype)
same = w.to(torch.float32)
print(same is w, w.float() is w)
m = nn.Linear(2, 2).double()
print(m.weight.dtype, m(torch.ones(1, 2, dtype=torch.float64)).dtype)
m.to(torch.float32)
print(m.weight.dtype, m.bias.dtype)
print(torch.get_default_dtype(), torch.tensor(1.0).dtype, torch.tensor(1).dtype)
print(torch.finfo(torch.float32).eps, torch.iinfo(torch.int8).max, torch.finfo(torch.float64).tiny)
print(torch.promote_types(torch.int32, torch.float16), torch.can_cast(torch.float32, torch.int32))
print(torch.result_type(torch.tensor([1, 2]), 1.0), torch.is_floating_point(i), f.is_floating_point())
