"""torch.autograd.backward on several outputs with grad_tensors, and backward(inputs=[...]) to fill only some leaves."""
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor(0.5, requires_grad=True)

y1 = (w * 3).sum() + b
y2 = w ** 2
torch.autograd.backward([y1, y2], [torch.tensor(1.0), torch.tensor([1.0, 0.5])])
print(w.grad, b.grad)

w.grad = None
b.grad = None
loss = (w * b).sum() ** 2
loss.backward(inputs=[w])
print("only w:", w.grad, b.grad)
loss2 = (w * b).sum() ** 2
loss2.backward(inputs=[b])
print("then only b:", w.grad, b.grad)

z = w.exp()
z.backward(torch.ones_like(z), retain_graph=True)
print(w.grad)
torch.autograd.backward(z.sum())
print(w.grad)
