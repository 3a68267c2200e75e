"""torch.autograd.functional.vjp, jvp, vhp and hvp: vector products without building the full Jacobian."""
import torch
import torch.autograd.functional as AF


def model(x):
    return torch.stack([x[0] * x[1], x[1] ** 2 - x[2], torch.tanh(x[2])])


x = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
u = torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)

out, vjp_val = AF.vjp(model, x, u)
print(out)
print(vjp_val)

out, jvp_val = AF.jvp(model, x, u)
print(jvp_val)
print(torch.allclose(jvp_val, AF.jacobian(model, x) @ u))


def loss(x):
    return (x ** 4).sum() + x[0] * x[2]


val, hv = AF.hvp(loss, x, u)
print(val)
print(hv)
val, vh = AF.vhp(loss, x, u)
print(vh)

s, g = AF.vjp(loss, x)
print(s, g)
