"""``optim.Rprop`` and ``optim.ASGD`` against torch 2.13 (single-tensor steps): trajectories and states bit for
bit in float32 and float64, sign flips / NaN gradients (Rprop), averaging from ``t0`` (ASGD), state dicts,
load_state_dict, reprs, errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from test_optim import _Run, _same

import symgrad as sg

CONFIGS = {
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)),
              dict(lr=0.2, etas=(0.6, 1.1), maximize=True)],
    "ASGD": [dict(), dict(lr=0.05, lambd=0.01, alpha=0.5, t0=10, weight_decay=0.1),
             dict(lr=0.1, t0=0, maximize=True)],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]
IDS = [f"{name}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for name, kw in CASES]


def _states_equal(t, s) -> None:
    ts, ss = t.opt.state_dict(), s.opt.state_dict()
    assert ts["param_groups"] == ss["param_groups"]
    assert list(ts["state"]) == list(ss["state"])
    for i, st in ts["state"].items():
        assert list(st) == list(ss["state"][i])
        for key, v in st.items():
            assert str(v.dtype) == str(ss["state"][i][key].dtype)
            assert np.array_equal(v.numpy(), ss["state"][i][key].numpy(), equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_trajectory_bit_identical(name: str, kw: dict, dtype: type) -> None:
    t = _Run(torch, name, kw, dtype, groups=len(kw) > 2).steps(50)
    s = _Run(sg, name, kw, dtype, groups=len(kw) > 2).steps(50)
    assert _same(t.values(), s.values())
    _states_equal(t, s)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rprop_zero_and_nan_gradients(dtype: type) -> None:
    grads = [[1.0, -2.0, 0.0, np.nan, 3.0], [-1.0, -2.0, 5.0, 1.0, np.nan], [0.5, 2.0, -0.0, 1.0, 1.0],
             [0.5, 2.0, 1.0, np.nan, -1.0]]
    out = []
    for lib in (torch, sg):
        p = lib.tensor(np.linspace(-1, 1, 5).astype(dtype), requires_grad=True)
        opt = lib.optim.Rprop([p], lr=0.1)
        for g in grads:
            p.grad = lib.tensor(np.array(g, dtype=dtype))
            opt.step()
        st = opt.state[p]
        out.append([p.detach().numpy().copy(), st["prev"].numpy().copy(), st["step_size"].numpy().copy(),
                    float(st["step"])])
    for a, b in zip(*out):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name,kw", [CASES[1], CASES[4]], ids=["Rprop", "ASGD"])
def test_load_state_dict_continues_the_trajectory(name: str, kw: dict) -> None:
    t = _Run(torch, name, kw, np.float32).steps(40)
    s = _Run(sg, name, kw, np.float32).steps(20)
    saved = copy.deepcopy(s.opt.state_dict())
    fresh = _Run(sg, name, kw, np.float32)
    with sg.no_grad():
        for p, q in zip(fresh.params, s.params):
            p.copy_(q)
    fresh.opt.load_state_dict(saved)
    fresh.steps(20)
    assert _same(t.values(), fresh.values())
    _states_equal(t, fresh)


def test_state_dict_print_repr_and_errors() -> None:
    for name in CONFIGS:
        t = _Run(torch, name, {}, np.float32, groups=True)
        s = _Run(sg, name, {}, np.float32, groups=True)
        assert repr(t.opt) == repr(s.opt)
        t.steps(2)
        s.steps(2)
        assert str(t.opt.state_dict()) == str(s.opt.state_dict())

    def errors(lib):
        p = lib.tensor([1.0], requires_grad=True)
        o = lib.optim
        return [lambda: o.Rprop([p], lr=-1), lambda: o.Rprop([p], etas=(1.0, 1.2)),
                lambda: o.Rprop([p], etas=(0.5, 1.0)), lambda: o.Rprop([p], lr=lib.tensor([0.1, 0.2])),
                lambda: o.ASGD([p], lr=-0.1), lambda: o.ASGD([p], weight_decay=-1)]

    for f_t, f_s in zip(errors(torch), errors(sg)):
        with pytest.raises(Exception) as et:
            f_t()
        with pytest.raises(Exception) as es:
            f_s()
        assert (type(es.value), str(es.value)) == (type(et.value), str(et.value))
