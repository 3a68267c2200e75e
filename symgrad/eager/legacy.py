"""torch's legacy typed constructors: ``FloatTensor([1, 2])``, ``LongTensor(3)``, ``isinstance(t, FloatTensor)``."""
from __future__ import annotations

from typing import Any

from ..core import dtypes
from .base import TensorBase, legacy_array, make_tensor


class _LegacyType(type):
    """The metaclass of the typed constructors: calling one builds a tensor of its dtype, and ``isinstance``
    tests a tensor's dtype (as torch's ``FloatTensor`` and friends do)."""

    _dtype: str

    def __call__(cls, data: Any = None, *sizes: Any, device: Any = None) -> Any:
        return make_tensor(legacy_array(data, sizes, dtypes.from_any(cls._dtype), device))

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, TensorBase) and obj.dtype.name == cls._dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _legacy(name: str, dtype: str) -> type:
    return _LegacyType(name, (), {"_dtype": dtype, "__doc__": f"``torch.{name}``: a {dtype} tensor."})


FloatTensor = _legacy("FloatTensor", "float32")
DoubleTensor = _legacy("DoubleTensor", "float64")
HalfTensor = _legacy("HalfTensor", "float16")
LongTensor = _legacy("LongTensor", "int64")
IntTensor = _legacy("IntTensor", "int32")
ShortTensor = _legacy("ShortTensor", "int16")
CharTensor = _legacy("CharTensor", "int8")
ByteTensor = _legacy("ByteTensor", "uint8")
BoolTensor = _legacy("BoolTensor", "bool")

__all__ = ["BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor",
           "LongTensor", "ShortTensor"]
