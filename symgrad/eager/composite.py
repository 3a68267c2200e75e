"""Composite tensor ops: torch functions built from registry ops (var, std, norms, cumprod, flips, gathers,
sort, ...), so that compilation, forward mode, sparsity and formulas take them unchanged.

Where torch reports its own ``grad_fn`` for such an op (``VarBackward0``), the composite's last step is
a ``fused`` node carrying that name in its ``fn`` attr (an identity when nothing is left to fuse).
The functions are installed as ``Tensor`` methods at the end of this module.
"""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import sympy as sp

from codegen.functions import IsNan

from ..core import dtypes
from ..ops import REGISTRY, A, normalize_dims
from ..ops.linalg import check_matmul_dtypes
from . import return_types
from .base import TensorBase, _py, is_traced, make_tensor
from .basic import _amax, _cast, _one_dim, nonzero
from .composite_base import _const, _dims, _fused, _named  # noqa: F401  (importers take them from here)
from .norms import (  # noqa: F401  (re-exported: var / std / the norms live in norms.py)
    _float_input,
    _matrix_norm,
    _vector_norm,
    dist,
    linalg_norm,
    norm,
    std,
    std_mean,
    var,
    var_mean,
    vector_norm,
)
from .record import VIEW_WRITES, _apply, note_view
from .sorting import _order, _ranked
from .stl_order import topk_order
from .writes import WHOLE, write

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["addcdiv", "addcmul", "aminmax", "argsort", "bmm", "count_nonzero", "cumprod", "diag", "diagonal", "dist",
           "einsum", "flip", "fliplr", "flipud", "floor_divide", "gather", "index_select", "isclose", "lerp",
           "logcumsumexp", "masked_fill", "moveaxis", "movedim", "nanmean", "nansum", "narrow", "nonzero", "norm",
           "roll", "select", "sort", "std", "std_mean", "swapaxes", "swapdims", "take_along_dim", "tile", "topk",
           "trace", "tril", "triu", "unflatten", "var", "var_mean"]


# --------------------------------------------------------------------------- scans as masked reductions

def _scan(t: Tensor, dim: Any, fill: Any, reduce: str, fn: str) -> Tensor:
    """``reduce`` over the prefixes along ``dim``: the input expanded to pairs (i, j) along two dims,
    the entries j > i replaced by ``fill``, reduced over j."""
    if not isinstance(dim, (builtins.int, np.integer)):
        name = "cumprod" if reduce == "prod" else "logcumsumexp"
        raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    d = normalize_dims(builtins.int(dim), t.ndim)
    if t.ndim == 0:
        return _named(t * 1, fn)
    d = d[0]
    n = t.shape[d]
    shape = tuple(t.shape)
    pairs = t.unsqueeze(d).expand(*shape[:d], n, n, *shape[d + 1:])
    mask = np.tril(np.ones((n, n), dtype=np.bool_)).reshape((n, n) + (1,) * (t.ndim - d - 1))
    masked = _fused(sp.Piecewise((A[0], sp.Ne(A[1], 0)), (fill, True)), pairs, _const(mask))
    out = masked.prod(d + 1) if reduce == "prod" else masked.logsumexp(d + 1)
    return _named(out, fn)


def cumprod(input: Tensor, dim: Any, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """Running product along ``dim``; exact gradients at zeros (the products of the others).

    Built as a product over an (n, n) masked expansion of the dim: O(n²) work and memory per slice."""
    t = input if dtype is None else _cast(input, dtypes.from_any(dtype))
    if not t.is_floating_point():
        return _cast(_scan(_cast(t, dtypes.float64), dim, 1, "prod", "CumprodBackward0"), dtypes.int64)
    return _scan(t, dim, 1, "prod", "CumprodBackward0")


def logcumsumexp(input: Tensor, dim: Any) -> Tensor:  # noqa: A002
    """``log(cumsum(exp(input), dim))``, stable."""
    if not input.is_floating_point():
        name = dtypes.torch_type_name(input.dtype)
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{name}'")
    return _scan(input, dim, -sp.oo, "logsumexp", "LogcumsumexpBackward0")


# --------------------------------------------------------------------------- NaN-skipping reductions, counts

def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The sum with NaNs counted as zero (they get a zero gradient)."""
    t = input if dtype is None else _cast(input, dtypes.from_any(dtype))
    dims = _dims(t, dim)
    if not t.is_floating_point():
        return t.sum(dims, keepdim=keepdim)
    clean = _fused(sp.Piecewise((0, IsNan(A[0])), (A[0], True)), t)
    return _named(clean.sum(dims, keepdim=keepdim), "NansumBackward0")


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The mean of the non-NaN elements."""
    t = input if dtype is None else _cast(input, dtypes.from_any(dtype))
    if not t.is_floating_point():
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{dtypes.torch_type_name(t.dtype)}")
    dims = _dims(t, dim)
    count = (~t.isnan()).sum(dims, keepdim=keepdim)
    return _fused(A[0] / A[1], nansum(t, dims, keepdim), count, fn="DivBackward0")


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """The number of non-zero elements over ``dim`` (int64, no gradient)."""
    return (input != 0).sum(_dims(input, dim))


def aminmax(input: Tensor, *, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``(min, max)`` over ``dim`` (all dims for None) as ``torch.return_types.aminmax``."""
    if dim is not None and not isinstance(dim, (builtins.int, np.integer)):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        dims = tuple(range(input.ndim))
    else:
        dims = normalize_dims(builtins.int(dim), input.ndim)
        if input.ndim and input.shape[dims[0]] == 0:
            raise IndexError(f"aminmax(): Expected reduction dim {dims[0]} to have non-zero size.")
    lo = _amax(input, "amin", dims, keepdim) if dims else _amax(input, "amin", (), keepdim)
    hi = _amax(input, "amax", dims, keepdim) if dims else _amax(input, "amax", (), keepdim)
    return return_types.aminmax(_named(lo, "AminmaxBackward0"), _named(hi, "AminmaxBackward0"))


# --------------------------------------------------------------------------- flips, rolls, triangles, diagonals

_ALL = ("s", None, None, None)


def _index(t: Tensor, spec: tuple, fn: str) -> Tensor:
    return _apply(REGISTRY["index"], t, index=tuple(spec), fn=fn)


def _arr(values: np.ndarray) -> tuple:
    """An integer-array entry of an index spec."""
    values = np.asarray(values, dtype=np.int64)
    return ("a", tuple(int(v) for v in values.ravel()), values.shape)


def _values(index: Any, who: str) -> np.ndarray:
    """The integers of an index tensor (a traced one has none: TracingError)."""
    if is_traced(index):
        index._concrete(who)
    arr = index._data if isinstance(index, TensorBase) else np.asarray(index)
    return arr


def _copy(t: Tensor, fn: str) -> Tensor:
    """A copy of ``t`` reporting ``fn`` (integer tensors: a plain copy)."""
    return _named(t, fn) if t.is_floating_point() else t.clone()


def flip(input: Tensor, dims: Any) -> Tensor:  # noqa: A002
    """A copy with the order of the elements along ``dims`` reversed."""
    dims = normalize_dims(dims, input.ndim) if input.ndim else ()
    if not dims:
        return _copy(input, "FlipBackward0")
    lo, hi = dims[0], dims[-1]
    spec = [_ALL] * lo
    for d in range(lo, hi + 1):
        n = input.shape[d]
        a = np.arange(n)[::-1] if d in dims else np.arange(n)
        spec.append(_arr(np.broadcast_to(a.reshape((n,) + (1,) * (hi - d)), input.shape[d:hi + 1])))
    return _index(input, spec, "FlipBackward0")


def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    """``flip(input, 1)``."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:  # noqa: A002
    """``flip(input, 0)``."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:  # noqa: A002
    """Elements shifted cyclically by ``shifts`` along ``dims`` (the flattened tensor without ``dims``)."""
    shifts = (shifts,) if isinstance(shifts, (builtins.int, np.integer)) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        flat = input.reshape(-1)
        n = flat.shape[0]
        if input.ndim == 0 or n == 0:
            return _copy(input, "RollBackward0")
        rolled = _index(flat, [_arr((np.arange(n) - shifts[0]) % n)], "IndexBackward0")
        return _apply(REGISTRY["reshape"], rolled, shape=tuple(input.shape), fn="RollBackward0")
    dims = (dims,) if isinstance(dims, (builtins.int, np.integer)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    out = input
    for k, (s, d) in enumerate(zip(shifts, dims)):
        d = normalize_dims(builtins.int(d), input.ndim)[0]
        n = input.shape[d]
        fn = "RollBackward0" if k == len(dims) - 1 else "IndexBackward0"
        out = _index(out, [_ALL] * d + [_arr((np.arange(n) - s) % n if n else np.arange(0))], fn)
    return out


def _triangle(input: Tensor, diagonal: int, lower: bool) -> Tensor:
    name = "tril" if lower else "triu"
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    r, c = input.shape[-2:]
    keep = (np.tril if lower else np.triu)(np.ones((r, c), dtype=np.bool_), diagonal)
    t = input if input.is_floating_point() else _cast(input, dtypes.float64)
    out = _fused(sp.Piecewise((A[0], sp.Ne(A[1], 0)), (0, True)), t, _const(keep),
                 fn="TrilBackward0" if lower else "TriuBackward0")
    return out if input.is_floating_point() else _cast(out, input.dtype)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The lower triangle of the last two dims (``diagonal``: which diagonal bounds it), zeros above."""
    return _triangle(input, diagonal, True)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The upper triangle of the last two dims, zeros below."""
    return _triangle(input, diagonal, False)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """The diagonal ``offset`` of the matrices over ``dim1``, ``dim2``, as a new last dim: a view of ``input``
    (writes reach it, as torch's)."""
    return _diagonal(input, offset, dim1, dim2, "DiagonalBackward0", view=True)


def _diagonal(t: Tensor, offset: int, dim1: int, dim2: int, fn: str, view: bool = False) -> Tensor:
    d1, d2 = normalize_dims(dim1, t.ndim)[0], normalize_dims(dim2, t.ndim)[0]
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rest = [d for d in range(t.ndim) if d not in (d1, d2)]
    if rest + [d1, d2] != list(range(t.ndim)):
        t = _apply(REGISTRY["permute"], t, dims=(*rest, d1, d2), fn="PermuteBackward0")
    n1, n2 = t.shape[-2:]
    length = builtins.max(0, builtins.min(n1, n2 - offset) if offset >= 0 else builtins.min(n1 + offset, n2))
    k = np.arange(length)
    rows, cols = (k, k + offset) if offset >= 0 else (k - offset, k)
    spec = [_ALL] * len(rest) + [_arr(rows), _arr(cols)]
    out = _index(t, spec, fn)
    return _as_view(out, t, offset, {"index": tuple(spec), "fn": fn}) if view else out


def _as_view(out: Tensor, src: Tensor, offset: int, attrs: dict) -> Tensor:
    """``out`` (``src``'s diagonal ``offset`` over its last two dims, gathered by the integer index of ``attrs``)
    made a view of ``src``'s storage, as torch's ``diagonal``: its buffer strides through ``src``'s, it shares
    ``src``'s version counter, and writes into it rewrite ``src``'s history (``CopySlices``)."""
    if is_traced(out):
        note_view(out, src, REGISTRY["index"], attrs, traced=True)
        return out
    a = src._data
    corner = a[..., :, offset:] if offset >= 0 else a[..., -offset:, :]
    out._data = np.lib.stride_tricks.as_strided(corner, out.shape, a.strides[:-2] + (a.strides[-2] + a.strides[-1],))
    out._version = src._version
    node = out._node
    if node is not None:
        node.storage, node.version = src._version, src._version.v
        VIEW_WRITES[node] = src._version.recorded
    note_view(out, src, REGISTRY["index"], attrs)
    return out


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """A 1-d input: the square matrix with it on diagonal ``diagonal``; a 2-d one: that diagonal."""
    if input.ndim == 2:
        return _diagonal(input, diagonal, 0, 1, "DiagonalBackward0_copy")
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    n = input.shape[0]
    m = n + builtins.abs(diagonal)
    i, j = np.indices((m, m))
    on = (j - i) == diagonal
    pos = np.clip(i if diagonal >= 0 else j, 0, builtins.max(n - 1, 0))
    t = input if input.is_floating_point() else _cast(input, dtypes.float64)
    spread = _index(t, [_arr(pos)], "IndexBackward0") if n else t.reshape(0, 0)
    out = _fused(sp.Piecewise((A[0], sp.Ne(A[1], 0)), (0, True)), spread, _const(on), fn="DiagEmbedBackward0")
    return out if input.is_floating_point() else _cast(out, input.dtype)


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """The sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return _named(_diagonal(input, 0, 0, 1, "DiagonalBackward0").sum(), "TraceBackward0")


# --------------------------------------------------------------------------- gathers and selections

def _int_index(index: Any, who: str) -> np.ndarray:
    arr = _values(index, f"{who} with a traced index tensor")
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"{who}(): Expected dtype int32/int64 for index")
    return arr.astype(np.int64)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """``out[i][j] = input[i][index[i][j]]`` along ``dim`` (the gradient adds up at repeated indices)."""
    return _gather(input, dim, index, "GatherBackward0")


def _traced(x: Any) -> bool:
    return is_traced(x)


def _select_one_hot(t: Tensor, d: int, index: Tensor, fn: str, paired: bool = False) -> Tensor:
    """``t`` along dim ``d`` at the positions ``index`` (shaped as ``t`` but for its size ``m`` along ``d``,
    positions broadcast over the other dims), as ``sum_k where(index == k, t[..., k, ...], 0)``: for a
    traced index (``sg.compile`` passes integer arrays as float64), ``O(m * n)`` per slice."""
    n, nd = t.shape[d], t.ndim
    positions = _const(np.arange(n).reshape((n,) + (1,) * (nd - d - 1)))
    pick = sp.Piecewise((A[0], sp.Eq(A[1], A[2])), (0, True))
    at = index.unsqueeze(d + 1) if not paired else index  # (index_select passes it shaped already)
    return _named(_fused(pick, t.unsqueeze(d), at, positions).sum(d + 1), fn)


def _gather(t: Tensor, dim: int, index: Any, fn: str) -> Tensor:
    if _traced(index):
        d = normalize_dims(_one_dim(dim), t.ndim)
        if index.ndim != t.ndim or not t.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        d = d[0]
        part = tuple(("s", 0, index.shape[k], None) if k != d else _ALL for k in range(t.ndim))
        if any(index.shape[k] != t.shape[k] for k in range(t.ndim) if k != d):
            t = _index(t, part, "SliceBackward0")
        return _select_one_hot(t, d, index, fn)
    idx = _int_index(index, "gather")
    d = normalize_dims(_one_dim(dim), t.ndim)
    if idx.ndim != t.ndim and not (t.ndim <= 1 and idx.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if t.ndim == 0:
        if idx.size and int(idx.ravel()[0]) not in (0, -1):
            raise RuntimeError(f"index {int(idx.ravel()[0])} is out of bounds for dimension 0 with size 1")
        return _copy(t.reshape(idx.shape), fn)
    d = d[0]
    for k in range(t.ndim):
        if k != d and idx.shape[k] > t.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(idx.shape)} to be no "
                               f"larger than self {list(t.shape)} apart from dimension {d}")
    n = t.shape[d]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    grids = np.indices(idx.shape) if idx.ndim else []
    spec = [_arr(idx % builtins.max(n, 1) if k == d else grids[k]) for k in range(t.ndim)]
    return _index(t, spec, fn)


def take_along_dim(input: Tensor, indices: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """``gather`` with ``input`` and ``indices`` broadcast against each other (flattened without ``dim``)."""
    if dim is None:
        flat = indices.reshape(-1) if _traced(indices) else _int_index(indices, "gather").reshape(-1)
        return _gather(input.reshape(-1), 0, flat, "GatherBackward0")
    idx = indices if _traced(indices) else _int_index(indices, "gather")
    d = normalize_dims(_one_dim(dim), input.ndim)[0]
    if idx.ndim != input.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {idx.ndim} dimensions for indices")
    shape = list(np.broadcast_shapes(tuple(s for k, s in enumerate(input.shape) if k != d),
                                     tuple(s for k, s in enumerate(idx.shape) if k != d)))
    t_shape = shape[:d] + [input.shape[d]] + shape[d:]
    i_shape = shape[:d] + [idx.shape[d]] + shape[d:]
    t = input if tuple(input.shape) == tuple(t_shape) else input.expand(*t_shape)
    if _traced(idx):
        return _gather(t, d, idx if tuple(idx.shape) == tuple(i_shape) else idx.expand(*i_shape), "GatherBackward0")
    return _gather(t, d, np.broadcast_to(idx, i_shape), "GatherBackward0")


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The entries ``index`` (a vector) along ``dim``, a copy."""
    if _traced(index) and input.ndim:
        if index.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        d = normalize_dims(_one_dim(dim), input.ndim)[0]
        at = index.reshape((-1, 1) + (1,) * (input.ndim - d - 1))
        return _select_one_hot(input, d, at, "IndexSelectBackward0", paired=True)
    idx = _values(index, "index_select with a traced index tensor")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if idx.dtype.kind not in "iu":
        raise IndexError("index_select(): Expected dtype int32 or int64 for index")
    idx = idx.reshape(-1).astype(np.int64)
    d = normalize_dims(_one_dim(dim), input.ndim)
    if input.ndim == 0:
        return _copy(input.reshape(idx.shape) if idx.size == 1 else input, "IndexSelectBackward0")
    d = d[0]
    n = input.shape[d]
    for v in idx:
        if not 0 <= v < n:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={int(v)} axis_dim={n}")
    return _index(input, [_ALL] * d + [_arr(idx)], "IndexSelectBackward0")


def select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """The slice at ``index`` along ``dim`` (that dim removed), a view."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dims(_one_dim(dim), input.ndim)[0]
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {dim}")
    return _index(input, [_ALL] * d + [("i", builtins.int(index) % n)], "SelectBackward0")


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    """The ``length`` entries from ``start`` along ``dim``, a view."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dims(_one_dim(dim), input.ndim)[0]
    n = input.shape[d]
    start = builtins.int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    start = start + n if start < 0 else start
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _index(input, [_ALL] * d + [("s", start, start + builtins.int(length), None)], "SliceBackward0")


def _mask_check(mask: Any, value: Any) -> None:
    if not isinstance(mask, TensorBase) or mask.dtype is not dtypes.bool:
        dt = mask.dtype if isinstance(mask, TensorBase) else dtypes.result_type(mask)
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{dtypes.cpp_type_name(dt)}")
    if isinstance(value, TensorBase) and value.ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:  # noqa: A002
    """``value`` where ``mask`` is true, else ``input`` (a tensor ``value`` gets the masked gradient)."""
    _mask_check(mask, value)
    fn = "MaskedFillBackward1" if isinstance(value, TensorBase) else "MaskedFillBackward0"
    t = input if input.is_floating_point() else _cast(input, dtypes.float64)
    v = _cast(value, t.dtype) if isinstance(value, TensorBase) and value.dtype is not t.dtype else value
    out = _fused(sp.Piecewise((A[2], sp.Ne(A[1], 0)), (A[0], True)), t, mask, v, fn=fn)
    return out if input.is_floating_point() else _cast(out, input.dtype)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """The elements of ``input`` where ``mask`` is true, a 1-d tensor (the two broadcast first)."""
    if not isinstance(mask, TensorBase) or mask.dtype is not dtypes.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    t = input if tuple(input.shape) == shape else input.expand(*shape)
    picked = np.nonzero(np.broadcast_to(mask._data, shape))
    return _index(t, [_arr(p) for p in picked], "MaskedSelectBackward0")


def masked_fill_(input: Tensor, mask: Tensor, value: Any) -> Tensor:  # noqa: A002
    """``masked_fill`` in place."""
    _mask_check(mask, value)
    if isinstance(value, TensorBase):  # the whole tensor rewritten with the out-of-place result, as torch names it
        return write(input, WHOLE, masked_fill(input, mask, value), fn="MaskedFillBackward1")
    v = _py(value)
    return input._inplace("fused", mask, expr=sp.Piecewise((sp.sympify(v), sp.Ne(A[1], 0)), (A[0], True)),
                          fn="MaskedFillBackward0")


# --------------------------------------------------------------------------- dims: move, swap, tile, unflatten

def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:  # noqa: A002
    """``input`` with the dims ``source`` moved to the positions ``destination`` (the others keep their order)."""
    src = [source] if isinstance(source, (builtins.int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (builtins.int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    nd = input.ndim
    s = [normalize_dims(builtins.int(d), nd)[0] if nd else 0 for d in src]
    t = [normalize_dims(builtins.int(d), nd)[0] if nd else 0 for d in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(t)) != len(t):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    order: list[Any] = [None] * nd
    for a, b in zip(s, t):
        order[b] = a
    rest = iter(d for d in range(nd) if d not in s)
    perm = tuple(o if o is not None else next(rest) for o in order)
    return _apply(REGISTRY["permute"], input, dims=perm, fn="PermuteBackward0")


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:  # noqa: A002
    """``transpose(input, axis0, axis1)``."""
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002
    """``repeat`` with ``dims`` padded with leading ones to the tensor's rank."""
    reps = (dims,) if isinstance(dims, (builtins.int, np.integer)) else tuple(dims)
    reps = (1,) * (input.ndim - len(reps)) + tuple(builtins.int(r) for r in reps)
    return input.repeat(*reps) if reps else input.repeat(())


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:  # noqa: A002
    """Dim ``dim`` split into ``sizes`` (one of them may be -1)."""
    d = normalize_dims(_one_dim(dim), input.ndim)[0]
    sizes = [builtins.int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    if (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({n}) in "
                           "the input tensor")
    sizes = [n // known if s == -1 else s for s in sizes]
    sh = tuple(input.shape)
    return input.view(*sh[:d], *sizes, *sh[d + 1:])


# --------------------------------------------------------------------------- sorting

def _sorted(t: Tensor, dim: Any, descending: bool, k: int | None, fn: str,
            topk_sorted: bool | None = None) -> tuple[Tensor, Tensor]:
    d = normalize_dims(_one_dim(dim), t.ndim)
    d = d[0] if d else 0
    n = t.shape[d] if t.ndim else 1
    k = n if k is None else k
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if t.ndim == 0:
        return _copy(t, fn), make_tensor(np.zeros((), np.int64))
    if is_traced(t):
        return _ranked(t, d, descending, k, fn)
    order = np.take(_order(t, d, descending), np.arange(k), axis=d)
    if topk_sorted is not None and k:  # topk: the ties as torch's unstable selection leaves them
        order = topk_order(t._data, d, k, descending, topk_sorted, order)
    if not t.is_floating_point():
        return make_tensor(np.take_along_axis(t._data, order, d)), make_tensor(order)
    return _gather(t, d, order, fn), make_tensor(np.ascontiguousarray(order))


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:  # noqa: A002
    """``(values, indices)`` sorted along ``dim`` (``torch.return_types.sort``, stable, NaN last); values
    are differentiable. Traced (``sg.compile``): ranks by comparisons, O(n²) per slice."""
    return return_types.sort(*_sorted(input, dim, descending, None, "SortBackward0"))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:  # noqa: A002
    """The indices that sort ``input`` along ``dim`` (int64, no gradient)."""
    return _sorted(input.detach(), dim, descending, None, "SortBackward0")[1]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """The ``k`` largest (``largest=False``: smallest) entries along ``dim`` and their indices; equal values are
    picked and ordered as torch's CPU kernel does (``eager/stl_order.py``)."""
    return return_types.topk(*_sorted(input, dim, largest, k, "TopkBackward0", topk_sorted=builtins.bool(sorted)))


# --------------------------------------------------------------------------- bmm

def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    """Batched matrix product of two 3-d tensors."""
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, _, k = input.shape
    if tuple(mat2.shape[:2]) != (b, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    check_matmul_dtypes(input.dtype, mat2.dtype, 3, 3)
    return _apply(REGISTRY["matmul"], input, mat2, fn="BmmBackward0")


# --------------------------------------------------------------------------- queries and creation (no grad)

def _data(x: Any) -> np.ndarray:
    return x._data if isinstance(x, TensorBase) else np.asarray(x)


def isclose(input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise, as a bool tensor (no gradient)."""
    return make_tensor(np.isclose(_data(input), _data(other), rtol=rtol, atol=atol, equal_nan=equal_nan))


def floor_divide(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input // other`` rounded toward minus infinity, torch's dtype; no gradient (torch has none)."""
    dt = dtypes.result_type(input, other)
    with np.errstate(all="ignore"):
        out = np.floor_divide(_data(input), _data(other))
    return make_tensor(np.asarray(out).astype(dt.np, copy=False))


def div_rounded(input: Any, other: Any, rounding_mode: str) -> Tensor:  # noqa: A002
    """``torch.div(input, other, rounding_mode=...)``: the quotient truncated ('trunc') or floored ('floor') in
    torch's result dtype; a float result reports ``DivBackward2`` and has a zero gradient, as in torch."""
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    dt = dtypes.result_type(input, other)
    a, b = np.asarray(_data(input)).astype(dt.np), np.asarray(_data(other)).astype(dt.np)
    if not dt.is_floating_point and (b == 0).any():
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if rounding_mode == "trunc":
            q = np.trunc(np.true_divide(a, b)).astype(dt.np) if dt.is_floating_point else q + ((q < 0) & (q * b != a))
    out = make_tensor(np.ascontiguousarray(q, dtype=dt.np))
    grads = [x for x in (input, other) if isinstance(x, TensorBase) and x.requires_grad]
    if dt.is_floating_point and grads:  # depends on neither input: their gradients are the symbolic zero
        return _fused(A[len(grads)], *grads, out, fn="DivBackward2")
    return out


def _new(self: Tensor, data: np.ndarray, dtype: Any, requires_grad: bool) -> Tensor:
    dt = dtypes.from_any(dtype) if dtype is not None else self.dtype
    t = make_tensor(np.asarray(data).astype(dt.np))
    return t.requires_grad_(True) if requires_grad else t


def _size(size: tuple) -> tuple[int, ...]:
    shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], (int, np.integer)) else tuple(size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return shape


def new_zeros(self: Tensor, *size: Any, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype (unless ``dtype``)."""
    return _new(self, np.zeros(_size(size)), dtype, requires_grad)


def new_ones(self: Tensor, *size: Any, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    return _new(self, np.ones(_size(size)), dtype, requires_grad)


def new_empty(self: Tensor, *size: Any, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    return _new(self, np.zeros(_size(size)), dtype, requires_grad)


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False,
             **_: Any) -> Tensor:
    return _new(self, np.full(_size((size,)), fill_value), dtype, requires_grad)


def new_tensor(self: Tensor, data: Any, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """A copy of ``data`` with this tensor's dtype (unless ``dtype``), outside any graph."""
    return _new(self, _data(data), dtype, requires_grad)


# --------------------------------------------------------------------------- fused arithmetic

def addcmul(input: Tensor, tensor1: Any, tensor2: Any, *, value: float = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 * tensor2``."""
    return _named(input + value * tensor1 * tensor2, "AddcmulBackward0")


def addcdiv(input: Tensor, tensor1: Any, tensor2: Any, *, value: float = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 / tensor2``."""
    return _named(input + value * tensor1 / tensor2, "AddcdivBackward0")


def lerp(input: Tensor, end: Any, weight: Any) -> Tensor:  # noqa: A002
    """``input + weight * (end - input)``."""
    fn = "LerpBackward1" if isinstance(weight, TensorBase) else "LerpBackward0"
    return _named(input + weight * (end - input), fn)


# --------------------------------------------------------------------------- einsum

def _expand_ellipsis(eq: str, terms: list[str], rhs: str, explicit: bool, operands: Sequence[Any]
                     ) -> tuple[list[str], str]:
    """``...`` replaced by letters the equation does not use, right-aligned across operands as numpy
    broadcasting aligns dims; the implicit output puts them first."""
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in eq]
    spans = []
    for term, op in zip(terms, operands):
        if term.count("...") > 1 or term.replace("...", "").count("."):
            raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis")
        spans.append(builtins.max(getattr(op, "ndim", 0) - len(term.replace("...", "")), 0) if "..." in term else 0)
    width = builtins.max(spans, default=0)
    letters = "".join(free[:width])
    terms = [t.replace("...", letters[width - k:]) for t, k in zip(terms, spans)]
    if explicit:
        rhs = rhs.replace("...", letters)
    else:
        counts = {c: "".join(terms).count(c) for c in set("".join(terms)) if c not in letters}
        rhs = letters + "".join(sorted(c for c, k in counts.items() if k == 1))
    return terms, rhs


def einsum(equation: str, *operands: Any) -> Tensor:
    """``torch.einsum``: each operand's axes moved into one index space, multiplied (broadcasting) and
    summed over the indices the output does not keep. Differentiable through the ops it is made of."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if "." in eq:
        terms, rhs = _expand_ellipsis(eq, terms, rhs, bool(arrow), operands)
        lhs, arrow = ",".join(terms), "->"
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    for term, op in zip(terms, operands):
        if not term.isalpha() and term:
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(term)} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
        if len(term) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({op.ndim}) for operand {terms.index(term)} and no "
                               "ellipsis was given")
    if not arrow:
        counts = {c: lhs.count(c) for c in set(lhs) if c.isalpha()}
        rhs = "".join(sorted(c for c, k in counts.items() if k == 1))
    letters = list(dict.fromkeys(rhs + "".join(terms)))
    sizes: dict[str, int] = {}
    product = None
    for term, op in zip(terms, operands):
        x = op if isinstance(op, TensorBase) else make_tensor(np.asarray(op))
        if len(set(term)) != len(term):
            c = next(c for c in term if term.count(c) > 1)
            i, j = term.index(c), term.index(c, term.index(c) + 1)
            x = x.diagonal(0, i, j)                          # a repeated index: its diagonal, moved last
            term = term[:i] + term[i + 1:j] + term[j + 1:] + c
            if len(set(term)) != len(term):
                raise NotImplementedError("einsum(): an index repeated more than twice in one operand")
        for c, n in zip(term, x.shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript '{c}' has size {n} for one operand and {sizes[c]} for another")
            sizes[c] = builtins.max(sizes[c], n)
        order = sorted(range(len(term)), key=lambda k: letters.index(term[k]))
        x = x.permute(*order) if order != list(range(len(term))) else x
        have = [term[k] for k in order]
        x = x.reshape(*[sizes[c] if c in have and x.shape[have.index(c)] != 1 else 1 for c in letters]) \
            if len(letters) != len(have) else x
        product = x if product is None else product * x
    assert product is not None
    summed = tuple(k for k, c in enumerate(letters) if c not in rhs)
    for c in rhs:
        if c not in letters:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    if not summed:
        # torch takes a lone operand's diagonal and then permutes it
        return _named(product, "PermuteBackward0") if len(operands) == 1 and product.grad_fn is not None and \
            type(product.grad_fn).__name__ == "DiagonalBackward0" else product
    out = product.sum(summed)
    # torch contracts several operands through bmm and reshapes the result: a ViewBackward0
    return _named(out, "ViewBackward0") if len(operands) > 1 else out


# --------------------------------------------------------------------------- Tensor methods
