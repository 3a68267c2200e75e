"""A regression net with a weight-normed hidden layer and a spectral-normed output layer, trained with Adam."""
import torch
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm, weight_norm

torch.manual_seed(0)

t = torch.linspace(-2, 2, 32)
x = torch.stack([t, t * t / 4], dim=1)
y = (torch.sin(2 * t) + 0.3 * t).unsqueeze(1)

model = nn.Sequential(
    weight_norm(nn.Linear(2, 8)),
    nn.Tanh(),
    spectral_norm(nn.Linear(8, 1)),
)
print(model)
for name, p in model.named_parameters():
    print(name, tuple(p.shape))
print("buffers:", [name for name, _ in model.named_buffers()])
print("parametrized:", parametrize.is_parametrized(model[0]), parametrize.is_parametrized(model[2], "bias"))

opt = torch.optim.Adam(model.parameters(), lr=0.05)
loss_fn = nn.MSELoss()
for step in range(20):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"step {step:2d} loss {loss.item():.5f}")

out = model[2]
sigma = torch.linalg.matrix_norm(out.weight.detach(), 2)
print("spectral norm of the output weight:", round(sigma.item(), 4))
print("g of the hidden layer:", model[0].parametrizations.weight.original0.detach().flatten()[:4])
print("u:", out.parametrizations.weight[0]._u)

model.eval()
with torch.no_grad(), parametrize.cached():
    pred = model(torch.tensor([[0.5, 0.0625], [1.5, 0.5625]]))
print("eval predictions:", pred.flatten())

parametrize.remove_parametrizations(model[0], "weight")
parametrize.remove_parametrizations(model[2], "weight")
print(type(model[0]).__name__, type(model[2]).__name__)
print(list(model.state_dict().keys()))
with torch.no_grad():
    print("same predictions after removal:", model(torch.tensor([[0.5, 0.0625], [1.5, 0.5625]])).flatten())
