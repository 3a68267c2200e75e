"""``sg.nn.Module`` and ``Parameter`` against torch: registration, traversal names and orders,
train/eval, gradients, dtype conversion, state dicts, hooks, ``repr``, ``dir`` and error texts."""
# ruff: noqa: B023  (the closures over loop variables run within their iteration: one per library)
from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_same_error

import symgrad as sg


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's OpenMP threads spin against each other on a busy 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make_net(lib: Any) -> Any:
    """The same small network in either library (shared submodule, buffers, a bare parameter)."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(3, 4)
            self.act = nn.ReLU()
            self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Tanh()])
            self.register_buffer("running", lib.zeros(4))
            self.register_buffer("steps", lib.tensor(0))
            self.register_buffer("scratch", lib.ones(2), persistent=False)
            self.scale = nn.Parameter(lib.ones(1) * 2)
            self.head = nn.Sequential(OrderedDict(out=nn.Linear(4, 2), sm=nn.LogSoftmax(dim=1)))
            self.again = self.fc1  # the same module twice: named once
            self.register_parameter("absent", None)

        def forward(self, x: Any) -> Any:
            h = self.act(self.fc1(x)) * self.scale
            for m in self.blocks:
                h = m(h)
            return self.head(h + self.running)

    return Net()


def pair() -> tuple[Any, Any]:
    t = make_net(torch)
    s = make_net(sg)
    s.load_state_dict(OrderedDict((k, sg.tensor(v.numpy().copy())) for k, v in t.state_dict().items()))
    return s, t


def names(it: Any) -> list[str]:
    return [n for n, _ in it]


def test_structure_names_and_repr():
    s, t = pair()
    assert repr(s) == repr(t)
    assert names(s.named_parameters()) == names(t.named_parameters())
    assert names(s.named_parameters(remove_duplicate=False)) == names(t.named_parameters(remove_duplicate=False))
    assert names(s.named_parameters(prefix="net", recurse=False)) == names(t.named_parameters(prefix="net",
                                                                                                recurse=False))
    assert names(s.named_buffers()) == names(t.named_buffers())
    assert names(s.named_children()) == names(t.named_children())
    assert names(s.named_modules()) == names(t.named_modules())
    assert names(s.named_modules(remove_duplicate=False)) == names(t.named_modules(remove_duplicate=False))
    assert names(s.named_modules(prefix="m")) == names(t.named_modules(prefix="m"))
    assert len(list(s.parameters())) == len(list(t.parameters())) == 7
    assert len(list(s.buffers(recurse=False))) == len(list(t.buffers(recurse=False)))
    assert [type(m).__name__ for m in s.modules()] == [type(m).__name__ for m in t.modules()]
    assert [type(m).__name__ for m in s.children()] == [type(m).__name__ for m in t.children()]
    sd, td = s.state_dict(), t.state_dict()
    assert type(sd) is OrderedDict and list(sd) == list(td)
    assert list(sd._metadata) == list(td._metadata) and sd._metadata[""] == td._metadata[""]
    assert s.absent is None and "absent" not in sd
    assert s.get_submodule("head.out") is s.head.out and s.get_parameter("head.out.bias") is s.head.out.bias
    assert s.get_buffer("running") is s.running
    for target in ("head.nope", "head.out.weight"):
        assert_same_error(lambda: s.get_submodule(target), lambda: t.get_submodule(target))
    assert_same_error(lambda: s.get_parameter("running"), lambda: t.get_parameter("running"))
    assert_same_error(lambda: s.get_buffer("scale"), lambda: t.get_buffer("scale"))


def test_forward_backward_and_grads():
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    s, t = pair()
    so, to = s(sg.tensor(x)), t(torch.tensor(x))
    assert_close(so, to)
    so.sum().backward()
    to.sum().backward()
    for (n, sp), (_, tp) in zip(s.named_parameters(), t.named_parameters()):
        assert_close(sp.grad, tp.grad, what=n)
    s.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in s.parameters())
    s.zero_grad()
    assert all(p.grad is None for p in s.parameters())
    s.requires_grad_(False)
    assert not any(p.requires_grad for p in s.parameters())
    assert not s(sg.tensor(x)).requires_grad


def test_train_eval_apply():
    s, t = pair()
    assert s.training and all(m.training for m in s.modules())
    assert s.eval() is s and not any(m.training for m in s.modules())
    s.train()
    s.head.train(False)
    t.head.train(False)
    assert [m.training for m in s.modules()] == [m.training for m in t.modules()]
    seen_s: list[str] = []
    seen_t: list[str] = []
    s.apply(lambda m: seen_s.append(m._get_name()))
    t.apply(lambda m: seen_t.append(m._get_name()))
    assert seen_s == seen_t
    assert_same_error(lambda: s.train("yes"), lambda: t.train("yes"))


@pytest.mark.parametrize("how", ["double", "to_dtype", "to_kw", "to_tensor", "type", "half", "float"])
def test_conversion_keeps_parameters(how):
    s, t = pair()
    for m in (s, t):
        m(m.running.new_ones((2, 3)) if m is t else sg.ones(2, 3)).sum().backward()
    before = [id(p) for p in s.parameters()]
    for m, lib in ((s, sg), (t, torch)):
        {"double": lambda: m.double(), "to_dtype": lambda: m.to(lib.float64),
         "to_kw": lambda: m.to(device="cpu", dtype=lib.float64), "to_tensor": lambda: m.to(lib.ones(1).double()),
         "type": lambda: m.type(lib.float64), "half": lambda: m.half(), "float": lambda: m.double().float()}[how]()
    assert [id(p) for p in s.parameters()] == before
    assert all(isinstance(p, sg.nn.Parameter) and p.is_leaf and p.requires_grad for p in s.parameters())
    for (n, sp), (_, tp) in zip(s.named_parameters(), t.named_parameters()):
        assert sp.dtype.name == str(tp.dtype).removeprefix("torch.") == sp.grad.dtype.name, n
    for (n, sb), (_, tb) in zip(s.named_buffers(), t.named_buffers()):
        assert sb.dtype.name == str(tb.dtype).removeprefix("torch."), n
    if how != "half":
        dt = s.fc1.weight.dtype
        out = s(sg.ones(2, 3, dtype=dt))
        out.sum().backward()  # the converted leaves still collect gradients
        assert s.fc1.weight.grad.dtype is dt
    assert_same_error(lambda: s.to(sg.int64), lambda: t.to(torch.int64))


def test_state_dict_detached_and_keep_vars():
    s, _ = pair()
    sd = s.state_dict()
    assert not sd["fc1.weight"].requires_grad and type(sd["fc1.weight"]) is sg.Tensor
    assert s.state_dict(keep_vars=True)["fc1.weight"] is s.fc1.weight
    assert list(s.state_dict(prefix="net.")) == ["net." + k for k in sd]
    sd["fc1.bias"][0] = 42.0  # shares storage, as torch's detach()
    assert s.fc1.bias[0].item() == 42.0


def test_load_state_dict_semantics():
    s, t = pair()
    w = s.fc1.weight
    new = OrderedDict((k, v * 0 + 1) for k, v in s.state_dict().items())
    res = s.load_state_dict(new)
    assert repr(res) == "<All keys matched successfully>" and res.missing_keys == [] and res.unexpected_keys == []
    assert s.fc1.weight is w and (w.detach().numpy() == 1).all() and w.requires_grad
    sd = {k: sg.tensor(v.numpy().copy()) for k, v in t.state_dict().items()}
    td = dict(t.state_dict())
    for d in (sd, td):
        del d["head.out.bias"]
        d["extra.key"] = d["running"]
        d["blocks.5.weight"] = d["running"]
    r1, r2 = s.load_state_dict(sd, strict=False), t.load_state_dict(td, strict=False)
    assert repr(r1) == repr(r2) and str(r1) == str(r2)
    assert_same_error(lambda: s.load_state_dict(sd), lambda: t.load_state_dict(td))
    for d, lib in ((sd, sg), (td, torch)):
        d.pop("extra.key"), d.pop("blocks.5.weight")
        d["head.out.bias"] = lib.zeros(3)
        d["running"] = 5
    assert_same_error(lambda: s.load_state_dict(sd), lambda: t.load_state_dict(td))
    assert_same_error(lambda: s.load_state_dict([1]), lambda: t.load_state_dict([1]))


def test_load_state_dict_assign_and_scalar():
    class P(sg.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c = sg.nn.Parameter(sg.tensor(1.0))
            self.f = sg.nn.Parameter(sg.ones(2), requires_grad=False)

    m = P()
    m.load_state_dict({"c": sg.tensor([3.0]), "f": sg.ones(2)})  # a 1-element tensor loads into a 0-d one
    assert m.c.item() == 3.0 and m.c.ndim == 0
    src = sg.tensor([7.0, 8.0], dtype=sg.float64)
    m.load_state_dict({"c": sg.tensor(2.0), "f": src}, assign=True)
    assert isinstance(m.f, sg.nn.Parameter) and not m.f.requires_grad and m.f.dtype is sg.float64
    m.c.sum().backward()


def test_deepcopy():
    s, _ = pair()
    c = copy.deepcopy(s)
    assert repr(c) == repr(s)
    for (n, a), (_, b) in zip(c.state_dict(keep_vars=True).items(), s.state_dict(keep_vars=True).items()):
        assert a is not b and type(a) is type(b) and np.array_equal(a.detach().numpy(), b.detach().numpy()), n
    assert c.again is c.fc1
    c(sg.ones(1, 3)).sum().backward()
    assert c.fc1.weight.grad is not None and s.fc1.weight.grad is None


def test_setattr_delattr_semantics():
    for lib in (sg, torch):
        m = lib.nn.Linear(2, 2)
        m.extra = lib.nn.Parameter(lib.ones(1))
        assert "extra" in m._parameters
        with pytest.raises(TypeError, match="as parameter 'extra'"):
            m.extra = lib.nn.ReLU()
        m.extra = None
        assert m.extra is None and "extra" in m._parameters
        m.register_buffer("sub", lib.ones(1))
        m.sub = lib.nn.ReLU()  # a module replaces a buffer
        assert "sub" in m._modules and "sub" not in m._buffers
        m.sub = None
        assert m.sub is None and "sub" in m._modules
        m.bias = None
        assert m.bias is None and "bias" in m._parameters
        m.register_buffer("buf", lib.ones(1))
        m.buf = lib.zeros(2)  # still a buffer
        assert "buf" in m._buffers and m.buf.shape == (2,)
        m.buf = lib.nn.Parameter(lib.ones(1))  # a Parameter moves out of the buffers
        assert "buf" in m._parameters and "buf" not in m._buffers
        del m.buf, m.extra, m.sub
        assert "buf" not in m._parameters and "extra" not in m._parameters and "sub" not in m._modules
        m.plain = 3
        assert m.__dict__["plain"] == 3
        del m.plain
        assert not hasattr(m, "plain")


ERRORS: list[tuple[str, Any]] = [
    ("param int", lambda lib: setattr(lib.nn.Linear(2, 2), "weight", 3)),
    ("param tensor", lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.ones(2, 2))),
    ("param double tensor", lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.ones(2, dtype=lib.float64))),
    ("child module", lambda lib: setattr(lib.nn.Sequential(lib.nn.ReLU()), "0", 3)),
    ("buffer", lambda lib: setattr(lib.nn.BCELoss(weight=lib.ones(2)), "weight", "w")),
    ("missing attribute", lambda lib: lib.nn.Linear(2, 2).foo),
    ("register_parameter tensor", lambda lib: lib.nn.Linear(2, 2).register_parameter("w", lib.ones(1))),
    ("register_parameter dot", lambda lib: lib.nn.Linear(2, 2).register_parameter("a.b", None)),
    ("register_parameter empty", lambda lib: lib.nn.Linear(2, 2).register_parameter("", None)),
    ("register_parameter existing", lambda lib: lib.nn.Linear(2, 2).register_parameter("training", None)),
    ("register_parameter name type", lambda lib: lib.nn.Linear(2, 2).register_parameter(1, None)),
    ("register_buffer dot", lambda lib: lib.nn.Linear(2, 2).register_buffer("a.b", None)),
    ("register_buffer existing", lambda lib: lib.nn.Linear(2, 2).register_buffer("weight", lib.ones(1))),
    ("register_buffer type", lambda lib: lib.nn.Linear(2, 2).register_buffer("b2", [1.0])),
    ("add_module type", lambda lib: lib.nn.Linear(2, 2).add_module("m", 3)),
    ("add_module dot", lambda lib: lib.nn.Linear(2, 2).add_module("a.b", lib.nn.ReLU())),
    ("add_module existing", lambda lib: lib.nn.Linear(2, 2).add_module("weight", lib.nn.ReLU())),
    ("no forward", lambda lib: lib.nn.Module()(1)),
    ("init kwargs", lambda lib: lib.nn.Module(foo=1)),
    ("init args", lambda lib: lib.nn.Module(1)),
    ("sequential index", lambda lib: lib.nn.Sequential(lib.nn.ReLU())[3]),
    ("modulelist index", lambda lib: lib.nn.ModuleList([lib.nn.ReLU()])[-2]),
    ("modulelist extend", lambda lib: lib.nn.ModuleList().extend(3)),
    ("sequential add", lambda lib: lib.nn.Sequential() + 3),
    ("moduledict update", lambda lib: lib.nn.ModuleDict().update([("a", lib.nn.ReLU(), 1)])),
    ("parameterdict key", lambda lib: lib.nn.ParameterDict()[1]),
    ("parameter int", lambda lib: lib.nn.Parameter(lib.tensor([1, 2]))),
    ("to cuda", lambda lib: lib.nn.Linear(1, 1).to("cuda")),
    ("to cuda keyword", lambda lib: lib.nn.Linear(1, 1).to(device="cuda:0", dtype=lib.float64)),
    ("cuda", lambda lib: lib.nn.Linear(1, 1).cuda()),
    ("buffer existing attribute", lambda lib: setattr(lib.nn.Linear(1, 1), "forward", lib.nn.Buffer(lib.ones(1)))),
]


def test_buffer_assignment():
    res = []
    for lib in (sg, torch):
        m = lib.nn.Linear(2, 2)
        m.a = lib.nn.Buffer(lib.ones(2))
        m.b = lib.nn.Buffer(lib.zeros(1, requires_grad=True), persistent=False)
        m.b = lib.ones(3)  # still a non-persistent buffer
        m.double()
        res.append([list(m.state_dict()), names(m.named_buffers()), repr(m.a), m.b.dtype.is_floating_point,
                    str(m.a.dtype), m.b.shape])
        src = lib.ones(2)
        buf = lib.nn.Buffer(src)
        src.add_(1)
        res[-1].append(repr(buf))
    assert res[0] == res[1]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn):
    assert_same_error(lambda: fn(sg), lambda: fn(torch))


def test_assign_before_init():
    for lib in (sg, torch):
        class Early(lib.nn.Module):
            def __init__(self, what: str) -> None:
                if what == "param":
                    self.p = lib.nn.Parameter(lib.ones(1))
                elif what == "module":
                    self.m = lib.nn.ReLU()
                else:
                    self.register_buffer("b", lib.ones(1))

        for what in ("param", "module", "buffer"):
            with pytest.raises(AttributeError) as e:
                Early(what)
            assert "before Module.__init__() call" in str(e.value)


def test_dir():
    s, t = pair()
    for key in ("fc1", "scale", "running", "head", "forward", "training", "absent"):
        assert key in dir(s) and key in dir(t)
    assert dir(s) == sorted(dir(s))
    seq = sg.nn.Sequential(sg.nn.ReLU())
    assert "0" not in dir(seq) and "0" not in dir(torch.nn.Sequential(torch.nn.ReLU()))


# ---------------------------------------------------------------------------- hooks

def _hooked(lib: Any, log: list) -> tuple[Any, list]:
    m = lib.nn.Linear(2, 2)
    handles = [
        m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", len(args)))),
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,)),
        m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True),
        m.register_forward_pre_hook(lambda mod, args, kw: log.append(("prekw", sorted(kw))) or (args, kw),
                                    with_kwargs=True),
        m.register_forward_hook(lambda mod, args, out: log.append(("fwd", tuple(out.shape)))),
        m.register_forward_hook(lambda mod, args, out: out + 1),
        m.register_forward_hook(lambda mod, args, kw, out: log.append(("fwdkw", len(args), sorted(kw))),
                                with_kwargs=True),
        m.register_forward_hook(lambda mod, args, out: log.append("fwd0"), prepend=True),
    ]
    return m, handles


def test_forward_hooks_order_and_results():
    logs: list[list] = [[], []]
    mods = []
    for lib, log in zip((sg, torch), logs):
        m, handles = _hooked(lib, log)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
            m.bias.copy_(lib.tensor([0.5, -0.5]))
        out = m(lib.tensor([[1.0, 1.0]]))
        mods.append((m, handles, out))
    assert logs[0] == logs[1]
    assert_close(mods[0][2], mods[1][2])
    for (m, handles, _), lib, log in zip(mods, (sg, torch), logs):
        log.clear()
        handles[0].remove()
        handles[0].remove()  # twice: a no-op
        handles[4].remove()
        with handles[1]:
            pass  # a handle is a context manager that removes its hook
        m(lib.ones(1, 2))
    assert logs[0] == logs[1] and logs[0] == ["pre0", ("prekw", []), "fwd0", ("fwdkw", 1, [])]


def test_forward_pre_hook_single_value_and_kwargs():
    res = []
    for lib in (sg, torch):
        class Add(lib.nn.Module):
            def forward(self, a: Any, b: Any = 0) -> Any:
                return a + b

        m = Add()
        m.register_forward_pre_hook(lambda mod, args: args[0] * 10)  # a single value: wrapped in a tuple
        m.register_forward_pre_hook(lambda mod, args, kw: (args, {"b": kw.get("b", 0) + 1}), with_kwargs=True)
        bad = Add()
        bad.register_forward_pre_hook(lambda mod, args, kw: 3, with_kwargs=True)
        res.append((m(lib.tensor(1.0), b=lib.tensor(2.0)).item(), bad))
    assert res[0][0] == res[1][0] == 13.0
    assert_same_error(lambda: res[0][1](sg.ones(1)), lambda: res[1][1](torch.ones(1)))


def test_always_call_hook_and_global_hooks():
    logs: list[list] = [[], []]
    for lib, log in zip((sg, torch), logs):
        class Boom(lib.nn.Module):
            def forward(self, x: Any) -> Any:
                raise ValueError("boom")

        b = Boom()
        b.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
        b.register_forward_hook(lambda mod, args, out: log.append("never"))
        with pytest.raises(ValueError):
            b(1)
        h1 = lib.nn.modules.module.register_module_forward_pre_hook(lambda mod, args: log.append(("gpre",
                                                                                                   mod._get_name())))
        h2 = lib.nn.modules.module.register_module_forward_hook(lambda mod, args, out: log.append("gfwd"))
        try:
            lib.nn.Sequential(lib.nn.ReLU())(lib.ones(1))
        finally:
            h1.remove()
            h2.remove()
        lib.nn.ReLU()(lib.ones(1))
    assert logs[0] == logs[1]


def test_hooks_see_module_and_handles_ids_increase():
    m = sg.nn.ReLU()
    got = []
    h1 = m.register_forward_hook(lambda mod, args, out: got.append(mod is m))
    h2 = m.register_forward_pre_hook(lambda mod, args: None)
    m(sg.ones(1))
    assert got == [True] and h2.id > h1.id and isinstance(h1, sg.nn.RemovableHandle)
    assert isinstance(m.register_full_backward_hook(lambda *a: None), sg.nn.RemovableHandle)


def test_state_dict_and_load_hooks():
    for lib in (sg, torch):
        m = lib.nn.Linear(2, 2)
        calls: list[Any] = []
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix)))
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append(("post", list(sd))))
        m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: calls.append(("lpre", sorted(sd))))
        m.register_load_state_dict_post_hook(lambda mod, keys: calls.append(("lpost", list(keys.missing_keys))))
        m.load_state_dict(m.state_dict())
        if lib is sg:
            sg_calls = calls
    assert sg_calls == calls


# ---------------------------------------------------------------------------- containers

def test_sequential_operations():
    res = []
    for lib in (sg, torch):
        nn = lib.nn
        seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
        ops = [repr(seq[1:]), repr(seq[-1]), len(seq), [type(m).__name__ for m in seq]]
        seq.append(nn.ELU())
        seq.insert(1, nn.GELU())
        seq.extend([nn.Mish()])
        seq[0] = nn.SiLU()
        del seq[2]
        ops += [repr(seq), repr(seq.pop(0)), repr(seq + nn.Sequential(nn.ReLU())), repr(seq * 2)]
        seq += nn.Sequential(nn.Identity())
        seq *= 2
        ops.append(repr(seq))
        x = lib.tensor([[-1.0, 0.5, 2.0]])
        ops.append(seq(x).tolist())
        res.append(ops)
    assert res[0][:-1] == res[1][:-1]
    np.testing.assert_allclose(res[0][-1], res[1][-1], rtol=1e-6)


def test_modulelist_and_moduledict_operations():
    res = []
    for lib in (sg, torch):
        nn = lib.nn
        ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
        ml.append(nn.Linear(1, 1))
        ml.insert(0, nn.ELU())
        ml.extend([nn.ReLU()])
        ml += [nn.Tanh()]
        ml[1] = nn.Sigmoid()
        del ml[0]
        popped = ml.pop(-1)
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        md["c"] = nn.Linear(2, 1)
        md.update([("d", nn.ReLU())])
        removed = md.pop("b")
        res.append([repr(ml), repr(ml[1:3]), repr(ml + nn.ModuleList([nn.ReLU()])), repr(popped), len(ml),
                    repr(md), list(md.keys()), [type(v).__name__ for v in md.values()], "c" in md, repr(removed),
                    names(md.named_parameters())])
        md.clear()
        res[-1].append(len(md))
    assert res[0] == res[1]


def test_parameter_list_and_dict_operations():
    res = []
    for lib in (sg, torch):
        nn = lib.nn
        pl = nn.ParameterList([lib.ones(2)])
        pl.append(nn.Parameter(lib.zeros(3)))
        pl.extend([lib.ones(1, dtype=lib.float64)])
        pl[0] = lib.ones(4)
        pd = nn.ParameterDict({"w": lib.ones(2)})
        pd["v"] = nn.Parameter(lib.zeros(1))
        pd.setdefault("u", lib.ones(3))
        got = pd.get("nope", 5)
        popped = pd.pop("w")
        pd2 = pd | nn.ParameterDict({"z": lib.ones(1)})
        res.append([repr(pl), len(pl), repr(pl[1:]), names(pl.named_parameters()), repr(pd), list(pd),
                    repr(pd2), got, tuple(popped.shape), type(popped).__name__, "v" in pd,
                    list(pd.fromkeys(["p", "q"], lib.ones(1)).keys())])
    assert res[0] == res[1]


# ---------------------------------------------------------------------------- Parameter

def test_parameter():
    arr = np.array([[1.5, -2.0], [0.25, 3.0]])
    for dtype in ("float32", "float64"):
        sp, tp = sg.nn.Parameter(sg.tensor(arr.astype(dtype))), torch.nn.Parameter(torch.tensor(arr.astype(dtype)))
        assert repr(sp) == repr(tp) and str(sp) == str(tp)
        sn = sg.nn.Parameter(sg.tensor(arr.astype(dtype)), requires_grad=False)
        tn = torch.nn.Parameter(torch.tensor(arr.astype(dtype)), requires_grad=False)
        assert repr(sn) == repr(tn)
    assert repr(sg.nn.Parameter()) == repr(torch.nn.Parameter())
    p = sg.nn.Parameter(sg.ones(2))
    assert isinstance(p, sg.Tensor) and p.is_leaf and p.requires_grad and p.grad_fn is None
    for out in (p * 2, p + p, p.detach(), p.clone(), p[0], p.sum(), p.data):
        assert type(out) is sg.Tensor
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        p.mul_(1)
    with sg.no_grad():
        assert p.mul_(3) is p
    assert p.tolist() == [3.0, 3.0] and p._version.v == 1
    base = sg.ones(3)
    shared = sg.nn.Parameter(base)
    base.add_(1)  # Parameter(t) shares t's storage
    assert shared.tolist() == [2.0, 2.0, 2.0]
    with sg.no_grad():
        assert sg.nn.Parameter(sg.ones(1)).requires_grad
    q = copy.deepcopy(p)
    assert type(q) is sg.nn.Parameter and q is not p and q.tolist() == p.tolist()
    import pickle
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is sg.nn.Parameter and r.requires_grad and r.tolist() == p.tolist()


def _private_state_dict_hooks(lib):
    net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
    calls = []

    def post(module, state_dict, prefix, meta):
        calls.append(("post", prefix, len(state_dict)))
        state_dict[prefix + "extra"] = lib.tensor(3)

    def pre_load(state_dict, prefix, meta, strict, missing, unexpected, errors):
        calls.append(("pre", prefix))
        state_dict.pop(prefix + "extra", None)

    def pre_load_m(module, state_dict, prefix, meta, strict, missing, unexpected, errors):
        calls.append(("pre_m", type(module).__name__, prefix))

    net[0]._register_state_dict_hook(post)
    net[0]._register_load_state_dict_pre_hook(pre_load)
    net._register_load_state_dict_pre_hook(pre_load_m, with_module=True)
    sd = net.state_dict()
    keys = list(sd)
    result = str(net.load_state_dict(sd))
    return calls, keys, result


def test_private_state_dict_hooks_match_torch():
    assert _private_state_dict_hooks(sg) == _private_state_dict_hooks(torch)
