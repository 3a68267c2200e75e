"""nn.Dropout and F.dropout are the identity in eval mode / with training=False."""
import torch
import torch.nn as nn
import torch.nn.functional as F

x = torch.arange(1.0, 9.0).reshape(2, 4)
drop = nn.Dropout(p=0.5)
print(drop)
drop.eval()
y = drop(x)
print(y)
print(torch.equal(x, y))
print(F.dropout(x, p=0.3, training=False))

model = nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.9), nn.Linear(3, 1))
with torch.no_grad():
    model[0].weight.fill_(0.5)
    model[0].bias.fill_(-1.0)
    model[2].weight.copy_(torch.tensor([[1.0, -1.0, 2.0]]))
    model[2].bias.zero_()
model.eval()
with torch.no_grad():
    print(model(x))
print(nn.Dropout(p=0.0)(x))
