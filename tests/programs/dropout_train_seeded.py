"""nn.Dropout in train mode after torch.manual_seed: zeroed entries and 1/(1-p) scaling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.ones(3, 6)
drop = nn.Dropout(p=0.5)
print(drop.training)
y = drop(x)
print(y)
print("kept:", int((y != 0).sum()))
print(F.dropout(x, p=0.25))

torch.manual_seed(0)
again = nn.Dropout(p=0.5)(x)
print(torch.equal(again, y))

w = torch.ones(6, requires_grad=True)
out = F.dropout(w * 2, p=0.5, training=True)
out.sum().backward()
print(out)
print(w.grad)
