"""Module hooks: register_forward_hook capturing activations, register_forward_pre_hook, handle.remove()."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
with torch.no_grad():
    model[0].weight.copy_(torch.linspace(-1, 1, 12).reshape(4, 3))
    model[0].bias.fill_(0.1)
    model[2].weight.copy_(torch.linspace(0.5, -0.5, 8).reshape(2, 4))
    model[2].bias.fill_(0.0)

activations = {}


def save_output(name):
    def hook(module, inputs, output):
        activations[name] = output.detach()
        print(f"forward hook {name}: {type(module).__name__} in={tuple(inputs[0].shape)} out={tuple(output.shape)}")
    return hook


def pre_hook(module, inputs):
    print("pre-hook sees:", inputs[0])


handles = [model[i].register_forward_hook(save_output(f"layer{i}")) for i in range(3)]
pre = model.register_forward_pre_hook(pre_hook)
x = torch.tensor([[-1.0, 0.5, 2.0]])
out = model(x)
print(out)
for k, v in activations.items():
    print(k, v)

for hdl in handles:
    hdl.remove()
pre.remove()
activations.clear()
model(x)
print("after remove:", activations)


def double_output(module, inputs, output):
    return output * 2


model[2].register_forward_hook(double_output)
print(model(x))
