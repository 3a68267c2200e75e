"""Mini-batches from a TensorDataset: random_split, a shuffling DataLoader, nn.Linear + cross-entropy + SGD."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(42)

x = torch.randn(60, 4)
labels = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()
dataset = TensorDataset(x, labels)
train_set, val_set = random_split(dataset, [0.8, 0.2])
print(len(train_set), len(val_set), val_set.indices[:5])

train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
val_loader = DataLoader(val_set, batch_size=16)
print(len(train_loader), len(val_loader))

model = nn.Linear(4, 3)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)

for epoch in range(4):
    model.train()
    seen = []
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        seen.append(yb[:3].tolist())
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in val_loader:
            correct += (model(xb).argmax(dim=1) == yb).sum().item()
    print(f"epoch {epoch}: last loss {loss.item():.4f}, val accuracy {correct}/{len(val_set)}, first labels {seen[0]}")

first_x, first_y = next(iter(train_loader))
print(first_x.shape, first_y.dtype, first_y)
print(torch.randn(3))
