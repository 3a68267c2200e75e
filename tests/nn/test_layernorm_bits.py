"""``F.layer_norm`` / ``nn.LayerNorm`` carry torch 2.13's CPU bits: the row moments (``RowwiseMoments``: Welford per
vector lane over chunks, the chunks' cascade, the scalar tail, the lanes' merge), ``rstd`` and the output, for float32
and float64, with and without weight / bias; gradients stay the composite's (close to torch's). ``F.group_norm`` /
``nn.GroupNorm`` likewise (the same moments per group, rstd in double, the per-channel fused affine); ``F.rms_norm``
too."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.nn.normalization import _torch_row_moments

CASES = [((4, 8), 1), ((3, 5, 7), 1), ((3, 5, 7), 2), ((6, 100), 1), ((2, 3, 33), 1), ((3, 1500), 1), ((5, 136), 1),
         ((7, 300), 1), ((2, 3), 1), ((4, 16), 1)]


def _data(shape: tuple, k: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + sum(shape))
    ns = shape[len(shape) - k:]
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    return x, rng.standard_normal(ns).astype(dtype), rng.standard_normal(ns).astype(dtype)


def _ln(lib: Any, x: np.ndarray, k: int, w: np.ndarray | None, b: np.ndarray | None) -> bytes:
    ns = list(x.shape[x.ndim - k:])
    wt = None if w is None else lib.tensor(w)
    bt = None if b is None else lib.tensor(b)
    return lib.nn.functional.layer_norm(lib.tensor(x), ns, wt, bt).numpy().tobytes()


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[f"{s}-{k}" for s, k in CASES])
def test_functional_bits(case: tuple, dtype: str, affine: str) -> None:
    shape, k = case
    for seed in range(2):
        x, w, b = _data(shape, k, dtype, seed)
        w_ = w if affine in ("weight", "both") else None
        b_ = b if affine in ("bias", "both") else None
        assert _ln(sg, x, k, w_, b_) == _ln(torch, x, k, w_, b_)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [7, 64, 68, 200, 1029, 40000])
def test_row_moments_match_native_layer_norm(dtype: str, n: int) -> None:
    """The mean and rstd ``torch.native_layer_norm`` returns, bit for bit (rows longer than 1000 included)."""
    x = (np.random.default_rng(n).standard_normal((3, n)) * 2 - 0.5).astype(dtype)
    _, mean, rstd = torch.native_layer_norm(torch.tensor(x), [n], None, None, 1e-5)
    m, v = _torch_row_moments(x)
    r = x.dtype.type(1) / np.sqrt(v + x.dtype.type(1e-5))
    assert m.tobytes() == mean.numpy().reshape(-1).tobytes()
    assert r.tobytes() == rstd.numpy().reshape(-1).tobytes()


@pytest.mark.parametrize("elementwise_affine", [True, False])
def test_module_signed_zeros_and_grads(elementwise_affine: bool) -> None:
    """``nn.LayerNorm`` on rows with exact means (zeros, whose signs torch's fused multiply-add sets), a zero weight;
    gradients close to torch's."""
    x0 = np.random.default_rng(3).standard_normal((6, 12)).astype("float32")
    x0[0] = 1.5
    x0[1, :6], x0[1, 6:] = 2.0, -2.0
    g0 = np.random.default_rng(4).standard_normal((6, 12)).astype("float32")
    res = []
    for lib in (sg, torch):
        lib.manual_seed(0)
        m = lib.nn.LayerNorm(12, elementwise_affine=elementwise_affine)
        if elementwise_affine:
            with lib.no_grad():
                m.weight.copy_(lib.tensor(np.linspace(-1, 1, 12, dtype="float32")))
                m.bias.copy_(lib.tensor(np.linspace(0.5, -0.5, 12, dtype="float32")))
        x = lib.tensor(x0, requires_grad=True)
        y = m(x)
        (y * lib.tensor(g0)).sum().backward()
        res.append((y.detach().numpy().tobytes(), type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name(),
                    x.grad.numpy()))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_weight_only_zero_rows(dtype: str) -> None:
    """A constant row normalises to zeros; with a weight alone torch's ``fma(y, w, 0)`` makes every one ``+0``."""
    x0 = np.ones((2, 9), dtype) * np.array([[0.25], [-3.0]], dtype)
    w0 = np.linspace(-2, 2, 9).astype(dtype)
    out = [_ln(lib, x0, 1, w0, None) for lib in (sg, torch)]
    assert out[0] == out[1]
    assert not np.signbit(np.frombuffer(out[0], dtype)).any()


GN_CASES = [((4, 6, 10), 3), ((3, 8, 5, 7), 2), ((2, 4, 300), 4), ((5, 6), 3), ((2, 6, 400), 1), ((3, 4, 7), 4)]


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", GN_CASES, ids=[f"{s}-{g}" for s, g in GN_CASES])
def test_group_norm_bits(case: tuple, dtype: str, affine: str) -> None:
    shape, groups = case
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)
    out = []
    for lib in (sg, torch):
        wt = lib.tensor(w) if affine in ("weight", "both") else None
        bt = lib.tensor(b) if affine in ("bias", "both") else None
        out.append(lib.nn.functional.group_norm(lib.tensor(x), groups, wt, bt).numpy().tobytes())
    assert out[0] == out[1]


def test_group_norm_module_and_grads() -> None:
    """``nn.GroupNorm(2, 6)`` on a (3, 6, 5) input: torch's bits; gradients close to torch's."""
    x0 = np.random.default_rng(8).standard_normal((3, 6, 5)).astype("float32")
    res = []
    for lib in (sg, torch):
        m = lib.nn.GroupNorm(2, 6)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.linspace(-1, 2, 6, dtype="float32")))
            m.bias.copy_(lib.tensor(np.linspace(1, -1, 6, dtype="float32")))
        x = lib.tensor(x0, requires_grad=True)
        y = m(x)
        (y * y).sum().backward()
        res.append((y.detach().numpy().tobytes(), x.grad.numpy(), m.weight.grad.numpy()))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES[:7], ids=[f"{s}-{k}" for s, k in CASES[:7]])
def test_rms_norm_bits(case: tuple, dtype: str, eps: float | None) -> None:
    """``F.rms_norm`` (torch's composite: ``x * rsqrt(mean(x**2) + eps) * weight``), with and without a weight."""
    shape, k = case
    x, w, _ = _data(shape, k, dtype, 0)
    for weight in (None, w):
        out = [lib.nn.functional.rms_norm(lib.tensor(x), list(w.shape), None if weight is None else lib.tensor(weight),
                                          eps).numpy().tobytes() for lib in (sg, torch)]
        assert out[0] == out[1]
