"""A custom residual MLP built from nn.ModuleList, nn.ParameterList and a registered buffer, trained a few steps."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class ResidualStack(nn.Module):
    def __init__(self, dim=4, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.gates = nn.ParameterList([nn.Parameter(torch.full((dim,), 0.5)) for _ in range(depth)])
        self.register_buffer("step_count", torch.zeros((), dtype=torch.long))
        self.register_buffer("running_norm", torch.ones(1))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        for block, gate in zip(self.blocks, self.gates):
            x = x + gate * torch.relu(block(x))
        if self.training:
            self.step_count += 1
            self.running_norm.mul_(0.9).add_(0.1 * x.detach().norm())
        return self.out(x)


model = ResidualStack()
print(model)
print(model.gates)
for name, p in model.named_parameters():
    print(f"{name:16s} {tuple(p.shape)} requires_grad={p.requires_grad}")
for name, b in model.named_buffers():
    print(name, b)
print(list(model.state_dict().keys()))
print(len(model.blocks), model.blocks[1], model.gates[2])

x = torch.randn(10, 4)
y = x.sum(dim=1, keepdim=True)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(6):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f} norm {model.running_norm.item():.4f}")
print(model.step_count, model.running_norm)
print(model.gates[0].grad)
print(model.gates[0])
print(model.blocks[0].weight.grad)

model.eval()
with torch.no_grad():
    print(model(x[:2]))
print(model.step_count)

model.blocks.append(nn.Linear(4, 4))
model.gates.append(nn.Parameter(torch.zeros(4)))
print(len(list(model.parameters())), [n for n, _ in model.named_children()])
model.double()
print(model.running_norm.dtype, model.step_count.dtype, model.gates[3].dtype)
print({n: m.__class__.__name__ for n, m in model.named_modules()})
print(model.get_buffer("running_norm"), model.get_parameter("gates.1"))
