"""Old and new spellings: torch.device, a cuda-or-cpu device string, .to(device), FloatTensor, LongTensor, Variable."""
import torch
from torch.autograd import Variable

device = "cuda" if torch.cuda.is_available() else "cpu"
print(device)
dev = torch.device("cpu")
print(dev, dev.type, repr(dev))

x = torch.tensor([1.0, 2.0]).to(device)
print(x.device, x.is_cuda)
y = torch.ones(2, device=dev) * 3
print(y.to(dev, dtype=torch.double))
print(x.cpu(), x.to("cpu"))

f = torch.FloatTensor([1.5, 2.5])
l = torch.LongTensor([1, 2, 3])
t = torch.Tensor([[1, 2], [3, 4]])
print(f, f.dtype, f.type())
print(l, l.dtype, l.type())
print(t, t.dtype)
print(torch.Tensor(2, 3).shape)

print(torch.float, torch.double, torch.long, torch.int, torch.half)
print(torch.float is torch.float32, torch.double == torch.float64, torch.long is torch.int64)
z = torch.zeros(3, dtype=torch.long)
print(z, z.float(), z.double().dtype, f.long(), f.int(), t.type(torch.LongTensor))
print(torch.tensor(3).dtype, torch.tensor(3.0).dtype, torch.tensor(True).dtype)

v = Variable(torch.tensor([2.0, 3.0]), requires_grad=True)
print(v)
out = (v * v).sum()
out.backward()
print(v.grad, type(v).__name__, isinstance(v, torch.Tensor))

m = torch.nn.Linear(2, 1).to(device)
print(next(m.parameters()).device)
print(x.numpy(), torch.from_numpy(x.numpy()).dtype)
print(x.tolist(), l.sum().item(), type(l.sum().item()).__name__)
