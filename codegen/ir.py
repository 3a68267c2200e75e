"""The neutral kernel IR: parameters, one statement per materialised value, named outputs."""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Param:
    """A kernel input; ``index`` is its position in the argument list it is read from."""

    name: str
    index: int
    shape: Shape
    dtype: str
    group: str = "v"


@dataclass(frozen=True)
class Elementwise:
    """``target = expr`` where the free symbols of ``expr`` are earlier targets or params."""

    target: str
    expr: sp.Expr
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Reduce:
    """``target = kind(arg, axes, keepdims)``; kind is "sum", "mean", "max", "min" or "prod"
    (max/min propagate NaN)."""

    target: str
    kind: str
    arg: str
    axes: tuple[int, ...]
    keepdims: bool
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Reshape:
    target: str
    arg: str
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Broadcast:
    target: str
    arg: str
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Transpose:
    target: str
    arg: str
    axes: tuple[int, ...]
    shape: Shape
    dtype: str
    note: str = ""




@dataclass(frozen=True)
class Kernel:
    """A function of the lists named ``groups``: reads ``params`` from them, runs ``body`` in order,
    returns ``outputs`` (names)."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    outputs: tuple[str, ...]
    doc: str = ""
    groups: tuple[str, ...] = ("v",)


@dataclass(frozen=True)
class Index:
    """``target = arg[index]``; ``index`` entries: ("i", k) | ("s", start, stop, step) | ("n",) | ("e",)
    | ("a", values, shape) for an integer array."""

    target: str
    arg: str
    index: tuple
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class IndexAdd:
    """``target = zeros(shape); target[index] += arg`` (repeated integer indices accumulate)."""

    target: str
    arg: str
    index: tuple
    shape: Shape
    dtype: str
    note: str = ""


Stmt = Elementwise | Reduce | Reshape | Broadcast | Transpose | Index | IndexAdd


@dataclass(frozen=True)
class MatMul:
    """``target = a @ b`` with numpy's matmul semantics (BLAS where it applies)."""

    target: str
    a: str
    b: str
    shape: Shape
    dtype: str
    note: str = ""


Stmt = Stmt | MatMul


@dataclass(frozen=True)
class ArgReduce:
    """``target = argmax/argmin(arg, axis, keepdims)`` as int64 (first occurrence; NaN counts as the extreme);
    ``axis`` None: the index into the flattened ``arg``."""

    target: str
    kind: str
    arg: str
    axis: int | None
    keepdims: bool
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class CumSum:
    """``target = cumsum(arg, axis)``; ``reverse``: summed from the end of the axis (the adjoint of cumsum)."""

    target: str
    arg: str
    axis: int
    reverse: bool
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Concat:
    """``target = concatenate(args, axis)`` (``stack``: along a new axis), converted to ``dtype``."""

    target: str
    args: tuple[str, ...]
    axis: int
    stack: bool
    shape: Shape
    dtype: str
    note: str = ""


Stmt = Stmt | ArgReduce | CumSum | Concat


@dataclass(frozen=True)
class Size:
    """``target = prod(arg.shape[d] for d in axes)`` as a 0-d value of ``dtype``: a count read from the
    arrays at run time (``mean``'s ``1/n``), so kernel text does not depend on sizes. Reads only the
    shape of ``arg``, never its elements."""

    target: str
    arg: str
    axes: tuple[int, ...]
    shape: Shape
    dtype: str
    note: str = ""


Stmt = Stmt | Size
