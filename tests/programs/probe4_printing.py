"""Tensor printing: printoptions, big/small values, ints, bools, 0-d, empty, parameters and modules with extra_repr."""
import torch
import torch.nn as nn

print(torch.tensor(3.0), torch.tensor(-7), torch.tensor(True), torch.tensor(2.5, dtype=torch.float64))
print(torch.tensor([]), torch.zeros(0, 3), torch.empty(2, 0, dtype=torch.int64))
print(torch.tensor([1e-8, 1.0, 1e8]))
print(torch.tensor([1e-3, 2e-3]), torch.tensor([123456.0, 0.5]))
print(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.5, float("nan"), float("inf"), -float("inf")]))
print(torch.tensor([100000.0, 1.0]), torch.tensor([1e10, 1.0]), torch.tensor([0.0, -0.0]))
print(torch.arange(-3, 4), torch.tensor([True, False, True]))
print(torch.tensor([[1, 200], [-30000, 4]], dtype=torch.int16))
print(torch.tensor([1.25, 2.5], dtype=torch.float64), torch.tensor([1, 2], dtype=torch.uint8))
print(torch.arange(1500))
print(torch.arange(2000.0).reshape(40, 50))
print(torch.linspace(0, 1, 7).reshape(1, 7, 1))
print(torch.full((2, 3), 1 / 3))

torch.set_printoptions(precision=2)
print(torch.tensor([3.14159, 2.71828, 1.41421]))
torch.set_printoptions(sci_mode=True)
print(torch.tensor([3.14159, 200.0]))
torch.set_printoptions(sci_mode=False, precision=6)
print(torch.tensor([1e-6, 12345.678]))
torch.set_printoptions(threshold=5, edgeitems=2)
print(torch.arange(10), torch.arange(36).reshape(6, 6))
torch.set_printoptions(profile="default")
torch.set_printoptions(linewidth=40)
print(torch.arange(30.0))
torch.set_printoptions(profile="short")
print(torch.tensor([1.23456, 7.891]))
torch.set_printoptions(profile="full")
print(torch.arange(1005)[-6:])
torch.set_printoptions(profile="default")

x = torch.tensor([[0.5, -1.25], [2.0, 4.0]], requires_grad=True)
print(x)
print(x * 2)
print(x.sum(), x[0], x.mean(dim=1))
print(repr(x.detach()), str(x.detach().T))
print(torch.tensor([1.0, 2.0], dtype=torch.float16), torch.tensor([0.1, 65504.0], dtype=torch.float16))
p = nn.Parameter(torch.tensor([1.0, -2.0]))
print(p)
print(nn.Parameter(torch.ones(2), requires_grad=False))
print(repr(nn.Parameter(torch.tensor(0.5))))


class Scale(nn.Module):
    def __init__(self, factor, learnable=False):
        super().__init__()
        self.factor = factor
        self.learnable = learnable
        self.w = nn.Parameter(torch.ones(1)) if learnable else None

    def forward(self, x):
        return x * self.factor

    def extra_repr(self):
        return f"factor={self.factor}, learnable={self.learnable}"


class Multi(nn.Module):
    def extra_repr(self):
        return "first line\nsecond line"


net = nn.Sequential(
    nn.Conv2d(1, 4, kernel_size=3, padding=1, bias=False),
    nn.BatchNorm2d(4),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Dropout(p=0.25),
    Scale(0.5, learnable=True),
    nn.ModuleDict({"a": nn.LayerNorm(8), "b": nn.Embedding(10, 3, padding_idx=0)}),
    Multi(),
    nn.ModuleList([nn.GELU(approximate="tanh"), nn.LeakyReLU(0.2), nn.Softmax(dim=-1)]),
)
print(net)
print(nn.LSTM(4, 8, num_layers=2, batch_first=True, dropout=0.1))
print(nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16))
print(torch.Size([2, 3]), torch.zeros(2, 3).shape, torch.zeros(2, 3).size(1))
print(torch.tensor([0.1, 0.2]).dtype, torch.float32, torch.device("cpu"), torch.zeros(1).device)
print(f"{torch.tensor(2.5).item():.3f}", f"{torch.tensor(1.0)}", format(torch.tensor(3.25), ".1f"))
print(torch.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist(), torch.tensor(7).item())
