"""codegen.runtime against torch 2.13's CPU kernels: sum, mean, prod and cumsum, bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from codegen import runtime as R

DTYPES = [np.float32, np.float64]
SIZES = list(range(1, 41)) + [63, 64, 65, 100, 127, 128, 129, 255, 257, 1000, 4097, 10000]
SHAPES_2D = [(2, 5), (3, 7), (7, 3), (9, 1), (1, 9), (17, 33), (33, 17), (40, 40), (100, 100), (5, 64), (64, 5),
             (16, 1000), (1000, 16)]


@pytest.fixture(autouse=True)
def _threads():
    R.set_thread_count(torch.get_num_threads)
    yield
    R.set_thread_count(lambda: 1)


def _gen(op: str, shape: tuple, dt: type, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng([seed, *shape, np.dtype(dt).itemsize])
    if op == "prod":  # products of many factors near 1: neither overflow nor underflow
        return rng.uniform(0.9, 1.1, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _torch(op: str, a: np.ndarray, axis, keepdims: bool = False) -> np.ndarray:
    with warnings.catch_warnings():  # a broadcast view is read-only: torch shares it with its strides, warning
        warnings.simplefilter("ignore")
        t = torch.from_numpy(a)
    f = getattr(torch, op)
    if op == "cumsum":
        return f(t, axis).numpy()
    if axis is None:
        r = f(t)
        return (r.reshape((1,) * a.ndim) if keepdims else r).numpy()
    return f(t, axis, keepdim=keepdims).numpy()


def _ours(op: str, a: np.ndarray, axis, keepdims: bool = False) -> np.ndarray:
    if op == "cumsum":
        return R.torch_cumsum(a, axis)
    return getattr(R, f"torch_{op}")(a, axis, keepdims)


def _same(op: str, a: np.ndarray, axis, keepdims: bool = False) -> None:
    want = _torch(op, a, axis, keepdims)
    got = _ours(op, a, axis, keepdims)
    assert got.shape == want.shape and got.dtype == want.dtype, (op, a.shape, a.strides, axis)
    nan = np.isnan(want)  # which NaN (sign, payload) survives depends on operand order inside numpy's loops
    assert np.array_equal(np.isnan(got), nan), (op, a.shape, axis)
    got, want = np.where(nan, 0, got), np.where(nan, 0, want)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), \
        (op, a.dtype, a.shape, a.strides, axis, got.ravel()[:4], want.ravel()[:4])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_full_reductions_of_contiguous_1d(op, dt):
    for n in SIZES:
        for seed in range(2):
            _same(op, _gen(op, (n,), dt, seed), None)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_rows_columns_and_all_of_2d(op, dt):
    for shape in SHAPES_2D:
        a = _gen(op, shape, dt)
        for view in (a, a.T):  # contiguous, and torch's .t() strides
            for axis in (0, 1, -1, None):
                _same(op, view, axis)
        _same(op, a, 1, keepdims=True)
        _same(op, a, None, keepdims=True)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_several_dims_of_3d_and_4d(op, dt):
    for shape in [(3, 4, 5), (4, 17, 9), (2, 3, 40), (10, 10, 10), (5, 1, 7), (8, 9, 10, 11)]:
        a = _gen(op, shape, dt)
        for axis in [0, 1, 2, (0, 1), (0, 2), (1, 2), (0, 1, 2), None, -1]:
            _same(op, a, axis)
        _same(op, np.transpose(a, (2, 0, 1) + tuple(range(3, a.ndim))), (0, 2))


@pytest.mark.parametrize("dt", DTYPES)
def test_prod_over_dims_of_3d(dt):
    for shape in [(3, 4, 5), (4, 17, 9), (2, 3, 40), (10, 10, 10)]:
        a = _gen("prod", shape, dt)
        for axis in (0, 1, 2, -1, None):
            _same("prod", a, axis)
        _same("prod", np.transpose(a, (2, 0, 1)), 1)


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_broadcast_and_strided_views(op):
    for dt in DTYPES:
        row, col = _gen(op, (1, 50), dt), _gen(op, (50, 1), dt)
        for view, axes in ((np.broadcast_to(row, (30, 50)), (0, None)), (np.broadcast_to(col, (50, 30)), (1, None))):
            for axis in axes:
                _same(op, view, axis)
        a = _gen(op, (100, 100), dt)
        for view in (a[::2, ::3], a[:, ::2], a[3:90, 5:]):
            for axis in (0, 1, None):
                _same(op, view, axis)


def test_negative_strides_reduce_as_torch_copies():
    a = _gen("sum", (64, 33), np.float32)
    flipped = a[::-1, ::-1]
    for axis in (0, 1, None):
        want = _torch("sum", np.ascontiguousarray(flipped), axis)
        got = R.torch_sum(flipped, axis)
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_full_reductions_split_over_torch_threads(threads):
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for n in (32768, 65536 + 17, 200003):
            for op in ("sum", "prod"):
                for dt in DTYPES:
                    _same(op, _gen(op, (n,), dt), None)
        _same("sum", _gen("sum", (300, 300), np.float32), 0)   # dims: the kept columns split, same order
        _same("sum", _gen("sum", (300, 300), np.float32), 1)
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("dt", DTYPES)
def test_cumsum_accumulates_float32_in_float64(dt):
    for shape, axis in [((10,), 0), ((1000,), 0), ((100, 100), 0), ((100, 100), 1), ((3, 4, 5), 1)]:
        _same("cumsum", _gen("sum", shape, dt), axis)
    a = _gen("sum", (50, 7), dt)
    want = torch.from_numpy(a).flip(0).cumsum(0).flip(0).numpy()   # torch's cumsum backward
    assert R.torch_cumsum(a, 0, reverse=True).tobytes() == want.tobytes()


def test_special_values_signed_zeros_and_small_cases():
    for dt in DTYPES:
        z = np.full(20, -0.0, dt)
        _same("sum", z, None)              # torch adds into a +0 output: +0.0
        _same("prod", z, None)
        x = _gen("sum", (100,), dt)
        x[[3, 50]] = [np.inf, -np.inf]
        with np.errstate(invalid="ignore"):
            _same("sum", x, None)
        x[7] = np.nan
        with np.errstate(invalid="ignore"):
            _same("sum", x, None)
            _same("prod", x, None)
        _same("sum", np.asarray(2.5, dt), None)        # 0-d
        _same("sum", _gen("sum", (1, 1, 7), dt), (0, 1))  # only size-1 dims reduced
        assert R.torch_sum(np.zeros((0, 3), dt), 0).tolist() == [0.0, 0.0, 0.0]
        assert R.torch_prod(np.zeros((0, 3), dt), 0).tolist() == [1.0, 1.0, 1.0]
    ints = np.arange(-5, 30, dtype=np.int32)
    assert R.torch_sum(ints).dtype == np.int64 and int(R.torch_sum(ints)) == int(ints.sum())
    assert R.torch_cumsum(np.array([True, False, True]), 0).tolist() == [1, 1, 2]
