"""torch.func.vmap: batching a per-example function with in_dims and out_dims."""
import torch
from torch.func import vmap


def dot(a, b):
    return (a * b).sum()


A = torch.arange(6.0).reshape(3, 2)
B = torch.tensor([[1.0, -1.0], [0.5, 0.5], [2.0, 0.0]])
print(vmap(dot)(A, B))

w = torch.tensor([0.5, 2.0])
print(vmap(dot, in_dims=(0, None))(A, w))
print(vmap(dot, in_dims=(1, 1))(A.T.contiguous(), B.T.contiguous()))


def affine(x, W, b):
    return W @ x + b


W = torch.tensor([[1.0, 2.0], [0.0, -1.0], [3.0, 1.0]])
b = torch.tensor([0.1, 0.2, 0.3])
batched = vmap(affine, in_dims=(0, None, None))
print(batched(A, W, b))
print(vmap(affine, in_dims=(0, None, None), out_dims=1)(A, W, b))

outer = vmap(vmap(torch.mul, in_dims=(None, 0)), in_dims=(0, None))
print(outer(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([10.0, 100.0])))


def stats(x):
    return x.mean(), x.max()


means, maxes = vmap(stats)(torch.tensor([[1.0, 5.0, 3.0], [-2.0, 0.0, 2.0]]))
print(means, maxes)
print(vmap(torch.sin)(torch.tensor([0.0, 1.0, 2.0])))
