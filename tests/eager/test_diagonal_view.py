"""``diagonal`` is a view, as torch's: in-place writes into it (``fill_``, ``copy_``, ``add_``, ``mul_``, ``+=``)
reach the base, the version counter is shared, strides are torch's, and gradients flow through the write
(``CopySlices``) and through the view (``DiagonalBackward0``), against torch 2.13."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_close

import symgrad as sg

WRITES = [
    ("fill", lambda d, lib: d.fill_(-1.0)),
    ("add", lambda d, lib: d.add_(100.0)),
    ("mul", lambda d, lib: d.mul_(10.0)),
    ("iadd", lambda d, lib: d.__iadd__(1.5)),
    ("copy", lambda d, lib: d.copy_(lib.arange(float(d.shape[-1])) + 7.0)),
]
VIEWS = [  # shape, offset, dim1, dim2
    ((3, 3), 0, 0, 1),
    ((3, 4), 2, 0, 1),
    ((4, 3), -1, 0, 1),
    ((2, 3, 4), 1, 1, 2),
    ((2, 3, 4), -1, 0, 2),
    ((2, 3, 3), 0, -2, -1),
]


@pytest.mark.parametrize("write", WRITES, ids=[w[0] for w in WRITES])
@pytest.mark.parametrize("case", VIEWS, ids=[str(v) for v in VIEWS])
def test_write_through_diagonal(write: Any, case: Any) -> None:
    shape, offset, d1, d2 = case
    res = []
    for lib in (sg, torch):
        x = lib.arange(float(np.prod(shape))).reshape(shape)
        d = lib.diagonal(x, offset, d1, d2) if d1 != 0 or d2 != 1 else x.diagonal(offset)
        before = int(x._version)
        write[1](d, lib)
        res.append((x.numpy().copy(), d.numpy().copy(), int(x._version) - before,
                    int(d._version) == int(x._version), d.stride(), d.is_contiguous()))
    (xs, ds, *rest_s), (xt, dt, *rest_t) = res
    np.testing.assert_array_equal(xs, xt)
    np.testing.assert_array_equal(ds, dt)
    assert rest_s == rest_t


def test_base_write_seen_by_diagonal() -> None:
    for lib in (sg, torch):
        a = lib.zeros(3, 3)
        d = a.diagonal()
        a[1, 1] = 5.0
        assert d.tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_through_written_diagonal(dtype: str) -> None:
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((3, 3)).astype(dtype)
    b0 = rng.standard_normal((2, 3, 3)).astype(dtype)
    out = []
    for lib in (sg, torch):
        w = lib.tensor(w0, requires_grad=True)
        y = w * 2
        y.diagonal().mul_(w[0])
        names = [y.grad_fn.name()]
        (y * y).sum().backward()
        b = lib.tensor(b0, requires_grad=True)
        c = b.clone()
        c.diagonal(0, -2, -1).sub_(b.sum(-1))
        names.append(c.grad_fn.name())
        (c * lib.arange(18.0).reshape(2, 3, 3).to(c.dtype)).sum().backward()
        v = lib.ones(3, requires_grad=True)
        z = lib.zeros(2, 3, 3)
        z.diagonal(dim1=1, dim2=2).copy_(v * 3)
        names.append(z.grad_fn.name())
        (z ** 2).sum().backward()
        out.append((names, w.grad.numpy(), b.grad.numpy(), v.grad.numpy()))
    assert out[0][0] == out[1][0]
    for a, b in zip(out[0][1:], out[1][1:]):
        assert_close(a, b)


def test_gradient_of_diagonal_view() -> None:
    out = []
    for lib in (sg, torch):
        w = lib.arange(12.0).reshape(4, 3).requires_grad_()
        d = w.diagonal(-1)
        name = d.grad_fn.name()
        (d * lib.arange(3.0)).sum().backward()
        out.append((name, w.grad.numpy()))
    assert out[0][0] == out[1][0] == "DiagonalBackward0"
    np.testing.assert_array_equal(out[0][1], out[1][1])
