"""Selections, normalizations, scans, joins and logical ops, beyond the registry matrix: torch's rules at
ties, NaNs and zeros, numerical stability, errors, in-place rules, formulas, and compiled functions."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import sympy as sp
import torch
from conftest import assert_close, assert_same_error, grad_fn_name, leaf_pair

import symgrad as sg

NAN, INF = float("nan"), float("inf")


def _grads(fn: Callable, arr: Any, dtype: str = "float64", seed: int = 0) -> tuple:
    """``fn(lib, x)`` and the gradient of ``<fn, v>`` for a random ``v``, in both libraries."""
    x, t = leaf_pair(np.asarray(arr, dtype=np.float64), dtype)
    out, tout = fn(sg, x), fn(torch, t)
    v = np.random.default_rng(seed).standard_normal(tuple(tout.shape)).astype(dtype)
    out.backward(sg.tensor(v))
    tout.backward(torch.tensor(v))
    return out, tout, x.grad, t.grad


def _same(fn: Callable, arr: Any, dtype: str = "float64") -> sg.Tensor:
    out, tout, g, tg = _grads(fn, arr, dtype)
    assert_close(out, tout, what="value")
    assert grad_fn_name(out) == grad_fn_name(tout)
    assert_close(g, tg, what="gradient")
    return g


# ---------------------------------------------------------------------------- ties, NaNs and zeros

TIES = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.max(), lambda lib, x: x.min(), lambda lib, x: x.amax(), lambda lib, x: x.amin(1),
    lambda lib, x: x.amax((0, 1), keepdim=True), lambda lib, x: lib.amax(x, 0),
    lambda lib, x: x.max(1).values, lambda lib, x: x.min(1, keepdim=True)[0], lambda lib, x: lib.max(x, 0).values,
], ids=["max()", "min()", "amax()", "amin(1)", "amax(all,keepdim)", "amax(0)", "max(1)", "min(1,keepdim)",
        "max(x,0)"])
def test_tie_rules_match_torch(fn: Callable):
    _same(fn, TIES)
    _same(fn, np.ones((2, 3)))
    _same(fn, TIES, "float32")


def test_tie_rules_explicitly():
    x = sg.tensor(TIES, dtype=sg.float64, requires_grad=True)
    x.max().backward()  # the maximum 3 appears twice: half each
    assert_close(x.grad, np.array([[0, 0.5, 0.5], [0, 0, 0]]))
    x.grad = None
    x.amax(1).sum().backward()  # row 1: 2 appears twice
    assert_close(x.grad, np.array([[0, 0.5, 0.5], [0.5, 0.5, 0]]))
    x.grad = None
    r = x.max(1)
    r.values.sum().backward()  # to the index returned: the first maximum
    assert r.indices.tolist() == [1, 0]
    assert_close(x.grad, np.array([[0, 1.0, 0], [1.0, 0, 0]]))


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.max(), lambda lib, x: x.amax(0), lambda lib, x: x.max(0).values, lambda lib, x: x.min(),
    lambda lib, x: x.amin(0), lambda lib, x: x.min(0).values, lambda lib, x: x.logsumexp(0),
    lambda lib, x: x.softmax(0), lambda lib, x: x.prod(), lambda lib, x: x.cumsum(0),
], ids=["max()", "amax", "max(0)", "min()", "amin", "min(0)", "logsumexp", "softmax", "prod", "cumsum"])
def test_nan_rules_match_torch(fn: Callable):
    # max(): NaNs share the gradient; amax: NaN gradients; max(dim): the first NaN's index
    _same(fn, [1.0, NAN, 3.0, NAN])


@pytest.mark.parametrize("arr", [[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 3.0, 4.0], [0.0, 0.0, 0.0, 4.0], [1.0, 2.0, 3.0],
                                 [[0.0, 2.0], [3.0, 0.0]], [[0.0, 0.0], [2.0, 5.0]], 0.0, [[0.0], [2.0]]])
@pytest.mark.parametrize("fn", [lambda lib, x: x.prod(), lambda lib, x: x.prod(0), lambda lib, x: x.prod(-1, True)],
                         ids=["prod()", "prod(0)", "prod(-1,keepdim)"])
def test_prod_gradients_at_zeros_are_exact(fn: Callable, arr: Any):
    g = _same(fn, arr)
    assert np.all(np.isfinite(g.numpy()))
    # second derivatives (a Hessian-vector product) as torch's double backward
    x, t = leaf_pair(np.asarray(arr, dtype=np.float64))
    w = np.arange(1.0, x.numel() + 1).reshape(x.shape)
    (gs,) = sg.autograd.grad(fn(sg, x).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(fn(torch, t).sum(), t, create_graph=True)
    assert gs.requires_grad == gt.requires_grad  # a 0-d prod is the identity: a constant gradient
    if not gt.requires_grad:
        return
    (hs,) = sg.autograd.grad((gs * sg.tensor(w)).sum(), x)
    (ht,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), t)
    assert_close(hs, ht, what="hessian-vector product")


def test_prod_gradient_one_zero_is_product_of_others():
    x = sg.tensor([2.0, 0.0, 3.0, 4.0], dtype=sg.float64, requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 24.0, 0.0, 0.0]


# ---------------------------------------------------------------------------- stability

@pytest.mark.parametrize("arr", [[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -2000.0], [[1e4, 0.0], [-1e4, 5.0]],
                                 [-INF, 0.0, 1.0], [-INF, -INF, -INF], [INF, 1.0, 2.0]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [lambda lib, x: x.logsumexp(-1), lambda lib, x: lib.softmax(x, -1),
                                lambda lib, x: lib.log_softmax(x, -1), lambda lib, x: lib.logsumexp(x, 0, True)],
                         ids=["logsumexp", "softmax", "log_softmax", "logsumexp(0,keepdim)"])
def test_normalizations_are_stable(fn: Callable, arr: Any, dtype: str):
    with np.errstate(all="raise"):  # no overflow: the max is subtracted first (NaN only where torch has it)
        try:
            out, tout, g, tg = _grads(fn, arr, dtype)
        except FloatingPointError:
            pytest.fail("overflow or invalid operation in the eager evaluation")
    assert_close(out, tout, what="value")
    assert_close(g, tg, what="gradient")


def test_softmax_of_large_values_compiled():
    f = sg.value_and_grad(lambda x: (sg.softmax(x, 0) * sg.tensor([1.0, 2.0, 3.0])).sum())
    for _ in range(3):
        v, g = f(np.array([1000.0, 1001.0, 1002.0]))
    t = torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64, requires_grad=True)
    tv = (torch.softmax(t, 0) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum()
    tv.backward()
    assert np.isclose(v, tv.item(), rtol=1e-12) and np.allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)


# ---------------------------------------------------------------------------- compiled and eager, against torch

PROGRAMS: dict[str, Callable] = {
    "max": lambda lib, x, y: (x.max() * y).sum() + x.min(),
    "max(dim)": lambda lib, x, y: (x.max(1).values * y[:, 0]).sum() + lib.min(x * y, 0, keepdim=True)[0].sum(),
    "amax": lambda lib, x, y: (x.amax((0, 1), keepdim=True) * y).sum() + x.amin(-1).sum(),
    "prod": lambda lib, x, y: x.prod(1).sum() + (x * y).prod() + lib.relu(x).prod(0).sum() * y.sum(),
    "logsumexp": lambda lib, x, y: lib.logsumexp(x * y, 1).sum() + x.logsumexp((0, 1)),
    "softmax": lambda lib, x, y: (lib.softmax(x, 1) * y).sum() + (x.log_softmax(0) * y).sum(),
    "cumsum": lambda lib, x, y: (x.cumsum(1) * y).sum() + lib.cumsum(x * y, -2).exp().sum(),
    "cat": lambda lib, x, y: (lib.cat([x, y * x], 0) ** 2).sum() + (lib.stack([x, y], -1).sum(-1) * y).sum(),
    "repeat": lambda lib, x, y: (x.repeat(2, 1, 3) ** 2).mean() * y.repeat(1, 2).sum(),
    "split": lambda lib, x, y: sum((p * p.sin()).sum() * (i + 1) for i, p in enumerate(x.split([1, 2])))
    + x.chunk(2, 1)[1].sum() + x.unbind(1)[3].exp().sum() * y.chunk(3)[2].sum(),
    "logical": lambda lib, x, y: lib.where(((x > 0) & ~(y > 0.5)) | lib.isnan(x), x, y * 2).sum()
    + lib.where(lib.isfinite(x.log()) ^ (y < 0), x, 0.0).sum() + lib.where(lib.logical_or(x > 1, y > 1), y, x).sum(),
    "bitwise and casts": lambda lib, x, y: lib.where(((((x * 3).long() & 1) ^ (x > 1).long()) | (~(y < 0).long() & 4))
                                                     == 5, x * y, 0.0).sum() + (y * (x > 0).float()).sum(),
    "argmax": lambda lib, x, y: lib.where(lib.arange(4) == x.argmax(1, keepdim=True), x * y, 0.0).sum()
    + (x.argmin() * y).sum(),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_compiled_and_eager_match_torch(name: str):
    f = PROGRAMS[name]
    rng = np.random.default_rng(len(name))
    xa, ya = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    tx, ty = torch.tensor(xa, requires_grad=True), torch.tensor(ya, requires_grad=True)
    tv = f(torch, tx, ty)
    tgx, tgy = torch.autograd.grad(tv, [tx, ty])
    vg = sg.value_and_grad(lambda x, y: f(sg, x, y), argnums=(0, 1))
    for _ in range(3):  # the third call runs the numba kernel where numba takes the kernel
        v, (gx, gy) = vg(xa, ya)
        assert np.isclose(v, tv.item(), rtol=1e-10)
        assert_close(gx, tgx.numpy(), what="compiled grad x")
        assert_close(gy, tgy.numpy(), what="compiled grad y")
    assert np.isclose(sg.compile(lambda x, y: f(sg, x, y))(xa, ya), tv.item(), rtol=1e-10)
    sx, sy = sg.tensor(xa, requires_grad=True), sg.tensor(ya, requires_grad=True)
    sv = f(sg, sx, sy)
    sv.backward()
    assert_close(sv, tv.detach(), what="eager value")
    assert_close(sx.grad, tgx, what="eager grad x")
    assert_close(sy.grad, tgy, what="eager grad y")


def test_compiled_float32_and_tensor_arguments():
    f = PROGRAMS["softmax"]
    xa = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    ya = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    tx, ty = torch.tensor(xa, requires_grad=True), torch.tensor(ya, requires_grad=True)
    tv = f(torch, tx, ty)
    tv.backward()
    v, (gx, gy) = sg.value_and_grad(lambda x, y: f(sg, x, y), argnums=(0, 1))(xa, ya)
    assert gx.dtype == np.float32
    assert_close(gx, tx.grad, what="float32 grad")
    # tensors that require grad replay the traced DAG as eager ops: the result composes with backward()
    sx = sg.tensor(xa, requires_grad=True)
    out = sg.compile(lambda x, y: f(sg, x, y))(sx, sg.tensor(ya))
    out.backward()
    assert_close(sx.grad, tx.grad)


def test_grad_of_grad_through_new_ops():
    fns = [lambda lib, x: lib.softmax(x, 0)[0] * x.logsumexp(0), lambda lib, x: x.prod() + x.cumsum(0).pow(2).sum(),
           lambda lib, x: x.amax() * lib.cat([x, x * x]).sum(), lambda lib, x: x.max(0).values * x.sum()]
    for f in fns:
        x, t = leaf_pair(np.array([0.5, -1.0, 2.0]), "float64")
        (g,) = sg.autograd.grad(f(sg, x), x, create_graph=True)
        (tg,) = torch.autograd.grad(f(torch, t), t, create_graph=True)
        (h,) = sg.autograd.grad(g.sum(), x)
        (th,) = torch.autograd.grad(tg.sum(), t)
        assert_close(g, tg)
        assert_close(h, th)


# ---------------------------------------------------------------------------- return values, dtypes, shapes

def test_max_with_dim_returns_torch_namedtuple():
    x, t = leaf_pair(np.array([[1.0, 5.0], [3.0, 2.0]]), "float32")
    r, tr = x.max(1), t.max(1)
    assert repr(r) == repr(tr)
    values, indices = r
    assert values is r.values and indices is r.indices and r[0] is r.values
    assert type(r).__name__ == "max" and type(x.min(0)).__name__ == "min"
    assert repr(sg.max(x, dim=0, keepdim=True)) == repr(torch.max(t, dim=0, keepdim=True))
    assert indices.dtype is sg.int64 and not indices.requires_grad
    assert_close(x.max(sg.tensor([2.0, 2.0])), t.max(torch.tensor([2.0, 2.0])))  # with a tensor: maximum
    assert grad_fn_name(x.min(sg.tensor(2.0))) == grad_fn_name(t.min(torch.tensor(2.0)))


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 1, 3)])
def test_argmax_argmin_match_torch(shape: tuple):
    arr = np.random.default_rng(3).integers(0, 3, shape).astype(np.float64)  # ties: the first occurrence
    x, t = sg.tensor(arr), torch.tensor(arr)
    for name in ("argmax", "argmin"):
        assert_close(getattr(x, name)(), getattr(t, name)())
        assert_close(getattr(x, name)(keepdim=True), getattr(t, name)(keepdim=True))
        for d in range(-max(len(shape), 1), max(len(shape), 1)):
            for k in (False, True):
                assert_close(getattr(sg, name)(x, d, k), getattr(torch, name)(t, d, k))


def test_integer_and_bool_reductions():
    a = np.array([[1, 2, 3], [4, 5, 6]])
    for lib_x in [(sg.tensor(a), torch.tensor(a)), (sg.tensor(a > 2), torch.tensor(a > 2))]:
        x, t = lib_x
        for f in [lambda v: v.prod(), lambda v: v.prod(1), lambda v: v.cumsum(0), lambda v: v.max(),
                  lambda v: v.amax(0), lambda v: v.max(1).values, lambda v: v.min(0).indices]:
            assert_close(f(x), f(t))
    assert_close(sg.tensor(a).logsumexp(1), torch.tensor(a).logsumexp(1))  # integers: the default float dtype
    assert_close(sg.tensor(a).softmax(0, dtype=sg.float64), torch.tensor(a).softmax(0, dtype=torch.float64))


def test_cat_and_stack_promote_and_cast_gradients_back():
    a, ta = leaf_pair(np.array([1.0, 2.0]), "float32")
    b, tb = leaf_pair(np.array([3.0, 4.0, 5.0]), "float64")
    c, tc = sg.cat([a, b, sg.tensor([7, 8])]), torch.cat([ta, tb, torch.tensor([7, 8])])
    assert_close(c, tc)
    (c * c).sum().backward()
    (tc * tc).sum().backward()
    assert a.grad.dtype is sg.float32 and b.grad.dtype is sg.float64
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)
    e, te = leaf_pair(np.zeros(0), "float32")  # torch's legacy rule: 1-d empty tensors are skipped
    c, tc = sg.cat([e, a.reshape(2, 1), e], 1), torch.cat([te, ta.reshape(2, 1), te], 1)
    assert_close(c, tc)
    c.sum().backward()
    tc.sum().backward()
    assert_close(e.grad, te.grad)
    s, ts = sg.stack([sg.tensor(1.0), sg.tensor(2)]), torch.stack([torch.tensor(1.0), torch.tensor(2)])
    assert_close(s, ts)
    assert sg.concat is sg.cat and sg.concatenate is sg.cat


@pytest.mark.parametrize("n", [1, 2, 5, 6, 7])
def test_split_and_chunk_sizes_match_torch(n: int):
    x, t = sg.arange(float(n)), torch.arange(float(n))
    for k in range(1, 8):
        assert [tuple(p.shape) for p in x.split(k)] == [tuple(p.shape) for p in t.split(k)]
        assert [tuple(p.shape) for p in x.chunk(k)] == [tuple(p.shape) for p in t.chunk(k)]
    e, te = sg.ones(0, 2), torch.ones(0, 2)
    assert [tuple(p.shape) for p in e.chunk(3)] == [tuple(p.shape) for p in te.chunk(3)]
    assert [tuple(p.shape) for p in e.split(2)] == [tuple(p.shape) for p in te.split(2)]


def test_splits_are_views_with_torch_names_and_gradients():
    x, t = leaf_pair(np.arange(12.0).reshape(3, 4), "float64")
    pieces = [x.split(2, 1), x.split([1, 2]), x.chunk(2), x.unbind(1), sg.split(x, 3, -1), sg.unbind(x, 0)]
    tpieces = [t.split(2, 1), t.split([1, 2]), t.chunk(2), t.unbind(1), torch.split(t, 3, -1), torch.unbind(t, 0)]
    total, ttotal = 0, 0
    for ps, tps in zip(pieces, tpieces):
        assert len(ps) == len(tps)
        for i, (p, tp) in enumerate(zip(ps, tps)):
            assert_close(p, tp)
            assert grad_fn_name(p) == grad_fn_name(tp)
            total = total + (p * (i + 1)).sin().sum()
            ttotal = ttotal + (tp * (i + 1)).sin().sum()
    total.backward()
    ttotal.backward()
    assert_close(x.grad, t.grad)
    assert np.shares_memory(x.split(2)[1].numpy(force=True), x.numpy(force=True))


def test_repeat_matches_torch():
    for shape, reps in [((2, 3), (2, 2)), ((3,), (2, 1, 2)), ((), (3,)), ((), ()), ((2, 1), (1, 0))]:
        data = np.arange(float(np.prod(shape))).reshape(shape) + 1.0
        _same(lambda lib, x, reps=reps: x.repeat(*reps) if reps else x.repeat(()), data)
    x = sg.ones(2, 3)
    assert x.repeat([2, 1]).shape == (4, 3) and x.repeat(sg.Size([1, 2])).shape == (2, 6)


# ---------------------------------------------------------------------------- logical ops and predicates

def test_logical_ops_match_torch():
    a = np.array([[0.0, 1.0, -2.0], [NAN, 0.0, 3.0]])
    b = np.array([0.0, 2.0, 0.0])
    x, y, t, u = sg.tensor(a), sg.tensor(b), torch.tensor(a), torch.tensor(b)
    m, n, tm, tn = x > 0, y > 0, t > 0, u > 0
    pairs = [(m & n, tm & tn), (m | n, tm | tn), (m ^ n, tm ^ tn), (~m, ~tm), (m & True, tm & True),
             (False | n, False | tn), (sg.logical_and(x, y), torch.logical_and(t, u)),
             (x.logical_or(y), t.logical_or(u)), (sg.logical_xor(x, y), torch.logical_xor(t, u)),
             (sg.logical_not(x), torch.logical_not(t)), (x.isnan(), t.isnan()), (sg.isfinite(x), torch.isfinite(t)),
             (sg.isinf(x / y), torch.isinf(t / u)), (sg.isnan(sg.tensor([1, 2])), torch.isnan(torch.tensor([1, 2]))),
             (m & 1, tm & 1), (sg.tensor([3, 5]) & sg.tensor([1, 4]), torch.tensor([3, 5]) & torch.tensor([1, 4])),
             (~sg.tensor([3, -1]), ~torch.tensor([3, -1])), (6 | sg.tensor([1], dtype=sg.int32),
                                                               6 | torch.tensor([1], dtype=torch.int32)),
             (sg.bitwise_xor(sg.tensor([6]), 3), torch.bitwise_xor(torch.tensor([6]), 3))]
    for i, (s, tt) in enumerate(pairs):
        assert_close(s, tt, what=f"pair {i}")
        assert not s.requires_grad


def test_logical_ops_record_no_gradient():
    x = sg.tensor([1.0, -1.0], requires_grad=True)
    for r in [(x > 0) & (x < 2), ~(x > 0), x.isnan(), sg.logical_or(x, x), x.isfinite()]:
        assert r.grad_fn is None and not r.requires_grad and r.dtype is sg.bool
    f = sg.compile(lambda x: sg.where(sg.isfinite(sg.log(x)) & (x < 3), x, 0.0).sum())
    assert f(np.array([-1.0, 0.5, 4.0])) == 0.5


# ---------------------------------------------------------------------------- errors

ERRORS: dict[str, Callable] = {
    "cat empty": lambda lib, x: lib.cat([]),
    "cat 0-d": lambda lib, x: lib.cat([x, lib.tensor(1.0)]),
    "cat sizes": lambda lib, x: lib.cat([x, x[:, :2]]),
    "cat ndim": lambda lib, x: lib.cat([x, x[0]]),
    "cat dim": lambda lib, x: lib.cat([x, x], 2),
    "stack empty": lambda lib, x: lib.stack([]),
    "stack sizes": lambda lib, x: lib.stack([x, x[:, :2]]),
    "stack dim": lambda lib, x: lib.stack([x, x], -4),
    "max empty": lambda lib, x: x[:0].max(),
    "min(dim) empty": lambda lib, x: x[:0].min(0),
    "amax empty dim": lambda lib, x: x[:0].amax(0),
    "amin all empty": lambda lib, x: x[:0].amin(),
    "argmax empty": lambda lib, x: x[:0].argmax(),
    "argmin(dim) empty": lambda lib, x: x[:0].argmin(0),
    "max dim range": lambda lib, x: x.max(2),
    "amax repeated dim": lambda lib, x: x.amax((0, 0)),
    "prod dim range": lambda lib, x: x.prod(3),
    "split 0": lambda lib, x: x.split(0),
    "split negative": lambda lib, x: x.split(-1),
    "split sizes sum": lambda lib, x: x.split([1, 1], 1),
    "split negative size": lambda lib, x: x.split([3, -1], 1),
    "split 0-d": lambda lib, x: lib.tensor(1.0).split(1),
    "chunk 0": lambda lib, x: x.chunk(0),
    "chunk 0-d": lambda lib, x: lib.tensor(1.0).chunk(1),
    "unbind 0-d": lambda lib, x: lib.tensor(1.0).unbind(),
    "unbind dim": lambda lib, x: x.unbind(3),
    "repeat too few": lambda lib, x: x.repeat(2),
    "repeat negative": lambda lib, x: x.repeat(2, -1),
    "& float": lambda lib, x: x & x,
    "| float bool": lambda lib, x: x | (x > 0),
    "^ double": lambda lib, x: x.double() ^ x.double(),
    "& bool float scalar": lambda lib, x: (x > 0) & 1.5,
    "~ float": lambda lib, x: ~x,
    "bitwise_not float": lambda lib, x: lib.bitwise_not(x),
    "softmax long lastdim": lambda lib, x: x.long().softmax(1),
    "softmax long": lambda lib, x: x.long().softmax(0),
    "log_softmax bool": lambda lib, x: (x > 0).log_softmax(0),
    "softmax dim": lambda lib, x: x.softmax(2),
    "cumsum dim": lambda lib, x: x.cumsum(-3),
    "logsumexp dim": lambda lib, x: x.logsumexp(5),
    "logsumexp ()": lambda lib, x: x.logsumexp(()),
    "logical_and number": lambda lib, x: x.logical_and(1),
    "logical_or number fn": lambda lib, x: lib.logical_or(x, 0),
    "logical broadcast": lambda lib, x: lib.logical_and(x, lib.ones(4)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name: str):
    f = ERRORS[name]
    assert_same_error(lambda: f(sg, sg.ones(2, 3)), lambda: f(torch, torch.ones(2, 3)))


INPLACE: dict[str, Callable] = {
    "softmax result": lambda lib, x: x.softmax(1),
    "log_softmax result": lambda lib, x: x.log_softmax(0),
    "prod result": lambda lib, x: x.prod(1),
    "amax result": lambda lib, x: x.amax(1),
    "logsumexp result": lambda lib, x: x.logsumexp(1),
    "max(dim) values (torch saves only the indices)": lambda lib, x: x.max(1).values,
    "cumsum result (nothing saved)": lambda lib, x: x.cumsum(1),
    "cat result (nothing saved)": lambda lib, x: lib.cat([x, x]),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_on_saved_results_as_torch(name: str):
    f = INPLACE[name]

    def run(lib: Any) -> Any:
        x = lib.tensor([[1.0, 3.0, 2.0], [4.0, 0.5, 6.0]], requires_grad=True)
        y = f(lib, x)
        y.mul_(2)
        y.sum().backward()
        return x.grad

    try:
        expected = run(torch)
    except RuntimeError:
        assert_same_error(lambda: run(sg), lambda: run(torch))
        return
    assert_close(run(sg), expected)


def test_inplace_on_multi_output_views_is_refused_as_torch():
    for f in [lambda lib, x: x.split(1)[0], lambda lib, x: (x * 1).chunk(2, 1)[1], lambda lib, x: x.unbind(1)[2]]:
        def run(lib: Any, f: Callable = f) -> None:
            f(lib, lib.ones(2, 3, requires_grad=True)).mul_(2)
        assert_same_error(lambda: run(sg), lambda: run(torch))
    with sg.no_grad():
        x = sg.ones(2, 3, requires_grad=True)
        x.split(1)[0].mul_(2)
    assert x.sum().item() == 9.0


# ---------------------------------------------------------------------------- formulas

def test_formulas_print_readably():
    x = sg.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    y = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert str(sg.formula(x.softmax(1).sum())) == "sum(softmax(x, dim=1))"
    assert str(sg.formula(x.log_softmax(-1).sum())) == "sum(log_softmax(x, dim=1))"
    assert str(sg.formula(sg.logsumexp(x, 0, keepdim=True).sum())) == "sum(logsumexp(x, dim=0, keepdim=True))"
    assert str(sg.formula(x.max())) == "max(x)"
    assert str(sg.formula(x.max(1).values.sum())) == "sum(max(x, dim=1))"
    assert str(sg.formula(x.amin((0, 1)))) == "amin(x)"
    assert str(sg.formula(x.amax(1, keepdim=True).sum())) == "sum(amax(x, dim=1, keepdim=True))"
    assert str(sg.formula(x.prod(1).sum())) == "sum(prod(x, dim=1))"
    assert str(sg.formula(x.cumsum(0).sum())) == "sum(cumsum(x, dim=0))"
    assert str(sg.formula(sg.cat([y, y * 2]).sum())) == "sum(cat(y, 2*y, dim=0))"
    assert str(sg.formula(sg.stack([y, y], 1).sum())) == "sum(stack(y, y, dim=1))"
    assert str(sg.formula(y.repeat(2, 1).sum())) == "sum(repeat(y, repeats=(2, 1)))"
    assert str(sg.grad_formula(sg.cat([y, y * y]).sum(), y)) == "2*y + 1"
    assert str(sg.grad_formula(y.logsumexp(0), y)) == "exp(y - logsumexp(y, dim=0))"
    assert str(sg.grad_formula(y.cumsum(0).sum(), y)) == "cumsum(1, dim=0, reverse=True)"
    assert str(sg.grad_formula(y.repeat(2, 2).sum(), y)) == "4"
    g = str(sg.grad_formula(x.max(), x))
    assert g.startswith("Piecewise((1, Eq(max(x), x)") and "/sum(Piecewise(" in g
    r = x.max(1)
    idx = r.indices  # noqa: F841 - names the indices in the formula
    g = str(sg.grad_formula(r.values.sum(), x))  # to the index returned: where the position along the dim is it
    assert g == "Piecewise((1, Eq(cumsum(1, dim=1), const(idx) + 1)), (0, True))"
    g = str(sg.grad_formula(x.prod(), x))
    assert "prod(x" in g and "ITE" not in g and "zoo" not in g
    assert "softmax(x, dim=1)" in str(sg.grad_formula(x.softmax(1)[0, 1], x))
    assert "logsumexp" in sg.formula(x.logsumexp(1).sum()).latex()


def test_reductions_keep_piecewise_inside_in_display():
    x = sg.tensor([1.0, -2.0], requires_grad=True)
    # SymPy would fold a Piecewise out of a sum: sum(Piecewise((x, c), (0, True))) is not Piecewise((sum(x), c), ...)
    f = sg.grad_formula(sg.where(sg.where(x > 0, x, 0.0).sum() > 0, x * x, x).sum() + (x * x).max(), x)
    assert "ITE" not in str(f)
    xs = sp.Symbol("x", real=True)
    e = sg.formula((sg.relu(x) * x).amax()).expr
    assert e.func.__name__ == "amax" and e.args[0] == sp.Piecewise((xs, xs > 0), (0, True)) * xs


def test_compiled_formulas_and_source():
    f = sg.value_and_grad(lambda x: sg.logsumexp(x, 0) + sg.softmax(x, 0)[0] + x.max(0).values)
    text = str(f.formulas(np.array([1.0, 2.0])))
    assert "logsumexp(x, dim=0)" in text and "softmax(x, dim=0)" in text
    assert "argmax(x, dim=0)" in text  # traced, max(dim)'s indices are a node of the graph
    src = f.source(np.array([1.0, 2.0]), backend="numpy")
    assert "numpy.max(" in src and "numpy.isinf(" in src


def _join_layouts(lib):
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = lib.ones(2, 3, 4).permute(2, 0, 1)
    outs = [lib.cat([a.t(), a[:, :1]], dim=1), lib.cat([a.t(), a.t()], dim=0), lib.cat([a.t()]),
            lib.cat([b, b], dim=1), lib.stack([a.t(), a.t()]), lib.stack([b, b], dim=2)]
    return [(o.stride(), o.is_contiguous(), o.view(-1).shape) for o in outs]


def test_cat_and_stack_results_are_contiguous_as_torchs():
    assert _join_layouts(sg) == _join_layouts(torch)
