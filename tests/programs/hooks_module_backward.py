"""register_full_backward_hook on nn modules: grad_input and grad_output of each layer during backward."""
import torch
import torch.nn as nn

lin = nn.Linear(2, 2)
with torch.no_grad():
    lin.weight.copy_(torch.tensor([[1.0, 2.0], [-1.0, 0.5]]))
    lin.bias.copy_(torch.tensor([0.0, 1.0]))
act = nn.Tanh()
model = nn.Sequential(lin, act)


def report(module, grad_input, grad_output):
    print(type(module).__name__)
    print("  grad_output:", grad_output)
    print("  grad_input:", grad_input)


h1 = lin.register_full_backward_hook(report)
h2 = act.register_full_backward_hook(report)

x = torch.tensor([[0.5, -0.25]], requires_grad=True)
out = model(x)
out.sum().backward()
print("x.grad:", x.grad)
print("weight.grad:", lin.weight.grad)

h1.remove()
h2.remove()


def halve(module, grad_input, grad_output):
    return tuple(g / 2 if g is not None else None for g in grad_input)


act.register_full_backward_hook(halve)
x.grad = None
model(x).sum().backward()
print("x.grad with halving hook:", x.grad)
