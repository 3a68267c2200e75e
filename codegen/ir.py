"""The neutral kernel IR: parameters, one statement per materialised value, named outputs.

Every statement is a frozen dataclass on the base ``Statement``: it defines ``target`` (the name of
the value it makes), ``shape``, ``dtype`` and ``note`` (a comment naming the node it comes from),
plus its own operands. ``Stmt`` is the union of them all and ``STATEMENTS`` the tuple; an emitter
dispatches on the statement's type through a table over ``STATEMENTS`` and raises ``Unsupported``
for a statement (or a form of one) it has no emission for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

Shape = tuple[int, ...]


class Unsupported(NotImplementedError):
    """An emitter has no emission for this IR (a statement type, or a form of one such as a batched
    matmul for numba): callers keep the kernel of another backend."""


class Statement:
    """The base of IR statements. Not a dataclass itself, so that each statement keeps its own
    positional field order; each defines the fields below."""

    __slots__ = ()
    target: str
    shape: Shape
    dtype: str
    note: str


def literal(text: str) -> str | None:
    """The number an operand that is not a name stands for (``lower`` passes Python numbers as
    ``numpy.asarray(2.0)`` or ``2.0``): its literal text, or None."""
    m = re.fullmatch(r"\s*(?:numpy\.asarray\()?\s*([-+0-9.eE]+|True|False)\s*\)?\s*", text)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Param:
    """A kernel input; ``index`` is its position in the argument list it is read from."""

    name: str
    index: int
    shape: Shape
    dtype: str
    group: str = "v"


@dataclass(frozen=True)
class Elementwise(Statement):
    """``target = expr`` where the free symbols of ``expr`` are earlier targets or params."""

    target: str
    expr: sp.Expr
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Reduce(Statement):
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
class Reshape(Statement):
    target: str
    arg: str
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Broadcast(Statement):
    target: str
    arg: str
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Transpose(Statement):
    target: str
    arg: str
    axes: tuple[int, ...]
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Index(Statement):
    """``target = arg[index]``; ``index`` entries: ("i", k) | ("s", start, stop, step) | ("n",) | ("e",)
    | ("a", values, shape) for an integer array."""

    target: str
    arg: str
    index: tuple
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class IndexAdd(Statement):
    """``target = zeros(shape); target[index] += arg`` (repeated integer indices accumulate)."""

    target: str
    arg: str
    index: tuple
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class MatMul(Statement):
    """``target = a @ b`` with numpy's matmul semantics (BLAS where it applies)."""

    target: str
    a: str
    b: str
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class ArgReduce(Statement):
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
class CumSum(Statement):
    """``target = cumsum(arg, axis)``; ``reverse``: summed from the end of the axis (the adjoint of cumsum)."""

    target: str
    arg: str
    axis: int
    reverse: bool
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Concat(Statement):
    """``target = concatenate(args, axis)`` (``stack``: along a new axis), converted to ``dtype``."""

    target: str
    args: tuple[str, ...]
    axis: int
    stack: bool
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Size(Statement):
    """``target = prod(arg.shape[d] for d in axes)`` as a 0-d value of ``dtype``: a count read from the
    arrays at run time (``mean``'s ``1/n``), so kernel text does not depend on sizes. Reads only the
    shape of ``arg``, never its elements."""

    target: str
    arg: str
    axes: tuple[int, ...]
    shape: Shape
    dtype: str
    note: str = ""


@dataclass(frozen=True)
class Scan(Statement):
    """``target`` = a loop running the kernel ``body`` ``length`` times (``reverse``: from the last step).

    ``body`` reads the groups ``carry`` (the flat carry, ``carry_width`` elements), ``row`` (row ``k`` of ``xs``),
    ``step`` (the 0-d int64 ``start + k``) and ``const`` (``consts``, in order), and returns the new carry and, when
    ``y_width``, the step's flat output. ``target`` is flat: the final carry, then the outputs stacked by step
    (``length × y_width``, row ``k`` from step ``k`` in either direction). A while loop has ``length`` None and
    a ``cond`` kernel (same groups, one 0-d bool output): the loop runs while it holds, without outputs. With
    ``acc_width``, the carry's last ``acc_width`` elements are running sums: ``body`` returns the carry's other
    elements, then the increment to add to the sums in place, then the step's output."""

    target: str
    body: Kernel
    init: str
    xs: str | None
    consts: tuple[str, ...]
    length: int | None
    reverse: bool
    start: int
    carry_width: int
    y_width: int
    shape: Shape
    dtype: str
    note: str = ""
    cond: Kernel | None = None
    acc_width: int = 0


@dataclass(frozen=True)
class Call(Statement):
    """``target = codegen.arrayfns.<fn>(*args, **dict(attrs))`` as ``dtype``: a whole-array numpy function (linear
    algebra, special functions). Only the numpy emitter prints it (``NUMPY_ONLY``); the others raise ``Unsupported``."""

    target: str
    fn: str
    args: tuple[str, ...]
    attrs: tuple
    shape: Shape
    dtype: str
    note: str = ""


Stmt = (Elementwise | Reduce | Reshape | Broadcast | Transpose | Index | IndexAdd | MatMul | ArgReduce | CumSum
        | Concat | Size | Scan | Call)

#: every statement type, in the order of ``Stmt``
STATEMENTS: tuple[type[Statement], ...] = Stmt.__args__
#: statement types only the numpy emitter takes (kernels holding one keep the numpy kernel)
NUMPY_ONLY: tuple[type[Statement], ...] = (Call,)


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
