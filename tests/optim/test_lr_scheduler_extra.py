"""``ReduceLROnPlateau`` and ``OneCycleLR`` against torch 2.13: the rates (and momenta / betas) after every step,
state dicts, errors."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
from conftest import assert_same_error

import symgrad as sg


def _opt(lib, kind: str = "sgd", groups: int = 2):
    ps = [lib.tensor([1.0], requires_grad=True) for _ in range(groups)]
    spec = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)]
    if kind == "adam":
        return lib.optim.Adam(spec, lr=0.1)
    if kind == "plain":
        return lib.optim.SGD(spec, lr=0.1)
    return lib.optim.SGD(spec, lr=0.1, momentum=0.9)


METRICS = [1.0, 0.9, 0.95, 0.95, 0.9, 0.97, 0.99, 0.5, 0.5, 0.49995, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.3, 0.3, 0.3,
           0.3, 0.3, 0.3, 0.3, 0.3]

PLATEAU = {
    "default": {},
    "patience 2": {"patience": 2},
    "max abs": {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 1},
    "max rel": {"mode": "max", "patience": 0, "factor": 0.5},
    "min abs cooldown": {"threshold_mode": "abs", "threshold": 0.01, "patience": 1, "cooldown": 2, "factor": 0.5},
    "min_lr list": {"patience": 0, "factor": 0.3, "min_lr": [0.01, 0.05]},
    "min_lr eps": {"patience": 0, "factor": 0.9, "min_lr": 0.07, "eps": 1e-3},
}


@pytest.mark.parametrize("kw", PLATEAU.values(), ids=PLATEAU.keys())
def test_reduce_lr_on_plateau_matches_torch(kw):
    runs = []
    for lib in (torch, sg):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        seq = [sched.get_last_lr()]
        for m in METRICS:
            sched.step(lib.tensor(m) if m == 0.5 else m)  # a tensor metric, as a loss would be
            seq.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], sched.num_bad_epochs,
                        sched.cooldown_counter, sched.best, sched.last_epoch, sched.in_cooldown))
        runs.append((seq, sorted(sched.state_dict())))
    assert runs[0] == runs[1]


def test_reduce_lr_on_plateau_state_and_errors():
    t = torch.optim.lr_scheduler.ReduceLROnPlateau(_opt(torch), patience=1)
    s = sg.optim.lr_scheduler.ReduceLROnPlateau(_opt(sg), patience=1)
    for m in (1.0, 2.0):
        t.step(m)
        s.step(m)
    s2 = sg.optim.lr_scheduler.ReduceLROnPlateau(_opt(sg), mode="max")
    s2.load_state_dict(s.state_dict())
    assert (s2.mode, s2.mode_worse, s2.best, s2.num_bad_epochs) == (t.mode, t.mode_worse, t.best, t.num_bad_epochs)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        t.step(3.0, epoch=5)
    with warnings.catch_warnings(record=True) as sw:
        warnings.simplefilter("always")
        s.step(3.0, epoch=5)
    assert [str(w.message) for w in sw] == [str(w.message) for w in tw]
    assert s.get_last_lr() == t.get_last_lr() and s.last_epoch == t.last_epoch == 5
    for kw in ({"factor": 1.0}, {"mode": "up"}, {"threshold_mode": "x"}, {"min_lr": [0.1]}):
        assert_same_error(lambda kw=kw: sg.optim.lr_scheduler.ReduceLROnPlateau(_opt(sg), **kw),
                          lambda kw=kw: torch.optim.lr_scheduler.ReduceLROnPlateau(_opt(torch), **kw))
    assert_same_error(lambda: sg.optim.lr_scheduler.ReduceLROnPlateau(object()),
                      lambda: torch.optim.lr_scheduler.ReduceLROnPlateau(object()))
    # a group added after construction with per-group min_lrs
    for lib in (torch, sg):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
        opt.add_param_group({"params": [lib.tensor([2.0], requires_grad=True)]})
        sched.step(1.0)
        with pytest.raises(RuntimeError, match="differs from when `ReduceLROnPlateau` was initialized"):
            sched.step(2.0)


ONECYCLE = {
    "cos sgd": ("sgd", {"max_lr": 1.0, "total_steps": 20}),
    "linear three phase": ("sgd", {"max_lr": [0.5, 2.0], "total_steps": 17, "anneal_strategy": "linear",
                                   "three_phase": True, "pct_start": 0.25}),
    "epochs adam": ("adam", {"max_lr": 0.01, "epochs": 3, "steps_per_epoch": 5, "div_factor": 10.0,
                             "final_div_factor": 100.0, "base_momentum": 0.8, "max_momentum": [0.9, 0.99]}),
    "no momentum cycle": ("plain", {"max_lr": 0.3, "total_steps": 9, "cycle_momentum": False}),
}


@pytest.mark.parametrize("kind,kw", ONECYCLE.values(), ids=ONECYCLE.keys())
def test_one_cycle_matches_torch(kind, kw):
    runs = []
    for lib in (torch, sg):
        opt = _opt(lib, kind)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, **kw)
        seq = [sched.get_last_lr()]
        for _ in range(sched.total_steps - 1):
            opt.step()
            sched.step()
            seq.append((sched.get_last_lr(), [{k: g.get(k) for k in ("momentum", "betas", "initial_lr", "max_lr",
                                                                      "min_lr", "max_momentum", "base_momentum")}
                                              for g in opt.param_groups]))
        runs.append((seq, sorted(sched.state_dict())))
        with pytest.raises(ValueError, match="Tried to step"):
            sched.step()
            sched.step()
    assert runs[0] == runs[1]
    assert all(math.isfinite(lr) for lr in runs[1][0][-1][0])


@pytest.mark.parametrize("kw", [
    {"max_lr": 1.0},
    {"max_lr": 1.0, "total_steps": 0},
    {"max_lr": 1.0, "epochs": 0, "steps_per_epoch": 3},
    {"max_lr": 1.0, "epochs": 2, "steps_per_epoch": -1},
    {"max_lr": 1.0, "total_steps": 10, "pct_start": 1},
    {"max_lr": 1.0, "total_steps": 10, "anneal_strategy": "exp"},
    {"max_lr": [1.0], "total_steps": 10},
], ids=["no steps", "zero steps", "zero epochs", "negative steps_per_epoch", "int pct", "strategy", "max_lr list"])
def test_one_cycle_errors(kw):
    assert_same_error(lambda: sg.optim.lr_scheduler.OneCycleLR(_opt(sg), **kw),
                      lambda: torch.optim.lr_scheduler.OneCycleLR(_opt(torch), **kw))


def test_one_cycle_needs_momentum():
    class NoMomentum(sg.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        sg.optim.lr_scheduler.OneCycleLR(NoMomentum([sg.tensor([1.0], requires_grad=True)]), 1.0, total_steps=5)
