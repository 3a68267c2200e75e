"""``torch.autograd.Variable``: the legacy wrapper, now a function returning a tensor (every tensor is one)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..eager.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(t, requires_grad=False)``: a tensor sharing ``t``'s data, a leaf (outside ``t``'s graph)
    that requires grad as asked. ``isinstance(t, Variable)`` holds for every tensor, as in torch."""

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:  # type: ignore[misc]
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        if data is None:
            data = Tensor(np.zeros(0, dtype=np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad and data._data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return data.detach().requires_grad_(bool(requires_grad))


Variable.__module__ = "torch.autograd.variable"
