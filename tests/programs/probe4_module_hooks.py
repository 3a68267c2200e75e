"""Module hooks (pre/forward with kwargs, full backward, backward pre), named_modules / apply, state_dict hooks."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d, scale=1.0):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.act = nn.Tanh()
        self.scale = scale

    def forward(self, x, bias=None):
        out = self.act(self.lin(x)) * self.scale
        if bias is not None:
            out = out + bias
        return out

    def extra_repr(self):
        return f"scale={self.scale}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = Block(3, 0.5)
        self.b2 = Block(3)
        self.head = nn.Sequential(nn.Linear(3, 2), nn.ReLU())

    def forward(self, x):
        return self.head(self.b2(self.b1(x), bias=torch.ones(3)))


net = Net()
print(net)
print([n for n, _ in net.named_modules()])
print([type(c).__name__ for c in net.children()])
print([n for n, _ in net.named_children()])
print([n for n, _ in net.named_parameters()])
print(sum(p.numel() for p in net.parameters()))

seen = []
net.apply(lambda m: seen.append(type(m).__name__))
print(seen)


@torch.no_grad()
def init_weights(m):
    if isinstance(m, nn.Linear):
        m.weight.fill_(0.1)
        m.bias.zero_()


net.apply(init_weights)
print(net.b1.lin.weight)


def pre_hook(mod, args, kwargs):
    print("pre", type(mod).__name__, [tuple(a.shape) for a in args], sorted(kwargs))
    if "bias" in kwargs and kwargs["bias"] is not None:
        kwargs = dict(kwargs, bias=kwargs["bias"] * 2)
    return args, kwargs


def fwd_hook(mod, args, kwargs, out):
    print("fwd", type(mod).__name__, sorted(kwargs), tuple(out.shape))
    return out + 0


h1 = net.b2.register_forward_pre_hook(pre_hook, with_kwargs=True)
h2 = net.b2.register_forward_hook(fwd_hook, with_kwargs=True)


def plain_pre(mod, inp):
    print("plain pre", type(mod).__name__, len(inp))
    return (inp[0] * 1.5,)


h3 = net.b1.register_forward_pre_hook(plain_pre)


def bwd_hook(mod, gin, gout):
    print("bwd", type(mod).__name__, [None if g is None else tuple(g.shape) for g in gin],
          [tuple(g.shape) for g in gout])


h4 = net.head.register_full_backward_hook(bwd_hook)
h5 = net.b1.lin.register_full_backward_hook(bwd_hook)


def bwd_pre(mod, gout):
    print("bwd pre", type(mod).__name__, round(gout[0].sum().item(), 4))


h6 = net.head.register_full_backward_pre_hook(bwd_pre)

x = torch.tensor([[1.0, -1.0, 0.5], [0.2, 0.3, -0.4]], requires_grad=True)
out = net(x)
print("out", out)
out.sum().backward()
print("x.grad", x.grad)

for h in (h1, h2, h3, h4, h5, h6):
    h.remove()
out2 = net(x)
print("no hooks", out2)

sd = net.state_dict()
print(list(sd.keys()))
print(type(sd).__name__)


def sd_hook(module, state_dict, prefix, local_metadata):
    print("state_dict hook", type(module).__name__, repr(prefix), len(state_dict))
    state_dict[prefix + "extra"] = torch.tensor(7)


net.b1._register_state_dict_hook(sd_hook)
sd2 = net.state_dict()
print([k for k in sd2 if "extra" in k], sd2["b1.extra"])


def load_pre(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    state_dict.pop(prefix + "extra", None)
    print("load pre", repr(prefix))


net.b1._register_load_state_dict_pre_hook(load_pre, with_module=True)
res = net.load_state_dict(sd2)
print(res)
res2 = net.load_state_dict({k: v for k, v in sd.items() if "head" not in k}, strict=False)
print(res2.missing_keys, res2.unexpected_keys)
try:
    net.load_state_dict({"nope": torch.zeros(1)})
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
print(net.b1.lin)
print(net.head[0].weight.shape, net.get_submodule("head.0"))
print(net.get_parameter("b2.lin.bias"))
