"""More torch functions built from registry ops: stacking (``hstack vstack dstack column_stack atleast_*d``),
``meshgrid diff nan_to_num repeat_interleave tensor_split kron cross addmm addmv baddbmm``, order statistics
(``median nanmedian kthvalue``, through ``sort``), ``cdist``, and the data-only ``unique bucketize searchsorted
histc``; the special functions of ``ops/special.py`` (``erfinv lgamma digamma polygamma i0``). Each last node
reports torch's grad_fn name; ``MoreMethods`` is the matching ``Tensor`` mixin."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import sympy as sp

from codegen.functions import IsInf, IsNan

from ..core import dtypes
from ..ops import REGISTRY, A, normalize_dims
from ..ops.linalg import check_addmm_dtypes
from . import return_types
from . import saved_attrs as _saved_attrs
from .base import TensorBase, is_traced, make_tensor
from .basic import _cast, cat, tensor_like
from .composite import _arr, _fused, _gather, _index, _named, _order, _vector_norm, narrow
from .edges import set_edges
from .grad_mode import is_grad_enabled
from .record import _apply, _original
from .writes import WHOLE, write

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["addmm", "addmv", "atleast_1d", "atleast_2d", "atleast_3d", "baddbmm", "bucketize", "cdist",
           "column_stack", "cross", "diff", "digamma", "dstack", "erfinv", "histc", "hstack", "i0", "kron",
           "kthvalue", "lgamma", "median", "meshgrid", "mvlgamma", "nan_to_num", "nanmedian", "polygamma",
           "repeat_interleave", "row_stack", "searchsorted", "tensor_split", "unique", "vstack"]

_ALL = ("s", None, None, None)


def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else tensor_like(x, None)


def _dim(t: Tensor, dim: int) -> int:
    return normalize_dims(dim, t.ndim)[0] if t.ndim else 0


def _seq(tensors: Any, who: str) -> list[Tensor]:
    if isinstance(tensors, TensorBase):
        raise TypeError(f"{who}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    ts = [_t(x) for x in tensors]
    if not ts:
        raise RuntimeError(f"{who} expects a non-empty TensorList")
    return ts


# --------------------------------------------------------------------------- stacking

def _atleast(t: Any, n: int) -> Any:
    if isinstance(t, (list, tuple)):
        return tuple(_atleast(x, n) for x in t)
    t = _t(t)
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return t.reshape(*(1,) * n)
    if n == 3:
        return t.unsqueeze(0).unsqueeze(-1) if t.ndim == 1 else t.unsqueeze(-1)
    return t.unsqueeze(0)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor viewed with at least one dim (a 0-d one as shape ``(1,)``)."""
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 1)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor viewed with at least two dims (leading size-1 dims added)."""
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 2)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor viewed with at least three dims (``(n,)`` as ``(1, n, 1)``, ``(m, n)`` as ``(m, n, 1)``)."""
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 3)


def hstack(tensors: Sequence[Any]) -> Tensor:
    """Concatenated column-wise (along dim 0 for 1-d tensors, else dim 1)."""
    ts = [_atleast(t, 1) for t in _seq(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Any]) -> Tensor:
    """Concatenated row-wise (1-d tensors as rows)."""
    return cat([_atleast(t, 2) for t in _seq(tensors, "vstack")], 0)


row_stack = vstack


def dstack(tensors: Sequence[Any]) -> Tensor:
    """Concatenated depth-wise (along dim 2, after ``atleast_3d``)."""
    return cat([_atleast(t, 3) for t in _seq(tensors, "dstack")], 2)


def column_stack(tensors: Sequence[Any]) -> Tensor:
    """0-d and 1-d tensors as columns, then concatenated along dim 1."""
    ts = _seq(tensors, "column_stack")
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in ts], 1)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 0-d / 1-d tensors: ``indexing`` 'ij' (torch's default, with its warning) or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ts = [_t(x) for x in tensors]
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if builtins.any(t.dtype != ts[0].dtype for t in ts):  # torch checks the dtypes first
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = [t.reshape(t.numel()) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    order = [1, 0, *builtins.range(2, len(ts))] if swap else list(builtins.range(len(ts)))
    shape = [ts[k].shape[0] for k in order]
    out = []
    for i, t in enumerate(ts):
        pos = order.index(i)
        view = [1] * len(ts)
        view[pos] = t.shape[0]
        out.append(t.reshape(*view).expand(*shape))
    return tuple(out)


# --------------------------------------------------------------------------- diff, nan_to_num

def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Tensor:  # noqa: A002
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` / ``append``."""
    t = _t(input)
    if t.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(t, dim)
    parts = [_t(x) for x in (prepend,) if x is not None] + [t] + [_t(x) for x in (append,) if x is not None]
    if len(parts) > 1:
        t = cat([p if p.ndim == t.ndim else p.expand(*[1 if k == d else s for k, s in enumerate(t.shape)])
                 for p in parts], d)
    for _ in builtins.range(n):
        m = t.shape[d]
        if m == 0:
            break
        hi, lo = narrow(t, d, 1, m - 1), narrow(t, d, 0, m - 1)
        t = hi.logical_xor(lo) if t.dtype is dtypes.bool else hi - lo
    return t


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's largest finite value), -inf -> ``neginf``;
    the gradient is zero at the replaced elements, as torch's."""
    t = _t(input)
    if not t.is_floating_point():
        return t.clone()
    info = np.finfo(t._data.dtype if not is_traced(t) else t.dtype.np)
    hi = builtins.float(info.max) if posinf is None else posinf
    lo = builtins.float(info.min) if neginf is None else neginf
    expr = sp.Piecewise((sp.Float(nan), IsNan(A[0])), (sp.Float(hi), IsInf(A[0]) & (A[0] > 0)),
                        (sp.Float(lo), IsInf(A[0])), (A[0], True))
    return _fused(expr, t, fn="NanToNumBackward0")


# --------------------------------------------------------------------------- repeat_interleave, tensor_split, kron

def repeat_interleave(input: Any, repeats: Any = None, dim: int | None = None, *,  # noqa: A002
                      output_size: int | None = None) -> Tensor:
    """Each element (slice along ``dim``; the flattened input for None) repeated ``repeats`` times (an int or
    one count per element); ``repeat_interleave(counts)`` alone: ``arange`` repeated by ``counts``."""
    if repeats is None:
        counts = np.asarray(_t(input)._data)
        if counts.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return make_tensor(np.repeat(np.arange(counts.size, dtype=np.int64), counts.astype(np.int64)))
    t = _t(input)
    if dim is None:
        t, d = t.reshape(t.numel()), 0
    else:
        d = _dim(t, dim)
    n = t.shape[d] if t.ndim else 1
    if t.ndim == 0:
        t = t.reshape(1)
    by_tensor = isinstance(repeats, TensorBase) and repeats.ndim > 0
    reps = np.asarray(repeats._data if isinstance(repeats, TensorBase) else repeats, dtype=np.int64).ravel()
    if reps.size == 1:
        reps = np.repeat(reps, n)
    if reps.size != n:
        raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{reps.size} and input.size({d}) = {n}")
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    idx = np.repeat(np.arange(n), reps)
    spec = [_ALL] * d + [_arr(idx)]
    if not t.is_floating_point():
        return _index(t, spec, "")
    return _index(t, spec, "IndexSelectBackward0" if by_tensor else "ViewBackward0")


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """Views split along ``dim``: into ``k`` nearly equal parts (the first ``n % k`` one longer) or at the
    given indices."""
    t = _t(input)
    d = _dim(t, dim)
    n = t.shape[d]
    ios = indices_or_sections
    if isinstance(ios, TensorBase):
        if ios.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.ndim} dims")
        ios = ios._data.item() if ios.ndim == 0 else [builtins.int(v) for v in ios._data]
    if isinstance(ios, (builtins.int, np.integer)):
        k = builtins.int(ios)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        bounds = [i * q + builtins.min(i, r) for i in builtins.range(k + 1)]
    else:
        cuts = [builtins.int(v) for v in ios]
        bounds = [0, *cuts, n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = builtins.min(builtins.max(lo, 0), n), builtins.min(builtins.max(hi, 0), n)
        out.append(narrow(t, d, lo, builtins.max(hi - lo, 0)))
    return tuple(out)


def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The Kronecker product (the operands' dims right-aligned)."""
    a, b = _t(input), _t(other)
    nd = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    ai = a.reshape(*[v for s in sa for v in (s, 1)])
    bi = b.reshape(*[v for s in sb for v in (1, s)])
    out = (ai * bi).reshape(*[x * y for x, y in zip(sa, sb)])
    return _named(out, "UnsafeViewBackward0")


def _cross(a: Tensor, b: Tensor, dim: int | None, who: str) -> Tensor:
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    if a.ndim != b.ndim:
        raise RuntimeError(f"{who}: inputs must have the same number of dimensions.")
    if dim is None:
        dim = next((k for k, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = normalize_dims(dim, len(shape))[0]
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"{who}: inputs dimension {dim} must have length 3. Got {a.shape[d]} and {b.shape[d]}")
    r1, r2 = _arr(np.array([1, 2, 0])), _arr(np.array([2, 0, 1]))
    pre = [_ALL] * d
    a1, a2 = _index(a, pre + [r1], ""), _index(a, pre + [r2], "")
    b1, b2 = _index(b, pre + [r1], ""), _index(b, pre + [r2], "")
    return _fused(A[0] * A[1] - A[2] * A[3], a1, b2, a2, b1, fn="LinalgCrossBackward0")


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """The cross product along ``dim`` (None: the first dim of size 3, with torch's deprecation warning)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
    return _cross(_t(input), _t(other), dim, "linalg.cross")


# --------------------------------------------------------------------------- addmm, addmv, baddbmm

def _scaled_sum(x: Tensor, prod: Tensor, beta: Any, alpha: Any, fn: str) -> Tensor:
    if beta == 0:   # torch ignores input (NaN included) when beta is 0
        return _fused(alpha * A[0], prod, fn=fn) if prod.is_floating_point() else prod * alpha
    if not prod.is_floating_point():
        return x * beta + prod * alpha
    out = _fused(beta * A[0] + alpha * A[1], x, prod, fn=fn)
    return out if alpha == 1 and beta == 1 else _saved_attrs.note(out, alpha=alpha, beta=beta)  # torch's _saved_alpha


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``."""
    m1, m2 = _t(mat1), _t(mat2)
    for name, m in (("mat1", m1), ("mat2", m2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    x = _t(input)
    check_addmm_dtypes(x.dtype, m1.dtype, m2.dtype)
    p = m1 @ m2
    if tuple(x.shape) != tuple(p.shape):
        x.detach().expand(p.shape)  # torch expands input to the product's shape: its errors
    return _scaled_sum(x, p, beta, alpha, "AddmmBackward0")


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``."""
    m, v = _t(mat), _t(vec)
    if m.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {_t(input).ndim}, {m.ndim}, {v.ndim}")
    return _scaled_sum(_t(input), m @ v, beta, alpha, "AddmvBackward0")


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    b1, b2 = _t(batch1), _t(batch2)
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    return _scaled_sum(_t(input), b1 @ b2, beta, alpha, "BaddbmmBackward0")


# --------------------------------------------------------------------------- order statistics

def _kth(t: Tensor, k: int, dim: Any, keepdim: bool, fn: str, nan: str) -> tuple[Tensor, Tensor]:
    """The element of sorted rank ``k`` along ``dim`` (0-based) and its index; ``nan`` 'propagate': a slice
    holding NaN gives NaN (its first NaN), 'omit': rank ``k`` among the non-NaN elements ``k(count)``."""
    d = _dim(t, dim)
    x = t if t.ndim else t.reshape(1)
    data = x._data
    order = _order(x, d, False)
    if nan == "propagate" or data.dtype.kind != "f":
        pos = np.full(data.shape[:d] + (1,) + data.shape[d + 1:], k, np.int64)
        if data.dtype.kind == "f":
            has = np.isnan(data).any(axis=d, keepdims=True)
            first = np.expand_dims(np.argmax(np.isnan(np.take_along_axis(data, order, d)), axis=d), d)
            pos = np.where(has, first, pos)
    else:
        count = (~np.isnan(data)).sum(axis=d, keepdims=True)
        pos = np.maximum((count - 1) // 2, 0) if k < 0 else np.full_like(count, k)
    idx = np.take_along_axis(order, pos, d)
    values = _gather(x, d, idx, fn) if x.is_floating_point() else make_tensor(np.take_along_axis(data, idx, d))
    indices = make_tensor(np.ascontiguousarray(idx))
    if not keepdim or t.ndim == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
        values = _named(values, fn) if values.requires_grad else values
    return values, indices


def _concrete(t: Tensor, who: str) -> None:
    if is_traced(t):
        t._concrete(who)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:  # noqa: A002
    """The ``k``-th smallest element (1-based) along ``dim`` and its index (``values, indices``)."""
    t = _t(input)
    _concrete(t, "kthvalue")
    d = _dim(t, dim)
    n = t.shape[d] if t.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return _pair("kthvalue", *_kth(t, k - 1, d, keepdim, "KthvalueBackward0", "propagate"))


def _mode_index(row: np.ndarray) -> int:
    """The index torch's mode picks in one slice: the last occurrence of the smallest most frequent value."""
    order = np.argsort(row, kind="stable")
    ranked = row[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])  # NaN != NaN: each NaN a run of its own
    counts = np.diff(np.r_[starts, ranked.size])
    run = int(np.argmax(counts))
    return int(order[starts[run]:starts[run] + counts[run]].max())


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:  # noqa: A002
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the index of its last
    occurrence (``values, indices``); the gradient goes to that element."""
    t = _t(input)
    _concrete(t, "mode")
    d = _dim(t, dim)
    x = t if t.ndim else t.reshape(1)
    data = np.moveaxis(x._data, d, -1)
    if data.shape[-1] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    rows = data.reshape(-1, data.shape[-1])
    picked = np.array([_mode_index(r) for r in rows], np.int64).reshape(data.shape[:-1] + (1,))
    idx = np.ascontiguousarray(np.moveaxis(picked, -1, d))
    values = _gather(x, d, idx, "ModeBackward0") if x.is_floating_point() else make_tensor(
        np.take_along_axis(x._data, idx, d))
    indices = make_tensor(idx)
    if not keepdim or t.ndim == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
        values = _named(values, "ModeBackward0") if values.requires_grad else values
    return _pair("mode", values, indices)


#: torch.return_types.kthvalue / median / nanmedian / mode: named (values, indices) pairs
_PAIRS = {n: type(n, (return_types._ValuesIndices,), {"__slots__": ()})
          for n in ("kthvalue", "median", "nanmedian", "mode")}


def _pair(name: str, values: Tensor, indices: Tensor) -> Any:
    return _PAIRS[name](values, indices)


def _median(input: Any, dim: Any, keepdim: bool, nan: str, name: str) -> Any:
    t = _t(input)
    _concrete(t, name)
    if dim is None:
        flat = t.reshape(t.numel())
        if flat.numel() == 0:
            return make_tensor(np.asarray(np.nan, t._data.dtype if t.is_floating_point() else np.float32))
        n = flat.numel() if nan == "propagate" or not t.is_floating_point() else None
        v, _ = _kth(flat, (n - 1) // 2 if n is not None else -1, 0, False,
                    "MedianBackward0" if nan == "propagate" else "NanmedianBackward0", nan)
        return v
    d = _dim(t, dim)
    n = t.shape[d] if t.ndim else 1
    if n == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    fn = "MedianBackward1" if nan == "propagate" else "NanmedianBackward1"
    return _pair(name, *_kth(t, (n - 1) // 2 if nan == "propagate" else -1, d, keepdim, fn, nan))


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A002
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN if a slice holds NaN.
    The gradient goes to the element selected."""
    return _median(input, dim, keepdim, "propagate", "median")


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``median`` ignoring NaN."""
    return _median(input, dim, keepdim, "omit", "nanmedian")


# --------------------------------------------------------------------------- cdist

def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"
          ) -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (``..., P, M``) and of ``x2`` (``..., R, M``)."""
    a, b = _t(x1), _t(x2)
    for name, x in (("X1", a), ("X2", b)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if not a.is_floating_point() or not b.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {dtypes.torch_type_name(a.dtype)}")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    d = a.unsqueeze(-2) - b.unsqueeze(-3)
    return set_edges(_vector_norm(d, p, (d.ndim - 1,), False, fn="CdistBackward0"), a, b)


# --------------------------------------------------------------------------- data-only

def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None) -> Any:
    """The distinct elements, sorted (``dim``: distinct slices), with the inverse indices and counts when asked."""
    t = _t(input)
    _concrete(t, "unique")
    data = t._data
    if dim is None:
        vals, inv, cnt = np.unique(data.ravel(), return_inverse=True, return_counts=True)
        inv = inv.reshape(data.shape)
    else:
        d = _dim(t, dim)
        vals, inv, cnt = np.unique(data, return_inverse=True, return_counts=True, axis=d)
        inv = inv.ravel()
    out: list[Tensor] = [make_tensor(np.ascontiguousarray(vals.astype(data.dtype)))]
    if return_inverse:
        out.append(make_tensor(np.asarray(inv, dtype=np.int64)))
    if return_counts:
        out.append(make_tensor(np.asarray(cnt, dtype=np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def _search(seq: np.ndarray, vals: np.ndarray, right: bool) -> np.ndarray:
    side = "right" if right else "left"
    if seq.ndim <= 1:
        return np.searchsorted(seq, vals, side=side)
    out = np.empty(vals.shape, np.int64)
    for i in np.ndindex(*seq.shape[:-1]):
        out[i] = np.searchsorted(seq[i], vals[i], side=side)
    return out


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side: str | None = None, sorter: Any = None) -> Tensor:
    """The indices at which ``input`` would be inserted into the (innermost-dim) sorted ``sorted_sequence``."""
    seq = _t(sorted_sequence)
    scalar = not isinstance(input, TensorBase)
    vals = _t(input)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    s = seq._data
    if sorter is not None:
        s = np.take_along_axis(s, np.asarray(_t(sorter)._data, np.int64), -1)
    if s.ndim > 1 and (vals.ndim != s.ndim or vals.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}")
    out = _search(s, vals._data, right)
    out = np.asarray(out, np.int32 if out_int32 else np.int64)
    return make_tensor(out.reshape(()) if scalar else out)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:  # noqa: A002
    """The bucket of each element: ``i`` with ``boundaries[i-1] < x <= boundaries[i]`` (``right``: ``<=`` / ``<``)."""
    b = _t(boundaries)
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    x = _t(input)
    out = np.searchsorted(b._data, x._data, side="right" if right else "left")
    return make_tensor(np.asarray(out, np.int32 if out_int32 else np.int64))


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """A histogram of ``bins`` equal bins over ``[min, max]`` (both 0: the data's range); elements outside are
    ignored, the maximum goes in the last bin. No gradient, as torch."""
    t = _t(input)
    _concrete(t, "histc")
    if not t.is_floating_point():
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{dtypes.torch_type_name(t.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for bins")
    data = t._data.ravel()
    dt = data.dtype.type
    lo, hi = dt(min), dt(max)
    if lo == hi and data.size:
        lo, hi = data.min(), data.max()
    if lo == hi:
        lo, hi = lo - dt(1), hi + dt(1)
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min, but got min {min} and max {max}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    keep = data[(data >= lo) & (data <= hi)]
    pos = ((keep - lo) * dt(bins) / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return make_tensor(np.bincount(pos, minlength=bins).astype(data.dtype))


# --------------------------------------------------------------------------- special functions

def _float(x: Any) -> Tensor:
    t = _t(x)
    return t if t.is_floating_point() else _cast(t, dtypes.get_default_dtype())


def special_op(x: Any, name: str, n: int = 0) -> Tensor:
    """The ``ops/special.py`` function ``name`` of ``x`` (integers promoted to the default float dtype)."""
    return _apply(REGISTRY["special"], _float(x), name=name, n=n)


def erfinv(input: Any) -> Tensor:  # noqa: A002
    """The inverse error function (``erfinv(erf(x)) == x``; +-inf at +-1)."""
    return special_op(input, "erfinv")


def lgamma(input: Any) -> Tensor:  # noqa: A002
    """``log|gamma(x)|``; its derivative is ``digamma``."""
    return special_op(input, "gammaln")


def digamma(input: Any) -> Tensor:  # noqa: A002
    """The logarithmic derivative of gamma (-inf at 0, NaN at negative integers)."""
    return special_op(input, "psi")


def polygamma(n: int, input: Any) -> Tensor:  # noqa: A002
    """The ``n``-th derivative of ``digamma``."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return special_op(input, "psi") if n == 0 else special_op(input, "polygamma", n)


def mvlgamma(input: Any, p: int) -> Tensor:  # noqa: A002
    """The multivariate log-gamma of dimension ``p``."""
    x = _float(input)
    if not bool((x._data > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2, where p = {p}")
    shift = make_tensor(-np.arange(p, dtype=x._data.dtype) / 2)
    out = lgamma(x.unsqueeze(-1) + shift).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return _named(out, "MvlgammaBackward0")


def i0(input: Any) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind, order 0."""
    return special_op(input, "i0")


_METHOD_NAMES = ("diff", "nan_to_num", "repeat_interleave", "tensor_split", "kron", "cross", "addmm", "addmv",
                 "baddbmm", "erfinv", "lgamma", "digamma", "i0", "median", "nanmedian", "kthvalue", "mode", "unique",
                 "histc", "mvlgamma")


def _nan_to_num_(self: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    return self.copy_(nan_to_num(self, nan, posinf, neginf))


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return polygamma(n, self)


def _inplace(fn: Any) -> Any:
    """The in-place method of the out-of-place ``fn``: computed from ``self`` as it was before the write (torch's
    saved original self), written over it, reporting ``fn``'s grad_fn as torch does (not ``CopyBackwards``)."""
    def m(self: Tensor, *args: Any, **kw: Any) -> Tensor:
        src = _original(self) if is_grad_enabled() and self._node is not None else self
        out = fn(src, *args, **kw)
        if out.dtype != self.dtype and dtypes.promote_types(out.dtype, self.dtype) != self.dtype:
            raise RuntimeError(f"result type {dtypes.torch_type_name(out.dtype)} can't be cast to the desired output "
                               f"type {dtypes.torch_type_name(self.dtype)}")
        name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        return write(self, WHOLE, out, **({"fn": name} if name else {}))
    m.__name__ = fn.__name__ + "_"
    return m


class MoreMethods:
    """``Tensor`` methods of this module's functions (and their in-place forms where torch has them)."""

    __slots__ = ()


for _name in _METHOD_NAMES:
    setattr(MoreMethods, _name, globals()[_name])
MoreMethods.polygamma = _polygamma_method  # type: ignore[attr-defined]
for _fn in (nan_to_num, erfinv, lgamma, digamma, i0):
    setattr(MoreMethods, _fn.__name__ + "_", _inplace(_fn))
