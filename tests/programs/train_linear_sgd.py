"""nn.Linear + nn.MSELoss + optim.SGD on a line, with the layer initialised by nn.init so the run is exact."""
import torch
import torch.nn as nn
from torch import optim

x = torch.arange(10, dtype=torch.float32).unsqueeze(1) / 10
y = 2 * x - 1

model = nn.Linear(1, 1)
nn.init.constant_(model.weight, 0.3)
nn.init.zeros_(model.bias)
print(model)
print(model.weight)
print(model.bias)

criterion = nn.MSELoss()
optimizer = optim.SGD(model.parameters(), lr=0.5)

for epoch in range(60):
    optimizer.zero_grad()
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    if epoch % 10 == 0:
        print(f"epoch {epoch} loss {loss.item():.5f}")

print(model.weight.data, model.bias.data)
with torch.no_grad():
    print(model(torch.tensor([[0.5], [2.0]])))
print(model.weight.grad)
