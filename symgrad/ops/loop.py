"""Loops: the ``scan`` op, one node for a whole loop whose step is a traced subgraph (a ``Body``).

A while loop is a scan node with ``length`` None and a ``cond`` in its body (no per-step outputs).

A scan node's inputs are the packed initial carry (a flat vector of ``Wc`` elements), the stacked per-step
inputs (``length × Wx``, only when the body reads one) and the closed-over values the step reads (``consts``,
their own shapes). Its value is flat too: the final carry, then the per-step outputs stacked in step order
(``length × Wy``, row ``k`` from step ``k`` also when the loop runs in reverse)::

    c = init
    for k in range(length) (or reversed):
        c, y[k] = body(c, xs[k], start + k, *consts)
    value = concat(c, y.ravel())

Everything around the node (packing carries, slicing them back out) is ordinary graph ops. The derivative
rules live in ``derive/loops.py`` (they differentiate the body); lowering and evaluation in
``kernels/loops.py``: the step becomes a kernel of its own and the loop a real loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import sympy as sp

from ..core import dtypes
from ..core.graph import Node
from .base import OpDef, Shape, call_expr, register


@dataclass(eq=False)
class Body:
    """One traced loop step over leaf nodes.

    ``carry`` (``(Wc,)``), ``x`` (``(Wx,)`` or None), ``index`` (0-d int64, the step's ``start + k``, or None)
    and ``consts`` (one leaf per closed-over value, in the scan node's input order) are leaves; ``new_carry``
    (``(Wc,)``, the carry's dtype) and ``y`` (``(Wy,)`` or None) are computed from them. ``derived`` names the
    body this one extends and how (``("history", base)``: ``y`` also stores the carry the step started from;
    ``("tangent", base)``: carry and ``y`` carry tangents after the primal values), so that a loop and its
    extension over the same inputs run once. ``names`` describes the packed carry for printed recurrences:
    ``(name, shape)`` per part, in packing order.
    """

    carry: Node
    x: Node | None
    index: Node | None
    consts: tuple[Node, ...]
    new_carry: Node
    y: Node | None
    derived: tuple[str, Body] | None = None
    names: tuple[tuple[str, Shape], ...] = ()
    label: str = "step"
    cond: Node | None = None        # while_loop: the 0-d bool ``cond_fun(carry)``; the loop runs while it holds
    #: ``(head, next_head, delta)`` when the carry's elements from ``head`` on are running sums:
    #: ``new_carry == cat(next_head, carry[head:] + delta)`` with ``delta`` not reading them (adjoint steps);
    #: kernels then add ``delta`` in place instead of rebuilding the carry
    accumulates: tuple[int, Node, Node] | None = None
    display: dict | None = None     # how formulas print the step: ``{"carry", "ins", "outs", "consts", "note"}``
    memo: dict = field(default_factory=dict, repr=False)   # derived bodies, by what derives them

    @property
    def carry_width(self) -> int:
        return self.carry.shape[0]

    @property
    def x_width(self) -> int:
        return self.x.shape[0] if self.x is not None else 0

    @property
    def y_width(self) -> int:
        return self.y.shape[0] if self.y is not None else 0

    def outputs(self) -> list[Node]:
        return [self.new_carry] + ([self.y] if self.y is not None else [])

    def __repr__(self) -> str:
        return f"<loop body {self.label}: carry {self.carry_width}, x {self.x_width}, y {self.y_width}>"


def split_inputs(node: Node) -> tuple[Node, Node | None, tuple[Node, ...]]:
    """A scan node's (init, xs or None, consts)."""
    body: Body = node.attr("body")
    if body.x is not None:
        return node.inputs[0], node.inputs[1], node.inputs[2:]
    return node.inputs[0], None, node.inputs[1:]


def _infer(op: OpDef, *inputs: Node, body: Body, length: int | None, reverse: bool, start: int
           ) -> tuple[Shape, Any]:
    init = inputs[0]
    if init.shape != (body.carry_width,):
        raise ValueError(f"scan: the initial carry has shape {init.shape}, the body expects ({body.carry_width},)")
    return (body.carry_width + (length or 0) * body.y_width,), body.new_carry.dtype


#: evaluates a scan node eagerly (``kernels/loops.py`` installs it: the step runs as a generated kernel)
EVALUATE: list[Callable[..., Any]] = []


def _eval(*arrays: Any, body: Body, length: int | None, reverse: bool, start: int) -> Any:
    if not EVALUATE:
        raise RuntimeError("scan: no evaluator installed (import symgrad.kernels)")
    return EVALUATE[0](arrays, body, length, reverse, start)


def _display(node: Node, ins: list) -> sp.Expr:
    body: Body = node.attr("body")
    if body.cond is not None:
        return call_expr("while_loop", *ins[:1])
    kind = "scan" if body.x is not None or body.y is not None else "loop"
    return call_expr(kind, *ins[:1], steps=sp.Integer(node.attr("length")),
                     reverse=True if node.attr("reverse") else None)


def pack_dtype(dts: list[dtypes.DType]) -> dtypes.DType:
    """The dtype a loop carries its packed state in: float32 when every part is float32, else float64
    (integer and bool parts are exact in float64 up to 2**53)."""
    return dtypes.float32 if dts and all(d is dtypes.float32 for d in dts) else dtypes.float64


scan = register(OpDef(
    "scan", "loop", "ScanBackward0", _eval, _infer, display=_display, sparsity="dense",
    doc="a whole loop (fori_loop / scan / while_loop with a fixed trip count): the step is a traced Body"))
