"""Eager reductions against torch 2.13, bit for bit: ``sum`` / ``mean`` / ``prod`` / ``cumsum`` values and gradients
(the broadcast operand's ``sum_to``, prod's ``grad * (result / input)``) and pow's specialised exponents."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.core import ranges

SHAPES = [(1,), (7,), (16,), (33,), (100,), (1000,), (10000,), (2, 5), (10, 100), (100, 100), (37, 3)]


@pytest.fixture(autouse=True)
def _threads():
    ranges.set_num_threads(torch.get_num_threads())
    yield
    ranges.set_num_threads(None)


def _bits(ours: object, theirs: torch.Tensor) -> None:
    o = np.ascontiguousarray(np.asarray(ours.detach().numpy() if hasattr(ours, "detach") else ours))
    t = np.ascontiguousarray(theirs.detach().numpy())
    assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, t.shape, o.dtype, t.dtype)
    assert o.tobytes() == t.tobytes(), (o.ravel()[:4], t.ravel()[:4])


def _run(lib, fn, arrays: list, weight: np.ndarray | None = None) -> tuple:
    """``fn`` on tensors of ``arrays`` (requiring grad), and the gradients of ``(out * weight).sum()``."""
    xs = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    loss = (out * lib.tensor(weight)).sum() if weight is not None else out.sum()
    loss.backward()
    return out, [x.grad for x in xs]


def _same(fn, arrays: list, weighted: bool = True) -> None:
    w = None
    if weighted:
        probe = fn(torch, *[torch.tensor(a) for a in arrays])
        w = np.random.default_rng(7).standard_normal(probe.shape).astype(arrays[0].dtype)
    ours, ours_g = _run(sg, fn, arrays, w)
    theirs, theirs_g = _run(torch, fn, arrays, w)
    _bits(ours, theirs)
    for a, b in zip(ours_g, theirs_g):
        _bits(a, b)


def _data(shape: tuple, dt: str, lo: float | None = None, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng([seed, *shape])
    x = rng.uniform(lo, 2 - lo, shape) if lo is not None else rng.standard_normal(shape)
    return x.astype(dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_and_mean_values_and_grads(op, dt):
    for shape in SHAPES:
        a = _data(shape, dt)
        _same(lambda m, x: getattr(m, op)(x), [a])
        if len(shape) == 2:
            _same(lambda m, x: getattr(m, op)(x, dim=0), [a])
            _same(lambda m, x: getattr(m, op)(x, dim=-1), [a])
            _same(lambda m, x: getattr(m, op)(x, dim=1, keepdim=True), [a])


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_prod_values_and_grads(dt):
    for shape in SHAPES:
        a = _data(shape, dt, lo=0.9)
        _same(lambda m, x: m.prod(x), [a])
        if len(shape) == 2:
            _same(lambda m, x: m.prod(x, dim=0), [a])
            _same(lambda m, x: m.prod(x, dim=-1), [a])


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_broadcast_operand_gradients_sum_as_torch(dt):
    # torch reduces the broadcast operand's gradient with at::sum_to; the eager backward program does too
    for sa, sb in [((7,), ()), ((3, 5), (5,)), ((100, 100), (100, 1)), ((100, 100), (100,)), ((4, 30, 50), (30, 1)),
                   ((1000, 16), (16,))]:
        a, b = _data(sa, dt), _data(sb, dt, lo=0.5)
        _same(lambda m, x, y: x * y, [a, b])
        _same(lambda m, x, y: x + y, [a, b])
        # the divisor's gradient is ((-g) * out) / b here, torch's (-g) * ((a / b) / b): equal for g == 1 only
        _same(lambda m, x, y: x / y, [a, b], weighted=False)


def test_cumsum_values_and_grads():
    for dt in ("float32", "float64"):
        for shape, dim in [((10,), 0), ((1000,), 0), ((100, 100), 0), ((100, 100), -1)]:
            _same(lambda m, x, dim=dim: m.cumsum(x, dim=dim), [_data(shape, dt)])


def test_mse_and_linear_regression_step():
    # a seeded linear regression: the loss (a mean), the bias gradient (a sum over the batch), one SGD step
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, 3)).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5], np.float32) + 0.3).astype(np.float32)
    res = {}
    for lib in (sg, torch):
        w = lib.tensor(np.full(3, 0.1, np.float32), requires_grad=True)
        b = lib.tensor(np.float32(0.0), requires_grad=True)
        xt, yt = lib.tensor(x), lib.tensor(y)
        for _ in range(3):
            loss = ((xt * w).sum(dim=1) + b - yt).pow(2).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
                b -= 0.1 * b.grad
            w.grad.zero_()
            b.grad.zero_()
        res[lib.__name__] = (loss, w, b)
    for ours, theirs in zip(res["symgrad"], res["torch"]):
        _bits(ours, theirs)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_pow_specialised_exponents(dt):
    # torch: x*x, x*x*x, 1/x, 1/(x*x), rsqrt; the gradient g * (e * x.pow(e - 1)) takes them again (x.pow(-0.5) for
    # e = 0.5, x.pow(-2) for e = -1). Not compared: the value of x ** 0.5 (torch's sqrt is MKL's, not correctly
    # rounded on this CPU) and the gradients needing x.pow(-1.5) or x.pow(-3) (torch's SLEEF pow).
    a = _data((100, 100), dt, lo=0.1)
    for e in (2, 3, -0.5, -1, -2):
        _bits(sg.tensor(a) ** e, torch.tensor(a) ** e)
    for e in (2, 3, 0.5, -1):
        ours = _run(sg, lambda m, x, e=e: x ** e, [a])[1][0]
        _bits(ours, _run(torch, lambda m, x, e=e: x ** e, [a])[1][0])
    _bits(sg.rsqrt(sg.tensor(a)), torch.rsqrt(torch.tensor(a)))


def test_hot_eager_programs_with_sums_keep_torch_order(monkeypatch):
    # a structure seen EAGER_JIT_AFTER times moves to numba unless its numba loops would sum in another order
    from symgrad.eager import autograd

    monkeypatch.setattr(autograd, "EAGER_JIT_AFTER", 2)
    a, b = _data((90, 70), "float32"), _data((90, 1), "float32", lo=0.5)
    before = set(autograd._PROGRAMS)
    for _ in range(4):
        _same(lambda m, x, y: x * y, [a, b])
    (key,) = set(autograd._PROGRAMS) - before
    prog = autograd._PROGRAMS[key].program
    assert prog.calls == 4 and prog.jit is None and prog.hot_after > 10 ** 9
