"""``PolynomialLR``, ``CyclicLR`` and ``CosineAnnealingWarmRestarts`` against torch 2.13: the rates (and
momenta / betas) after every step, ``step(epoch)``, state dicts, errors."""
from __future__ import annotations

import warnings

import pytest
import torch
from conftest import assert_same_error as _same

import symgrad as sg


def assert_same_error(fn) -> None:
    """``fn(lib)`` raises the same error under torch and symgrad."""
    _same(lambda: fn(sg), lambda: fn(torch))


def _opt(lib, kind: str = "sgd"):
    ps = [lib.tensor([1.0], requires_grad=True) for _ in range(2)]
    spec = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)]
    if kind == "adam":
        return lib.optim.Adam(spec, lr=0.1)
    if kind == "plain":
        return lib.optim.SGD(spec, lr=0.1)
    return lib.optim.SGD(spec, lr=0.1, momentum=0.9)


def _run(make, steps: int, kind: str = "sgd", epochs=None):
    out = []
    for lib in (torch, sg):
        opt = _opt(lib, kind)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = make(lib.optim.lr_scheduler, opt)
            seq = [(sched.get_last_lr(), sched.last_epoch)]
            for i in range(steps):
                opt.step()
                if epochs is None:
                    sched.step()
                else:
                    sched.step(epochs[i])
                seq.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], sched.last_epoch,
                            [g.get("momentum") for g in opt.param_groups],
                            [g.get("betas") for g in opt.param_groups]))
        out.append((seq, sorted(sched.state_dict())))
    return out


POLY = {"default": {}, "power 2": {"total_iters": 7, "power": 2.0}, "power 0.9": {"total_iters": 10, "power": 0.9}}


@pytest.mark.parametrize("kw", POLY.values(), ids=POLY.keys())
def test_polynomial_lr_matches_torch(kw):
    t, s = _run(lambda m, o: m.PolynomialLR(o, **kw), 14)
    assert t == s


def test_polynomial_lr_closed_form():
    t, s = _run(lambda m, o: m.PolynomialLR(o, total_iters=6, power=1.5), 5, epochs=[2, 3, 9, 1, 4])
    assert t == s


CYCLIC = {
    "triangular": ({"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 4}, "sgd"),
    "triangular2 down": ({"base_lr": [0.01, 0.02], "max_lr": 0.2, "step_size_up": 3, "step_size_down": 5,
                          "mode": "triangular2"}, "sgd"),
    "exp_range adam": ({"base_lr": 0.001, "max_lr": 0.01, "step_size_up": 2, "mode": "exp_range",
                        "gamma": 0.9}, "adam"),
    "custom fn": ({"base_lr": 0.01, "max_lr": 0.05, "step_size_up": 3, "scale_fn": lambda x: 0.5 ** x,
                   "scale_mode": "iterations", "cycle_momentum": False}, "plain"),
    "momenta lists": ({"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2, "base_momentum": [0.7, 0.75],
                       "max_momentum": 0.95}, "sgd"),
}


@pytest.mark.parametrize("case", CYCLIC.values(), ids=CYCLIC.keys())
def test_cyclic_lr_matches_torch(case):
    kw, kind = case
    t, s = _run(lambda m, o: m.CyclicLR(o, **kw), 25, kind)
    assert t == s


class _Halve:
    def __init__(self) -> None:
        self.k = 0.5

    def __call__(self, x: float) -> float:
        return self.k ** x


def test_cyclic_lr_state_dict_and_errors():
    st = {}
    for lib in (torch, sg):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, scale_fn=_Halve())
        sd = sched.state_dict()
        st[lib] = (sorted(sd), sd["_scale_fn_custom"], sd["total_size"], sd["step_ratio"], sd["base_lrs"])
        sched._scale_fn_custom.k = 0.1
        sched.load_state_dict(sd)
        assert sched._scale_fn_custom.k == 0.5
    assert st[torch] == st[sg]
    assert "_scale_fn_ref" not in sg.optim.lr_scheduler.CyclicLR(_opt(sg), 0.01, 0.1).state_dict()
    assert_same_error(lambda m: m.optim.lr_scheduler.CyclicLR(_opt(m), 0.01, 0.1, mode="sine"))
    assert_same_error(lambda m: m.optim.lr_scheduler.CyclicLR(m.optim.Adagrad([m.ones(1)]), 0.01, 0.1))
    assert_same_error(lambda m: m.optim.lr_scheduler.CyclicLR(_opt(m), [0.01], 0.1))
    assert_same_error(lambda m: m.optim.lr_scheduler.CyclicLR([1.0], 0.01, 0.1))


WARM = {"T_0 3": {"T_0": 3}, "T_mult 2": {"T_0": 2, "T_mult": 2, "eta_min": 0.001}, "T_mult 3": {"T_0": 1, "T_mult": 3}}


@pytest.mark.parametrize("kw", WARM.values(), ids=WARM.keys())
def test_cosine_warm_restarts_matches_torch(kw):
    t, s = _run(lambda m, o: m.CosineAnnealingWarmRestarts(o, **kw), 30)
    assert t == s


def test_cosine_warm_restarts_fractional_epochs():
    epochs = [0.25, 0.5, 1.75, 3.0, 5.5, 2.0, 9.9, 14, 30.5, 0]
    for kw in WARM.values():
        t, s = _run(lambda m, o, kw=kw: m.CosineAnnealingWarmRestarts(o, **kw), len(epochs), epochs=epochs)
        assert t == s


def test_cosine_warm_restarts_errors_and_no_warning():
    assert_same_error(lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(m), T_0=0))
    assert_same_error(lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(m), T_0=2.0))
    assert_same_error(lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(m), T_0=2, T_mult=0))
    assert_same_error(lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(m), T_0=2, eta_min="0"))
    assert_same_error(lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(m), T_0=2).step(-1))
    for lib in (torch, sg):  # its own step(): no scheduler-before-optimizer warning
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(lib), T_0=2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()
        assert sched._step_count == 0
