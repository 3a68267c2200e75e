"""The values the LLVM emitter holds (``Sc``, ``Buf``, ``Cat``, ``Mapped``: see ``emit.py``) and small helpers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ir
from ..numba import scalar
from .lines import ll_type

#: values of at most this many elements are scalars
SCALAR_LIMIT = scalar.SCALAR_LIMIT
#: the most LLVM instructions a module may have (compile time stays in milliseconds)
MAX_INSTRUCTIONS = 60000

#: numpy's PyArrayObject field offsets, and PyArray_Descr's byteorder and type_num (numpy 1.x and 2.x, 64-bit CPython)
DATA, NDIM, DIMS, DESCR, FLAGS = 16, 24, 32, 56, 64
BYTEORDER, TYPE_NUM = 26, 28
C_CONTIGUOUS, WRITEABLE = 0x1, 0x400

Idx = int | str    # a static index or an LLVM i64 value


def storage(dtype: str) -> str:
    """The LLVM type an element of ``dtype`` is stored as (numpy's bool is a byte)."""
    t = ll_type(dtype)
    return "i8" if t == "i1" else t


@dataclass
class Sc:
    elems: np.ndarray
    dtype: str

    @property
    def shape(self) -> tuple:
        return self.elems.shape


@dataclass
class Buf:
    ptr: str
    dtype: str
    shape: tuple
    strides: tuple
    offset: Idx = 0


@dataclass
class Cat:
    parts: list
    axis: int
    shape: tuple
    dtype: str


@dataclass
class Mapped:
    base: Any
    fn: Any          # out index (tuple of Idx) -> base index
    shape: tuple
    dtype: str


Value = Sc | Buf | Cat | Mapped


def c_strides(shape: tuple) -> tuple:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return tuple(reversed(out))


def object_array(items: list, shape: tuple) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for k, x in enumerate(items):
        out[k] = x
    return out.reshape(shape)


def operands(st: Any) -> list[str]:
    """The names a statement reads (literals included)."""
    if isinstance(st, ir.Elementwise):
        return sorted(s.name for s in st.expr.free_symbols)
    if isinstance(st, ir.MatMul):
        return [st.a, st.b]
    if isinstance(st, ir.Concat):
        return list(st.args)
    if isinstance(st, ir.Scan):
        return [st.init] + ([st.xs] if st.xs is not None else []) + list(st.consts)
    if not hasattr(st, "arg"):
        raise ir.Unsupported(f"llvm: no emission for IR statement {type(st).__name__}")
    return [st.arg]
