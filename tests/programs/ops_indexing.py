"""Indexing a tensor: slices, steps, negative indices, boolean masks, integer arrays, and writing through them."""
import torch

x = torch.arange(24).reshape(4, 6)
print(x)
print(x[1], x[-1], x[1, 2], x[-1, -2])
print(x[1:3])
print(x[:, 2:5])
print(x[::2, ::3])
print(x[1:, -3:])
print(x[..., 0])
print(x[None, 0].shape, x[:, None].shape)
print(x[0, 1:5:2])

# boolean masks
mask = x % 5 == 0
print(mask)
print(x[mask])
print(x[x > 18])
rows = torch.tensor([True, False, True, False])
print(x[rows])
print(x[:, torch.tensor([False, True, True, False, False, True])])

# integer-array (advanced) indexing
idx = torch.tensor([3, 0, 2])
print(x[idx])
print(x[idx, idx + 1])
print(x[torch.tensor([[0, 1], [2, 3]]), 0])
print(x[[0, 2], 1:4])
print(x[1:3, [0, -1]])
print(x[torch.tensor([-1, -2])])
cube = torch.arange(24).reshape(2, 3, 4)
print(cube[0, :, [1, 2]], cube[1, :, [0, 3]].shape, cube[:, 1, [0, 2]], cube[..., [0, -1]].shape)
print(cube[:, [2, 0]].stride(), cube.flip(2).stride(), cube[:, :, [True, False, True, False]].is_contiguous())

# writing through indices
y = torch.zeros(3, 4)
y[0] = 1.0
y[1, 2:] = torch.tensor([5.0, 6.0])
y[:, 0] += 2.0
y[y == 0] = -1.0
print(y)
y[torch.tensor([0, 2]), torch.tensor([3, 1])] = 9.0
print(y)
counts = torch.zeros(3, 3, dtype=torch.long)
for i, j in [(0, 1), (2, 2), (0, 1), (1, 0)]:
    counts[i, j] += 1
counts[torch.tensor(2), torch.tensor(0)] += 5
print(counts)

z = torch.zeros(5)
z.index_put_((torch.tensor([0, 2, 2]),), torch.tensor([1.0, 2.0, 3.0]), accumulate=True)
print(z)
z.index_put_((torch.tensor([4]),), torch.tensor(7.0))
print(z)

f = torch.arange(6.0).reshape(2, 3)
print(f.masked_fill(f > 2, 0.5))
g = f.clone()
g.masked_fill_(g < 1, -3.0)
print(g)
src = torch.tensor([10.0, 20.0, 30.0, 40.0])
print(f.masked_scatter(f > 1.5, src))

# where, nonzero, clamp
print(torch.where(f > 2, f, torch.zeros_like(f)))
print(torch.where(f > 2, f, -1.0))
print(torch.where(x > 20))
print(torch.nonzero(x % 7 == 0))
print(torch.nonzero(torch.tensor([0, 3, 0, 4]), as_tuple=True))
print((x % 7 == 0).nonzero().shape)
print(f.clamp(1.0, 4.0), f.clamp(min=2.5), f.clamp(max=1))
print(x.clamp(3, 10)[0])
print(torch.clamp(f, min=torch.tensor([0.0, 1.5, 3.0])))
