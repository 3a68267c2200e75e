"""Seeded random initialisers: uniform_, normal_, xavier_uniform_, xavier_normal_, kaiming_uniform_, kaiming_normal_."""
import torch
import torch.nn as nn

torch.manual_seed(42)
w = torch.empty(3, 4)
nn.init.uniform_(w, a=-0.1, b=0.1)
print(w)
nn.init.normal_(w, mean=0.0, std=0.02)
print(w)
nn.init.xavier_uniform_(w)
print(w)
nn.init.xavier_normal_(w, gain=nn.init.calculate_gain("tanh"))
print(w)
nn.init.kaiming_uniform_(w, nonlinearity="relu")
print(w)
nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
print(w)
nn.init.trunc_normal_(w, std=0.5)
print(w.abs().max() <= 2)

torch.manual_seed(0)
layer = nn.Linear(4, 2)
print(layer.weight)
print(layer.bias)
