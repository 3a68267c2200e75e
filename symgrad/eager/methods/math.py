"""``Tensor``'s methods: arithmetic operators, elementwise math, comparisons, logical and bitwise ops, matmul."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import dtypes
from ...ops import REGISTRY
from ...ops.linalg import check_matmul_dtypes, matmul_shape, torch_name
from .. import composite as _composite
from .. import math_ops as _math_ops
from ..base import TensorBase, _arr, _is_number, _py
from ..basic import _binary, _bitwise, _logical, _shift, clamp, pow, tensor_like
from ..record import _apply

if TYPE_CHECKING:
    from ..tensor import Tensor


class MathMethods:
    """``Tensor``'s arithmetic operators, elementwise math, comparisons, logical and bitwise ops, matmul."""

    __slots__ = ()
    __hash__ = object.__hash__  # defining __eq__ (elementwise) would otherwise make tensors unhashable

    def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _binary("add", self, other, alpha=alpha)

    def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _binary("sub", self, other, alpha=alpha)

    def mul(self, other: Any) -> Tensor:
        return _binary("mul", self, other)

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is not None:
            return _composite.div_rounded(self, other, rounding_mode)
        return _binary("div", self, other)

    def true_divide(self, other: Any) -> Tensor:
        return _binary("div", self, other)

    def pow(self, exponent: Any) -> Tensor:
        return pow(self, exponent)

    __add__ = add

    __sub__ = sub

    __mul__ = mul

    __truediv__ = div

    __pow__ = pow

    subtract = sub

    multiply = mul

    divide = div

    def __radd__(self, other: Any) -> Tensor:
        return _binary("add", self, other)  # torch records ``other + self`` as ``self.add(other)``

    def __rmul__(self, other: Any) -> Tensor:
        return _binary("mul", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        if _is_number(other):
            return _apply(REGISTRY["rsub"], self, other=_py(other))
        return _binary("sub", other, self)

    def __rtruediv__(self, other: Any) -> Tensor:
        if _is_number(other):
            return _binary("mul", _apply(REGISTRY["reciprocal"], self), other)
        return _binary("div", other, self)

    def __rpow__(self, other: Any) -> Tensor:
        if _is_number(other):
            return _apply(REGISTRY["rpow"], self, base=_py(other))
        return pow(tensor_like(other, self), self)

    def __neg__(self) -> Tensor:
        return _apply(REGISTRY["neg"], self)

    neg = negative = __neg__

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _apply(REGISTRY["abs"], self)

    abs = absolute = __abs__

    def reciprocal(self) -> Tensor:
        return _apply(REGISTRY["reciprocal"], self)

    def exp(self) -> Tensor:
        return _apply(REGISTRY["exp"], self)

    def log(self) -> Tensor:
        return _apply(REGISTRY["log"], self)

    def log1p(self) -> Tensor:
        return _apply(REGISTRY["log1p"], self)

    def sqrt(self) -> Tensor:
        return _apply(REGISTRY["sqrt"], self)

    def sin(self) -> Tensor:
        return _apply(REGISTRY["sin"], self)

    def cos(self) -> Tensor:
        return _apply(REGISTRY["cos"], self)

    def tan(self) -> Tensor:
        return _apply(REGISTRY["tan"], self)

    def tanh(self) -> Tensor:
        return _apply(REGISTRY["tanh"], self)

    def sigmoid(self) -> Tensor:
        return _apply(REGISTRY["sigmoid"], self)

    def relu(self) -> Tensor:
        return _apply(REGISTRY["relu"], self)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return clamp(self, min, max)

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002
        return clamp(self, min, None, _fn="ClampMinBackward0")

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002
        return clamp(self, None, max, _fn="ClampMaxBackward0")

    def _compare(self, other: Any, name: str) -> Tensor:
        if not isinstance(other, TensorBase) and not _is_number(other):
            other = tensor_like(other, self)
        return _apply(REGISTRY[name], self, other)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, "eq")

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, "ne")

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, "lt")

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, "le")

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, "gt")

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, "ge")

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def equal(self, other: Tensor) -> bool:
        return self.shape == other.shape and builtins.bool(np.array_equal(self._data, other._data))

    def allclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        return builtins.bool(np.allclose(self._data, _arr(other), rtol=rtol, atol=atol, equal_nan=equal_nan))

    def logical_and(self, other: Tensor) -> Tensor:
        return _logical("logical_and", self, other)

    def logical_or(self, other: Tensor) -> Tensor:
        return _logical("logical_or", self, other)

    def logical_xor(self, other: Tensor) -> Tensor:
        return _logical("logical_xor", self, other)

    def logical_not(self) -> Tensor:
        return _apply(REGISTRY["logical_not"], self)

    def bitwise_and(self, other: Any) -> Tensor:
        return _bitwise("and", self, other)

    def bitwise_or(self, other: Any) -> Tensor:
        return _bitwise("or", self, other)

    def bitwise_xor(self, other: Any) -> Tensor:
        return _bitwise("xor", self, other)

    def bitwise_not(self) -> Tensor:
        if self.is_floating_point():
            raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{dtypes.torch_type_name(self.dtype)}'")
        return _apply(REGISTRY["logical_not" if self.dtype is dtypes.bool else "bitwise_not"], self)

    __and__, __or__, __xor__ = bitwise_and, bitwise_or, bitwise_xor

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def bitwise_left_shift(self, other: Any) -> Tensor:
        return _shift(True, self, other)

    def bitwise_right_shift(self, other: Any) -> Tensor:
        return _shift(False, self, other)

    __lshift__, __rshift__ = bitwise_left_shift, bitwise_right_shift

    def __rlshift__(self, other: Any) -> Tensor:
        return _shift(True, other, self)

    def __rrshift__(self, other: Any) -> Tensor:
        return _shift(False, other, self)

    def __invert__(self) -> Tensor:
        if self.is_floating_point():
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return self.bitwise_not()

    def isnan(self) -> Tensor:
        return _apply(REGISTRY["isnan"], self)

    def isinf(self) -> Tensor:
        return _apply(REGISTRY["isinf"], self)

    def isfinite(self) -> Tensor:
        return _apply(REGISTRY["isfinite"], self)

    def all(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Whether every element (along ``dim``) is nonzero, as a bool tensor; recorded, so it traces."""
        zeros = (self == 0).sum() if dim is None else (self == 0).sum(dim, keepdim=keepdim)
        return zeros == 0

    def any(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Whether some element (along ``dim``) is nonzero, as a bool tensor; recorded, so it traces."""
        nonzero = (self != 0).sum() if dim is None else (self != 0).sum(dim, keepdim=keepdim)
        return nonzero > 0

    def matmul(self, other: Any, _position: int = 1) -> Tensor:
        """``self @ other``: dot, matrix-vector, matrix-matrix or batched (broadcast) products of one dtype."""
        if not isinstance(other, TensorBase):
            raise TypeError(f"matmul(): argument 'other' (position {_position}) must be Tensor, not "
                            f"{type(other).__name__}")
        a, b = self._data, other._data
        if a.ndim == 1 and b.ndim == 1:  # torch's dot checks the dtypes first, the others the shapes
            check_matmul_dtypes(self.dtype, other.dtype, 1, 1)
        matmul_shape(a.shape, b.shape)
        check_matmul_dtypes(self.dtype, other.dtype, a.ndim, b.ndim)
        return _apply(REGISTRY["matmul"], self, other, fn=torch_name(self.ndim, other.ndim))

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, np.ndarray):  # torch leaves it to numpy's ``__rmatmul__``: a promoted product
            other = tensor_like(other, self)
            dt = dtypes.promote_types(self.dtype, other.dtype)
            return self.to(dt).matmul(other.to(dt))
        return self.matmul(other) if isinstance(other, TensorBase) else NotImplemented

    def __rmatmul__(self, other: Any) -> Any:
        if isinstance(other, np.ndarray):
            other = tensor_like(other, self)
            dt = dtypes.promote_types(self.dtype, other.dtype)
            return other.to(dt).matmul(self.to(dt))
        return NotImplemented

    def mm(self, other: Tensor) -> Tensor:
        if self.ndim != 2 or other.ndim != 2:
            raise RuntimeError("self must be a matrix" if self.ndim != 2 else "mat2 must be a matrix")
        return self.matmul(other)

    def mv(self, vec: Tensor) -> Tensor:
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {vec.ndim}")
        return self.matmul(vec)

    def dot(self, other: Tensor) -> Tensor:
        if self.ndim != 1 or other.ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
        return self.matmul(other)

    def outer(self, other: Tensor) -> Tensor:
        return self.unsqueeze(1) * other.unsqueeze(0)

    # composites of registry ops (``eager/composite.py``), as methods
    floor_divide = _composite.floor_divide
    addcmul = _composite.addcmul
    addcdiv = _composite.addcdiv
    lerp = _composite.lerp
    __floordiv__ = _composite.floor_divide

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _composite.floor_divide(other, self)


#: torch's elementwise math beyond the basics, out of place and in place: one method per row of
#: ``eager/math_ops.py``'s table (``UNARY``, ``ALIASES``, the binary ops), declared here from it
TorchMathMethods = type("TorchMathMethods", (), {"__slots__": (), "__module__": __name__,
                                                 "__doc__": "torch's elementwise math methods.", **_math_ops.METHODS})
