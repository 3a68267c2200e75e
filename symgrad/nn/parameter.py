"""``torch.nn.Parameter``: a leaf ``Tensor`` that a ``Module`` registers when it is assigned as an attribute."""
from __future__ import annotations

from typing import Any

from ..eager import functional
from ..eager.base import pickled_storage, unpickled_storage
from ..eager.tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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
        return (_rebuild_parameter, (pickled_storage(self._data), self.requires_grad))

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


class UninitializedTensorMixin:
    """A parameter or buffer of a lazy module whose shape is not known yet: ``materialize(shape)`` gives it
    storage and turns it into its ``cls_to_become``."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Empty storage of ``shape`` (the current dtype unless given); the object becomes a ``cls_to_become``."""
        if dtype is None:
            dtype = self.dtype  # type: ignore[attr-defined]
        self.data = functional.empty(shape, dtype=dtype)  # type: ignore[attr-defined]
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self) -> Any:
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto: Any) -> tuple:
        return (self.__class__, (self.requires_grad,))  # type: ignore[attr-defined]


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """``torch.nn.parameter.UninitializedParameter``: a lazy module's parameter before its first call."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(functional.empty(0, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """``torch.nn.parameter.UninitializedBuffer``: a lazy module's buffer before its first call (it has no
    ``persistent`` attribute: ``register_buffer``'s argument decides, as for any tensor)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> None:
        src = functional.empty(0, dtype=dtype)
        super().__init__(src._data, _version=src._version)
        self.requires_grad_(requires_grad)


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


def _rebuild_parameter(arr: Any, requires_grad: bool) -> Parameter:
    return Parameter(Tensor(unpickled_storage(arr)), requires_grad)
