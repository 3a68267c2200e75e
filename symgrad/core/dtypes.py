"""Dtypes: torch-named wrappers over numpy dtypes, the default dtype and torch's promotion rules."""
from __future__ import annotations

from typing import Any

import numpy as np


class DType:
    """A tensor element type; prints as torch does (``torch.float32``) so reprs match torch's."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize")

    def __init__(self, name: str, np_dtype: Any) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.is_signed = self.np.kind in "fi"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> tuple:
        return (from_any, (self.name,))

    @property
    def category(self) -> int:
        """0 bool, 1 integer, 2 floating."""
        return 2 if self.is_floating_point else (0 if self.np.kind == "b" else 1)


float16 = half = DType("float16", np.float16)
float32 = float = DType("float32", np.float32)  # noqa: A001 - torch's public name
float64 = double = DType("float64", np.float64)
uint8 = DType("uint8", np.uint8)
int8 = DType("int8", np.int8)
int16 = short = DType("int16", np.int16)
int32 = int = DType("int32", np.int32)  # noqa: A001
int64 = long = DType("int64", np.int64)
bool = DType("bool", np.bool_)  # noqa: A001

ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)

_default = float32


def get_default_dtype() -> DType:
    """The dtype of float tensors created from Python floats (``float32`` unless changed)."""
    return _default


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype; only float32 and float64 are accepted, as in torch."""
    global _default
    d = from_any(d)
    if d not in (float32, float64, float16):
        raise TypeError("only floating-point types are supported as the default type")
    _default = d


def from_any(d: Any) -> DType:
    """Turn a DType, numpy dtype, name or Python type into a DType."""
    if isinstance(d, DType):
        return d
    if d is builtins_float:
        return _default
    if d is builtins_int:
        return int64
    if d is builtins_bool:
        return bool
    if isinstance(d, str):
        name = d.removeprefix("torch.")
        if name in _BY_NAME:
            return _BY_NAME[name]
    try:
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype: {d!r}") from None


def from_numpy_dtype(npd: np.dtype) -> DType:
    try:
        return _BY_NP[np.dtype(npd)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(npd).name}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


import builtins as _b  # noqa: E402

builtins_float, builtins_int, builtins_bool = _b.float, _b.int, _b.bool


def promote_types(a: DType | None, b: DType | None) -> DType | None:
    """torch.promote_types: a float beats any integer; otherwise numpy's lattice."""
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a.is_floating_point != b.is_floating_point:
        return a if a.is_floating_point else b
    return _BY_NP[np.promote_types(a.np, b.np)]


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    if higher is None:
        return lower
    if lower is None or higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(*operands: Any) -> DType:
    """torch.result_type over tensors (anything with ``dtype`` and ``ndim``) and Python scalars.

    Dimensioned tensors outrank 0-d tensors, which outrank Python scalars, unless a lower rank
    brings a higher category (bool < int < float).
    """
    dim = zero = wrapped = None
    for op in operands:
        if isinstance(op, _b.bool):
            wrapped = promote_types(wrapped, bool)
        elif isinstance(op, _b.int):
            wrapped = promote_types(wrapped, int64)
        elif isinstance(op, _b.float):
            wrapped = promote_types(wrapped, _default)
        elif getattr(op, "ndim", 0) == 0:
            zero = promote_types(zero, op.dtype)
        else:
            dim = promote_types(dim, op.dtype)
    out = _combine(dim, _combine(zero, wrapped))
    assert out is not None
    return out


def float_result(d: DType) -> DType:
    """The dtype of a floating op (exp, true division, mean) applied to ``d``."""
    return d if d.is_floating_point else _default


def torch_type_name(d: DType) -> str:
    """The scalar-type name torch's messages give a dtype (``Float``, ``Long``)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}[d.name]


def cpp_type_name(d: DType) -> str:
    """The C++ name torch's messages give a dtype (``double``, ``long int``)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}[d.name]
