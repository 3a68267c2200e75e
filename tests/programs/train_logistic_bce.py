"""Logistic regression: nn.Linear(2, 1) with BCEWithLogitsLoss and SGD with momentum on two separable clusters."""
import torch
import torch.nn as nn
import torch.optim as optim

pos = torch.tensor([[2.0, 1.5], [1.5, 2.5], [3.0, 2.0], [2.5, 3.0]])
neg = torch.tensor([[-1.0, -0.5], [-2.0, -1.5], [-0.5, -2.0], [-1.5, 0.5]])
X = torch.cat([pos, neg])
y = torch.cat([torch.ones(4), torch.zeros(4)]).unsqueeze(1)

model = nn.Linear(2, 1)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[0.1, -0.2]]))
    model.bias.fill_(0.05)

loss_fn = nn.BCEWithLogitsLoss()
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for epoch in range(50):
    opt.zero_grad()
    logits = model(X)
    loss = loss_fn(logits, y)
    loss.backward()
    opt.step()
    if epoch % 10 == 9:
        with torch.no_grad():
            acc = ((logits > 0).float() == y).float().mean()
        print(f"epoch {epoch + 1}: loss={loss.item():.4f} acc={acc.item():.2f}")

with torch.no_grad():
    probs = torch.sigmoid(model(X))
print(probs.squeeze())
print(model.weight, model.bias, sep="\n")
