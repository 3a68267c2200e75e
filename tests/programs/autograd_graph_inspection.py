"""Walking the recorded graph: grad_fn, next_functions, AccumulateGrad and variable."""
import torch

w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
b = torch.tensor([0.5, -0.5], requires_grad=True)
x = torch.tensor([1.0, -1.0])

z = torch.matmul(w, x) + b
loss = torch.sigmoid(z).sum()
print(loss.grad_fn)
print(loss.grad_fn.name())


def walk(fn, depth=0):
    print("  " * depth + type(fn).__name__)
    for nxt, _ in fn.next_functions:
        if nxt is not None:
            walk(nxt, depth + 1)


walk(loss.grad_fn)

acc = z.grad_fn.next_functions[1][0]
print(type(acc).__name__, acc.variable is b)
print(z.grad_fn.next_functions[0][0])
