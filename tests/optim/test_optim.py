"""sg.optim against torch.optim: trajectories bit for bit, state dicts, param groups, errors, repr."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.optim import _kernels


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's OpenMP threads spin against each other on a busy 2-core machine (100x slower backward)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# a matrix (vectorised body), an odd-length vector (scalar tail), a 0-dim parameter
SHAPES = [(16, 9), (37,), ()]

CONFIGS = {
    "SGD": [dict(lr=0.05), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.1),
            dict(lr=0.05, momentum=0.9, nesterov=True), dict(lr=0.05, weight_decay=0.1),
            dict(lr=0.05, momentum=0.5, weight_decay=0.1, maximize=True),
            dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)],
    "Adam": [dict(lr=0.01), dict(lr=0.01, amsgrad=True), dict(lr=0.01, weight_decay=0.1),
             dict(lr=0.01, maximize=True), dict(lr=0.01, betas=(0.5, 0.9), eps=1e-6, amsgrad=True, weight_decay=0.01),
             dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)],
    "AdamW": [dict(lr=0.01), dict(lr=0.01, amsgrad=True, weight_decay=0.5, maximize=True)],
    "RMSprop": [dict(lr=0.01), dict(lr=0.01, centered=True), dict(lr=0.01, momentum=0.9),
                dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1), dict(lr=0.01, alpha=0.3, maximize=True),
                dict(lr=0.01, alpha=0.3, centered=True)],
    "Adagrad": [dict(lr=0.05), dict(lr=0.05, lr_decay=0.01), dict(lr=0.05, initial_accumulator_value=0.1, eps=1e-6),
                dict(lr=0.05, weight_decay=0.1, maximize=True)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.5, eps=1e-4), dict(lr=0.5, weight_decay=0.1, maximize=True)],
    "NAdam": [dict(lr=0.01), dict(lr=0.01, betas=(0.5, 0.9), momentum_decay=0.01, weight_decay=0.1),
              dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)],
    "Adamax": [dict(lr=0.01), dict(lr=0.01, betas=(0.5, 0.9), eps=1e-3, weight_decay=0.1, maximize=True)],
    "RAdam": [dict(lr=0.01), dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1),
              dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]
IDS = [f"{name}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for name, kw in CASES]


def _grad(p: np.ndarray, c: np.ndarray, maximize: bool) -> np.ndarray:
    """The gradient of a quartic bowl (negated when maximizing, so the run stays bounded)."""
    g = p * p * p - 0.5 * p + c
    return -g if maximize else g


class _Run:
    """The same problem in one library: parameters, an optimizer, steps fed numpy gradients."""

    def __init__(self, lib: object, name: str, kw: dict, dtype: type, groups: bool = False, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.lib = lib
        self.init = [np.asarray(rng.standard_normal(s) * 0.7, dtype=dtype) for s in SHAPES]
        self.cs = [np.asarray(rng.standard_normal(s) * 0.1, dtype=dtype) for s in SHAPES]
        self.params = [lib.tensor(a, requires_grad=True) for a in self.init]
        self.maximize = kw.get("maximize", False)
        cls = getattr(lib.optim, name)
        if groups:
            lr = kw.get("lr", 0.01)
            self.opt = cls([{"params": self.params[:1]}, {"params": self.params[1:], "lr": lr * 0.3}], **kw)
        else:
            self.opt = cls(self.params, **kw)

    def values(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.params]

    def steps(self, n: int) -> _Run:
        for _ in range(n):
            for p, c in zip(self.params, self.cs):
                p.grad = self.lib.tensor(_grad(p.detach().numpy(), c, self.maximize))
            self.opt.step()
        return self


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_trajectory_bit_identical(name: str, kw: dict, dtype: type) -> None:
    groups = name in ("SGD", "Adam") and len(kw) > 1  # some runs with two groups of different lrs
    t = _Run(torch, name, kw, dtype, groups).steps(100)
    s = _Run(sg, name, kw, dtype, groups).steps(100)
    assert _same(t.values(), s.values())
    ts, ss = t.opt.state_dict(), s.opt.state_dict()
    assert ts["param_groups"] == ss["param_groups"]
    assert list(ts["state"]) == list(ss["state"])
    for i, st in ts["state"].items():
        assert list(st) == list(ss["state"][i])
        for key, v in st.items():
            assert str(v.dtype) == str(ss["state"][i][key].dtype)
            assert np.array_equal(v.numpy(), ss["state"][i][key].numpy())


@pytest.mark.parametrize("name,kw", [CASES[2], CASES[9], CASES[17], CASES[22], ("Adadelta", CONFIGS["Adadelta"][1]),
                                     ("NAdam", CONFIGS["NAdam"][1]), ("RAdam", CONFIGS["RAdam"][1]),
                                     ("Adamax", CONFIGS["Adamax"][1])],
                         ids=["SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "NAdam", "RAdam", "Adamax"])
def test_load_state_dict_continues_the_trajectory(name: str, kw: dict) -> None:
    t = _Run(torch, name, kw, np.float64).steps(60)
    s = _Run(sg, name, kw, np.float64).steps(30)
    saved = copy.deepcopy(s.opt.state_dict())
    fresh = _Run(sg, name, kw, np.float64)
    with sg.no_grad():
        for p, q in zip(fresh.params, s.params):
            p.copy_(q)
    fresh.opt.load_state_dict(saved)
    fresh.steps(30)
    assert _same(t.values(), fresh.values())
    assert fresh.opt.state_dict()["param_groups"] == t.opt.state_dict()["param_groups"]


def test_state_dict_structure_before_and_after_steps() -> None:
    for name in ("SGD", "Adam", "Adagrad", "Adadelta", "NAdam", "Adamax", "RAdam"):
        t = _Run(torch, name, dict(lr=0.1, momentum=0.9) if name == "SGD" else {}, np.float32)
        s = _Run(sg, name, dict(lr=0.1, momentum=0.9) if name == "SGD" else {}, np.float32)
        assert str(t.opt.state_dict()) == str(s.opt.state_dict())
        t.steps(2)
        s.steps(2)
        assert str(t.opt.state_dict()) == str(s.opt.state_dict())  # same print, tensors included


def test_mlp_with_symgrad_autograd() -> None:
    """symgrad's own backward drives both optimizers: the parameters stay bit-identical. torch with its own
    backward (gradients that differ in the last bits) stays close."""
    rng = np.random.default_rng(1)
    shapes = [(64, 5), (64,), (64, 64), (64,), (1, 64), (1,)]
    init = [rng.standard_normal(s) * 0.3 for s in shapes]
    xy = rng.standard_normal((32, 5)), rng.standard_normal((32, 1))
    data = {lib: tuple(lib.tensor(a) for a in xy) for lib in (torch, sg)}

    def loss_of(lib: object, ps: list) -> object:
        x, y = data[lib]
        h = lib.tanh(x @ ps[0].T + ps[1])
        h = lib.tanh(h @ ps[2].T + ps[3])
        return ((h @ ps[4].T + ps[5] - y) ** 2).mean()

    for name, kw in [("Adam", dict(lr=1e-2)), ("SGD", dict(lr=1e-2, momentum=0.9))]:
        sp = [sg.tensor(a, requires_grad=True) for a in init]
        tp = [torch.tensor(a, requires_grad=True) for a in init]
        own = [torch.tensor(a, requires_grad=True) for a in init]
        s_opt, t_opt = getattr(sg.optim, name)(sp, **kw), getattr(torch.optim, name)(tp, **kw)
        own_opt = getattr(torch.optim, name)(own, **kw)
        for _ in range(20):
            s_opt.zero_grad()
            loss_of(sg, sp).backward()
            for p, q in zip(tp, sp):
                p.grad = torch.from_numpy(q.grad.numpy().copy())
            s_opt.step()
            t_opt.step()
            own_opt.zero_grad()
            loss_of(torch, own).backward()
            own_opt.step()
        assert _same([p.detach().numpy() for p in tp], [p.detach().numpy() for p in sp])
        for p, q in zip(own, sp):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_step_bumps_versions_and_keeps_arrays() -> None:
    p = sg.tensor([1.0, 2.0], requires_grad=True)
    buf = p._data
    opt = sg.optim.SGD([p], lr=0.1)
    loss = (p ** 2).sum()
    loss.backward(retain_graph=True)
    opt.step()
    assert p._data is buf
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_zero_grad_and_closure() -> None:
    for lib in (torch, sg):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        (p * p).sum().backward()
        opt.zero_grad(set_to_none=False)
        assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
        opt.zero_grad()
        assert p.grad is None
        opt.step()  # no gradient: nothing happens
        assert p.tolist() == [1.0, 2.0]

        def closure(opt: object = opt, p: object = p) -> object:
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss

        with lib.no_grad():
            loss = opt.step(closure)
        assert loss.item() == 5.0 and abs(p.tolist()[0] - 0.8) < 1e-6


def test_hooks() -> None:
    p = sg.tensor([1.0], requires_grad=True)
    opt = sg.optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    opt.step()
    h1.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("AdamW", {}), ("RMSprop", dict(centered=True)), ("Adagrad", dict(lr_decay=0.1))])
def test_repr(name: str, kw: dict) -> None:
    t = _Run(torch, name, kw, np.float32, groups=True)
    s = _Run(sg, name, kw, np.float32, groups=True)
    assert repr(t.opt) == repr(s.opt)


def _errors(lib: object) -> list:
    p = lib.tensor([1.0], requires_grad=True)
    o = lib.optim
    return [
        lambda: o.SGD([], lr=0.1),
        lambda: o.SGD(p, lr=0.1),
        lambda: o.SGD([p * 2]),
        lambda: o.SGD([p], lr=-1),
        lambda: o.SGD([p], momentum=-1),
        lambda: o.SGD([p], weight_decay=-0.5),
        lambda: o.SGD([p], nesterov=True),
        lambda: o.SGD([p, 3]),
        lambda: o.SGD([{"params": [p]}, {"params": [p]}]),
        lambda: o.SGD([{"params": {p}}]),
        lambda: o.SGD([("a", p), p]),
        lambda: o.SGD([p]).add_param_group([p]),
        lambda: o.Adam([p], lr=-0.1),
        lambda: o.Adam([p], eps=-1),
        lambda: o.Adam([p], betas=(1.0, 0.9)),
        lambda: o.Adam([p], betas=(0.9, 1)),
        lambda: o.Adam([p], betas=(0, 0.9)),
        lambda: o.Adam([p], weight_decay=-1),
        lambda: o.AdamW([p], lr=-1),
        lambda: o.RMSprop([p], alpha=-1),
        lambda: o.RMSprop([p], momentum=-1),
        lambda: o.Adagrad([p], lr_decay=-1),
        lambda: o.Adagrad([p], initial_accumulator_value=-1),
        lambda: o.Adadelta([p], lr=-1),
        lambda: o.Adadelta([p], rho=1.5),
        lambda: o.Adadelta([p], eps=-1),
        lambda: o.Adadelta([p], weight_decay=-1),
        lambda: o.NAdam([p], momentum_decay=-1),
        lambda: o.NAdam([p], betas=(0.9, 1.0)),
        lambda: o.Adamax([p], betas=(-0.1, 0.9)),
        lambda: o.RAdam([p], eps=-1),
        lambda: o.SGD([p]).load_state_dict({"state": {}, "param_groups": []}),
        lambda: o.SGD([p]).load_state_dict({"state": {}, "param_groups": [{"params": [0, 1]}]}),
    ]


def test_error_messages_match_torch() -> None:
    for f_t, f_s in zip(_errors(torch), _errors(sg)):
        with pytest.raises(Exception) as et:
            f_t()
        with pytest.raises(Exception) as es:
            f_s()
        assert (type(es.value), str(es.value)) == (type(et.value), str(et.value))


def test_duplicate_parameter_warning() -> None:
    msgs = []
    for lib in (torch, sg):
        p = lib.tensor([1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.optim.SGD([p, p], lr=0.1)
        msgs.append([str(x.message) for x in w])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


@pytest.mark.skipif(not _kernels.EMULATE_MKL_SQRT, reason="torch's sqrt here is not MKL's generic kernel")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sqrt_is_torchs(dtype: type) -> None:
    rng = np.random.default_rng(3)
    x = (np.abs(rng.standard_normal(20000)) * 10.0 ** rng.integers(-30, 30, 20000)).astype(dtype)
    x = np.concatenate([x, np.array([0.0, -0.0, -1.0, np.inf, np.nan, 1e-42, 3.3e38], dtype=dtype)])
    assert np.array_equal(_kernels.torch_sqrt(x), torch.from_numpy(x).sqrt().numpy(), equal_nan=True)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)), ("RMSprop", dict(centered=True))])
def test_foreach_true_is_the_same_trajectory(name: str, kw: dict) -> None:
    """torch's multi-tensor (foreach) CPU path rounds as its single-tensor one; symgrad runs the latter."""
    t = _Run(torch, name, dict(kw, foreach=True), np.float64).steps(50)
    s = _Run(sg, name, dict(kw, foreach=True), np.float64).steps(50)
    assert _same(t.values(), s.values())


def test_unsupported_flags_raise() -> None:
    p = sg.tensor([1.0], requires_grad=True)
    for make in (lambda: sg.optim.Adam([p], fused=True), lambda: sg.optim.Adagrad([p], fused=True),
                 lambda: sg.optim.SGD([p], differentiable=True)):
        with pytest.raises(NotImplementedError):
            make()
