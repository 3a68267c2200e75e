"""Tensor creation and the ``sg.`` function forms of tensor ops."""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..core import dtypes, ranges
from ..core.dtypes import DType
from ..ops import broadcast_shapes as b
from .base import _ALL_DIMS, Size, TensorBase, _shape_args, _to_array
from .basic import _logical, _shift, cat, clamp
from .device import check_optional, default_device_check
from .math_ops import _unary
from .tensor import Tensor


def _dt(dtype: Any) -> DType | None:
    return None if dtype is None else dtypes.from_any(dtype)


def _finish(arr: np.ndarray, requires_grad: bool, name: str | None = None) -> Tensor:
    default_device_check()
    if requires_grad and arr.dtype.kind != "f":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    t = Tensor(arr)
    if name is not None:
        t.name = name
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           name: str | None = None) -> Tensor:
    """A new leaf tensor holding a copy of ``data``; ``name`` is its symbol in formulas.

    >>> import symgrad as sg
    >>> sg.tensor([1.0, 2.0], requires_grad=True)
    tensor([1., 2.], requires_grad=True)
    """
    check_optional(device)
    arr = _to_array(data, _dt(dtype))
    if isinstance(data, (np.ndarray, Tensor)) and dtype is None:
        arr = arr.copy()
    return _finish(arr, requires_grad, name)


def as_tensor(data: Any, dtype: Any = None) -> Tensor:
    if isinstance(data, Tensor) and (dtype is None or data.dtype is _dt(dtype)):
        return data
    if isinstance(data, np.ndarray) and dtype is None:
        return Tensor(data)
    return Tensor(_to_array(data, _dt(dtype)))


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``arr``."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dtypes.from_numpy_dtype(arr.dtype)
    return Tensor(arr)


def is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def numel(t: Tensor) -> int:
    return t.numel()


def _fill(size: Sequence[Any], value: Any, dtype: Any, requires_grad: bool, name: str | None = None,
          fn: str = "") -> Tensor:
    shape = _shape_args(size)
    if any(s < 0 for s in shape):
        if fn == "zeros":  # torch's zeros checks the sizes itself
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(shape)}: {list(shape)}")
    d = _dt(dtype) or (dtypes.get_default_dtype() if isinstance(value, builtins.float) or value is None
                       else dtypes.result_type(value))
    arr = np.full(shape, 0 if value is None else value, dtype=d.np)
    return _finish(arr, requires_grad, name)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, name: str | None = None, **_: Any) -> Tensor:
    """A tensor of ones; ``dtype`` defaults to the default float dtype."""
    check_optional(_.get("device"))
    return _fill(size, 1.0 if dtype is None else 1, dtype, requires_grad, name)


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, name: str | None = None, **_: Any) -> Tensor:
    """A tensor of zeros."""
    check_optional(_.get("device"))
    return _fill(size, 0.0 if dtype is None else 0, dtype, requires_grad, name, fn="zeros")


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return _fill(size, 0.0 if dtype is None else 0, dtype, requires_grad)


def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, requires_grad: bool = False,
         **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return _fill((size,) if isinstance(size, int) else (tuple(size),), fill_value, dtype, requires_grad)


def _like(t: Tensor, value: Any, dtype: Any, requires_grad: bool) -> Tensor:
    return _fill((t.shape,), value, dtype or t.dtype, requires_grad)


def ones_like(t: Tensor, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return _like(t, 1, dtype, requires_grad)


def zeros_like(t: Tensor, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return _like(t, 0, dtype, requires_grad)


def empty_like(t: Tensor, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return _like(t, 0, dtype, requires_grad)


def full_like(t: Tensor, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return _like(t, fill_value, dtype, requires_grad)


def _range_dtype(dtype: Any, *values: Any) -> Any:
    """The numpy dtype a creation range gets: ``dtype``, else int64 for integral arguments (``arange``), else
    the default float dtype."""
    if dtype is not None:
        return dtypes.from_any(dtype).np
    if values and all(isinstance(v, (builtins.int, np.integer)) and not isinstance(v, builtins.bool) or
                      isinstance(v, TensorBase) and not v.is_floating_point() for v in values):
        return np.int64
    return dtypes.get_default_dtype().np


def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, TensorBase) else v


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, requires_grad: bool = False,
           **_: Any) -> Tensor:
    """``start, start + step, ...`` below ``end``, with torch's element values (``core.ranges``)."""
    check_optional(_.get("device"))
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    args = (start, step) if end is None else (start, end, step)
    return _finish(ranges.arange(start, end, step, dtype=_range_dtype(dtype, *args)), requires_grad)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, requires_grad: bool = False,
             **_: Any) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, with torch's element values."""
    check_optional(_.get("device"))
    d = dtypes.from_any(dtype).np if dtype is not None else dtypes.get_default_dtype().np
    return _finish(ranges.linspace(_scalar(start), _scalar(end), steps, dtype=d), requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             requires_grad: bool = False, **_: Any) -> Tensor:
    """``base ** linspace(start, end, steps)``, with torch's element values."""
    check_optional(_.get("device"))
    d = dtypes.from_any(dtype).np if dtype is not None else dtypes.get_default_dtype().np
    return _finish(ranges.logspace(_scalar(start), _scalar(end), steps, base, dtype=d), requires_grad)


def range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, requires_grad: bool = False,  # noqa: A001
          **_: Any) -> Tensor:
    """torch's deprecated inclusive ``range`` (default float dtype), with its warning."""
    check_optional(_.get("device"))
    d = dtypes.from_any(dtype).np if dtype is not None else dtypes.get_default_dtype().np
    return _finish(ranges.range_(_scalar(start), _scalar(end), _scalar(step), dtype=d), requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    d = _dt(dtype) or dtypes.get_default_dtype()
    for arg, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{arg} must be greater or equal to 0, got {v}")
    return _finish(np.eye(n, m, dtype=d.np), requires_grad)


# ---------------------------------------------------------------------- function forms of tensor ops

def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(_to_array(x, None))


def add(a: Any, b: Any, *, alpha: Any = 1) -> Tensor:
    return _t(a).add(b, alpha=alpha) if isinstance(a, Tensor) or not isinstance(b, Tensor) else b.__radd__(a)


def sub(a: Any, b: Any, *, alpha: Any = 1) -> Tensor:
    return _t(a).sub(b, alpha=alpha)


def mul(a: Any, b: Any) -> Tensor:
    return _t(a).mul(b) if isinstance(a, Tensor) or not isinstance(b, Tensor) else b.__rmul__(a)


def div(a: Any, b: Any, *, rounding_mode: str | None = None) -> Tensor:
    return _t(a).div(b, rounding_mode=rounding_mode)


divide = div


def true_divide(a: Any, b: Any) -> Tensor:
    return _t(a).div(b)


subtract = sub
multiply = mul


def neg(a: Tensor) -> Tensor:
    return -a


negative = neg


exp = _unary("exp", "exp")
log = _unary("log", "log")
log1p = _unary("log1p", "log1p")
sqrt = _unary("sqrt", "sqrt")
sin = _unary("sin", "sin")
cos = _unary("cos", "cos")
tan = _unary("tan", "tan")
tanh = _unary("tanh", "tanh")
sigmoid = _unary("sigmoid", "sigmoid")
relu = _unary("relu", "relu")
abs = _unary("abs", "abs")  # noqa: A001
reciprocal = _unary("reciprocal", "reciprocal")
absolute = abs
clip = clamp


def sum(a: Tensor, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    return _t(a).sum(dim, keepdim, dtype=dtype)


def mean(a: Tensor, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    return _t(a).mean(dim, keepdim, dtype=dtype)


def reshape(a: Tensor, shape: Sequence[int]) -> Tensor:
    return a.reshape(shape)


def flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return a.flatten(start_dim, end_dim)


def squeeze(a: Tensor, dim: Any = None) -> Tensor:
    return a.squeeze(dim)


def unsqueeze(a: Tensor, dim: int) -> Tensor:
    return a.unsqueeze(dim)


def transpose(a: Tensor, dim0: int, dim1: int) -> Tensor:
    return a.transpose(dim0, dim1)


def permute(a: Tensor, dims: Sequence[int]) -> Tensor:
    return a.permute(*dims)


def t(a: Tensor) -> Tensor:
    return a.t()


def clone(a: Tensor) -> Tensor:
    return a.clone()


def index_put(a: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    """``a`` with ``values`` written (``accumulate``: added) at ``indices`` (a tuple of index tensors)."""
    return a.index_put(indices, values, accumulate)


def index_add(a: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """``a`` with ``alpha * source`` added along ``dim`` at the positions ``index``."""
    return a.index_add(dim, index, source, alpha=alpha)


def scatter(a: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None) -> Tensor:
    """``a`` with ``src`` (or the number ``value``) written along ``dim`` at ``index``."""
    return a.scatter(dim, index, src, value=value)


def scatter_add(a: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``a`` with ``src`` added along ``dim`` at ``index`` (repeated indices add up)."""
    return a.scatter_add(dim, index, src)


def masked_select(a: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``a`` where ``mask`` is true, a 1-d tensor."""
    return a.masked_select(mask)


def masked_scatter(a: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``a`` with the first ``mask.sum()`` elements of ``source`` written where ``mask`` is true."""
    return a.masked_scatter(mask, source)


def detach(a: Tensor) -> Tensor:
    return a.detach()


def broadcast_to(a: Tensor, shape: Sequence[int]) -> Tensor:
    return a.expand(*shape)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    return Size(b(*(tuple(s) for s in shapes)))


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return _t(a).allclose(b, rtol, atol, equal_nan)


def equal(a: Tensor, b: Tensor) -> bool:
    return _t(a).equal(b)


def stop_gradient(a: Tensor) -> Tensor:
    """A constant copy of ``a`` for differentiation (``detach`` under the JAX name)."""
    return a.detach()


def result_type(a: Any, b: Any) -> DType:
    return dtypes.result_type(a, b)


def promote_types(a: DType, b: DType) -> DType:
    return dtypes.promote_types(a, b)








def _comparison(name: str):
    def f(a: Any, b: Any) -> Tensor:
        return getattr(_t(a), name)(b)
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``: a bool tensor, outside the graph (no gradient)."
    return f


gt = _comparison("gt")
ge = _comparison("ge")
lt = _comparison("lt")
le = _comparison("le")
eq = _comparison("eq")
ne = _comparison("ne")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` with torch's rules (1-D·1-D dot, matrix-vector, matrix-matrix, batched broadcasting)."""
    if not isinstance(a, Tensor):
        raise TypeError(f"matmul(): argument 'input' (position 1) must be Tensor, not {type(a).__name__}")
    return a.matmul(b, 2)


def mm(a: Tensor, b: Tensor) -> Tensor:
    return a.mm(b)


def mv(a: Tensor, v: Tensor) -> Tensor:
    return a.mv(v)


def dot(a: Tensor, b: Tensor) -> Tensor:
    return a.dot(b)


def outer(a: Tensor, b: Tensor) -> Tensor:
    return a.outer(b)


# ---------------------------------------------------------------------- selections, normalizations, scans, joins

def max(a: Tensor, dim: Any = _ALL_DIMS, keepdim: bool = False) -> Any:  # noqa: A001
    """``a.max()``, ``a.max(dim, keepdim)`` (values, indices) or, with a tensor, ``maximum``."""
    return _t(a).max(dim, keepdim)


def min(a: Tensor, dim: Any = _ALL_DIMS, keepdim: bool = False) -> Any:  # noqa: A001
    """``a.min()``, ``a.min(dim, keepdim)`` (values, indices) or, with a tensor, ``minimum``."""
    return _t(a).min(dim, keepdim)


def amax(a: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return _t(a).amax(dim, keepdim)


def amin(a: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return _t(a).amin(dim, keepdim)


def argmax(a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return _t(a).argmax(dim, keepdim)


def argmin(a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return _t(a).argmin(dim, keepdim)


def prod(a: Tensor, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    return _t(a).prod(dim, keepdim, dtype=dtype)


def logsumexp(a: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(a), dim))``, numerically stable."""
    return _t(a).logsumexp(dim, keepdim)


def softmax(a: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(a) / sum(exp(a), dim)``, numerically stable (the max is subtracted first)."""
    return _t(a).softmax(dim, dtype=dtype)


def log_softmax(a: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``a - logsumexp(a, dim)``, numerically stable."""
    return _t(a).log_softmax(dim, dtype=dtype)


def cumsum(a: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    return _t(a).cumsum(dim, dtype=dtype)


def split(a: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return a.split(split_size_or_sections, dim)


def chunk(a: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return a.chunk(chunks, dim)


def unbind(a: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    return a.unbind(dim)


concat = concatenate = cat


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    return _logical("logical_and", _t(a), b, position=2)


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    return _logical("logical_or", _t(a), b, position=2)


def logical_xor(a: Tensor, b: Tensor) -> Tensor:
    return _logical("logical_xor", _t(a), b, position=2)


def logical_not(a: Tensor) -> Tensor:
    return _t(a).logical_not()


def bitwise_and(a: Any, b: Any) -> Tensor:
    return _t(a).bitwise_and(b)


def bitwise_or(a: Any, b: Any) -> Tensor:
    return _t(a).bitwise_or(b)


def bitwise_xor(a: Any, b: Any) -> Tensor:
    return _t(a).bitwise_xor(b)


def bitwise_not(a: Any) -> Tensor:
    return _t(a).bitwise_not()


def bitwise_left_shift(a: Any, b: Any) -> Tensor:
    return _shift(True, a, b)


def bitwise_right_shift(a: Any, b: Any) -> Tensor:
    return _shift(False, a, b)


def isnan(a: Any) -> Tensor:
    return _t(a).isnan()


def isinf(a: Any) -> Tensor:
    return _t(a).isinf()


def isfinite(a: Any) -> Tensor:
    return _t(a).isfinite()
