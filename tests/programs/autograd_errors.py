"""Errors tutorials show: backward twice, in-place on a leaf, .grad of a non-leaf, backward of no-grad tensor."""
import warnings

import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x.exp() * x).sum()
y.backward()
try:
    y.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0][:60])

leaf = torch.ones(2, requires_grad=True)
try:
    leaf.add_(1)
except RuntimeError as e:
    print("RuntimeError:", e)

with torch.no_grad():
    leaf.add_(1)
print(leaf)

plain = torch.tensor([1.0, 2.0])
try:
    (plain * 2).sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)

h = leaf * 2
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("non-leaf grad:", h.grad)
print("warnings:", len(caught), caught[0].category.__name__ if caught else None)

try:
    torch.tensor([1, 2, 3], requires_grad=True)
except RuntimeError as e:
    print("RuntimeError:", e)
