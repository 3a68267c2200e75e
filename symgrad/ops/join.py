"""Joins and tilings: cat and stack (their adjoints are slices of the gradient) and repeat (its adjoint
sums the tiles back)."""
from __future__ import annotations

from typing import Any

import numpy as np

from codegen import ir

from ..core import dtypes
from ..core.graph import Node
from .base import A, OpDef, Shape, apply, call_expr, register

_ALL = ("s", None, None, None)


def _cast_back(piece: Node, x: Node) -> Node:
    """The slice of a (promoted) gradient for input ``x``, in ``x``'s dtype (torch's engine casts too)."""
    return piece if piece.dtype is x.dtype else apply("fused", piece, expr=A[0], dtype=x.dtype)


# --------------------------------------------------------------------------- cat

def joined(shapes: list[Shape]) -> list[int]:
    """The inputs cat joins: torch skips 1-d empty tensors (its legacy rule), unless all are."""
    return [i for i, s in enumerate(shapes) if tuple(s) != (0,)] or list(range(len(shapes)))


def _cat_infer(op: OpDef, *xs: Node, dim: int, out_dtype: str) -> Any:
    xs = tuple(xs[i] for i in joined([x.shape for x in xs]))
    shape = list(xs[0].shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    return tuple(shape), dtypes.from_any(out_dtype)


def _cat_eval(*xs: np.ndarray, dim: int, out_dtype: str) -> np.ndarray:
    xs = tuple(xs[i] for i in joined([x.shape for x in xs]))
    # C order whatever the operands' layout, as torch's (which has no channels-last tensors here)
    return np.ascontiguousarray(np.concatenate(xs, axis=dim, dtype=np.dtype(out_dtype), casting="unsafe"))


def _cat_vjp(node: Node, g: Node) -> tuple:
    dim, out, start = node.attr("dim"), [None] * len(node.inputs), 0
    for i in joined([x.shape for x in node.inputs]):  # a skipped input's gradient: zeros (empty)
        x = node.inputs[i]
        stop = start + x.shape[dim]
        if x.requires_grad:
            piece = apply("index", g, index=(_ALL,) * dim + (("s", start, stop, None),), fn="SliceBackward0")
            out[i] = _cast_back(piece, x)
        start = stop
    return tuple(out)


def _cat_lower(node: Node, target: str, args: list[str]) -> list:
    kept = tuple(args[i] for i in joined([x.shape for x in node.inputs]))
    return [ir.Concat(target, kept, node.attr("dim"), False, node.shape, node.dtype.np.name)]


cat = register(OpDef(
    "cat", "join", "CatBackward0", _cat_eval, _cat_infer, vjp=_cat_vjp, lower=_cat_lower,
    display=lambda node, ins: call_expr("cat", *ins, dim=node.attr("dim")),
    doc="cat(tensors, dim) in the promoted `out_dtype`; the adjoint slices the gradient", linear=True))


# --------------------------------------------------------------------------- stack

def _stack_infer(op: OpDef, *xs: Node, dim: int, out_dtype: str) -> Any:
    shape = list(xs[0].shape)
    shape.insert(dim, len(xs))
    return tuple(shape), dtypes.from_any(out_dtype)


def _stack_vjp(node: Node, g: Node) -> tuple:
    dim = node.attr("dim")
    return tuple(_cast_back(apply("index", g, index=(_ALL,) * dim + (("i", k),), fn="SelectBackward0"), x)
                 if x.requires_grad else None for k, x in enumerate(node.inputs))


def _stack_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Concat(target, tuple(args), node.attr("dim"), True, node.shape, node.dtype.np.name)]


stack = register(OpDef(
    "stack", "join", "StackBackward0",
    lambda *xs, dim, out_dtype: np.ascontiguousarray(np.stack(xs, axis=dim, dtype=np.dtype(out_dtype),
                                                                casting="unsafe")), _stack_infer,
    vjp=_stack_vjp, lower=_stack_lower,
    display=lambda node, ins: call_expr("stack", *ins, dim=node.attr("dim")),
    doc="stack(tensors, dim) along a new dim, in the promoted `out_dtype`; the adjoint selects from the gradient",
    linear=True))


# --------------------------------------------------------------------------- repeat

def _tiles(shape: Shape, repeats: tuple[int, ...]) -> tuple[Shape, Shape, Shape]:
    """(the input padded to len(repeats) dims, as (1, s) pairs, as (r, s) pairs)."""
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    return (padded, tuple(v for s in padded for v in (1, s)),
            tuple(v for r, s in zip(repeats, padded) for v in (r, s)))


def _repeat_infer(op: OpDef, a: Node, repeats: tuple[int, ...]) -> Any:
    padded, _, _ = _tiles(a.shape, repeats)
    return tuple(s * r for s, r in zip(padded, repeats)), a.dtype


def _repeat_vjp(node: Node, g: Node) -> tuple:
    a, reps = node.inputs[0], node.attr("repeats")
    padded, _, pairs = _tiles(a.shape, reps)
    summed = apply("sum", apply("reshape", g, shape=pairs), dims=tuple(range(0, 2 * len(reps), 2)), keepdim=False,
                   full=False)
    return (summed if summed.shape == a.shape else apply("reshape", summed, shape=a.shape),)


def _repeat_lower(node: Node, target: str, args: list[str]) -> list:
    # a tiling is a broadcast of the input with a size-1 dim before each of its dims, merged back
    dt = node.dtype.np.name
    _, ones, pairs = _tiles(node.inputs[0].shape, node.attr("repeats"))
    return [ir.Reshape(f"{target}_pairs", args[0], ones, dt),
            ir.Broadcast(f"{target}_tiles", f"{target}_pairs", pairs, dt),
            ir.Reshape(target, f"{target}_tiles", node.shape, dt)]


repeat = register(OpDef(
    "repeat", "shape", "RepeatBackward0", lambda a, repeats: np.tile(a, repeats), _repeat_infer,
    vjp=_repeat_vjp, lower=_repeat_lower,
    display=lambda node, ins: call_expr("repeat", ins[0], repeats=tuple(node.attr("repeats"))),
    doc="tile the tensor `repeats` times along each dim (new leading dims first)", linear=True))
