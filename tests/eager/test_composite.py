"""The composite ops of ``symgrad/composite.py`` beyond the registry matrix (where their values, gradients and
grad_fn names are checked against torch): torch's errors, NaNs, in-place masked_fill_, sort's order, tracing,
forward mode, Hessians and their sparsity, formulas."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import torch
from conftest import assert_close, grad_fn_name

import symgrad as sg


def _error(fn: Callable) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    raise AssertionError("no error")


_INF = float("inf")

ERRORS: list[tuple[str, Callable]] = [
    ("var dim", lambda lib, x: x.var(2)),
    ("var int", lambda lib, x: x.long().var()),
    ("std dims", lambda lib, x: lib.std(x, (0, 0))),
    ("norm dim", lambda lib, x: x.norm(dim=3)),
    ("norm int", lambda lib, x: x.long().norm()),
    ("vector_norm dim", lambda lib, x: lib.linalg.vector_norm(x, dim=-3)),
    ("linalg.norm 3-d ord", lambda lib, x: lib.linalg.norm(x[None], 1)),
    ("matrix_norm 1-d", lambda lib, x: lib.linalg.norm(x[0], "fro")),
    ("matrix_norm order", lambda lib, x: lib.linalg.norm(x, 3)),
    ("cumprod dim", lambda lib, x: x.cumprod(2)),
    ("cumprod tuple", lambda lib, x: x.cumprod((0,))),
    ("logcumsumexp int", lambda lib, x: x.long().logcumsumexp(0)),
    ("logcumsumexp tuple", lambda lib, x: x.logcumsumexp((0,))),
    ("nanmean int", lambda lib, x: x.long().nanmean()),
    ("aminmax dim", lambda lib, x: lib.aminmax(x, dim=2)),
    ("aminmax tuple", lambda lib, x: x.aminmax(dim=(0, 1))),
    ("aminmax empty", lambda lib, x: lib.aminmax(x[:0])),
    ("flip dim", lambda lib, x: x.flip(2)),
    ("flip repeated", lambda lib, x: x.flip((0, 0))),
    ("fliplr 1-d", lambda lib, x: x[0].fliplr()),
    ("flipud 0-d", lambda lib, x: x[0, 0].flipud()),
    ("roll dim", lambda lib, x: x.roll(1, 2)),
    ("roll align", lambda lib, x: x.roll((1, 2), (0,))),
    ("tril 1-d", lambda lib, x: x[0].tril()),
    ("diagonal same dims", lambda lib, x: x.diagonal(0, 1, -1)),
    ("diagonal dim", lambda lib, x: x.diagonal(0, 0, 2)),
    ("diag 3-d", lambda lib, x: x[None].diag()),
    ("trace 1-d", lambda lib, x: x[0].trace()),
    ("gather dim", lambda lib, x: x.gather(2, lib.tensor([[0]]))),
    ("gather bounds", lambda lib, x: x.gather(1, lib.tensor([[5]]))),
    ("gather float index", lambda lib, x: x.gather(1, lib.tensor([[0.5]]))),
    ("gather rank", lambda lib, x: x.gather(1, lib.tensor([0]))),
    ("index_select matrix", lambda lib, x: x.index_select(1, lib.tensor([[0]]))),
    ("index_select bounds", lambda lib, x: x.index_select(1, lib.tensor([7]))),
    ("select bounds", lambda lib, x: x.select(1, 5)),
    ("select dim", lambda lib, x: x.select(2, 0)),
    ("narrow length", lambda lib, x: x.narrow(1, 3, 2)),
    ("masked_fill long mask", lambda lib, x: x.masked_fill(lib.tensor([1, 0, 1, 0]), 0.0)),
    ("masked_fill 1-d value", lambda lib, x: x.masked_fill(lib.tensor([True]), lib.tensor([1.0, 2.0]))),
    ("movedim dim", lambda lib, x: x.movedim(0, 3)),
    ("movedim repeated", lambda lib, x: x.movedim((0, 0), (1, 0))),
    ("movedim lengths", lambda lib, x: x.movedim((0,), (1, 0))),
    ("unflatten sizes", lambda lib, x: x.unflatten(1, (3, 2))),
    ("sort dim", lambda lib, x: x.sort(2)),
    ("topk k", lambda lib, x: x.topk(5)),
    ("bmm 2-d", lambda lib, x: lib.bmm(x, x)),
    ("bmm sizes", lambda lib, x: lib.bmm(x[None], x[None])),
]


@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_match_torch(name: str, call: Callable):
    a = np.random.default_rng(0).standard_normal((3, 4))
    assert _error(lambda: call(sg, sg.tensor(a))) == _error(lambda: call(torch, torch.tensor(a)))


def _both(a: np.ndarray, fn: Callable) -> tuple[Any, Any, sg.Tensor, torch.Tensor]:
    x, t = sg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    return fn(sg, x), fn(torch, t), x, t


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.nansum(),
    lambda lib, x: lib.nansum(x, 1, keepdim=True),
    lambda lib, x: x.nanmean(0),
    lambda lib, x: lib.nanmean(x),
], ids=["nansum", "nansum dim", "nanmean dim", "nanmean"])
def test_nan_reductions_skip_nans(fn: Callable):
    a = np.array([[1.0, np.nan, 2.5], [np.nan, np.nan, -1.0]])
    y, ty, x, t = _both(a, fn)
    assert_close(y, ty)
    assert grad_fn_name(y) == grad_fn_name(ty)
    y.sum().backward()
    ty.sum().backward()
    assert_close(x.grad, t.grad)


def test_std_and_norm_gradients_at_zero_are_zero_as_torch():
    a = np.zeros((2, 3))
    for fn in (lambda lib, x: x.std(1), lambda lib, x: x.norm(), lambda lib, x: lib.linalg.vector_norm(x, 3, 0)):
        y, ty, x, t = _both(a, fn)
        y.sum().backward()
        ty.sum().backward()
        assert_close(x.grad, t.grad)
        assert not np.isnan(x.grad.numpy()).any()
    y, ty, _, _ = _both(np.ones(1), lambda lib, x: x.std())  # one element, correction 1: NaN as torch
    assert np.isnan(y.item()) and np.isnan(ty.item())


def test_cumprod_gradient_is_exact_at_zeros():
    a = np.array([[2.0, 0.0, 3.0, 0.0], [0.0, 1.5, -2.0, 4.0]])
    y, ty, x, t = _both(a, lambda lib, x: x.cumprod(1))
    g = np.arange(8.0).reshape(2, 4)
    y.backward(sg.tensor(g))
    ty.backward(torch.tensor(g))
    assert_close(x.grad, t.grad)


def test_integer_inputs_keep_integer_results():
    a = np.array([[3, -1, 2], [0, 5, 5]])
    for fn in (lambda lib, x: x.cumprod(1), lambda lib, x: x.tril(), lambda lib, x: x.flip(0),
               lambda lib, x: x.masked_fill(x > 2, 7), lambda lib, x: x.count_nonzero(1),
               lambda lib, x: x.trace(), lambda lib, x: x.sort(1).values, lambda lib, x: x.nansum(0)):
        y, ty = fn(sg, sg.tensor(a)), fn(torch, torch.tensor(a))
        assert y.dtype.name == str(ty.dtype).removeprefix("torch.")
        assert (y.numpy() == ty.numpy()).all()


def test_masked_fill_in_place():
    a = np.random.default_rng(1).standard_normal((3, 4))
    for lib in (sg, torch):
        x = lib.tensor(a, requires_grad=True)
        y = x * 2
        out = y.masked_fill_(y > 0, 0.25)
        assert out is y and grad_fn_name(y) == "MaskedFillBackward0"
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.where(a > 0, 0.0, 2.0))
        assert_close(y.detach().numpy(), np.where(a > 0, 0.25, 2 * a))


def test_sort_order_ties_and_nans_match_torch():
    a = np.array([[1.0, np.nan, 0.0, 1.0, -np.inf, np.inf, np.nan, 0.0]])
    for kw in ({}, {"descending": True}):
        s, ts = sg.tensor(a).sort(1, **kw), torch.tensor(a).sort(dim=1, stable=True, **kw)
        assert_close(s.values, ts.values)
        np.testing.assert_array_equal(s.indices.numpy(), ts.indices.numpy())
        np.testing.assert_array_equal(sg.tensor(a).argsort(1, **kw).numpy(), ts.indices.numpy())
    k, tk = sg.tensor(a[:, [0, 2, 4, 5]]).topk(3), torch.tensor(a[:, [0, 2, 4, 5]]).topk(3)
    assert type(k).__name__ == "topk" and repr(k).startswith("torch.return_types.topk(")
    np.testing.assert_array_equal(k.indices.numpy(), tk.indices.numpy())
    m = sg.tensor(a[:, :4]).aminmax()
    assert repr(m).startswith("torch.return_types.aminmax(") and m.min is m[0]


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.sort(1).values,
    lambda lib, x: x.sort(0, descending=True).indices,
    lambda lib, x: x.argsort(1, descending=True),
    lambda lib, x: x.topk(2, 1).values,
    lambda lib, x: lib.topk(x, 1, 0, largest=False).indices,
], ids=["sort", "sort indices", "argsort", "topk", "topk indices"])
def test_traced_sort_matches_torch(fn: Callable):
    """Traced, the order comes from ranks (comparisons, ties by position, NaN largest), not from values."""
    a = np.array([[0.5, -1.0, 0.5, np.inf, 2.0], [np.nan, 1.0, -np.inf, 1.0, np.nan], [3.0, 2.0, 1.0, 0.0, -1.0]])
    got = sg.compile(lambda x: fn(sg, x))(a)
    want = fn(torch, torch.tensor(a))
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), want.numpy().astype(np.float64))


@pytest.mark.parametrize(("fn", "index"), [
    (lambda lib, x, i: x.gather(1, i), [[0, 4], [1, 1], [3, 2]]),
    (lambda lib, x, i: lib.gather(x, 0, i), [[0, 2], [2, 2]]),
    (lambda lib, x, i: lib.take_along_dim(x, i, 1), [[0], [4], [2]]),
    (lambda lib, x, i: lib.take_along_dim(x, i), [0, 7, 7, 14]),
    (lambda lib, x, i: x.index_select(1, i), [4, 0, 4]),
], ids=["gather", "gather part", "take_along_dim", "take_along_dim flat", "index_select"])
def test_index_tensors_can_be_arguments_of_compiled_functions(fn: Callable, index: list):
    """A traced index (compile passes integer arrays as float64) selects one-hot: one kernel for all indices."""
    a = np.random.default_rng(5).standard_normal((3, 5))
    i = np.array(index)
    f = sg.value_and_grad(lambda x, j: (fn(sg, x, j) ** 2).sum())
    value, grad = f(a, i)
    tx = torch.tensor(a, requires_grad=True)
    tv = (fn(torch, tx, torch.tensor(i)) ** 2).sum()
    tv.backward()
    assert_close(np.asarray(value), tv)
    assert_close(grad, tx.grad)


def _f(lib: Any, x: Any) -> Any:
    return (x.std(1).sum() + x.norm(3) + x.cumprod(1).logcumsumexp(0).sum() + x.triu().trace()
            + x.flip(0).roll(1, 1).diagonal().sum() * x.var())


def test_forward_mode_and_hessian_match_torch():
    a = np.random.default_rng(2).uniform(0.5, 1.5, (3, 4))
    v = np.random.default_rng(3).standard_normal((3, 4))
    value, tangent = sg.jvp(lambda x: _f(sg, x), (sg.tensor(a),), (sg.tensor(v),))
    tvalue, ttangent = torch.func.jvp(lambda x: _f(torch, x), (torch.tensor(a),), (torch.tensor(v),))
    assert_close(value, tvalue)
    assert_close(tangent, ttangent)
    h = sg.hessian(lambda x: _f(sg, x))(sg.tensor(a))
    th = torch.autograd.functional.hessian(lambda x: _f(torch, x), torch.tensor(a))
    np.testing.assert_allclose(np.asarray(h), th.numpy(), rtol=1e-9, atol=1e-12)


def test_hessian_sparsity_of_composites():
    """Rows of ``tril`` / ``diagonal`` / ``cumprod`` couple only the entries they read."""
    f = sg.compile(lambda x: (x.tril() ** 2).sum() + x.diagonal().prod() + x.cumprod(1)[:, -1].sum())
    pattern = f.hessian_sparsity(np.ones((3, 3))).toarray()
    th = torch.autograd.functional.hessian(
        lambda x: (x.tril() ** 2).sum() + x.diagonal().prod() + x.cumprod(1)[:, -1].sum(),
        torch.tensor(np.random.default_rng(4).uniform(0.5, 1.5, (3, 3)))).reshape(9, 9).numpy()
    assert ((th != 0) <= pattern).all()  # no structural zero is wrong
    assert pattern.sum() < 81  # and the pattern is not dense


def test_formulas_print_composites():
    x = sg.tensor(np.ones((2, 3)), requires_grad=True, name="x")
    assert "sqrt" in str(sg.formula(x.norm()))
    assert "Piecewise" in str(sg.grad_formula(x.norm(), x))
    assert "prod" in str(sg.formula(x.cumprod(1)))
    assert sg.formula(x.var()).latex()


# ---------------------------------------------------------------------------- einsum, queries, creation

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,j->i", [(2, 3), (3,)]), ("i,i->", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij,ij->i", [(2, 3), (2, 3)]), ("ij,kj", [(2, 3), (4, 3)]),
    ("abc,cd,a->bd", [(2, 3, 4), (4, 2), (2,)]), ("ij,j", [(2, 3), (1,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("...ij,jk", [(2, 3, 4), (4, 5)]), ("i...->...", [(3, 2, 2)]),
    ("...i,...i->...", [(2, 3), (3,)]), ("ij...,jk->ik...", [(2, 3, 4), (3, 2)]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_torch(eq, shapes, dtype):
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    xs = [sg.tensor(a, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    out, tout = sg.einsum(eq, *xs), torch.einsum(eq, *ts)
    assert_close(out, tout)
    w = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        assert_close(x.grad, t.grad)
    assert_close(sg.einsum(eq, xs), torch.einsum(eq, ts))     # operands as one list


def test_einsum_compiles():
    f = sg.value_and_grad(lambda a, b: (sg.einsum("ij,jk->ik", a, b) ** 2).sum(), argnums=(0, 1))
    a, b = np.arange(6.0).reshape(2, 3), np.linspace(-1, 1, 12).reshape(3, 4)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tv = (torch.einsum("ij,jk->ik", ta, tb) ** 2).sum()
    tv.backward()
    for _ in range(3):
        v, (ga, gb) = f(a, b)
        assert v == pytest.approx(tv.item(), rel=1e-12)
        np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", [
    lambda lib, x: lib.einsum("ij,jk", x),                  # too few operands
    lambda lib, x: lib.einsum("ijk", x),                    # rank mismatch
    lambda lib, x: lib.einsum("ij,ij->i", x, x.T),           # sizes disagree
])
def test_einsum_errors_are_runtime_errors_like_torch(case):
    x = np.ones((2, 3))
    with pytest.raises(RuntimeError):
        case(sg, sg.tensor(x))
    with pytest.raises(RuntimeError):
        case(torch, torch.tensor(x))


QUERIES: list[tuple[str, Callable]] = [
    ("isclose", lambda lib, x: lib.isclose(x, x + 1e-9)),
    ("isclose method", lambda lib, x: x.isclose(x * 1.1, rtol=0.2)),
    ("nonzero", lambda lib, x: (x > 0).nonzero()),
    ("nonzero as_tuple", lambda lib, x: lib.nonzero(x > 0, as_tuple=True)),
    ("where one argument", lambda lib, x: lib.where(x > 0)),
    ("floordiv", lambda lib, x: x // 0.7),
    ("rfloordiv", lambda lib, x: 3 // (x + 3)),
    ("floor_divide int", lambda lib, x: lib.floor_divide(lib.tensor([7, -7]), 2)),
    ("new_zeros", lambda lib, x: x.new_zeros(2, 3)),
    ("new_ones tuple", lambda lib, x: x.new_ones((2,))),
    ("new_full", lambda lib, x: x.new_full((2,), 3.5)),
    ("new_tensor", lambda lib, x: x.new_tensor([1, 2])),
    ("new_tensor dtype", lambda lib, x: x.new_tensor([1, 2], dtype=lib.int64)),
    ("boolean mask", lambda lib, x: x[x > 0]),
    ("boolean row mask", lambda lib, x: x[lib.tensor([True, False])]),
]


@pytest.mark.parametrize("name,fn", QUERIES, ids=[n for n, _ in QUERIES])
def test_queries_and_creation_match_torch(name, fn):
    arr = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, -0.25]], dtype=np.float32)
    out, tout = fn(sg, sg.tensor(arr)), fn(torch, torch.tensor(arr))
    outs, touts = (out, tout) if isinstance(out, tuple) else ((out,), (tout,))
    for o, t in zip(outs, touts):
        assert_close(o, t)
        assert not o.requires_grad


def test_boolean_mask_reads_are_differentiable_and_refused_while_tracing():
    x, tx = sg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True), torch.tensor([[1.0, -2.0], [3.0, 4.0]],
                                                                                       requires_grad=True)
    y, ty = x[x > 0], tx[tx > 0]
    assert grad_fn_name(y) == grad_fn_name(ty) == "IndexBackward0"
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_close(x.grad, tx.grad)
    with pytest.raises(sg.TracingError, match="mask"):
        sg.compile(lambda v: v[v > 0].sum())(np.ones(3))


def test_floor_division_has_no_gradient():
    x = sg.tensor([1.5, -2.5], requires_grad=True)
    assert not (x // 2).requires_grad


DIV_ROUNDED = [
    lambda L: L.tensor([7.0, -7.0, 7.5, -0.5, 0.0]).div(L.tensor([2.0, 2.0, -2.0, 3.0, -1.0]), rounding_mode="trunc"),
    lambda L: L.div(L.tensor([7.0, -7.0, 7.5, -0.5]), L.tensor([2.0, 2.0, -2.0, 3.0]), rounding_mode="floor"),
    lambda L: L.div(7, L.tensor([2, -2]), rounding_mode="trunc"),
    lambda L: L.tensor([7, -7]).div(2.5, rounding_mode="trunc"),
    lambda L: L.tensor([7, -7, 8, -8, 0], dtype=L.int32).div(L.tensor([2, 2, -3, 3, -5], dtype=L.int32),
                                                           rounding_mode="trunc"),
    lambda L: L.tensor([7, -7, 8, -8, 0]).divide(L.tensor([2, 2, -3, 3, -5]), rounding_mode="floor"),
    lambda L: L.tensor([1.0, -1.0, 0.0]).div(0.0, rounding_mode="floor"),
    lambda L: L.tensor([1.0, -1.0, 0.0], dtype=L.float64).div(0.0, rounding_mode="trunc"),
]


@pytest.mark.parametrize("k", range(len(DIV_ROUNDED)))
def test_div_rounding_modes_match_torch(k):
    got, want = DIV_ROUNDED[k](sg), DIV_ROUNDED[k](torch)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))


def test_div_rounded_has_zero_gradient_and_torch_errors():
    grads = []
    for lib in (sg, torch):
        x = lib.tensor([1.5, -2.5], requires_grad=True)
        y = x.div(lib.tensor([1.0, 2.0]), rounding_mode="floor")
        assert grad_fn_name(y) == "DivBackward2"
        (y.sum() + (x * x).sum()).backward()
        grads.append(x.grad)
    assert_close(*grads)
    for bad in (lambda L: L.ones(2).div(2, rounding_mode="round"),
                lambda L: L.tensor([1, 2]).div(L.tensor([0, 1]), rounding_mode="floor")):
        with pytest.raises(RuntimeError) as te:
            bad(torch)
        with pytest.raises(RuntimeError) as se:
            bad(sg)
        assert str(se.value) == str(te.value)


@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 9), (130,), (2, 200), (1000,)])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_topk_picks_and_orders_ties_as_torch(shape, dtype):
    """Few distinct values, so nearly every slice has ties: the indices are the ones torch's
    nth_element / partial_sort selection gives, sorted or not; NaNs (several) count as the largest."""
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    x = rng.integers(0, 4, shape).astype(dtype)
    if dtype == "float32":
        x.flat[rng.integers(0, x.size, 3)] = np.nan
    for d in range(len(shape)):
        n = shape[d]
        for k in sorted({1, 2, max(1, n // 64), n // 2, n}):
            for largest in (True, False):
                for srt in (True, False):
                    a = sg.tensor(x).topk(k, dim=d, largest=largest, sorted=srt)
                    b = torch.tensor(x).topk(k, dim=d, largest=largest, sorted=srt)
                    np.testing.assert_array_equal(a.indices.numpy(), b.indices.numpy())
                    np.testing.assert_array_equal(a.values.numpy(), b.values.numpy())


def test_topk_gradient_goes_to_the_tied_element_torch_picks():
    grads = []
    for lib in (sg, torch):
        x = lib.tensor([[5.0, 3.0, 5.0, 8.0], [1.0, 1.0, 1.0, 0.0]], requires_grad=True)
        (x.topk(2).values * lib.tensor([1.0, 10.0])).sum().backward()
        grads.append(x.grad)
    assert_close(*grads)
