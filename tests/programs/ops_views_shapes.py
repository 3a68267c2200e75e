"""Reshaping without copying: views, strides, contiguity, squeezing, expanding, splitting and joining tensors."""
import torch

x = torch.arange(12.0)
v = x.view(3, 4)
print(v, v.shape, v.stride(), v.is_contiguous())
v[0, 0] = 100.0
print(x[:3])
t = v.t()
print(t.shape, t.stride(), t.is_contiguous(), t.contiguous().stride())
print(v.reshape(2, 6), v.reshape(-1, 3).shape, v.view(-1).shape)
p = torch.arange(24).reshape(2, 3, 4).permute(2, 0, 1)
print(p.shape, p.stride(), p.is_contiguous())
print(p[1])
print(torch.arange(24).reshape(2, 3, 4).transpose(0, 2).stride(), v.stride(1))
try:
    t.view(12)
except RuntimeError as e:
    print("view failed:", str(e)[:60])
print(t.reshape(12))

a = torch.tensor([1.0, 2.0, 3.0])
print(a.unsqueeze(0), a.unsqueeze(1), a.unsqueeze(-1).shape)
b = torch.zeros(1, 3, 1, 2)
print(b.squeeze().shape, b.squeeze(0).shape, b.squeeze(2).shape, b.squeeze(1).shape)
print(b.flatten().shape, b.flatten(1).shape, b.flatten(1, 2).shape)
print(torch.arange(12).unflatten(0, (3, 4)))
print(torch.arange(6).reshape(2, 3).unflatten(1, (3, 1)).shape)

# expand / repeat / tile
c = torch.tensor([[1], [2]])
print(c.expand(2, 3), c.expand(-1, 4).stride())
print(c.repeat(2, 3))
print(torch.tile(torch.tensor([1, 2]), (2, 2)))
print(a.expand(2, 3).is_contiguous(), a.repeat(2).shape)

# chunk / split / unbind
m = torch.arange(10)
print(m.chunk(3))
print(m.split(4))
print(m.split([2, 3, 5]))
print(torch.arange(6).reshape(2, 3).unbind(1))
print([q.shape for q in torch.zeros(5, 2).chunk(2, dim=0)])

# cat / stack
u = torch.tensor([[1, 2], [3, 4]])
w = torch.tensor([[5, 6]])
print(torch.cat([u, w]), torch.cat([u, u], dim=1))
print(torch.stack([a, a * 2]), torch.stack([a, a * 2], dim=1))
print(torch.hstack([a, a]), torch.vstack([a, a]))
print(torch.cat([u, w.float()]).dtype)

# flip / roll / tril / triu / diag
s = torch.arange(9).reshape(3, 3)
print(s.flip(0), torch.flip(s, [0, 1]))
print(torch.roll(m, 3), torch.roll(s, 1, dims=0), torch.roll(s, shifts=(1, -1), dims=(0, 1)))
print(torch.tril(s), torch.triu(s, diagonal=1), s.tril(-1))
print(torch.diag(s), torch.diag(torch.tensor([1.0, 2.0])), s.diagonal(1))
print(torch.diag(a, 1))
print(torch.eye(3).tril().sum(), torch.ones(3, 3).triu().sum(0))
