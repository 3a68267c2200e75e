"""``Tensor``'s methods: sum, mean, prod, max/min, arg-reductions, softmax, scans."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import dtypes
from ...ops import REGISTRY, normalize_dims
from .. import composite as _composite
from .. import saved_attrs as _saved_attrs
from ..base import _ALL_DIMS, _reduce_dims
from ..basic import _amax, _argext, _cast, _extreme, _one_dim, _softmax
from ..record import _apply

if TYPE_CHECKING:
    from ..tensor import Tensor


class ReductionMethods:
    """``Tensor``'s sum, mean, prod, max/min, arg-reductions, softmax, scans."""

    __slots__ = ()

    def sum(self, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        full, dim = _reduce_dims(dim)
        dims = normalize_dims(dim, t.ndim)
        out = _apply(REGISTRY["sum"], t, dims=dims, keepdim=keepdim, full=full)
        return out if full else _saved_attrs.note_dims(out, dim, dims)  # torch's grad_fn shows the dim as written

    def mean(self, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        if not t.is_floating_point():
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {dtypes.torch_type_name(t.dtype)}")
        full, dim = _reduce_dims(dim)
        dims = normalize_dims(dim, t.ndim)
        out = _apply(REGISTRY["mean"], t, dims=dims, keepdim=keepdim, full=full)
        return out if full else _saved_attrs.note_dims(out, dim, dims)  # torch's grad_fn shows the dim as written

    def prod(self, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """Product over all elements, or over one ``dim``; the gradient is exact at zeros (as torch's)."""
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        if dim is _ALL_DIMS:
            return _apply(REGISTRY["prod"], t, dims=tuple(range(t.ndim)), keepdim=False, full=True)
        return _apply(REGISTRY["prod"], t, dims=normalize_dims(_one_dim(dim), t.ndim), keepdim=keepdim, full=False)

    def max(self, dim: Any = _ALL_DIMS, keepdim: bool = False) -> Any:
        """The maximum (ties share the gradient evenly); with ``dim``, ``(values, indices)`` as
        ``torch.return_types.max`` (the gradient goes to the index returned); with a tensor, ``maximum``."""
        return _extreme(self, "max", dim, keepdim)

    def min(self, dim: Any = _ALL_DIMS, keepdim: bool = False) -> Any:
        """The minimum; see ``max``."""
        return _extreme(self, "min", dim, keepdim)

    def amax(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        """The maximum over ``dim`` (all dims for ``()``); ties share the gradient evenly."""
        return _amax(self, "amax", dim, keepdim)

    def amin(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        return _amax(self, "amin", dim, keepdim)

    def argmax(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Index of the first maximum (of the flattened tensor without ``dim``), int64."""
        return _argext(self, "argmax", dim, keepdim)

    def argmin(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _argext(self, "argmin", dim, keepdim)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Tensor:
        """``log(sum(exp(self), dim))``, stable: ``log(sum(exp(self - max))) + max``."""
        t = self if self.is_floating_point() else _cast(self, dtypes.get_default_dtype())
        dims = normalize_dims(dim, t.ndim)
        if not dims and t.ndim and not isinstance(dim, (builtins.int, np.integer)):
            raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * t.ndim}")
        return _apply(REGISTRY["logsumexp"], t, dims=dims, keepdim=keepdim)

    def softmax(self, dim: Any, dtype: Any = None) -> Tensor:
        """``exp(self - max) / sum(exp(self - max))`` along ``dim``."""
        return _softmax(self, "softmax", dim, dtype)

    def log_softmax(self, dim: Any, dtype: Any = None) -> Tensor:
        """``self - max - log(sum(exp(self - max)))`` along ``dim``."""
        return _softmax(self, "log_softmax", dim, dtype)

    def cumsum(self, dim: Any, *, dtype: Any = None) -> Tensor:
        """Running sum along ``dim`` (integers sum as int64)."""
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        d = normalize_dims(_one_dim(dim), t.ndim)
        return _apply(REGISTRY["cumsum"], t, dim=d[0] if d else 0, reverse=False)

    # composites of registry ops (``eager/composite.py``), as methods
    var = _composite.var
    std = _composite.std
    norm = _composite.norm
    dist = _composite.dist
    cumprod = _composite.cumprod
    logcumsumexp = _composite.logcumsumexp
    nansum = _composite.nansum
    nanmean = _composite.nanmean
    count_nonzero = _composite.count_nonzero
    aminmax = _composite.aminmax
