"""A small MLP (nn.Sequential of Linear/Tanh/Linear) fit to sin(3x) with Adam, initialised after torch.manual_seed."""
import torch
import torch.nn as nn
from torch import optim

torch.manual_seed(0)

x = torch.linspace(-1, 1, 32).unsqueeze(1)
y = torch.sin(3 * x)

model = nn.Sequential(
    nn.Linear(1, 16),
    nn.Tanh(),
    nn.Linear(16, 1),
)
print(model)
print(model[0].weight[:3])

optimizer = optim.Adam(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()
for step in range(200):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 50 == 0 or step == 199:
        print(f"step {step}: loss {loss.item():.5f}")

with torch.no_grad():
    print(model(torch.tensor([[-0.5], [0.0], [0.5]])))
