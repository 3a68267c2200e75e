"""Activation modules and their gradients: ReLU, LeakyReLU, Sigmoid, Tanh, GELU, ELU, Softplus, Softmax, LogSoftmax."""
import torch
import torch.nn as nn

x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
acts = [nn.ReLU(), nn.LeakyReLU(0.1), nn.Sigmoid(), nn.Tanh(), nn.GELU(), nn.ELU(), nn.Softplus(),
        nn.Softmax(dim=0), nn.LogSoftmax(dim=0), nn.SiLU(), nn.Hardtanh()]
for act in acts:
    x.grad = None
    y = act(x)
    (y * torch.arange(1.0, 6.0, dtype=torch.float64)).sum().backward()
    print(act)
    print("  y   :", y.detach())
    print("  grad:", x.grad)
    print("  fn  :", type(y.grad_fn).__name__)

relu = nn.ReLU()
print(relu(torch.tensor([[-1.0, 1.0]])), torch.relu(torch.tensor([-3.0, 3.0])))
print(nn.Softmax(dim=1)(torch.tensor([[1.0, 2.0, 3.0]])))
