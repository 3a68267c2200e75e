"""torch's remaining top-level functions (part one; ``toplevel_ops`` gathers them), as compositions of symgrad's
ops: ``finfo iinfo can_cast`` (dtype limits), ``all any is_floating_point is_nonzero asarray``, the elementwise
``clamp_min clamp_max float_power logit heaviside fmax fmin copysign gcd lcm signbit isneginf isposinf isreal``,
products ``inner vdot ger tensordot``, selections ``argwhere take cummax cummin msort index_copy index_fill``,
builders ``tril_indices triu_indices rot90 broadcast_tensors cartesian_prod combinations vander hsplit vsplit
unravel_index``. Each differentiable result's last node reports torch's grad_fn name."""
from __future__ import annotations

import builtins
import itertools
import sys
import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core import dtypes
from ..ops import normalize_dims
from . import return_types
from .base import TensorBase, _to_array, is_traced, make_tensor
from .basic import _cast, cat, clamp, maximum, minimum, nonzero, stack, tensor_like, where
from .composite import _arr, _gather, _index, _named, flip
from .grad_mode import is_grad_enabled
from .more_ops import meshgrid, mode, tensor_split

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["all", "any", "argwhere", "asarray", "broadcast_tensors", "can_cast", "cartesian_prod", "clamp_max",
           "clamp_min", "combinations", "copysign", "cummax", "cummin", "finfo", "float_power", "fmax", "fmin", "gcd",
           "ger", "heaviside", "hsplit", "iinfo", "index_copy", "index_fill", "inner", "is_floating_point",
           "is_nonzero", "isneginf", "isposinf", "isreal", "lcm", "logit", "masked_scatter", "masked_select", "mode",
           "msort", "rot90", "scatter", "scatter_add", "signbit", "take", "tensordot", "tril_indices", "triu_indices",
           "unravel_index", "vander", "vdot", "vsplit"]

_ALL = ("s", None, None, None)


def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else tensor_like(x, None)


def _dim(t: Tensor, dim: int) -> int:
    return normalize_dims(dim, t.ndim)[0] if t.ndim else 0


def _data(x: Any, who: str | None = None) -> np.ndarray:
    """The values of ``x`` (a tensor being traced has none: TracingError naming ``who``, else the caller)."""
    if isinstance(x, TensorBase):
        if is_traced(x):
            x._concrete(f"torch.{who or sys._getframe(1).f_code.co_name}")
        return np.asarray(x._data)
    return np.asarray(x)


def _plain(arr: np.ndarray) -> Tensor:
    arr = np.asarray(arr)
    return make_tensor(arr if arr.flags.c_contiguous else arr.copy())


# --------------------------------------------------------------------------- dtype limits

class finfo:  # noqa: N801  (torch's name)
    """The limits of a floating dtype (``eps max min tiny smallest_normal resolution bits dtype``)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: Any = None) -> None:  # noqa: A002
        d = dtypes.get_default_dtype() if type is None else type
        if not isinstance(d, dtypes.DType) or not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        fi = np.finfo(d.np)
        self.bits = builtins.int(fi.bits)
        self.eps = builtins.float(fi.eps)
        self.max = builtins.float(fi.max)
        self.min = builtins.float(fi.min)
        self.tiny = self.smallest_normal = builtins.float(fi.tiny)
        self.resolution = 10.0 ** -builtins.int(fi.precision)
        self.dtype = d.name

    def __eq__(self, other: object) -> builtins.bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> builtins.int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801  (torch's name)
    """The limits of an integer dtype (``max min bits dtype``)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: Any) -> None:  # noqa: A002
        if not isinstance(type, dtypes.DType) or type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        if type.np.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        ii = np.iinfo(type.np)
        self.bits = builtins.int(ii.bits)
        self.max = builtins.int(ii.max)
        self.min = builtins.int(ii.min)
        self.dtype = type.name

    def __eq__(self, other: object) -> builtins.bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> builtins.int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, dtype={self.dtype})"


def can_cast(from_: dtypes.DType, to: dtypes.DType) -> builtins.bool:
    """Whether torch's type promotion allows casting ``from_`` to ``to`` (no float -> integer, no -> bool)."""
    return from_.category <= to.category


# --------------------------------------------------------------------------- predicates, reductions, conversion

def is_floating_point(input: Tensor) -> builtins.bool:  # noqa: A002
    """Whether ``input``'s dtype is a floating type."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"is_floating_point(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_floating_point()


def all(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:  # noqa: A001, A002
    """Whether every element (along ``dim``) is nonzero."""
    return _t(input).all(dim, keepdim) if dim is not None else _t(input).all()


def any(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:  # noqa: A001, A002
    """Whether some element (along ``dim``) is nonzero."""
    return _t(input).any(dim, keepdim) if dim is not None else _t(input).any()


def is_nonzero(input: Tensor) -> builtins.bool:  # noqa: A002
    """Whether a one-element tensor is nonzero."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(_data(input).ravel()[0])


def asarray(obj: Any, *, dtype: dtypes.DType | None = None, device: Any = None, copy: builtins.bool | None = None,
            requires_grad: builtins.bool | None = None) -> Tensor:
    """``obj`` as a tensor, sharing memory with a tensor of the same dtype unless ``copy``."""
    if isinstance(obj, TensorBase):
        if requires_grad is None and obj.requires_grad:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                          "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                          "warning.", UserWarning, stacklevel=2)
        out = obj if dtype is None or dtype == obj.dtype else obj.to(dtype)
        if copy and out is obj:
            out = obj.clone()
    else:
        out = make_tensor(obj if isinstance(obj, np.ndarray) and dtype is None else _to_array(obj, dtype))
        if copy and isinstance(obj, np.ndarray) and np.shares_memory(out._data, obj):
            out = out.clone()
    if requires_grad:
        out.requires_grad_(True)
    elif requires_grad is False and out.requires_grad:  # torch: a leaf stops requiring grad, a result is detached
        out = out.detach() if out.grad_fn is not None else out.requires_grad_(False)
    return out


# --------------------------------------------------------------------------- exports of existing ops

def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """The elements of ``input`` where ``mask`` is true, a 1-d tensor."""
    return _t(input).masked_select(mask)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """``input`` with the first ``mask.sum()`` elements of ``source`` written where ``mask`` is true."""
    return _t(input).masked_scatter(mask, source)


_WARNED_ONCE: dict[str, builtins.bool] = {}


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,  # noqa: A002
            reduce: str | None = None) -> Tensor:
    """``input`` with ``src`` (a tensor, or a number as ``value``) written along ``dim`` at ``index``; ``reduce``
    'add' / 'multiply' combines instead (torch's deprecated form: no gradient)."""
    if src is not None and not isinstance(src, TensorBase):
        src, value = None, src
    if reduce is None:
        return _t(input).scatter(dim, index, src, value=value)
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if src is not None and not _WARNED_ONCE.get("scatter_reduce"):  # torch's TORCH_WARN_ONCE: once a process
        _WARNED_ONCE["scatter_reduce"] = True
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                      UserWarning, stacklevel=2)
    t = _t(input)
    out = _data(t).copy()
    idx = _data(index).astype(np.int64)
    d = _dim(t, dim)
    where_ = list(np.indices(idx.shape, sparse=True))
    where_[d] = idx
    vals = np.full(idx.shape, value) if src is None else _data(src)[tuple(slice(0, n) for n in idx.shape)]
    (np.add if reduce == "add" else np.multiply).at(out, tuple(where_), vals.astype(out.dtype))
    return _without_derivative(_plain(out), "scatter", t, *([src] if src is not None else []))


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:  # noqa: A002
    """``input`` with ``src`` added along ``dim`` at ``index`` (repeated indices add up)."""
    return _t(input).scatter_add(dim, index, src)


# --------------------------------------------------------------------------- elementwise

def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """``max(input, min)`` elementwise."""
    if isinstance(min, TensorBase):
        return _named(maximum(_t(input), min), "ClampMinBackward1")
    return clamp(_t(input), min=min, _fn="ClampMinBackward0")


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """``min(input, max)`` elementwise."""
    if isinstance(max, TensorBase):
        return _named(minimum(_t(input), max), "ClampMaxBackward1")
    return clamp(_t(input), max=max, _fn="ClampMaxBackward0")


def float_power(input: Any, exponent: Any) -> Tensor:  # noqa: A002
    """``input ** exponent`` computed in float64."""
    if not isinstance(input, TensorBase):
        return _cast(_t(exponent), dtypes.float64).__rpow__(builtins.float(input))
    base = _cast(input, dtypes.float64)
    if isinstance(exponent, TensorBase):
        return base ** _cast(exponent, dtypes.float64)
    return base ** builtins.float(exponent)


def _as_float(t: Tensor) -> Tensor:
    return t if t.is_floating_point() else _cast(t, dtypes.get_default_dtype())


def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """``log(x / (1 - x))``, ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    x = _as_float(_t(input))
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    return _named((x / (1 - x)).log(), "LogitBackward0")


def heaviside(input: Tensor, values: Tensor) -> Tensor:  # noqa: A002
    """0 where ``input < 0``, ``values`` where it is 0, 1 where it is positive."""
    a, v = _t(input), _t(values)
    if a.dtype != v.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    x, y = _data(a), _data(v)
    out = _plain(np.broadcast_to(np.where(x == 0, y, (x > 0).astype(x.dtype)).astype(x.dtype),
                                 np.broadcast_shapes(x.shape, y.shape)).copy())
    return _without_derivative(out, "heaviside", a, v)


def _without_derivative(out: Tensor, name: str, *inputs: Tensor) -> Tensor:
    """``out`` (computed from ``inputs``' values) as torch's node without a derivative, where an input requires
    grad: ``grad_fn=<NotImplemented>``, and backward through it raises torch's error."""
    if not (is_grad_enabled() and builtins.any(t.requires_grad for t in inputs)):
        return out
    # out times a one that depends on the inputs (sign's derivative is 0; 1 + 0 * sign is exactly 1, so -0.0, inf
    # and NaN stay), and a hook that raises when a gradient reaches the result
    zero = 0 * builtins.sum((t.sign().nan_to_num() for t in inputs if t.requires_grad), start=0)
    res = _named(out * (1 + zero), "NotImplemented")

    def hook(grad: Tensor) -> None:
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    res.register_hook(hook)
    return res


def _nan_max(input: Any, other: Any, ge: builtins.bool, fn: str) -> Tensor:
    a, b = _t(input), _t(other)
    keep = (a >= b) if ge else (a <= b)
    if b.is_floating_point():
        keep = keep.logical_or(b.isnan())
    return _named(where(keep, a, b), fn)


def fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise maximum ignoring NaN (NaN only where both are NaN)."""
    return _nan_max(input, other, True, "FmaxBackward0")


def fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise minimum ignoring NaN (NaN only where both are NaN)."""
    return _nan_max(input, other, False, "FminBackward0")


def copysign(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``|input|`` with the sign of ``other`` (a float result)."""
    a = _as_float(_t(input))
    if isinstance(other, TensorBase):
        neg = np.signbit(_data(other))
        b_float = other.is_floating_point()
        if not b_float and not a.is_floating_point():
            a = _cast(a, dtypes.get_default_dtype())
        dt = dtypes.promote_types(a.dtype, other.dtype) if b_float else a.dtype
        a, fn = _cast(a, dt), "CopysignBackward0"
    else:
        neg, fn = np.signbit(np.float64(other)), "CopysignBackward1"
    sign = _plain(np.where(neg, -1.0, 1.0).astype(a.dtype.np))
    if isinstance(other, TensorBase) and other.requires_grad:
        # torch gives ``other`` a zero gradient (not None): sign's derivative is 0; 0 * sign(b) adds a signed zero
        # to +-1, which leaves it exact
        sign = sign + 0 * other.sign().nan_to_num()
    return _named(a.abs() * sign, fn)


def _int_binary(f: Any, input: Any, other: Any) -> Tensor:
    a, b = _t(input), _t(other)
    if a.is_floating_point() or b.is_floating_point() or a.dtype == dtypes.bool or b.dtype == dtypes.bool:
        bad = a if a.is_floating_point() or a.dtype == dtypes.bool else b
        raise NotImplementedError(f"\"{f.__name__}_cpu\" not implemented for '{dtypes.torch_type_name(bad.dtype)}'")
    dt = dtypes.promote_types(a.dtype, b.dtype)
    return _plain(f(_data(a, f.__name__), _data(b, f.__name__)).astype(dt.np))


def gcd(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise greatest common divisor (integer tensors)."""
    return _int_binary(np.gcd, input, other)


def lcm(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise least common multiple (integer tensors)."""
    return _int_binary(np.lcm, input, other)


def signbit(input: Tensor) -> Tensor:  # noqa: A002
    """Whether each element's sign bit is set (``-0.0`` included)."""
    return _plain(np.signbit(_data(_t(input))))


def isneginf(input: Tensor) -> Tensor:  # noqa: A002
    """Whether each element is ``-inf``."""
    x = _data(_t(input))
    return _plain(np.isneginf(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_))


def isposinf(input: Tensor) -> Tensor:  # noqa: A002
    """Whether each element is ``+inf``."""
    x = _data(_t(input))
    return _plain(np.isposinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_))


def isreal(input: Tensor) -> Tensor:  # noqa: A002
    """Whether each element is real: all true for symgrad's (real) dtypes."""
    return _plain(np.ones(_t(input).shape, np.bool_))


# --------------------------------------------------------------------------- products

def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """The sum of products over ``dims`` (a count of ``a``'s last / ``b``'s first dims, or two dim lists)."""
    a, b = _t(a), _t(b)
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if isinstance(dims, TensorBase):
        dims = dims.tolist()
    if isinstance(dims, (builtins.int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        n = builtins.int(dims)
        if n > builtins.min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
        shown_a, shown_b = list(builtins.range(-n, 0)), list(builtins.range(n))
        da, db = [a.ndim + d for d in shown_a], shown_b
    else:
        da, db = dims
        da = [da] if isinstance(da, builtins.int) else list(da)
        db = [db] if isinstance(db, builtins.int) else list(db)
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have same length, but got {len(da)} and {len(db)}")
        shown_a, shown_b = da, db
        da = [normalize_dims(d, a.ndim)[0] for d in da]
        db = [normalize_dims(d, b.ndim)[0] for d in db]
    for i, j, si, sj in zip(da, db, shown_a, shown_b):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {si} "
                               f"and second has size {b.shape[j]} in dim {sj}")
    ra = [d for d in builtins.range(a.ndim) if d not in da]
    rb = [d for d in builtins.range(b.ndim) if d not in db]
    k = builtins.int(np.prod([a.shape[d] for d in da]))
    sa, sb = [a.shape[d] for d in ra], [b.shape[d] for d in rb]
    am = a.permute(*ra, *da).reshape(builtins.int(np.prod(sa)), k)
    bm = b.permute(*db, *rb).reshape(k, builtins.int(np.prod(sb)))
    return (am @ bm).reshape(*sa, *sb)


def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The sum of products over the last dims (a product when either is 0-d)."""
    a, b = _t(input), _t(other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    return tensordot(a, b, ([-1], [-1]))


def vdot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The dot product of two 1-d tensors (real: ``dot``)."""
    a, b = _t(input), _t(other)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return _named(a.dot(b), "VdotBackward0")


def ger(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """The outer product (torch's old name of ``outer``)."""
    return _t(input).outer(vec2)


# --------------------------------------------------------------------------- selections

def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """The indices of the nonzero elements, one row each."""
    return nonzero(_t(input))


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """The elements of the flattened ``input`` at ``index`` (the result has ``index``'s shape)."""
    t = _t(input)
    idx = _data(index).astype(np.int64)
    n = t.numel()
    bad = (idx >= n) | (idx < -n)
    if bad.any():
        v = builtins.int(idx[bad].ravel()[0])
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")
    idx = np.where(idx < 0, idx + n, idx)
    flat = t.reshape(n) if t.ndim != 1 else t
    out = _index(flat, [_arr(idx)], "TakeBackward0" if t.is_floating_point() else "")
    return out


def _cum_ext(input: Tensor, dim: int, greater: builtins.bool, name: str) -> Any:
    t = _t(input)
    d = _dim(t, dim)
    x = _data(t, name)
    if x.ndim == 0:
        idx = np.zeros((), np.int64)
    else:
        xm = np.moveaxis(x, d, -1)
        idx = np.zeros(xm.shape, np.int64)
        best = xm[..., 0].copy()
        bi = np.zeros(best.shape, np.int64)
        isf = x.dtype.kind == "f"
        for k in builtins.range(xm.shape[-1]):
            v = xm[..., k]
            with np.errstate(invalid="ignore"):
                take_it = (v >= best) if greater else (v <= best)
            if isf:
                take_it = (take_it | np.isnan(v)) & ~(np.isnan(best) & ~np.isnan(v))
            best = np.where(take_it, v, best)
            bi = np.where(take_it, k, bi)
            idx[..., k] = bi
        idx = np.ascontiguousarray(np.moveaxis(idx, -1, d))
    fn = "CummaxBackward0" if greater else "CumminBackward0"
    values = _gather(t, d, _plain(idx), fn) if t.ndim else _named(t.clone(), fn)
    pair = _PAIRS[name]
    return pair(values, _plain(idx))


_PAIRS = {n: type(n, (return_types._ValuesIndices,), {"__slots__": ()}) for n in ("cummax", "cummin")}


def cummax(input: Tensor, dim: int) -> Any:  # noqa: A002
    """Running maximum along ``dim`` and the index where each was reached (the last of ties)."""
    return _cum_ext(input, dim, True, "cummax")


def cummin(input: Tensor, dim: int) -> Any:  # noqa: A002
    """Running minimum along ``dim`` and the index where each was reached (the last of ties)."""
    return _cum_ext(input, dim, False, "cummin")


def msort(input: Tensor) -> Tensor:  # noqa: A002
    """``input`` sorted along its first dim."""
    return _t(input).sort(dim=0).values


def _dim_index(index: Any, who: str) -> np.ndarray:
    idx = _data(index, who)
    if who == "index_fill":
        if idx.dtype != np.int64:
            raise IndexError("index_fill_(): Expected dtype int64 for index.")
        if idx.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
    else:
        if idx.dtype != np.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                               f"{dtypes.torch_type_name(_t(index).dtype)}")
        if idx.ndim > 1:
            raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {idx.ndim})")
    return idx.ravel()


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """``input`` with ``source``'s slices along ``dim`` copied to the positions ``index``."""
    t, s = _t(input), _t(source)
    d = _dim(t, dim)
    idx = _dim_index(index, "index_copy")
    for k in builtins.range(t.ndim):
        if k != d and (s.ndim != t.ndim or s.shape[k] != t.shape[k]):
            dest = " ".join(str(t.shape[j]) for j in builtins.range(t.ndim) if j != d)
            src = " ".join(str(s.shape[j]) for j in builtins.range(s.ndim) if j != d)
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {dest} at dimension {d} and source slice shape: {src} at dimension 0.")
    if t.ndim and s.shape[d] != idx.size:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                         f"({s.shape[d]})")
    shape = [1] * t.ndim
    if t.ndim:
        shape[d] = idx.size
    full = np.broadcast_to(idx.reshape(shape), s.shape if s.ndim else (1,))
    out = t.scatter(d, _plain(full.copy()), s if s.ndim else s.reshape(1))
    return _named(out, "IndexCopyBackward0")


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:  # noqa: A002
    """``input`` with ``value`` written in the slices along ``dim`` at ``index``."""
    t = _t(input)
    d = _dim(t, dim)
    idx = _dim_index(index, "index_fill")
    mask = np.zeros(t.shape[d] if t.ndim else 1, np.bool_)
    mask[idx] = True
    shape = [1] * t.ndim
    if t.ndim:
        shape[d] = mask.size
    out = t.masked_fill(_plain(mask.reshape(shape)), value)
    return _named(out, "IndexFillBackward0" if not isinstance(value, TensorBase) else "IndexFillBackward1")


# --------------------------------------------------------------------------- builders

def _tri_indices(row: int, col: int, offset: int, dtype: dtypes.DType | None, upper: builtins.bool) -> Tensor:
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    return _plain(np.stack([r, c]).astype((dtype or dtypes.int64).np).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: dtypes.DType | None = None,
                 device: Any = None) -> Tensor:
    """The (2, N) indices of a ``row x col`` matrix's lower triangle (row-major)."""
    return _tri_indices(row, col, offset, dtype, False)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: dtypes.DType | None = None,
                 device: Any = None) -> Tensor:
    """The (2, N) indices of a ``row x col`` matrix's upper triangle (row-major)."""
    return _tri_indices(row, col, offset, dtype, True)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:  # noqa: A002
    """``input`` rotated by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the second)."""
    t = _t(input)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if t.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {t.ndim}")
    d0, d1 = normalize_dims(dims[0], t.ndim)[0], normalize_dims(dims[1], t.ndim)[0]
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        out = flip(t, [d1]).transpose(d0, d1)
    elif k == 2:
        out = flip(t, [d0, d1])
    elif k == 3:
        out = flip(t, [d0]).transpose(d0, d1)
    else:
        out = t.clone()
    return _named(out, "Rot90Backward0")


def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ts = [_t(x) for x in tensors]
    shape = np.broadcast_shapes(*(tuple(x.shape) for x in ts))
    return tuple(x if tuple(x.shape) == shape else x.expand(*shape) for x in ts)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each 1-d tensor, one row each."""
    ts = [_t(x) for x in tensors]
    for x in ts:
        if x.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: builtins.bool = False) -> Tensor:  # noqa: A002
    """The length-``r`` combinations of a 1-d tensor's elements, one row each."""
    t = _t(input)
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _plain(np.empty((0,), t.dtype.np))
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(gen(builtins.range(t.shape[0]), r)), np.int64).reshape(-1, r)
    cols = [_index(t, [_arr(rows[:, j])], "") for j in builtins.range(r)]
    return stack(cols, 1)


def vander(x: Tensor, N: int | None = None, increasing: builtins.bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-d tensor: columns ``x ** (N-1) ... x ** 0`` (reversed when ``increasing``)."""
    t = _t(x)
    if t.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = t.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not t.is_floating_point():
        t = _cast(t, dtypes.int64)
    ones = _plain(np.ones((t.shape[0], builtins.min(n, 1)), t.dtype.np))
    out = ones if n <= 1 else cat([ones, t.unsqueeze(1).expand(t.shape[0], n - 1).cumprod(1)], 1)
    return _named(out, "CopySlices") if increasing else flip(out, [1])  # torch: cumprod_out into a slice


def _split(t: Tensor, ios: Any, d: int, who: str) -> tuple[Tensor, ...]:
    if isinstance(ios, (builtins.int, np.integer)):
        n = t.shape[d]
        if ios == 0 or n % ios:
            raise RuntimeError(f"torch.{who} attempted to split along dimension {d}, but the size of the dimension "
                               f"{n} is not divisible by the split_size {ios}!")
    return tensor_split(t, ios, d)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:  # noqa: A002
    """``tensor_split`` along the columns (dim 1; dim 0 of a 1-d tensor)."""
    t = _t(input)
    if t.ndim < 1:
        raise RuntimeError(f"torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with "
                           f"{t.ndim} dimensions!")
    return _split(t, indices_or_sections, 1 if t.ndim > 1 else 0, "hsplit")


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:  # noqa: A002
    """``tensor_split`` along the rows (dim 0)."""
    t = _t(input)
    if t.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with "
                           f"{t.ndim} dimensions!")
    return _split(t, indices_or_sections, 0, "vsplit")


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in ``shape`` of flat ``indices``, one int64 tensor per dim (torch's floor-divide and
    modulo: out-of-range indices wrap)."""
    t = _t(indices)
    idx = _data(t)
    if idx.dtype.kind == "f" or idx.dtype == np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {t.dtype}")
    shape = (builtins.int(shape),) if isinstance(shape, (builtins.int, np.integer)) else tuple(shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    coefs = list(itertools.accumulate(reversed((*shape[1:], 1)), lambda a, b: a * b))[::-1]
    with np.errstate(divide="ignore"):
        res = np.floor_divide(idx.astype(np.int64)[..., None], np.array(coefs, np.int64))
        res = np.mod(res, np.array(shape, np.int64))
    return tuple(_plain(res[..., k]) for k in builtins.range(len(shape)))
