"""F.affine_grid and F.grid_sample (symgrad/nn/sampling.py) against torch 2.13: values, gradients with respect
to the input, the grid and theta, grad_fn names, warnings and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 1, 3, 4, 2)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(dtype, size, align_corners):
    rng = np.random.default_rng(0)
    theta = (rng.standard_normal((2, len(size) - 2, len(size) - 1)) * 0.7).astype(dtype)
    tt, ts = torch.tensor(theta, requires_grad=True), sg.tensor(theta, requires_grad=True)
    gt = torch.nn.functional.affine_grid(tt, size, align_corners=align_corners)
    gs = sg.nn.functional.affine_grid(ts, size, align_corners=align_corners)
    assert type(gs.grad_fn).__name__ == type(gt.grad_fn).__name__
    r = rng.standard_normal(tuple(gt.shape)).astype(dtype)
    (gt * torch.tensor(r)).sum().backward()
    (gs * sg.tensor(r)).sum().backward()
    tol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(gs.detach().numpy(), gt.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(ts.grad.numpy(), tt.grad.numpy(), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode, padding_mode, align_corners", [
    ("bilinear", "zeros", False), ("bilinear", "border", True), ("bilinear", "reflection", False),
    ("bilinear", "reflection", True), ("nearest", "zeros", True), ("nearest", "reflection", False)])
def test_grid_sample(dtype, mode, padding_mode, align_corners):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 5, 6)).astype(dtype)
    g = rng.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(dtype)
    xt, gt = torch.tensor(a, requires_grad=True), torch.tensor(g, requires_grad=True)
    xs, gs = sg.tensor(a, requires_grad=True), sg.tensor(g, requires_grad=True)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    yt, ys = torch.nn.functional.grid_sample(xt, gt, **kw), sg.nn.functional.grid_sample(xs, gs, **kw)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    r = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    (yt * torch.tensor(r)).sum().backward()
    (ys * sg.tensor(r)).sum().backward()
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
    if mode == "bilinear":
        np.testing.assert_allclose(gs.grad.numpy(), gt.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    else:  # torch's nearest grid gradient is zero
        assert not gt.grad.numpy().any() and (gs.grad is None or not gs.grad.numpy().any())


def test_spatial_transformer_step():
    """affine_grid + grid_sample chained, theta from a Linear layer (the STN tutorial's pattern)."""
    res = []
    for lib in (torch, sg):
        lib.manual_seed(0)
        loc = lib.nn.Linear(16, 6)
        x = lib.randn(3, 1, 4, 4)
        theta = loc(x.flatten(1)).view(-1, 2, 3)
        grid = lib.nn.functional.affine_grid(theta, x.size(), align_corners=False)
        out = lib.nn.functional.grid_sample(x, grid, align_corners=False)
        out.pow(2).mean().backward()
        res.append((out.detach().numpy(), loc.weight.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-4, atol=1e-6)


def _messages(lib):
    nnf = lib.nn.functional
    out = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nnf.affine_grid(lib.zeros(1, 2, 3), [1, 1, 2, 2])
        nnf.grid_sample(lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2))
    out += [str(m.message) for m in w]
    for f in (lambda: nnf.affine_grid(lib.zeros(1, 3, 3), [1, 1, 2, 2], align_corners=False),
              lambda: nnf.affine_grid(lib.zeros(1, 2, 3), [1, 1, 2], align_corners=False),
              lambda: nnf.affine_grid(lib.zeros(1, 2, 3, dtype=lib.int64), [1, 1, 2, 2], align_corners=False),
              lambda: nnf.grid_sample(lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2), mode="foo"),
              lambda: nnf.grid_sample(lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2), padding_mode="foo")):
        try:
            f()
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    return out


def test_warnings_and_errors_match_torch():
    assert _messages(sg) == _messages(torch)
