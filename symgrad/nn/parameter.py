"""``torch.nn.Parameter``: a leaf ``Tensor`` that a ``Module`` registers when it is assigned as an attribute."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..eager import functional
from ..eager.tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a ``Module`` attribute registers it.

    It shares ``data``'s storage and version counter (as torch's ``_make_subclass``), is a leaf and
    requires grad unless ``requires_grad=False`` (also inside ``no_grad()``). Operations on it return
    plain ``Tensor`` s, as in torch.
    """

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = functional.empty(0)
        src = data.detach()  # a non-tensor fails here, as in torch
        if requires_grad and src._data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        super().__init__(src._data, _version=src._version)
        self.requires_grad_(bool(requires_grad))

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor(self._data.copy()), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto: Any) -> tuple:
        return (_rebuild_parameter, (np.array(self._data), self.requires_grad))

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


class Buffer(Tensor):
    """``torch.nn.Buffer``: a tensor that a ``Module`` registers as a buffer when it is assigned as an
    attribute (``persistent=False``: left out of ``state_dict``). It shares ``data``'s storage and keeps its
    ``requires_grad``; unlike torch's (a plain ``Tensor`` flagged as a buffer) its type is ``Buffer``."""

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        if data is None:
            data = functional.empty(0)
        src = data.detach()
        super().__init__(src._data, _version=src._version)
        self.requires_grad_(data.requires_grad)
        self.persistent = persistent


def _rebuild_parameter(arr: np.ndarray, requires_grad: bool) -> Parameter:
    return Parameter(Tensor(arr), requires_grad)
