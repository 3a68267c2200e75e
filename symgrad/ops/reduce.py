"""Reductions: sum and mean over all or some dims (``keepdim``), and ``sum_to``, broadcasting's adjoint."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from codegen import ir

from .. import dtypes
from ..graph import Node
from .base import OpDef, Shape, apply, register


def _reduced_shape(shape: Shape, dims: tuple[int, ...], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _sum_infer(op: OpDef, a: Node, dims: tuple[int, ...], keepdim: bool, full: bool = True) -> Any:
    dt = a.dtype if a.dtype.is_floating_point else dtypes.int64
    return _reduced_shape(a.shape, dims, keepdim), dt


def _mean_infer(op: OpDef, a: Node, dims: tuple[int, ...], keepdim: bool, full: bool = True) -> Any:
    return _reduced_shape(a.shape, dims, keepdim), a.dtype


def _unreduce(g: Node, node: Node) -> Node:
    """The adjoint of a reduction, broadcast back over the reduced dims."""
    a = node.inputs[0]
    if not node.attr("keepdim"):
        g = apply("reshape", g, shape=_reduced_shape(a.shape, node.attr("dims"), True))
    return expand(g, a.shape)


def _sum_vjp(node: Node, g: Node) -> tuple:
    return (_unreduce(g, node),)


def _mean_vjp(node: Node, g: Node) -> tuple:
    a = node.inputs[0]
    n = math.prod(a.shape[d] for d in node.attr("dims"))
    scaled = apply("fused", g, expr=apply_scale_expr(n), dtype=g.dtype)
    return (_unreduce(scaled, node),)


def apply_scale_expr(n: int) -> Any:
    from .base import A
    return A[0] / n


def _reduce_lower(kind: str):
    def lower(node: Node, target: str, args: list[str]) -> list:
        return [ir.Reduce(target, kind, args[0], node.attr("dims"), node.attr("keepdim"), node.shape,
                          node.dtype.np.name)]
    return lower


def _sum_eval(a: np.ndarray, dims: tuple[int, ...], keepdim: bool, full: bool = True) -> np.ndarray:
    dt = None if a.dtype.kind == "f" else np.int64
    return np.asarray(np.sum(a, axis=dims, keepdims=keepdim, dtype=dt))


def _mean_eval(a: np.ndarray, dims: tuple[int, ...], keepdim: bool, full: bool = True) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(np.mean(a, axis=dims, keepdims=keepdim), dtype=a.dtype)


sum_ = register(OpDef("sum", "reduce", lambda at: "SumBackward0" if at["full"] else "SumBackward1",
                      _sum_eval, _sum_infer, vjp=_sum_vjp, lower=_reduce_lower("sum")))
mean = register(OpDef("mean", "reduce", lambda at: "MeanBackward0" if at["full"] else "MeanBackward1",
                      _mean_eval, _mean_infer, vjp=_mean_vjp, lower=_reduce_lower("mean")))


# --------------------------------------------------------------------------- broadcasting and its adjoint

def sum_to_axes(shape: Shape, target: Shape) -> tuple[tuple[int, ...], Shape]:
    """Axes of ``shape`` to sum (keepdims) so that the result reshapes to ``target``."""
    lead = len(shape) - len(target)
    axes = tuple(range(lead)) + tuple(lead + i for i, t in enumerate(target) if t == 1 and shape[lead + i] != 1)
    return axes, target


def _sum_to_eval(a: np.ndarray, shape: Shape) -> np.ndarray:
    axes, _ = sum_to_axes(a.shape, shape)
    return np.sum(a, axis=axes, keepdims=True).reshape(shape) if axes else a.reshape(shape)


def _sum_to_infer(op: OpDef, a: Node, shape: Shape) -> Any:
    return tuple(shape), a.dtype


def _sum_to_lower(node: Node, target: str, args: list[str]) -> list:
    axes, shape = sum_to_axes(node.inputs[0].shape, node.shape)
    dt = node.dtype.np.name
    if not axes:
        return [ir.Reshape(target, args[0], shape, dt)]
    kept = tuple(1 if i in axes else s for i, s in enumerate(node.inputs[0].shape))
    out = [ir.Reduce(target, "sum", args[0], axes, True, kept, dt)]
    if kept != shape:
        out.append(ir.Reshape(target, target, shape, dt))
    return out


sum_to = register(OpDef("sum_to", "reduce", "SumBackward1", _sum_to_eval, _sum_to_infer,
                        vjp=lambda node, g: (expand(g, node.inputs[0].shape),), lower=_sum_to_lower,
                        doc="sum over broadcast dims down to `shape` (the adjoint of expand)"))


def _expand_infer(op: OpDef, a: Node, shape: Shape) -> Any:
    return tuple(shape), a.dtype


def _expand_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Broadcast(target, args[0], node.shape, node.dtype.np.name)]


expand_op = register(OpDef("expand", "shape", "ExpandBackward0", lambda a, shape: np.broadcast_to(a, shape),
                           _expand_infer, vjp=lambda node, g: (sum_to_node(g, node.inputs[0].shape),),
                           lower=_expand_lower, view=True))


def expand(g: Node, shape: Shape) -> Node:
    return g if g.shape == tuple(shape) else apply(expand_op, g, shape=tuple(shape))


def sum_to_node(g: Node, shape: Shape) -> Node:
    return g if g.shape == tuple(shape) else apply(sum_to, g, shape=tuple(shape))
