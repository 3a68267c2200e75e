"""``InstanceNorm1d`` / ``2d`` / ``3d`` and ``F.instance_norm`` against torch 2.13: outputs, grad_fn names, input
and parameter gradients (float64 to rtol 1e-12, float32 to the conftest tolerance), running statistics through
training and eval steps, unbatched inputs, reprs, ``state_dict`` keys, warnings and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(5)
X3 = RNG.standard_normal((3, 4, 5)) + 0.5
X4 = RNG.standard_normal((2, 3, 3, 4)) * 1.5
X5 = RNG.standard_normal((2, 2, 2, 3, 2))


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {}


CASES = [
    ("1d", lambda nn: nn.InstanceNorm1d(4), X3),
    ("1d affine", lambda nn: nn.InstanceNorm1d(4, affine=True), X3),
    ("1d tracked", lambda nn: nn.InstanceNorm1d(4, momentum=0.3, track_running_stats=True), X3),
    ("1d unbatched", lambda nn: nn.InstanceNorm1d(4, affine=True, track_running_stats=True), X3[0]),
    ("2d affine tracked", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True, eps=1e-3), X4),
    ("2d no bias", lambda nn: nn.InstanceNorm2d(3, affine=True, bias=False), X4),
    ("2d momentum None", lambda nn: nn.InstanceNorm2d(3, momentum=None, track_running_stats=True), X4),
    ("3d", lambda nn: nn.InstanceNorm3d(2, affine=True, track_running_stats=True), X5),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,make,x", CASES, ids=[c[0] for c in CASES])
def test_instance_norm_modules_match_torch(name, make, x, dtype):
    td, sd = getattr(torch, dtype), getattr(sg, dtype)
    tmod, smod = make(torch.nn).to(td), make(sg.nn).to(sd)
    assert repr(smod) == repr(tmod)
    assert list(smod.state_dict()) == list(tmod.state_dict())
    with torch.no_grad():
        for p in tmod.parameters():
            p.add_(torch.tensor(RNG.standard_normal(tuple(p.shape)) * 0.3, dtype=p.dtype))
    state = {k: sg.tensor(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()}
    assert repr(smod.load_state_dict(state)) == "<All keys matched successfully>"
    for step in range(3):
        if step == 2:
            tmod.eval()
            smod.eval()
        xx = x * (1 + step)
        tx = torch.tensor(xx, dtype=td, requires_grad=True)
        sx = sg.tensor(xx, dtype=sd, requires_grad=True)
        ty, sy = tmod(tx), smod(sx)
        assert_close(sy, ty, what=f"{name} output {step}", **_tol(dtype))
        assert sy.grad_fn.name() == ty.grad_fn.name()
        up = np.cos(np.arange(xx.size)).reshape(xx.shape)
        ty.backward(torch.tensor(up, dtype=td))
        sy.backward(sg.tensor(up, dtype=sd))
        assert_close(sx.grad, tx.grad, what=f"{name} input grad", **_tol(dtype))
        for (n, sp), (_, tp) in zip(smod.named_parameters(), tmod.named_parameters()):
            assert_close(sp.grad, tp.grad, what=f"{name} {n}.grad", **_tol(dtype))
        for (n, sb), (_, tb) in zip(smod.named_buffers(), tmod.named_buffers()):
            assert_close(sb, tb, what=f"{name} buffer {n}", **_tol(dtype))


def test_functional_instance_norm_matches_torch():
    x = X4.astype(np.float32)
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    res = {}
    for lib in (torch, sg):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        xx = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.instance_norm(xx, rm, rv, lib.tensor(w), lib.tensor(b), momentum=0.2, eps=1e-4)
        z = lib.nn.functional.instance_norm(xx, rm, rv, use_input_stats=False)
        plain = lib.nn.functional.instance_norm(xx)
        res[lib] = (y, z, plain, rm, rv, type(y.grad_fn).__name__, type(plain.grad_fn).__name__)
    for a, e in zip(res[sg][:5], res[torch][:5]):
        assert_close(a, e, rtol=1e-12, atol=1e-12)
    assert res[sg][5:] == res[torch][5:] == ("ViewBackward0", "ViewBackward0")


def test_instance_norm_errors_and_warnings():
    f = "nn.functional.instance_norm"

    def same(fn):
        assert_same_error(lambda: fn(sg), lambda: fn(torch))

    same(lambda m: m.nn.functional.instance_norm(m.ones(2, 3)))
    same(lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 1, 1)))
    same(lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 4), use_input_stats=False))
    same(lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 4), m.zeros(2), m.ones(3)))
    same(lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 4), weight=m.ones(4)))
    same(lambda m: m.nn.functional.instance_norm([1.0]))
    same(lambda m: m.nn.InstanceNorm1d(3)(m.ones(2, 3, 4, 5)))
    same(lambda m: m.nn.InstanceNorm2d(3)(m.ones(3, 4)))
    same(lambda m: m.nn.InstanceNorm3d(3, affine=True)(m.ones(2, 4, 2, 2, 2)))
    msgs = {}
    for lib in (torch, sg):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.InstanceNorm1d(3)(lib.ones(2, 4, 5))
        msgs[lib] = [str(x.message) for x in w]
    assert msgs[sg] == msgs[torch] and len(msgs[sg]) == 1, f


def test_instance_norm_old_checkpoint_running_stats():
    out = {}
    for lib in (torch, sg):
        m = lib.nn.InstanceNorm1d(2)
        sd = {"running_mean": lib.zeros(2), "running_var": lib.ones(2)}
        sd = type(m.state_dict())(sd)  # OrderedDict without the _metadata of a version
        with pytest.raises(RuntimeError) as e:
            m.load_state_dict(sd)
        out[lib] = str(e.value)
    assert out[sg] == out[torch]
