"""``sg.nn.utils``' gradient clipping and parameter/vector conversion against torch 2.13."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(3)
SHAPES = [(5, 3), (3,), (7, 2), ()]
VALUES = [RNG.standard_normal(s) for s in SHAPES]
GRADS = [RNG.standard_normal(s) * 3 for s in SHAPES]


def _pair(dtype: str, grads: list[np.ndarray | None] = GRADS) -> tuple[list, list]:
    tp = [torch.nn.Parameter(torch.tensor(v, dtype=getattr(torch, dtype))) for v in VALUES]
    sp = [sg.nn.Parameter(sg.tensor(v, dtype=getattr(sg, dtype))) for v in VALUES]
    for t, s, g in zip(tp, sp, grads):
        if g is not None:
            t.grad = torch.tensor(g, dtype=t.dtype)
            s.grad = sg.tensor(g, dtype=s.dtype)
    return tp, sp


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-12, "atol": 0} if dtype == "float64" else {}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf"), 3.0, 0.5, "inf"])
@pytest.mark.parametrize("max_norm", [1.0, 1e6])
def test_clip_grad_norm_matches_torch(dtype, norm_type, max_norm):
    tp, sp = _pair(dtype, GRADS[:2] + [None] + GRADS[3:])
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    sn = sg.nn.utils.clip_grad_norm_(sp, max_norm, norm_type)
    assert isinstance(sn, sg.Tensor) and sn.shape == tn.shape == ()
    if float(norm_type) in (1.0, 2.0, float("inf")):  # p = 0.5, 3 in float32: pow rounds apart in the last digit
        assert repr(sn) == repr(tn)
    assert_close(sn, tn, what="total norm", **_tol(dtype))
    for t, s in zip(tp, sp):
        assert_close(s.grad, t.grad, what="clipped grad", **_tol(dtype))


def test_clip_grad_norm_single_tensor_foreach_and_no_grads():
    tp, sp = _pair("float64")
    for foreach in (None, True, False):
        tp, sp = _pair("float64")
        tn = torch.nn.utils.clip_grad_norm_(tp[0], 0.5, foreach=foreach)
        sn = sg.nn.utils.clip_grad_norm_(sp[0], 0.5, foreach=foreach)
        assert_close(sn, tn, rtol=1e-12)
        assert_close(sp[0].grad, tp[0].grad, rtol=1e-12)
    tp, sp = _pair("float32", [None] * 4)
    assert repr(sg.nn.utils.clip_grad_norm_(sp, 1.0)) == repr(torch.nn.utils.clip_grad_norm_(tp, 1.0)) == \
        "tensor(0.)"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sg.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    assert "empty generator" in str(w[0].message)
    # the returned norm does not require grad and the grads were rescaled in place (same objects)
    tp, sp = _pair("float32")
    g0 = sp[0].grad
    sn = sg.nn.utils.clip_grad_norm_(sp, 1.0)
    assert not sn.requires_grad and sp[0].grad is g0


def test_clip_grad_norm_nonfinite():
    tp, sp = _pair("float64", [np.full((5, 3), np.inf)] + GRADS[1:])
    assert_same_error(lambda: sg.nn.utils.clip_grad_norm_(sp, 1.0, error_if_nonfinite=True),
                      lambda: torch.nn.utils.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True))
    tn = torch.nn.utils.clip_grad_norm_(tp, 1.0)
    sn = sg.nn.utils.clip_grad_norm_(sp, 1.0)
    assert_close(sn, tn)
    for t, s in zip(tp, sp):
        assert_close(s.grad, t.grad)


def test_total_norm_and_clip_with_norm():
    tp, sp = _pair("float64")
    tn = torch.nn.utils.get_total_norm([p.grad for p in tp], 3.0)
    sn = sg.nn.utils.get_total_norm([p.grad for p in sp], 3.0)
    assert_close(sn, tn, rtol=1e-12)
    torch.nn.utils.clip_grads_with_norm_(tp, 2.0, tn)
    sg.nn.utils.clip_grads_with_norm_(sp, 2.0, sn)
    for t, s in zip(tp, sp):
        assert_close(s.grad, t.grad, rtol=1e-12)
    with pytest.warns(FutureWarning):
        sg.nn.utils.clip_grad_norm(sp, 1.0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_clip_grad_value(dtype):
    tp, sp = _pair(dtype, GRADS[:1] + [None] + GRADS[2:])
    assert torch.nn.utils.clip_grad_value_(tp, 1.5) is None
    assert sg.nn.utils.clip_grad_value_(sp, 1.5) is None
    for t, s in zip(tp, sp):
        assert_close(s.grad, t.grad, rtol=0, atol=0)
    torch.nn.utils.clip_grad_value_(tp[0], 0.1, foreach=True)
    sg.nn.utils.clip_grad_value_(sp[0], 0.1, foreach=True)
    assert_close(sp[0].grad, tp[0].grad, rtol=0, atol=0)


def test_parameters_to_vector_and_back():
    torch.manual_seed(0)
    sg.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    sm = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.Linear(4, 2))
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    sv = sg.nn.utils.parameters_to_vector(sm.parameters())
    assert_close(sv, tv, rtol=0, atol=0)
    assert sv.grad_fn.name() == tv.grad_fn.name() == "CatBackward0"
    (sv * sg.arange(sv.numel(), dtype=sv.dtype)).sum().backward()
    (tv * torch.arange(tv.numel(), dtype=tv.dtype)).sum().backward()
    for (n, s), (_, t) in zip(sm.named_parameters(), tm.named_parameters()):
        assert_close(s.grad, t.grad, rtol=0, atol=0, what=n)
    new = np.linspace(-1, 1, tv.numel()).astype(np.float32)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tm.parameters())
    sg.nn.utils.vector_to_parameters(sg.tensor(new), sm.parameters())
    for (n, s), (_, t) in zip(sm.named_parameters(), tm.named_parameters()):
        assert_close(s, t, rtol=0, atol=0, what=n)
        assert isinstance(s, sg.nn.Parameter) and s.requires_grad
    assert_same_error(lambda: sg.nn.utils.vector_to_parameters(new, sm.parameters()),
                      lambda: torch.nn.utils.vector_to_parameters(new, tm.parameters()))
    assert_same_error(lambda: sg.nn.utils.vector_to_parameters([1.0], sm.parameters()),
                      lambda: torch.nn.utils.vector_to_parameters([1.0], tm.parameters()))
