"""``Tensor``'s methods: dtype and device conversion, copies."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from ...core import dtypes
from ...core.dtypes import DType
from ...ops import REGISTRY, normalize_dims
from .. import composite as _composite
from ..base import TensorBase
from ..basic import _cast
from ..device import check as check_device
from ..device import device
from ..record import _apply

#: dtype name -> the prefix of torch's legacy type name (``FloatTensor``)
_LEGACY_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                 "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
_BY_LEGACY = {f"{v}Tensor": k for k, v in _LEGACY_NAMES.items()}

if TYPE_CHECKING:
    from ..tensor import Tensor


class ConversionMethods:
    """``Tensor``'s dtype and device conversion, copies."""

    __slots__ = ()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; itself when nothing changes
        (unless ``copy=True``). Only the CPU is a device here: CUDA raises torch's CPU-build error."""
        dtype, copy = kwargs.get("dtype"), bool(kwargs.get("copy", False))
        if kwargs.get("device") is not None:
            check_device(kwargs["device"])
        for a in args:
            if isinstance(a, TensorBase):
                dtype = a.dtype
            elif isinstance(a, (DType, type)):
                dtype = a
            elif isinstance(a, (str, device)):
                if isinstance(a, str) and a.removeprefix("torch.") in dtypes._BY_NAME:
                    dtype = a
                else:
                    check_device(a)
            elif a is not None and not isinstance(a, bool):
                raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
        out = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        return out.clone() if copy and out is self else out

    def cuda(self, device: Any = None, non_blocking: bool = False, **_: Any) -> Tensor:
        raise AssertionError("Torch not compiled with CUDA enabled")

    def type(self, dtype: Any = None, non_blocking: bool = False, **_: Any) -> Any:
        """The legacy type name (``'torch.FloatTensor'``), or this tensor converted to ``dtype`` (a dtype, a
        legacy type such as ``torch.LongTensor``, or its name)."""
        if dtype is None:
            return f"torch.{_LEGACY_NAMES.get(self.dtype.name, '')}Tensor"
        if isinstance(dtype, type) and hasattr(dtype, "_dtype"):  # a legacy typed constructor
            dtype = dtype._dtype
        elif isinstance(dtype, str) and dtype.removeprefix("torch.") in _BY_LEGACY:
            dtype = _BY_LEGACY[dtype.removeprefix("torch.")]
        return self.to(dtype)

    def type_as(self, other: Tensor) -> Tensor:
        """This tensor converted to ``other``'s dtype (itself when they agree)."""
        return self.to(other.dtype)

    def float(self) -> Tensor:
        return _cast(self, dtypes.float32)

    def double(self) -> Tensor:
        return _cast(self, dtypes.float64)

    def half(self) -> Tensor:
        return _cast(self, dtypes.float16)

    def long(self) -> Tensor:
        return _cast(self, dtypes.int64)

    def int(self) -> Tensor:
        return _cast(self, dtypes.int32)

    def bool(self) -> Tensor:
        return _cast(self, dtypes.bool)

    def cpu(self) -> Tensor:
        return self

    def contiguous(self) -> Tensor:
        """``self`` if its memory is in C order, else a C-ordered copy (``CloneBackward0``)."""
        return self if self._data.flags.c_contiguous else _apply(REGISTRY["clone"], self, contiguous=True)

    def is_contiguous(self) -> bool:
        return builtins.bool(self._data.flags.c_contiguous)

    def stride(self, dim: Any = None) -> Any:
        """The step in elements between neighbours along each dim (one dim's with ``dim``), torch's values: a
        size-1 dim numpy gives stride 0 (``unsqueeze``, ``None``) has the extent of the dims after it."""
        arr = self._data
        out = [st // arr.itemsize for st in arr.strides]
        for d in builtins.range(arr.ndim - 1, -1, -1):
            if (arr.shape[d] == 1 and out[d] == 0) or arr.size == 0:  # an empty tensor: C-order strides
                out[d] = out[d + 1] * builtins.max(arr.shape[d + 1], 1) if d + 1 < arr.ndim else 1
        if dim is None:
            return tuple(out)
        if not out:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        (d,) = normalize_dims(dim, arr.ndim)
        return out[d]

    def clone(self) -> Tensor:
        return _apply(REGISTRY["clone"], self)

    # composites of registry ops (``eager/composite.py``), as methods
    new_zeros = _composite.new_zeros
    new_ones = _composite.new_ones
    new_empty = _composite.new_empty
    new_full = _composite.new_full
    new_tensor = _composite.new_tensor
