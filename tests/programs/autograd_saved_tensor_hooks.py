"""Watching what autograd saves for backward with saved_tensors_hooks, plus hook handles and old spectral_norm."""
import torch
from torch import nn

torch.manual_seed(1)

packed = []


def pack(t):
    packed.append(tuple(t.shape))
    return t


def unpack(t):
    print("  backward reads a tensor of shape", tuple(t.shape))
    return t


w = torch.randn(3, 4, requires_grad=True)
x = torch.randn(2, 3)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    h = (x @ w).tanh()
    loss = (h * h).sum()
print("saved during forward:", packed)
loss.backward()
print("w.grad:", w.grad)

# a pack hook that keeps half precision copies
with torch.autograd.graph.saved_tensors_hooks(lambda t: t.half(), lambda t: t.float()):
    y = (w.sin() * 3).sum()
w.grad = None
y.backward()
print("grad through half-precision saves:", w.grad[0])

# save_on_cpu is a no-op on a CPU-only machine, but the results are the same
with torch.autograd.graph.save_on_cpu():
    z = (w.exp() * w).mean()
z.backward()
print("after save_on_cpu:", w.grad[1])

# the handle returned by register_forward_hook removes the hook
layer = nn.utils.spectral_norm(nn.Linear(4, 2))
print(layer, [name for name, _ in layer.named_buffers()], sorted(layer.state_dict()))
calls = []
handle = layer.register_forward_hook(lambda mod, inp, out: calls.append(tuple(out.shape)))
print(isinstance(handle, torch.utils.hooks.RemovableHandle), type(handle).__name__)
layer(torch.ones(5, 4))
handle.remove()
layer(torch.ones(5, 4))
with layer.register_forward_pre_hook(lambda mod, inp: calls.append("pre")):
    out = layer(torch.ones(1, 4))
layer(torch.ones(1, 4))
print("hook calls:", calls)
print("u, v:", layer.weight_u, layer.weight_v)
print("output:", out)
layer.eval()
print("eval output:", layer(torch.ones(1, 4)))
nn.utils.remove_spectral_norm(layer)
print(sorted(layer.state_dict()), layer.weight)
