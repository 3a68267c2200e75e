"""``Tensor``'s methods: in-place arithmetic, writes and fills."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core import context as _trace
from ...core import dtypes
from ...ops import REGISTRY
from ...ops.base import promotion_operands
from .. import composite as _composite
from .. import writes as _ip
from ..base import TensorBase, _is_number, _py, check_inference_write
from ..grad_mode import is_grad_enabled
from ..record import MULTI_VIEWS, _apply, _original, _reads_self

if TYPE_CHECKING:
    from ..tensor import Tensor


class InPlaceMethods:
    """``Tensor``'s in-place arithmetic, writes and fills."""

    __slots__ = ()

    def _inplace(self, name: str, other: Any = None, **attrs: Any) -> Tensor:
        op = REGISTRY[name]
        args = (self,) if other is None else (self, other)
        tracing = _trace.active is not None
        if tracing:  # a functional update: the tracer is rebound to the op's result
            _ip.check_trace_target(self)
        _ip.refresh(self)
        if is_grad_enabled() and self.is_leaf and self.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if is_grad_enabled() and self._node is not None and self._node in MULTI_VIEWS:
            fn, k = MULTI_VIEWS[self._node]
            raise RuntimeError(
                f"Output {k} of {fn} is a view and is being modified inplace. This view is the output of a function "
                "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
                "You should replace the inplace operation by an out-of-place one.")
        if is_grad_enabled():
            _ip.check_view_write(self)
        if not tracing and is_grad_enabled() and any(isinstance(a, TensorBase) and a._node is not None for a in args) \
                and _reads_self(op, len(args), attrs):
            # the op's own backward reads ``self`` as it was before the write, as torch's saved original self
            args = (_original(self), *args[1:])
        res = _apply(op, *args, _out_dtype=self.dtype, **attrs)
        if res._data.shape != self._data.shape:
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(res.shape)}")
        want = dtypes.result_type(*promotion_operands(op, args, attrs))
        if not op.keeps_int:
            want = dtypes.float_result(want)
        if want.category > self.dtype.category:
            raise RuntimeError(f"result type {dtypes.torch_type_name(want)} can't be cast to the desired output type "
                               f"{dtypes.torch_type_name(self.dtype)}")
        if tracing:
            self._node = res._node
            self._version.v += 1
            self._version.recorded += 1
            if self._view is not None:
                _ip.propagate(self)
            return self
        self._data[...] = res._data
        self._version.v += 1
        check_inference_write(self)  # as torch: after the write, when the version is bumped
        self._grad_terms.reset(False)
        if res._node is not None:
            node = res._node
            node.value = self._data
            node.storage = self._version
            node.version = self._version.v
            self._node = node
            self._version.recorded += 1
            if self._view is not None:
                _ip.propagate(self)
        return self

    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace("add", other, **({} if alpha == 1 else {"alpha": _py(alpha)}))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace("sub", other, **({} if alpha == 1 else {"alpha": _py(alpha)}))

    def mul_(self, other: Any) -> Tensor:
        return self._inplace("mul", other)

    def div_(self, other: Any) -> Tensor:
        return self._inplace("div", other)

    def pow_(self, exponent: Any) -> Tensor:
        if _is_number(exponent):
            return self._inplace("pow", exponent=_py(exponent))
        return self._inplace("pow_tensor", exponent)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._inplace("clamp", min=_py(min), max=_py(max))

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def zero_(self) -> Tensor:
        """Fill with zeros in place (``ZeroBackward0``: no gradient reaches the overwritten values)."""
        return self._fill(0, "ZeroBackward0")

    def fill_(self, value: Any) -> Tensor:
        """Fill with ``value`` (a number or a 0-d tensor, whose gradient is the sum of this one's)."""
        if isinstance(value, TensorBase):
            if value.ndim:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                                   "dimensions.")
            return self._fill(value, "FillBackward3")
        return self._fill(_py(value), "FillBackward2")

    def _fill(self, value: Any, fn: str) -> Tensor:
        _ip.write(self, _ip.WHOLE, value, fn=fn)
        if not isinstance(value, TensorBase):
            self._grad_terms.reset(value == 0)
        return self

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        """Copy ``src`` (broadcast, converted to this dtype) into this tensor; gradients flow to ``src``."""
        return _ip.copy_(self, src)

    def __setitem__(self, index: Any, value: Any) -> None:
        """``t[index] = value`` (ints, slices, None, ``...``, integer arrays, boolean masks), recorded as an
        ``index_put`` node (``CopySlices``) when a gradient is needed."""
        _ip.setitem(self, index, value)

    def index_put(self, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
        """A copy with ``values`` written (``accumulate``: added) at the integer/boolean tensors ``indices``."""
        return _ip.index_put(self, indices, values, accumulate)

    def index_put_(self, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
        return _ip.index_put(self, indices, values, accumulate, inplace=True)

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """A copy with ``alpha * source`` added along ``dim`` at the positions ``index`` (repeats add up)."""
        return _ip.index_add(self, dim, index, source, alpha=alpha)

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        return _ip.index_add(self, dim, index, source, alpha=alpha, inplace=True)

    def scatter(self, dim: int, index: Tensor, src: Any = None, *, value: Any = None) -> Tensor:
        """A copy with ``src`` (or the number ``value``) written along ``dim`` at ``index``."""
        return _ip.scatter(self, dim, index, src, value=value)

    def scatter_(self, dim: int, index: Tensor, src: Any = None, *, value: Any = None) -> Tensor:
        return _ip.scatter(self, dim, index, src, value=value, inplace=True)

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with ``src`` added along ``dim`` at ``index`` (repeated indices add up)."""
        return _ip.scatter(self, dim, index, src, add=True)

    def scatter_add_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        return _ip.scatter(self, dim, index, src, add=True, inplace=True)

    def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
        """A copy with the first ``mask.sum()`` elements of ``source`` written where ``mask`` is true."""
        return _ip.masked_scatter(self, mask, source)

    def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
        return _ip.masked_scatter(self, mask, source, inplace=True)

    clip_ = clamp_

    # composites of registry ops (``eager/composite.py``), as methods
    masked_fill_ = _composite.masked_fill_
