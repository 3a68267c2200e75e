"""One small regression trained with SGD (momentum, nesterov, weight decay), AdamW, RMSprop, NAdam, RAdam, groups."""
import torch
import torch.nn as nn

X = torch.linspace(-1, 1, 10).reshape(5, 2)
y = X @ torch.tensor([[1.5], [-0.5]]) + 0.25


def make_model():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))


def train(model, optimizer, steps=6):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()
    return loss


configs = {
    "sgd momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd nesterov + wd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1),
    "adam amsgrad": lambda ps: torch.optim.Adam(ps, lr=0.05, amsgrad=True),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, momentum=0.5),
    "rmsprop centered": lambda ps: torch.optim.RMSprop(ps, lr=0.01, centered=True),
    "adadelta": lambda ps: torch.optim.Adadelta(ps, lr=1.0, rho=0.8),
    "nadam": lambda ps: torch.optim.NAdam(ps, lr=0.05, momentum_decay=0.01),
    "radam": lambda ps: torch.optim.RAdam(ps, lr=0.05, decoupled_weight_decay=True, weight_decay=0.01),
    "adamax": lambda ps: torch.optim.Adamax(ps, lr=0.05),
}
for name, make in configs.items():
    model = make_model()
    opt = make(model.parameters())
    loss = train(model, opt)
    print(f"{name:18s} loss {loss.item():.6f}")
    print(model[2].weight.data)

model = make_model()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
print(opt)
train(model, opt, steps=2)
state = opt.state_dict()
print(list(state.keys()))
print(list(state["state"].keys()))
print(state["state"][3]["momentum_buffer"])
print(state["param_groups"])

model = make_model()
opt = torch.optim.Adam([
    {"params": model[0].parameters(), "lr": 0.01},
    {"params": model[2].parameters()},
], lr=0.1, betas=(0.8, 0.99))
print(opt)
loss = train(model, opt, steps=4)
print(loss)
for i, group in enumerate(opt.param_groups):
    print(i, group["lr"], group["betas"], len(group["params"]))
sd = opt.state_dict()
print(sorted(sd["state"][0].keys()))
print(sd["state"][0]["step"], sd["state"][2]["exp_avg_sq"])
opt.param_groups[1]["lr"] = 0.001
loss = train(model, opt, steps=1)
print(loss.item())
print(model[0].bias.grad)

opt = torch.optim.AdamW(model.parameters())
print(opt.defaults["weight_decay"], opt.defaults["lr"])
opt.add_param_group({"params": [nn.Parameter(torch.ones(3))], "lr": 0.5})
print(len(opt.param_groups), opt.param_groups[1]["weight_decay"])
