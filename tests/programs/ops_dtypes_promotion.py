"""Integer, boolean and float64 tensors: integer arithmetic, bitwise ops, promotion, conversions and printing."""
import torch

a = torch.tensor([7, -7, 10, 3])
b = torch.tensor([2, 2, 3, -2])
print(a // b, a % b, a / b, (a / b).dtype)
print(a // 2, a % 3, a * 2, a - 1, a ** 2, 2 ** torch.tensor([0, 1, 5]))
print(torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"), torch.fmod(a, b))
print(torch.remainder(a, 4), torch.floor_divide(a, 4))
print(7 % b, 7 // b, 7.5 % b, -a % 4, torch.tensor(5).nonzero().shape, torch.tensor(0).nonzero().shape)
print(a & 6, a | 1, a ^ b, ~a, a & b | 1)
print(torch.bitwise_and(a, b), torch.bitwise_or(a, b), torch.bitwise_xor(a, 3), torch.bitwise_not(b))

# promotion with Python numbers and other dtypes
print((a + 1.5).dtype, (a * 2).dtype, (a + True).dtype, (a / 2).dtype, (a.float() + a).dtype)
print((torch.tensor([1, 2], dtype=torch.int32) + 1).dtype, (torch.tensor([1], dtype=torch.int8) + 300).dtype)
print((torch.tensor([1.0]) + torch.tensor([1.0], dtype=torch.float64)).dtype)
print((torch.tensor([1, 2], dtype=torch.int32) + torch.tensor([1, 2])).dtype)
print((torch.tensor([1.0], dtype=torch.float16) * 2).dtype)
print((torch.tensor(2.0, dtype=torch.float64) * torch.ones(2)).dtype)
print(torch.result_type(a, 2.5), torch.promote_types(torch.int32, torch.float32))
print(a + 0.5, torch.tensor([1, 2]) * 0.1)

# conversions
f = torch.tensor([1.7, -1.7, 2.5, 0.0])
print(f.to(torch.int64), f.long(), f.int().dtype, f.to(torch.bool), f.round(), f.trunc(), f.floor(), f.ceil())
print(torch.tensor([0, 1, 2]).bool(), torch.tensor([True, False]).long(), f.double(), f.half())
print(f.to(dtype=torch.float64).dtype, f.type(torch.int32), f.dtype.is_floating_point, a.is_floating_point())
print(f[0].item(), a[2].item(), type(a[2].item()), type(f.sum().item()), torch.tensor(True).item())
print(a.tolist(), f.tolist(), torch.tensor([[True, False]]).tolist(), torch.tensor(3.5).tolist())
print(int(a[0]), float(f[1]), bool(torch.tensor([1])))

# booleans and comparisons
m = a > 0
print(m, m.dtype, m.sum(), m.float().mean(), ~m, m & (b > 0), m | (b > 0), m ^ (b > 0))
print(a == b, a != 7, a >= 3, a.eq(10), a.ne(b), a.lt(0), a.le(-7), torch.eq(a, b).any())
print(torch.logical_and(m, b > 0), torch.logical_not(m), torch.logical_or(m, b < 0), torch.logical_xor(m, m))
x = torch.tensor([1.0, 2.0, 3.0])
y = x + torch.tensor([1e-7, -1e-6, 1e-3])
print(torch.isclose(x, y), torch.allclose(x, y), torch.allclose(x, y, atol=1e-2), torch.equal(x, x.clone()))
print(torch.isclose(torch.tensor([float("nan")]), torch.tensor([float("nan")]), equal_nan=True))
print(torch.maximum(a, b), torch.minimum(a, b), a.abs(), a.sign(), a.neg(), a.clamp(min=0))

# printing of different dtypes and sizes
print(torch.tensor([1.5, 2.25], dtype=torch.float64), torch.tensor([1, 2], dtype=torch.int32))
print(torch.tensor([1, 2], dtype=torch.int16), torch.tensor([1, 2], dtype=torch.uint8))
print(torch.tensor([1.5], dtype=torch.float16))
print(torch.arange(1200), torch.arange(1500.0).reshape(30, 50))
print(torch.arange(2000) % 3 == 0)
print(torch.tensor([123456789.0, 1.0]), torch.tensor([1e-8, 1.0], dtype=torch.float64), torch.tensor([1000000, -5]))
torch.set_printoptions(precision=2)
print(torch.tensor([3.14159, 2.71828]), torch.tensor([1.0, 2.0]) / 3)
torch.set_printoptions(precision=8)
print(torch.tensor([1.0, 2.0], dtype=torch.float64) / 3, torch.tensor([0.1]))
torch.set_printoptions(precision=4)
print(torch.tensor([0.1, 0.25]))
