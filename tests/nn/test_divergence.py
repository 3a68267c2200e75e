"""``F.kl_div`` / ``nn.KLDivLoss`` (every reduction, ``log_target``, legacy arguments) and the ``F.embedding`` export
against torch 2.13."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(5)
LOGP = RNG.standard_normal((4, 5))
TGT = RNG.uniform(0, 1, (4, 5))
TGT0 = TGT.copy()
TGT0[0, 1] = 0.0  # xlogy(0, 0) = 0 (values only: symgrad's gradient of xlogy(t, t) at t = 0 is 1 where torch's is NaN)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
def test_kl_div_matches_torch(reduction, log_target, dtype):
    td, sd = getattr(torch, dtype), getattr(sg, dtype)
    tx = torch.tensor(LOGP, dtype=td, requires_grad=True).log_softmax(1)
    sx = sg.tensor(LOGP, dtype=sd, requires_grad=True).log_softmax(1)
    tgt = np.log(TGT + 0.01) if log_target else TGT
    tt, st = torch.tensor(tgt, dtype=td, requires_grad=True), sg.tensor(tgt, dtype=sd, requires_grad=True)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tl = torch.nn.KLDivLoss(reduction=reduction, log_target=log_target)(tx, tt)
    with warnings.catch_warnings(record=True) as sw:
        warnings.simplefilter("always")
        sl = sg.nn.KLDivLoss(reduction=reduction, log_target=log_target)(sx, st)
    assert [str(w.message) for w in sw] == [str(w.message) for w in tw]
    tol = {"rtol": 1e-12, "atol": 1e-14} if dtype == "float64" else {}
    assert_close(sl, tl, **tol)
    assert sl.grad_fn.name() == tl.grad_fn.name()
    up = RNG.standard_normal(tuple(tl.shape))
    tl.backward(torch.tensor(up, dtype=td))
    sl.backward(sg.tensor(up, dtype=sd))
    assert_close(st.grad, tt.grad, **tol)


def test_kl_div_functional_legacy_and_errors():
    tx, sx = torch.tensor(LOGP), sg.tensor(LOGP)
    tt, st = torch.tensor(TGT0), sg.tensor(TGT0)
    for kw in ({"reduce": False}, {"size_average": False}):
        with pytest.warns(UserWarning) as tw:
            t = torch.nn.functional.kl_div(tx, tt, **kw)
        with pytest.warns(UserWarning) as sw:
            s = sg.nn.functional.kl_div(sx, st, **kw)
        assert [str(w.message) for w in sw] == [str(w.message) for w in tw]
        assert_close(s, t, rtol=1e-12)
    assert_close(sg.nn.functional.kl_div(sx[0], st[0], reduction="batchmean"),
                 torch.nn.functional.kl_div(tx[0], tt[0], reduction="batchmean"), rtol=1e-12)
    assert_close(sg.nn.functional.kl_div(sx, st, reduction="sum"), torch.nn.functional.kl_div(tx, tt, reduction="sum"),
                 rtol=1e-12)
    assert repr(sg.nn.KLDivLoss(reduction="batchmean", log_target=True)) == "KLDivLoss()"
    assert_same_error(lambda: sg.nn.functional.kl_div(sx, st, reduction="bad"),
                      lambda: torch.nn.functional.kl_div(tx, tt, reduction="bad"))


def test_functional_embedding():
    w = RNG.standard_normal((5, 3))
    idx = np.array([[1, 0, 3], [3, 3, 2]])
    tw, sw = torch.tensor(w, requires_grad=True), sg.tensor(w, requires_grad=True)
    ty = torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx=3)
    sy = sg.nn.functional.embedding(sg.tensor(idx), sw, padding_idx=3)
    assert_close(sy, ty, rtol=0, atol=0)
    assert sy.grad_fn.name() == ty.grad_fn.name() == "EmbeddingBackward0"
    (ty * ty).sum().backward()
    (sy * sy).sum().backward()
    assert_close(sw.grad, tw.grad, rtol=0, atol=0)
