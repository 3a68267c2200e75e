"""The basic functions behind ``Tensor``'s methods and the ``sg.*`` names: binary arithmetic, ``pow``,
``clamp``, ``where``, ``maximum``/``minimum``, max/min with indices, softmax, logical and bitwise ops, splits,
``cat``, ``stack``."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.dtypes import DType
from ..ops import REGISTRY, normalize_dims
from ..ops.join import joined
from . import saved_attrs as _saved_attrs
from .autograd import grad_fn_of
from .base import _ALL_DIMS, TensorBase, _is_number, _py, _to_array, make_tensor
from .record import MULTI_VIEWS, _apply
from .return_types import RETURN_TYPES

if TYPE_CHECKING:
    from .tensor import Tensor


def _binary(name: str, a: Any, b: Any, **attrs: Any) -> Tensor:
    if not isinstance(a, TensorBase) and not _is_number(a):
        a = tensor_like(a, b)
    if not isinstance(b, TensorBase) and not _is_number(b):
        b = tensor_like(b, a)
    if attrs.get("alpha", 1) == 1:
        attrs.pop("alpha", None)
    else:
        attrs["alpha"] = _py(attrs["alpha"])
    return _apply(REGISTRY[name], a, b, **attrs)


def tensor_like(x: Any, ref: Any) -> Tensor:
    if isinstance(x, TensorBase):
        return x
    if isinstance(x, np.ndarray):
        return make_tensor(x)
    return make_tensor(_to_array(x, None))


def _cast(t: Tensor, dt: DType) -> Tensor:
    if t.dtype is dt:
        return t
    return _apply(REGISTRY["to"], t, dtype=dt.name)


def _reshape(t: Tensor, shape: tuple[int, ...], fn: str) -> Tensor:
    return _apply(REGISTRY["reshape"], t, shape=tuple(builtins.int(s) for s in shape), fn=fn)


def pow(a: Any, exponent: Any) -> Tensor:  # noqa: A001
    """``a ** exponent`` elementwise (tensor or number on either side)."""
    if not isinstance(a, TensorBase):
        if isinstance(exponent, TensorBase) and _is_number(a):
            return exponent.__rpow__(a)
        a = tensor_like(a, exponent)
    if _is_number(exponent):
        e = _py(exponent)
        if isinstance(e, builtins.bool):
            e = builtins.int(e)
        return _apply(REGISTRY["pow"], a, exponent=e)
    return _apply(REGISTRY["pow_tensor"], a, tensor_like(exponent, a))


def clamp(a: Tensor, min: Any = None, max: Any = None, _fn: str | None = None) -> Tensor:  # noqa: A002
    """Clamp to ``[min, max]``; the gradient passes where ``min <= a <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, TensorBase) or isinstance(max, TensorBase):
        out = a
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    return _apply(REGISTRY["clamp"], a, min=_py(min), max=_py(max), **({} if _fn is None else {"fn": _fn}))


def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """``input`` where ``condition`` else ``other``; a SymPy ``Piecewise`` in formulas.

    Gradients are exactly zero in the branch not taken, so ``where(x > 0, sqrt(x), 0)`` has no
    NaN gradient at ``x <= 0`` (torch and JAX give NaN there). ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``.
    """
    if input is None and other is None:
        cond = condition if isinstance(condition, TensorBase) else make_tensor(np.asarray(condition))
        return nonzero(cond, as_tuple=True)
    c = condition if isinstance(condition, TensorBase) else make_tensor(np.asarray(condition))
    a = input if isinstance(input, TensorBase) or not isinstance(other, TensorBase) else input
    return _apply(REGISTRY["where"], c, a, other)


def maximum(a: Any, b: Any) -> Tensor:
    """Elementwise maximum; at ties the gradient is split evenly (as torch)."""
    return _apply(REGISTRY["maximum"], _t(a), b if isinstance(b, TensorBase) else _t(b))


def minimum(a: Any, b: Any) -> Tensor:
    """Elementwise minimum; at ties the gradient is split evenly (as torch)."""
    return _apply(REGISTRY["minimum"], _t(a), b if isinstance(b, TensorBase) else _t(b))


def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else make_tensor(_to_array(x, None))


def _one_dim(dim: Any) -> int:
    """A single ``dim`` argument (torch's overloads refuse a tuple where one dim is expected)."""
    if not isinstance(dim, (builtins.int, np.integer)):
        raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
    return builtins.int(dim)


def _nonempty(t: Tensor, name: str, dims: Sequence[int]) -> None:
    for d in dims:
        if t.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _extreme(t: Tensor, name: str, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, TensorBase):
        return (maximum if name == "max" else minimum)(t, dim)
    if dim is _ALL_DIMS:
        if t.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        return _apply(REGISTRY["a" + name], t, dims=tuple(range(t.ndim)), keepdim=False, full=True)
    dims = normalize_dims(_one_dim(dim), t.ndim)
    _nonempty(t, name, dims)
    indices = _apply(REGISTRY["arg" + name], t, dim=dims[0] if dims else None, keepdim=keepdim)
    values = _apply(REGISTRY[name], t, indices, dims=dims, keepdim=keepdim)
    return RETURN_TYPES[name](values, indices)


def _amax(t: Tensor, name: str, dim: Any, keepdim: bool) -> Tensor:
    if isinstance(dim, (tuple, list)) and not len(dim):
        if t.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        dims = tuple(range(t.ndim))
    else:
        dims = normalize_dims(dim, t.ndim)
    _nonempty(t, name, dims)
    return _apply(REGISTRY[name], t, dims=dims, keepdim=keepdim, full=False)


def _argext(t: Tensor, name: str, dim: Any, keepdim: bool) -> Tensor:
    if dim is None:
        if t.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return _apply(REGISTRY[name], t, dim=None, keepdim=keepdim)
    dims = normalize_dims(_one_dim(dim), t.ndim)
    _nonempty(t, name, dims)
    return _apply(REGISTRY[name], t, dim=dims[0] if dims else None, keepdim=keepdim)


def _softmax(t: Tensor, name: str, dim: Any, dtype: Any) -> Tensor:
    if dtype is not None:
        t = _cast(t, dtypes.from_any(dtype))
    dims = normalize_dims(_one_dim(dim), t.ndim)
    if not t.is_floating_point():
        kernel = "lastdim_kernel_impl" if not dims or dims[0] == t.ndim - 1 else "kernel_impl"
        raise NotImplementedError(f"\"{name}_{kernel}\" not implemented for '{dtypes.torch_type_name(t.dtype)}'")
    return _saved_attrs.note_dims(_apply(REGISTRY[name], t, dims=dims), dim, dims)  # the dim as torch shows it


def _logical(name: str, a: Tensor, b: Any, position: int = 1) -> Tensor:
    if not isinstance(b, TensorBase):
        raise TypeError(f"{name}(): argument 'other' (position {position}) must be Tensor, not {type(b).__name__}")
    return _apply(REGISTRY[name], a, b)


def _bitwise(kind: str, a: Any, b: Any) -> Tensor:
    """``a & b`` (``|``, ``^``): logical on bools, bitwise on integers, torch's error on floats."""
    if not isinstance(a, TensorBase) and not _is_number(a):
        a = tensor_like(a, b)
    if not isinstance(b, TensorBase) and not _is_number(b):
        b = tensor_like(b, a)
    dt = dtypes.result_type(a, b)
    if dt.is_floating_point:
        raise NotImplementedError(f"\"bitwise_{kind}_cpu\" not implemented for '{dtypes.torch_type_name(dt)}'")
    return _apply(REGISTRY[("logical_" if dt is dtypes.bool else "bitwise_") + kind], _py(a), _py(b))


def _shift(left: bool, a: Any, b: Any) -> Tensor:
    """``a << b`` / ``a >> b`` on integers (torch's error on floats and bools)."""
    if not isinstance(a, TensorBase) and not _is_number(a):
        a = tensor_like(a, b)
    if not isinstance(b, TensorBase) and not _is_number(b):
        b = tensor_like(b, a)
    dt = dtypes.result_type(a, b)
    if dt.is_floating_point or dt is dtypes.bool:
        raise NotImplementedError(f"\"{'l' if left else 'r'}shift_cpu\" not implemented for "
                                  f"'{dtypes.torch_type_name(dt)}'")
    return _apply(REGISTRY["bitwise_left_shift" if left else "bitwise_right_shift"], _py(a), _py(b))


def _pieces(t: Tensor, dim: int, sizes: Sequence[int], fn: str) -> tuple[Tensor, ...]:
    """Views of consecutive slices of ``sizes`` along ``dim`` (torch's split family)."""
    lead = (("s", None, None, None),) * dim
    out, start = [], 0
    for size in sizes:
        out.append(_apply(REGISTRY["index"], t, index=lead + (("s", start, start + size, None),), fn=fn))
        start += size
    return _multi_views(out, fn)


def _multi_views(views: list[Tensor], fn: str) -> tuple[Tensor, ...]:
    shared = None
    for k, v in enumerate(views):
        if v._node is not None and v._node.op is REGISTRY["index"]:
            MULTI_VIEWS[v._node] = (fn.removesuffix("Backward0"), k)
            # one torch node makes all the views: their grad_fn is one object
            if shared is None:
                shared = grad_fn_of(v._node)
            else:
                v._node.fn = shared
    return tuple(views)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing ``dim`` (dtypes promote as in torch)."""
    ts = [t if isinstance(t, TensorBase) else tensor_like(t, None) for t in tensors]
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    kept = joined([t.shape for t in ts])  # torch skips 1-d empty tensors
    first = ts[kept[0]]
    nd = first.ndim
    d = normalize_dims(_one_dim(dim), nd)[0]
    for i in kept[1:]:
        t = ts[i]
        if t.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {t.ndim}")
        for k in range(nd):
            if k != d and t.shape[k] != first.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{first.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list.")
    return _apply(REGISTRY["cat"], *ts, dim=d, out_dtype=dtypes.result_type(*ts).name)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equally shaped tensors along a new ``dim``."""
    ts = [t if isinstance(t, TensorBase) else tensor_like(t, None) for t in tensors]
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = normalize_dims(_one_dim(dim), ts[0].ndim + 1)[0]
    for i, t in enumerate(ts[1:], 1):
        if t.shape != ts[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ts[0].shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    return _apply(REGISTRY["stack"], *ts, dim=d, out_dtype=dtypes.result_type(*ts).name)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:  # noqa: A002
    """The indices of the non-zero elements: an int64 ``(n, ndim)`` tensor, or one 1-d tensor per dim."""
    data = input._data if isinstance(input, TensorBase) else np.asarray(input)
    idx = np.nonzero(np.atleast_1d(data))
    if as_tuple:
        return tuple(make_tensor(i.astype(np.int64)) for i in idx)
    if data.ndim == 0:  # torch: one row of no columns for a nonzero 0-d tensor
        return make_tensor(np.zeros((idx[0].size, 0), np.int64))
    return make_tensor(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))
