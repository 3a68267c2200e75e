"""In-place writes with gradients: ``t[idx] = v``, ``copy_``, ``index_put(_)``, ``index_add(_)`` vs torch
(values, gradients, grad_fn names, errors), the version-counter check, tracing and formulas."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error, grad_fn_name

import symgrad as sg

RNG = np.random.default_rng(7)


def _pair(arr: np.ndarray, dtype: str, requires_grad: bool = True) -> tuple[sg.Tensor, torch.Tensor]:
    a = np.asarray(arr).astype(dtype)
    return sg.tensor(a.copy(), requires_grad=requires_grad), torch.tensor(a.copy(), requires_grad=requires_grad)


def _lib_index(lib: Any, index: Any, base: Any) -> Any:
    """An index spec in test form made concrete for ``lib``: "T[...]" lists become index tensors,
    "mask" the mask ``base > 0``."""
    if isinstance(index, tuple):
        return tuple(_lib_index(lib, e, base) for e in index)
    if isinstance(index, dict):
        return np.array(index["T"]) if lib is np else lib.tensor(index["T"])
    if isinstance(index, str):  # "mask": base > 0; "rowmask": base[0] > 0
        m = base if index == "mask" else base[0]
        return m > 0 if lib is np else m.detach() > 0
    return index


# ---------------------------------------------------------------------------- __setitem__ vs torch

#: (index, base shape) with the grad_fn name torch gives the write
INDEXES = [
    (1, (4, 3), "CopySlices"),
    (-1, (4, 3), "CopySlices"),
    (slice(1, None), (5,), "CopySlices"),
    (slice(None, None, 2), (5, 2), "CopySlices"),
    (slice(-3, -1), (5,), "CopySlices"),
    ((Ellipsis, 0), (2, 3, 4), "CopySlices"),
    ((None, 1), (3, 2), "CopySlices"),
    ((0, slice(1, None)), (3, 4), "CopySlices"),
    ((slice(1, 3), slice(None, None, 2)), (4, 5), "CopySlices"),
    ([0, 2], (4, 3), "IndexPutBackward0"),
    ({"T": [3, 0]}, (4, 3), "IndexPutBackward0"),
    ((slice(None), [2, 0]), (4, 3), "IndexPutBackward0"),
    (([0, 1], [1, 2]), (4, 3), "IndexPutBackward0"),
    ("mask", (4, 3), "IndexPutBackward0"),
    ((1, "rowmask"), (3, 4), "CopySlices"),
    (slice(None), (4, 3), "Whole"),
    (Ellipsis, (4, 3), "Whole"),
    ((), (), "Whole"),
]


def _value(kind: str, region: tuple, dtype: str) -> Any:
    if kind == "number":
        return 2.5
    if kind == "int":
        return 3
    if kind == "0d":
        return RNG.standard_normal(()).astype(dtype)
    if kind == "region":
        return RNG.standard_normal(region).astype(dtype)
    if kind == "row":  # broadcast along all but the last dim
        return RNG.standard_normal(region[-1:] if region else ()).astype(dtype)
    if kind == "lead1":  # extra leading size-1 dims, which torch drops
        return RNG.standard_normal((1, 1, *region)).astype(dtype)
    raise AssertionError(kind)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", ["number", "int", "0d", "region", "row", "lead1"])
@pytest.mark.parametrize("index,shape,fn", INDEXES, ids=[repr(i[0]) for i in INDEXES])
def test_setitem_on_a_non_leaf_matches_torch(index, shape, fn, kind, dtype):
    base = RNG.standard_normal(shape)
    x, tx = _pair(base, dtype)
    region = np.broadcast_to(np.empty(()), shape)[_lib_index(np, index, base)].shape
    v = _value(kind, region, dtype)
    vs, vt = (v, v) if not isinstance(v, np.ndarray) else _pair(v, dtype)
    y, ty = x * 2, tx * 2
    y[_lib_index(sg, index, y)] = vs
    ty[_lib_index(torch, index, ty)] = vt
    assert_close(y, ty, what="written value")
    assert grad_fn_name(y) == grad_fn_name(ty)
    assert fn == "Whole" or grad_fn_name(y) == fn
    assert y.requires_grad and not y.is_leaf
    w = RNG.standard_normal(shape).astype(dtype)
    (y * sg.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad, what="grad of the base")
    if isinstance(vs, sg.Tensor):
        assert_close(vs.grad, vt.grad, what="grad of the value")


SETITEM_CASES = [(i, s, f) for i, s, f in INDEXES if s]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("index,shape,fn", SETITEM_CASES, ids=[repr(i[0]) for i in SETITEM_CASES])
def test_setitem_of_a_grad_value_into_a_plain_tensor(index, shape, fn, dtype):
    """A tensor without history becomes a non-leaf when a value that requires grad is written in."""
    y, ty = sg.zeros(shape, dtype=getattr(sg, dtype)), torch.zeros(shape, dtype=getattr(torch, dtype))
    region = np.broadcast_to(np.empty(()), shape)[_lib_index(np, index, np.ones(shape))].shape
    v, tv = _pair(RNG.standard_normal(region[-1:]), dtype)
    y[_lib_index(sg, index, sg.ones(shape))] = v.exp()
    ty[_lib_index(torch, index, torch.ones(shape))] = tv.exp()
    assert_close(y, ty)
    assert grad_fn_name(y) == grad_fn_name(ty)
    assert y.requires_grad and not y.is_leaf
    assert [f is None for f, _ in y.grad_fn.next_functions] == [f is None for f, _ in ty.grad_fn.next_functions]
    (y ** 2).sum().backward()
    (ty ** 2).sum().backward()
    assert_close(v.grad, tv.grad)


def test_setitem_without_grad_writes_the_buffer_and_bumps_the_version():
    y, ty = sg.zeros(4, 3), torch.zeros(4, 3)
    view, tview = y[1], ty[1]
    for lib, t in ((sg, y), (torch, ty)):
        t[1:3, ::2] = 7
        t[[0, 3], 1] = lib.tensor([1.5, -2.5])
        t[t > 6] = 5
        t[..., 2] = lib.arange(4.0)
    assert_close(y, ty)
    assert_close(view, tview)  # a basic-index view sees the writes
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    assert y._version.v == ty._version == 4


def test_setitem_converts_to_the_tensor_dtype():
    y, ty = sg.zeros(3, dtype=sg.int64), torch.zeros(3, dtype=torch.long)
    v, tv = _pair(np.array([1.7, -1.7]), "float32")
    y[0:2] = v
    ty[0:2] = tv
    assert_close(y, ty)
    assert not y.requires_grad and not ty.requires_grad
    b, tb = sg.zeros(3, dtype=sg.bool), torch.zeros(3, dtype=torch.bool)
    b[1] = 2.5
    tb[1] = 2.5
    assert_close(b, tb)
    f, tf = sg.zeros(2, dtype=sg.float64), torch.zeros(2, dtype=torch.float64)
    v32, tv32 = _pair(np.array([0.1]), "float32")
    f[1:] = v32
    tf[1:] = tv32
    assert_close(f, tf)
    f.sum().backward()
    tf.sum().backward()
    assert_close(v32.grad, tv32.grad)  # float32, as the value


def test_setitem_under_no_grad_keeps_history_and_allows_leaves():
    x, tx = _pair(np.arange(4.0), "float64")
    with sg.no_grad():
        x[0] = 10
    with torch.no_grad():
        tx[0] = 10
    assert_close(x, tx)
    assert x.is_leaf and x.requires_grad
    y, ty = x * 3, tx * 3
    with sg.no_grad():
        y[1] = 0
    with torch.no_grad():
        ty[1] = 0
    assert grad_fn_name(y) == grad_fn_name(ty) == "MulBackward0"
    y.sum().backward()
    ty.sum().backward()
    assert_close(x.grad, tx.grad)


def test_repeated_writes_and_double_backward_match_torch():
    x, tx = _pair(RNG.standard_normal(5), "float64")
    outs = []
    for lib, t in ((sg, x), (torch, tx)):
        y = t ** 2
        y[0] = t[1] ** 3
        y[2:4] = t[2:4] * t[4]
        y[[4, 1]] = lib.stack([t[0] * t[2], t[3].sin()])
        (g,) = lib.autograd.grad(y.sum(), t, create_graph=True)
        (g ** 2).sum().backward()
        outs.append((y, g, t.grad))
    for a, b in zip(*outs):
        assert_close(a, b)


def test_a_view_read_before_a_write_to_its_storage_is_a_modified_saved_value():
    for lib in (sg, torch):
        t = lib.ones(5, requires_grad=True)
        y = t ** 2
        y[2:4] = y[2:4] * t[4]  # mul saved the view y[2:4], which the write then changes
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


# ---------------------------------------------------------------------------- writes through views

def _view_writes(lib: Any, x: Any) -> tuple:
    y = x * 2
    y[:, 0] += 1                      # __iadd__ on a view, then __setitem__ of it
    v = y[1]
    v[2] = v[0] * 10                  # a view taken before other writes
    y[0][1:].mul_(x[0, 1:])           # a view of a view
    y.t()[1].sub_(x[:, 1])            # through a transpose
    y.view(-1)[::4] = x.view(-1)[:2]  # through a reshape
    z = lib.zeros(2, 3, dtype=x.dtype)
    z[1].copy_(x[0] * 3)              # a plain base gains history through its view
    z.t()[:, 0].add_(x[1])
    return y, v, z


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_writes_through_views_rewrite_the_base_as_torch(dtype):
    x, tx = _pair(RNG.standard_normal((2, 3)), dtype)
    outs, touts = _view_writes(sg, x), _view_writes(torch, tx)
    for a, b in zip(outs, touts):
        assert_close(a, b)
        assert grad_fn_name(a) == grad_fn_name(b)
    w = RNG.standard_normal(3).astype(dtype)
    sum(((o ** 2) * sg.tensor(w)).sum() for o in outs).backward()
    sum(((o ** 2) * torch.tensor(w)).sum() for o in touts).backward()
    assert_close(x.grad, tx.grad)


def test_fill_and_zero_keep_history_as_torch():
    def f(lib: Any) -> tuple:
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        w = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
        y = x * 2
        y[0].zero_()            # a 0-d view
        y[1:].fill_(w * 2)
        z = x * 3
        z.zero_()
        (y * y).sum().backward()
        zz = lib.zeros(3)
        zz[1].fill_(5)          # no history: an ordinary write through a 0-d view
        zz[2].add_(1)
        return (y.detach(), grad_fn_name(y), grad_fn_name(z), z.requires_grad, x.grad, w.grad, zz)
    for a, b in zip(f(sg), f(torch)):
        if isinstance(a, (str, bool)):
            assert a == b
        else:
            assert_close(a, b)


def test_a_view_of_a_plain_tensor_gains_history_when_its_base_does():
    def f(lib: Any) -> tuple:
        z = lib.zeros(3, dtype=lib.float64)
        v = z[1:]
        w = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        z[1] = w * 3
        flags = (v.requires_grad, v.is_leaf, grad_fn_name(v))
        v.backward(lib.ones(2, dtype=lib.float64))
        return flags, w.grad
    (flags, g), (tflags, tg) = f(sg), f(torch)
    assert flags == tflags == (True, False, "AsStridedBackward0")
    assert_close(g, tg)


VIEW_ERRORS = {
    "fill_ with a 1-d tensor": lambda lib: lib.ones(3).fill_(lib.ones(2)),
    "view of a leaf": lambda lib: lib.ones(3, requires_grad=True)[1:].add_(1),
    "expanded": lambda lib: (lib.ones(3, requires_grad=True) * 1).expand(2, 3).add_(1),
}


@pytest.mark.parametrize("name", list(VIEW_ERRORS))
def test_view_write_errors_match_torch(name):
    assert_same_error(*_both(VIEW_ERRORS[name]))


# ---------------------------------------------------------------------------- setitem errors

def _both(fn: Any) -> tuple[Any, Any]:
    return (lambda: fn(sg)), (lambda: fn(torch))


def _setitem(t: Any, index: Any, value: Any) -> None:
    t[index] = value


SETITEM_ERRORS = {
    "leaf basic": lambda lib: _setitem(lib.ones(3, requires_grad=True), 0, 1.0),
    "leaf slice": lambda lib: _setitem(lib.ones(3, requires_grad=True), slice(1, None), 1.0),
    "leaf whole": lambda lib: _setitem(lib.ones(3, requires_grad=True), slice(None), 1.0),
    "leaf advanced": lambda lib: _setitem(lib.ones(3, requires_grad=True), [0], 1.0),
    "leaf mask": lambda lib: _setitem(lib.ones(3, requires_grad=True), lib.ones(3) > 0, 1.0),
    "expand": lambda lib: _setitem(lib.ones(4, 3) * 1, slice(0, 2), lib.ones(2)),
    "expand dims": lambda lib: _setitem(lib.ones(4, 3), (0, 0), lib.ones(2)),
    "expand 2d": lambda lib: _setitem(lib.ones(4, 3), 0, lib.ones(2, 3)),
    "advanced mismatch": lambda lib: _setitem(lib.ones(4, 3), [0, 1], lib.ones(3, 3)),
    "mask mismatch": lambda lib: _setitem(lib.tensor([1.0, -1, 2]), lib.tensor([1.0, -1, 2]) > 0, lib.ones(3)),
    "mask shape": lambda lib: _setitem(lib.zeros(3), lib.tensor([True, False]), 1.0),
    "mask shape 2d": lambda lib: _setitem(lib.zeros(3, 2), lib.ones(3, 3) > 0, 1.0),
    "overlap": lambda lib: (lambda y: _setitem(y, slice(1, None), y[:-1]))(lib.arange(5.0)),
    "overlap advanced": lambda lib: (lambda y: _setitem(y, [0, 1], y[0]))(lib.ones(4, 3)),
    "list value": lambda lib: _setitem(lib.ones(4, 3), slice(0, 2), [1.0, 2.0, 3.0]),
    "numpy value": lambda lib: _setitem(lib.ones(4, 3), slice(0, 2), np.ones(3)),
    "str value": lambda lib: _setitem(lib.ones(3), 0, "a"),
    "complex value": lambda lib: _setitem(lib.ones(3), 0, 1j),
    "out of bounds": lambda lib: _setitem(lib.zeros(3), 5, 1.0),
    "array out of bounds": lambda lib: _setitem(lib.zeros(3), [5], 1.0),
    "negative step": lambda lib: _setitem(lib.zeros(3), slice(None, None, -1), 1.0),
    "multi-view output": lambda lib: _setitem(lib.ones(4, requires_grad=True).mul(2).split(2)[0], 0, 1.0),
}


@pytest.mark.parametrize("name", list(SETITEM_ERRORS))
def test_setitem_errors_match_torch(name):
    assert_same_error(*_both(SETITEM_ERRORS[name]))


def test_overlapping_alias_of_the_region_is_allowed():
    y, ty = sg.arange(5.0), torch.arange(5.0)
    y[1:] = y[1:]
    ty[1:] = ty[1:]
    assert_close(y, ty)


# ---------------------------------------------------------------------------- copy_

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("src_shape", [(4, 3), (3,), (1, 3), (4, 1), ()])
def test_copy_matches_torch(src_shape, dtype):
    x, tx = _pair(RNG.standard_normal((4, 3)), dtype)
    other = "float64" if dtype == "float32" else "float32"
    s, ts = _pair(RNG.standard_normal(src_shape), other)
    y, ty = x * 2, tx * 2
    assert y.copy_(s.sin()) is y
    ty.copy_(ts.sin())
    # float32 math (sin, torch's summation order) is compared at float32's tolerance
    rtol, atol = (1e-5, 1e-6) if "float32" in (dtype, other) else (None, None)
    assert_close(y, ty, rtol=rtol, atol=atol)
    assert grad_fn_name(y) == grad_fn_name(ty) == "CopyBackwards"
    w = RNG.standard_normal((4, 3)).astype(dtype)
    (y * sg.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad, what="zeros to the overwritten history")
    assert_close(s.grad, ts.grad, rtol=rtol, atol=atol, what="grad of src, in src's dtype")


def test_copy_into_plain_tensors_and_from_numbers():
    s, ts = _pair(RNG.standard_normal(3), "float32")
    y, ty = sg.zeros(3), torch.zeros(3)
    y.copy_(s)
    ty.copy_(ts)
    assert grad_fn_name(y) == grad_fn_name(ty)
    assert [f is None for f, _ in y.grad_fn.next_functions] == [f is None for f, _ in ty.grad_fn.next_functions]
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_close(s.grad, ts.grad)
    n, tn = sg.zeros(3, dtype=sg.int64), torch.zeros(3, dtype=torch.long)
    n.copy_(sg.tensor([1.7, -1.7, 2.2]))
    tn.copy_(torch.tensor([1.7, -1.7, 2.2]))
    assert_close(n, tn)
    x, tx = _pair(np.ones(3), "float64")
    y, ty = x * 1, tx * 1
    y.copy_(5.0)
    ty.copy_(5.0)
    assert_close(y, ty)
    assert grad_fn_name(y) == grad_fn_name(ty)
    y.sum().backward()
    ty.sum().backward()
    assert_close(x.grad, tx.grad)


COPY_ERRORS = {
    "leaf": lambda lib: lib.ones(3, requires_grad=True).copy_(lib.ones(3)),
    "broadcast": lambda lib: (lib.ones(4, 3) * 1).copy_(lib.ones(2)),
    "broadcast shape": lambda lib: lib.ones(4, 3).copy_(lib.ones(2, 4, 3)),
    "overlap": lambda lib: (lambda y: y[1:].copy_(y[:-1]))(lib.arange(5.0)),
}


@pytest.mark.parametrize("name", list(COPY_ERRORS))
def test_copy_errors_match_torch(name):
    assert_same_error(*_both(COPY_ERRORS[name]))


# ---------------------------------------------------------------------------- index_put / index_add

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("case", ["rows", "pairs", "repeats", "mask", "broadcast"])
def test_index_put_matches_torch(case, accumulate, inplace, dtype):
    x, tx = _pair(RNG.standard_normal((4, 3)), dtype)
    idx = {"rows": ([2, 0],), "pairs": ([0, 3, 1], [2, 2, 0]), "repeats": ([1, 1, 3, 1],),
           "mask": "mask", "broadcast": ([3, 1],)}[case]
    vshape = {"rows": (2, 3), "pairs": (3,), "repeats": (4, 3), "mask": (), "broadcast": (1, 3)}[case]
    v, tv = _pair(RNG.standard_normal(vshape), dtype)
    results = []
    for lib, t, val in ((sg, x, v), (torch, tx, tv)):
        indices = (t.detach() > 0,) if idx == "mask" else tuple(lib.tensor(i) for i in idx)
        y = t * 2
        if inplace:
            out = y.index_put_(indices, val * 3, accumulate=accumulate)
            assert out is y
        else:
            out = y.index_put(indices, val * 3, accumulate)
        results.append(out)
    out, tout = results
    assert_close(out, tout)
    assert grad_fn_name(out) == grad_fn_name(tout) == "IndexPutBackward0"
    w = RNG.standard_normal((4, 3)).astype(dtype)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(v.grad, tv.grad)


def test_function_forms_match_torch():
    x, tx = _pair(RNG.standard_normal((3, 2)), "float64")
    v, tv = _pair(RNG.standard_normal((2, 2)), "float64")
    for fn in (lambda lib, a, b: lib.index_put(a, (lib.tensor([2, 0]),), b * 2, accumulate=True),
               lambda lib, a, b: lib.index_add(a * 1, 0, lib.tensor([1, 1]), b, alpha=-2)):
        out, tout = fn(sg, x, v), fn(torch, tx, tv)
        assert_close(out, tout)
        assert grad_fn_name(out) == grad_fn_name(tout)


def test_index_put_on_a_leaf_is_functional():
    x, tx = _pair(np.arange(3.0), "float64")
    y = x.index_put((sg.tensor([0]),), sg.tensor(5.0, dtype=sg.float64))
    ty = tx.index_put((torch.tensor([0]),), torch.tensor(5.0, dtype=torch.float64))
    assert_close(y, ty)
    assert_close(x, tx)
    assert grad_fn_name(y) == grad_fn_name(ty)


INDEX_PUT_ERRORS = {
    "float values": lambda lib: lib.ones(4, 3).index_put((lib.tensor([0]),), 1.0),
    "none index": lambda lib: lib.ones(4, 3).index_put((None, lib.tensor([0])), lib.tensor(1.0)),
    "shape": lambda lib: lib.ones(4, 3).index_put((lib.tensor([0, 1]),), lib.tensor([5.0, 6.0])),
    "float index": lambda lib: lib.ones(4, 3).index_put((lib.tensor([0.0]),), lib.tensor(1.0)),
    "out of bounds": lambda lib: lib.ones(4, 3).index_put((lib.tensor([7]),), lib.tensor(1.0)),
    "dtype": lambda lib: lib.ones(4, 3).index_put((lib.tensor([0]),), lib.tensor(1.0, dtype=lib.float64)),
    "dtype_": lambda lib: lib.ones(4, 3).index_put_((lib.tensor([0]),), lib.tensor(1.0, dtype=lib.float64)),
    "leaf_": lambda lib: lib.ones(4, 3, requires_grad=True).index_put_((lib.tensor([0]),), lib.tensor(1.0)),
    "too many": lambda lib: lib.ones(4, 3).index_put((lib.tensor([0]),) * 3, lib.tensor(1.0)),
}


@pytest.mark.parametrize("name", list(INDEX_PUT_ERRORS))
def test_index_put_errors_match_torch(name):
    assert_same_error(*_both(INDEX_PUT_ERRORS[name]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dim,index,shape,alpha", [
    (0, [0, 2, 0], (4, 3), 1), (1, [2, 0], (4, 3), 2.5), (-1, [1, 1, 1, 0], (2, 3, 2), -1),
    (0, 1, (4, 3), 1), (1, [0], (2, 3, 4), 0.5)])
def test_index_add_matches_torch(dim, index, shape, alpha, inplace, dtype):
    x, tx = _pair(RNG.standard_normal(shape), dtype)
    n = np.asarray(index).size
    sshape = list(shape)
    sshape[dim] = n
    s, ts = _pair(RNG.standard_normal(sshape), dtype)
    results = []
    for lib, t, src in ((sg, x, s), (torch, tx, ts)):
        y = t.sin()
        if inplace:
            out = y.index_add_(dim, lib.tensor(index), src * src, alpha=alpha)
            assert out is y
        else:
            out = y.index_add(dim, lib.tensor(index), src * src, alpha=alpha)
        results.append(out)
    out, tout = results
    assert_close(out, tout)
    assert grad_fn_name(out) == grad_fn_name(tout) == "IndexAddBackward0"
    w = RNG.standard_normal(shape).astype(dtype)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(s.grad, ts.grad)


INDEX_ADD_ERRORS = {
    "count": lambda lib: lib.ones(4, 3).index_add(0, lib.tensor([0, 1]), lib.ones(3, 3)),
    "vector": lambda lib: lib.ones(4, 3).index_add(0, lib.tensor([[0, 1]]), lib.ones(2, 3)),
    "dim": lambda lib: lib.ones(4, 3).index_add(2, lib.tensor([0, 1]), lib.ones(2, 3)),
    "index dtype": lambda lib: lib.ones(4, 3).index_add(0, lib.tensor([0.0, 1]), lib.ones(2, 3)),
    "out of bounds": lambda lib: lib.ones(4, 3).index_add(0, lib.tensor([0, 9]), lib.ones(2, 3)),
    "dtype": lambda lib: lib.ones(4, 3).index_add(0, lib.tensor([0, 1]), lib.ones(2, 3, dtype=lib.float64)),
    "source shape": lambda lib: lib.ones(4, 3).index_add(0, lib.tensor([0, 1]), lib.ones(2, 2)),
    "leaf_": lambda lib: lib.ones(4, 3, requires_grad=True).index_add_(0, lib.tensor([0]), lib.ones(1, 3)),
}


@pytest.mark.parametrize("name", list(INDEX_ADD_ERRORS))
def test_index_add_errors_match_torch(name):
    assert_same_error(*_both(INDEX_ADD_ERRORS[name]))


# ---------------------------------------------------------------------------- the version counter

def _exp_then_write(lib: Any) -> None:
    x = lib.ones(4, 3, requires_grad=True)
    y = x.exp()
    y[0] = 0
    y.sum().backward()


def _mul_then_write(lib: Any) -> None:
    x = lib.ones(4, 3, requires_grad=True)
    y = x * 1
    z = y * y
    y[0] = 0
    z.sum().backward()


def _mul_then_copy(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True, dtype=lib.float64)
    y = x * 1
    z = y * y
    y.copy_(lib.ones(3))
    z.sum().backward()


def _pow_then_index_put(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    z = y ** 2
    y.index_put_((lib.tensor([1]),), lib.tensor(3.0), accumulate=True)
    z.sum().backward()


@pytest.mark.parametrize("fn", [_exp_then_write, _mul_then_write, _mul_then_copy, _pow_then_index_put])
def test_saved_value_overwritten_in_place_raises_torchs_error(fn):
    err = assert_same_error(lambda: fn(sg), lambda: fn(torch))
    assert "modified by an inplace operation" in str(err)


def test_write_after_backward_use_is_fine():
    for lib in (sg, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        z = (y + 1).sum()
        y[0] = 5  # add does not save y
        z.backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]


# ---------------------------------------------------------------------------- tracing (@sg.compile)

def f_slices(x):
    y = x * 1
    y[1:] = 0
    y[0] = y[0] * 3
    return (y * x).sum()


def f_mixed(x):
    y = x.sin()
    y[::2] = x[1::2] ** 2
    y[-1] = y[-1] + x[0]
    return (y * y).sum()


def f_advanced(x):
    y = x * x
    y[[0, 3]] = x[1:3].sin()
    return y.index_add(0, sg.tensor([1, 1]) if isinstance(x, sg.Tensor) else torch.tensor([1, 1]),
                       x[:2] * 2).sum()


def f_inplace_ops(x):
    y = x * 1
    y.add_(x)
    y.mul_(x)
    y[2] = 1.0
    return y.sum()


def f_views(x):
    y = x * 1
    v = y[1:]
    y[0] = 5.0
    y[1:][0] = y[1:][0] * 2
    v[1:] += x[:4] ** 2
    v.view(5)[::2].mul_(x[1])
    return (v * y[1:]).sum() + y.sum()


def _torch_value_and_grad(f: Any, arr: np.ndarray) -> tuple[float, np.ndarray]:
    t = torch.tensor(arr, requires_grad=True)
    out = f(t)
    out.backward()
    return out.item(), t.grad.numpy()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("f", [f_slices, f_mixed, f_advanced, f_inplace_ops, f_views])
def test_compiled_updates_match_eager_and_torch(f, dtype):
    arr = RNG.standard_normal(6).astype(dtype)
    tv, tg = _torch_value_and_grad(f, arr)
    x = sg.tensor(arr, requires_grad=True)
    out = f(x)
    out.backward()
    assert_close(out, np.asarray(tv, dtype=dtype), what="eager value")
    assert_close(x.grad, tg, what="eager grad")
    vg = sg.value_and_grad(f)
    for _ in range(4):  # past HOT_CALLS: the numba kernel or the numpy fallback
        v, g = vg(arr)
    assert_close(np.asarray(v, dtype=dtype), np.asarray(tv, dtype=dtype), what="compiled value")
    assert_close(g, tg, what="compiled grad")
    assert_close(np.asarray(sg.compile(f)(arr), dtype=dtype), np.asarray(tv, dtype=dtype))


def test_compiled_basic_updates_run_in_numba():
    vg = sg.value_and_grad(f_slices)
    arr = RNG.standard_normal(7)
    for _ in range(4):
        v, g = vg(arr)
    e = next(iter(vg._entries.values()))
    assert e.jit is not None and "numba" in e.jit_source
    tv, tg = _torch_value_and_grad(f_slices, arr)
    assert_close(g, tg)


def test_compiled_updates_record_the_index_put_op():
    from symgrad.compiler.function import CompiledFunction
    cf = sg.compile(f_slices)
    assert isinstance(cf, CompiledFunction)
    cf(np.ones(3))
    e = next(iter(cf._entries.values()))
    assert "index_put" in e.source


def _write_into_argument(x):
    x[0] = 1.0
    return x.sum()


def test_tracing_refuses_what_it_cannot_make_functional():
    with pytest.raises(sg.TracingError, match="argument of a compiled function"):
        sg.compile(_write_into_argument)(np.ones(3))
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        sg.grad(_write_into_argument)(np.ones(3))  # differentiated arguments are leaves, as in torch
    with pytest.raises(sg.TracingError, match="argument of a compiled function"):
        sg.compile(lambda x: _write_into_argument(x[1:]))(np.ones(3))
    c = sg.zeros(3)
    with pytest.raises(sg.TracingError, match="not traced"):
        sg.compile(lambda x: c.__setitem__(0, x.sum()) or x.sum())(np.ones(3))


# ---------------------------------------------------------------------------- formulas

def test_formulas_print_updates_readably():
    x = sg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 2
    y[1:3] = 0
    assert str(sg.formula(y.sum())) == "sum(put(2*x, [1:3] = 0))"
    z = (x * 1).index_add(0, sg.tensor([0, 0]), x[:2] ** 2)
    assert str(sg.formula(z)) == "put(x, [[0, 0]] += x[:2]**2)"
    w = x * 1
    w.copy_(x.exp())
    assert str(sg.formula(w)) == "exp(x)"
    assert r"\operatorname{put}" in sg.formula(y).latex()
    assert "put(" in str(sg.grad_formula(y.sum(), x))


def f_repeated_targets(x):
    y = x * 1
    idx = [0, 4, 0, 2, 4, 0]
    y[sg.tensor(idx) if isinstance(x, sg.Tensor) else torch.tensor(idx)] = x[:6].cos() * 3
    z = y.reshape(2, 4) * 1
    z[[1, 1, 0], [2, 2, 3]] = x[1]
    return (z * z.sin()).sum()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_repeated_targets_keep_the_last_write_eager_and_compiled(dtype):
    """Without ``accumulate`` a target written twice keeps the last value: eager (numpy's rule), both
    compiled backends (not the sum of the writes) and, on CPU, torch agree."""
    arr = RNG.standard_normal(8).astype(dtype)
    tv, tg = _torch_value_and_grad(f_repeated_targets, arr)
    x = sg.tensor(arr, requires_grad=True)
    out = f_repeated_targets(x)
    out.backward()
    assert_close(out, np.asarray(tv, dtype=dtype), what="eager value")
    assert_close(x.grad, tg, what="eager grad")
    ref = arr.astype(np.float64)
    y = ref.copy()
    y[[0, 4, 0, 2, 4, 0]] = np.cos(ref[:6]) * 3
    z = y.reshape(2, 4).copy()
    z[[1, 1, 0], [2, 2, 3]] = ref[1]
    assert float(out) == pytest.approx(float((z * np.sin(z)).sum()), rel=1e-5 if dtype == "float32" else 1e-12)
    vg = sg.value_and_grad(f_repeated_targets)
    for call in range(4):  # the numpy kernel, then numba's
        v, g = vg(arr)
        assert_close(np.asarray(v, dtype=dtype), np.asarray(tv, dtype=dtype), what=f"compiled value, call {call}")
        assert_close(g, tg, what=f"compiled grad, call {call}")


# ---------------------------------------------------------------------------- masked_scatter / masked_select

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mask_shape", [(2, 3), (3,), (2, 1)])
def test_masked_scatter_and_select_match_torch(dtype, mask_shape):
    base = RNG.standard_normal((2, 3))
    mask = RNG.standard_normal(mask_shape) > 0
    mask.flat[0] = True
    src = RNG.standard_normal(7)
    weight = RNG.standard_normal((2, 3))
    outs = {}
    for lib in (sg, torch):
        b = lib.tensor(base.astype(dtype), requires_grad=True)
        s = lib.tensor(src.astype(dtype), requires_grad=True)
        m = lib.tensor(mask)
        scattered = b.masked_scatter(m, s)
        selected = b.masked_select(m)
        ((scattered * lib.tensor(weight.astype(dtype))).sum() + (selected ** 2).sum()).backward()
        outs[lib] = scattered, selected, b.grad, s.grad
    for a, e in zip(outs[sg], outs[torch]):
        assert_close(a, e)
    assert grad_fn_name(outs[sg][0]) == "MaskedScatterBackward0"
    assert grad_fn_name(outs[sg][1]) == "MaskedSelectBackward0"


def test_masked_scatter_in_place_and_errors_match_torch():
    outs = []
    for lib in (sg, torch):
        x = lib.zeros(2, 3)
        y = x.masked_scatter_(lib.tensor([[True, False, True], [False, True, False]]), lib.arange(1.0, 7.0))
        assert y is x
        outs.append(x)
    assert_close(*outs)
    for args in [lambda lib: (lib.zeros(3), lib.ones(3), lib.ones(3)),
                 lambda lib: (lib.zeros(3), lib.ones(3, dtype=lib.bool), lib.ones(2)),
                 lambda lib: (lib.zeros(3), lib.ones(3, dtype=lib.bool), lib.ones(3, dtype=lib.float64))]:
        assert_same_error(lambda a=args: sg.Tensor.masked_scatter(*a(sg)),
                          lambda a=args: torch.Tensor.masked_scatter(*a(torch)))
    assert_same_error(lambda: sg.zeros(3).masked_select(sg.ones(3)),
                      lambda: torch.zeros(3).masked_select(torch.ones(3)))


# ---------------------------------------------------------------------------- scatter / scatter_add

SCATTERS = [  # (self shape, dim, index, src shape or a number)
    ((3, 3), 0, [[0, 1, 2], [2, 0, 1]], (2, 3)),
    ((3, 4), 1, [[3], [0], [1]], (3, 2)),
    ((2, 5), 1, [[0, 0, 1], [4, 4, 4]], (2, 3)),
    ((2, 5), -1, [[1, 2], [0, 3]], 2.5),
    ((4,), 0, [1, 1, 3], (3,)),
    ((3, 4), 0, [[2, 1]], (3, 4)),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", SCATTERS)
@pytest.mark.parametrize("add", [False, True])
def test_scatter_and_scatter_add_match_torch(case, add, dtype):
    shape, dim, index, src = case
    if add and not isinstance(src, tuple):
        return
    base = RNG.standard_normal(shape)
    srcs = RNG.standard_normal(src) if isinstance(src, tuple) else src
    weight = RNG.standard_normal(shape)
    outs = {}
    for lib in (sg, torch):
        b = lib.tensor(base.astype(dtype), requires_grad=True)
        # torch's backward refuses a src larger than index (its gradient has index's shape): no grad there
        fits = isinstance(src, tuple) and src == np.shape(index)
        s = lib.tensor(srcs.astype(dtype), requires_grad=fits) if isinstance(src, tuple) else srcs
        idx = lib.tensor(index)
        out = b.scatter_add(dim, idx, s) if add else b.scatter(dim, idx, s)
        (out * lib.tensor(weight.astype(dtype))).sum().backward()
        again = b.detach().clone()
        getattr(again, "scatter_add_" if add else "scatter_")(dim, idx, s.detach() if add or isinstance(src, tuple)
                                                              else s)
        outs[lib] = out, b.grad, (s.grad if fits else None), again, grad_fn_name(out)
    for a, e in zip(outs[sg][:4], outs[torch][:4]):
        assert_close(a, e)
    assert outs[sg][4] == outs[torch][4]


def test_scatter_errors_match_torch():
    for make in [lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[5]]), 1.0),
                 lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0]]), lib.ones(1, 1, dtype=lib.float64)),
                 lambda lib: lib.zeros(3, 4).scatter_add(1, lib.tensor([[0]]), lib.ones(1, 1, dtype=lib.float64)),
                 lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0, 1]]), lib.ones(1, 1)),
                 lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([0]), 1.0),
                 lambda lib: lib.zeros(3, 4).scatter_add(1, lib.tensor([[0]]), 2.0),
                 lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0.0]]), 2.0)]:
        assert_same_error(lambda m=make: m(sg), lambda m=make: m(torch))


# ---------------------------------------------------------------------------- t[i, j] += v (a write of its own view)

AUGMENTED = [
    lambda L, t: t.__setitem__((1, 2), t[1, 2] + 0) or t,
    lambda L, t: t.__setitem__(0, t[0] * 2) or t,
    lambda L, t: t.__setitem__((L.tensor(1), L.tensor(2)), t[L.tensor(1), L.tensor(2)] - 3) or t,
    lambda L, t: t.__setitem__(L.tensor(2), t[L.tensor(2)] / 2) or t,
    lambda L, t: t.__setitem__((L.tensor(1), slice(None), ), t[L.tensor(1)]) or t,
]


@pytest.mark.parametrize("k", range(len(AUGMENTED)))
def test_augmented_assignment_through_an_index_matches_torch(k):
    """``t[1, 2] += 1`` reads a view, adds in place, and writes the view back into itself: torch allows
    that exact alias (also with 0-d integer tensors as indices, which index as integers)."""
    outs = {}
    for lib in (sg, torch):
        w = lib.arange(12.0, dtype=lib.float64).reshape(3, 4).requires_grad_()
        t = w.clone()
        AUGMENTED[k](lib, t)
        view = t[1, 2]
        view += 5  # the in-place form Python runs for t[1, 2] += 5
        t[1, 2] = view
        (t * lib.arange(12.0, dtype=lib.float64).reshape(3, 4)).sum().backward()
        outs[lib] = t, w.grad, grad_fn_name(t)
    for a, e in zip(outs[sg][:2], outs[torch][:2]):
        assert_close(a, e)
    assert outs[sg][2] == outs[torch][2]


def test_counting_with_augmented_assignment_matches_torch():
    got = []
    for lib in (sg, torch):
        counts = lib.zeros(3, 3, dtype=lib.long)
        for i, j in zip(lib.tensor([2, 0, 1, 2, 2]), lib.tensor([2, 1, 1, 2, 0])):
            counts[i, j] += 1
        hist = lib.zeros(4)
        for v in (0, 3, 3, 1):
            hist[v] += 0.5
        got.append((counts, hist))
    for a, e in zip(*got):
        assert_close(a, e)
