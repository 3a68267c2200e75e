"""``multi_margin_loss``, ``multilabel_margin_loss``, ``multilabel_soft_margin_loss`` and their modules against
torch 2.13: values and input gradients (float64 to 1e-12, float32 to the conftest tolerance), grad_fn names, output
shapes for each reduction, weights, 0-d / 1-d inputs, reprs, state dicts, legacy arguments and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(23)
X = RNG.standard_normal((5, 4)) * 1.3
CLS = np.array([1, 0, 3, 3, 2])
ML = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 1, 1, 1], [2, 2, -1, 0], [1, -1, 3, 0]])
SOFT = (RNG.uniform(size=(5, 4)) > 0.5).astype(np.float64)
W = RNG.uniform(0.5, 2.0, 4)
REDUCTIONS = ("mean", "sum", "none")


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {}


CASES = {
    "multi_margin": lambda F, lib, x, r, dt: F.multi_margin_loss(x, lib.tensor(CLS), reduction=r),
    "multi_margin p2 margin": lambda F, lib, x, r, dt: F.multi_margin_loss(x, lib.tensor(CLS), p=2, margin=0.7,
                                                                            reduction=r),
    "multi_margin weight": lambda F, lib, x, r, dt: F.multi_margin_loss(x, lib.tensor(CLS), p=2,
                                                                         weight=lib.tensor(W, dtype=dt),
                                                                         reduction=r),
    "multi_margin 1-d": lambda F, lib, x, r, dt: F.multi_margin_loss(x[1], lib.tensor([2]), reduction=r),
    "multi_margin 0-d target": lambda F, lib, x, r, dt: F.multi_margin_loss(x[1], lib.tensor(2), reduction=r),
    "multilabel_margin": lambda F, lib, x, r, dt: F.multilabel_margin_loss(x, lib.tensor(ML), reduction=r),
    "multilabel_margin 1-d": lambda F, lib, x, r, dt: F.multilabel_margin_loss(x[0], lib.tensor(ML[0]),
                                                                                reduction=r),
    "multilabel_soft": lambda F, lib, x, r, dt: F.multilabel_soft_margin_loss(x, lib.tensor(SOFT, dtype=dt),
                                                                               reduction=r),
    "multilabel_soft weight": lambda F, lib, x, r, dt: F.multilabel_soft_margin_loss(
        x, lib.tensor(SOFT, dtype=dt), weight=lib.tensor(W, dtype=dt), reduction=r),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(CASES))
def test_losses_match_torch(name, reduction, dtype):
    out = {}
    for lib in (torch, sg):
        dt = getattr(lib, dtype)
        x = lib.tensor(X, dtype=dt, requires_grad=True)
        y = CASES[name](lib.nn.functional, lib, x, reduction, dt)
        y.backward(lib.ones_like(y) * 0.5 if y.ndim else lib.tensor(0.5, dtype=dt))
        out[lib] = (y, x.grad, y.grad_fn.name(), tuple(y.shape), y.dtype is dt)
    assert_close(out[sg][0], out[torch][0], **_tol(dtype))
    assert_close(out[sg][1], out[torch][1], **_tol(dtype))
    assert out[sg][2:] == out[torch][2:]


def test_modules_match_torch():
    for make, target in (
        (lambda nn, lib: nn.MultiMarginLoss(p=2, margin=0.5, weight=lib.tensor(W)), CLS),
        (lambda nn, lib: nn.MultiMarginLoss(reduction="sum"), CLS),
        (lambda nn, lib: nn.MultiLabelMarginLoss(reduction="none"), ML),
        (lambda nn, lib: nn.MultiLabelSoftMarginLoss(weight=lib.tensor(W)), SOFT),
    ):
        res = {}
        for lib in (torch, sg):
            m = make(lib.nn, lib)
            y = m(lib.tensor(X), lib.tensor(target))
            res[lib] = (repr(m), list(m.state_dict()), y.numpy())
        assert res[sg][:2] == res[torch][:2]
        assert_close(res[sg][2], res[torch][2], rtol=1e-12, atol=1e-12)


def test_legacy_arguments_and_zero_dim_input():
    for lib in (torch, sg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = lib.nn.MultiMarginLoss(size_average=False)
        assert m.reduction == "sum"
    a = sg.nn.functional.multi_margin_loss(sg.tensor(1.0), sg.tensor(0), reduce=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = torch.nn.functional.multi_margin_loss(torch.tensor(1.0), torch.tensor(0), reduce=False)
    assert_close(a, b, rtol=0, atol=0)
    assert_close(sg.nn.functional.multilabel_margin_loss(sg.tensor(1.0), sg.tensor(0)),
                 torch.nn.functional.multilabel_margin_loss(torch.tensor(1.0), torch.tensor(0)), rtol=0, atol=0)


def _same(fn) -> None:
    assert_same_error(lambda: fn(sg), lambda: fn(torch))


def test_errors_match_torch():
    x4 = lambda m: m.tensor(X[0])  # noqa: E731
    x22 = lambda m: m.tensor(X[:2, :2])  # noqa: E731
    mm = lambda m: m.nn.functional.multi_margin_loss  # noqa: E731
    ml = lambda m: m.nn.functional.multilabel_margin_loss  # noqa: E731
    _same(lambda m: mm(m)(x4(m), m.tensor([1, 2])))
    _same(lambda m: mm(m)(x22(m), m.tensor([[1], [0]])))
    _same(lambda m: mm(m)(x22(m), m.tensor([1, 0]), weight=m.ones(3)))
    _same(lambda m: mm(m)(x22(m), m.tensor([1, 0]), weight=m.ones(2, 2)))
    _same(lambda m: mm(m)(x22(m), m.tensor([1, 0]), weight=m.tensor([1, 2])))
    _same(lambda m: mm(m)(x22(m), m.tensor([1, 0]), p=3))
    _same(lambda m: mm(m)(x22(m), m.tensor([1, 0]), reduction="avg"))
    _same(lambda m: mm(m)(x22(m), m.tensor([1.0, 0.0])))
    _same(lambda m: mm(m)(x22(m), m.tensor([2, 0])))
    _same(lambda m: mm(m)(x22(m), m.tensor([-1, 0])))
    _same(lambda m: mm(m)(m.ones(2, 0), m.tensor([1, 0])))
    _same(lambda m: mm(m)(m.ones(1, 2, 2), m.tensor([1, 0])))
    _same(lambda m: ml(m)(x4(m), m.tensor([4, 0, -1, 1])))
    _same(lambda m: ml(m)(x4(m), m.tensor([0, -1, 9, 1])))
    _same(lambda m: ml(m)(x4(m), m.tensor([0, -2, 3, 1])))
    _same(lambda m: ml(m)(x4(m), m.tensor([[3, 0, -1, 1]])))
    _same(lambda m: ml(m)(x22(m), m.tensor([[1, 0]])))
    _same(lambda m: ml(m)(x4(m), m.tensor([1.0, 0, -1, 1])))
    _same(lambda m: ml(m)(x22(m), m.tensor([[1, 0], [0, 1]]), reduction="avg"))
    _same(lambda m: m.nn.functional.multilabel_soft_margin_loss(x22(m), m.ones(2, 2), reduction="avg"))
    _same(lambda m: m.nn.MultiMarginLoss(p=0))
    _same(lambda m: m.nn.MultiMarginLoss(weight=m.ones(2, 2)))
