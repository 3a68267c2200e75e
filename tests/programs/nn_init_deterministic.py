"""nn.init functions that draw no random numbers: constant_, zeros_, ones_, eye_, dirac_, calculate_gain."""
import torch
import torch.nn as nn

w = torch.empty(2, 3)
nn.init.constant_(w, 0.7)
print(w)
nn.init.zeros_(w)
print(w)
nn.init.ones_(w)
print(w)
nn.init.eye_(w)
print(w)

k = torch.empty(2, 2, 3)
nn.init.dirac_(k)
print(k)

for nl in ["linear", "sigmoid", "tanh", "relu"]:
    print(nl, nn.init.calculate_gain(nl))
print("leaky_relu", nn.init.calculate_gain("leaky_relu", 0.2))

layer = nn.Linear(3, 2)
out = nn.init.constant_(layer.weight, -0.5)
print(out is layer.weight)
print(layer.weight)
print(layer.weight.requires_grad, layer.weight.grad_fn)
nn.init.zeros_(layer.bias)
print(layer(torch.tensor([1.0, 2.0, 3.0])))
