"""Reductions: sum, mean, prod, max/min/amax/amin (and argmax/argmin) over all or some dims (``keepdim``),
``sum_to`` (broadcasting's adjoint) and the cumsum scan.

Eagerly, ``sum`` / ``mean`` / ``sum_to`` / ``prod`` / ``cumsum`` round as torch's CPU kernels do (``codegen.runtime``:
torch's summation and multiplication order, float32 running sums in float64); compiled kernels keep their own order.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy as sp

from codegen import ir, runtime
from codegen.functions import IsNan

from ..core import dtypes, ranges
from ..core.graph import Node
from .base import A, OpDef, Shape, apply, call_expr, dims_text, register
from .display import MeanOf, SumOf

runtime.set_thread_count(ranges.get_num_threads)  # torch splits large full reductions over its threads


def _reduced_shape(shape: Shape, dims: tuple[int, ...], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _sum_infer(op: OpDef, a: Node, dims: tuple[int, ...], keepdim: bool, full: bool = True, fn: str = "") -> Any:
    dt = a.dtype if a.dtype.is_floating_point else dtypes.int64
    return _reduced_shape(a.shape, dims, keepdim), dt


def _mean_infer(op: OpDef, a: Node, dims: tuple[int, ...], keepdim: bool, full: bool = True, fn: str = "") -> Any:
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
    # the count is a node reading the input's shape at run time, not a literal: one kernel text for all sizes
    n = apply(numel, node.inputs[0], dims=node.attr("dims"))
    scaled = apply("fused", g, n, expr=A[0] / A[1], dtype=g.dtype)
    return (_unreduce(scaled, node),)


def _numel_count(shape: Shape, dims: tuple[int, ...]) -> int:
    return math.prod(shape[d] for d in dims)


def _numel_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Size(target, args[0], node.attr("dims"), (), node.dtype.np.name)]


#: the number of elements over ``dims`` of its input, as a 0-d value of the input's (float) dtype; it
#: reads only the input's shape (``autodiff`` does not count it as a saved value, as torch's mean saves none)
numel = register(OpDef("numel", "reduce", None,
                       lambda a, dims: np.asarray(_numel_count(a.shape, dims), dtype=a.dtype),
                       lambda op, a, dims: ((), a.dtype), vjp=lambda node, g: (None,), lower=_numel_lower,
                       diff_args=(), display=lambda node, ins: sp.Integer(_numel_count(node.inputs[0].shape,
                                                                                       node.attr("dims"))),
                       doc="the element count over `dims` of the input (mean's 1/n), read from its shape"))


def _reduce_lower(kind: str):
    def lower(node: Node, target: str, args: list[str]) -> list:
        return [ir.Reduce(target, kind, args[0], node.attr("dims"), node.attr("keepdim"), node.shape,
                          node.dtype.np.name)]
    return lower


def _sum_eval(a: np.ndarray, dims: tuple[int, ...], keepdim: bool, full: bool = True, fn: str = "") -> np.ndarray:
    return runtime.torch_sum(a, dims, keepdim)


def _mean_eval(a: np.ndarray, dims: tuple[int, ...], keepdim: bool, full: bool = True, fn: str = ""
               ) -> np.ndarray:
    n = 1
    for d in dims:
        n *= a.shape[d]
    if n and type(a) is np.ndarray and a.dtype.type in (np.float32, np.float64):
        return runtime.torch_mean(a, dims, keepdim)
    with np.errstate(all="ignore"):  # an empty slice takes np.mean: its warning
        return np.asarray(np.mean(a, axis=dims, keepdims=keepdim), dtype=a.dtype)


def show_reduction(node: Node, ins: list, dims: tuple[int, ...], full: bool, mean: bool) -> sp.Expr:
    """A ``sum`` / ``mean`` over ``dims`` of ``ins[0]``, kept explicit (dims shown unless it reduces everything)."""
    if not dims:
        return ins[0]
    if ins[0].is_Number:  # a reduction of a constant (the broadcast seed of a gradient)
        count = 1 if mean else math.prod(node.inputs[0].shape[d] for d in dims)
        return ins[0] * count
    cls = MeanOf if mean else SumOf
    if full or len(dims) == node.inputs[0].ndim:
        return cls(ins[0])
    return cls(ins[0], sp.Tuple(*dims))


def _show_sum(node: Node, ins: list) -> sp.Expr:
    return show_reduction(node, ins, node.attr("dims"), node.attr("full"), mean=False)


def _show_mean(node: Node, ins: list) -> sp.Expr:
    return show_reduction(node, ins, node.attr("dims"), node.attr("full"), mean=True)


def _show_sum_to(node: Node, ins: list) -> sp.Expr:
    return show_reduction(node, ins, sum_to_axes(node.inputs[0].shape, node.shape)[0], False, mean=False)


#: ``fn``: the grad_fn name of a composite whose last node is the reduction (``MseLossBackward0``)
sum_ = register(OpDef("sum", "reduce", lambda at: at.get("fn") or ("SumBackward0" if at["full"] else "SumBackward1"),
                      _sum_eval, _sum_infer, vjp=_sum_vjp, lower=_reduce_lower("sum"), linear=True,
                      display=_show_sum))
mean = register(OpDef("mean", "reduce", lambda at: at.get("fn") or ("MeanBackward0" if at["full"] else "MeanBackward1"),
                      _mean_eval, _mean_infer, vjp=_mean_vjp, lower=_reduce_lower("mean"), linear=True,
                      display=_show_mean))


# --------------------------------------------------------------------------- broadcasting and its adjoint

def sum_to_axes(shape: Shape, target: Shape) -> tuple[tuple[int, ...], Shape]:
    """Axes of ``shape`` to sum (keepdims) so that the result reshapes to ``target``."""
    lead = len(shape) - len(target)
    axes = tuple(range(lead)) + tuple(lead + i for i, t in enumerate(target) if t == 1 and shape[lead + i] != 1)
    return axes, target


def _sum_to_eval(a: np.ndarray, shape: Shape) -> np.ndarray:
    axes, _ = sum_to_axes(a.shape, shape)  # torch's at::sum_to: one sum over all those dims, kept
    return runtime.torch_sum(a, axes, True).reshape(shape) if axes else a.reshape(shape)


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
                        doc="sum over broadcast dims down to `shape` (the adjoint of expand)",
                        linear=True, sparsity="sum_to", display=_show_sum_to))


def _expand_infer(op: OpDef, a: Node, shape: Shape) -> Any:
    return tuple(shape), a.dtype


def _expand_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Broadcast(target, args[0], node.shape, node.dtype.np.name)]


expand_op = register(OpDef("expand", "shape", "ExpandBackward0", lambda a, shape: np.broadcast_to(a, shape),
                           _expand_infer, vjp=lambda node, g: (sum_to_node(g, node.inputs[0].shape),),
                           lower=_expand_lower, view=True, linear=True))


def expand(g: Node, shape: Shape) -> Node:
    return g if g.shape == tuple(shape) else apply(expand_op, g, shape=tuple(shape))


def sum_to_node(g: Node, shape: Shape) -> Node:
    return g if g.shape == tuple(shape) else apply(sum_to, g, shape=tuple(shape))


# --------------------------------------------------------------------------- max / min / amax / amin / argmax / argmin

def _keep(x: Node, node: Node) -> Node:
    """``x`` (shaped as ``node``, a reduction of ``node.inputs[0]``) with its reduced dims kept as size 1."""
    shape = _reduced_shape(node.inputs[0].shape, node.attr("dims"), True)
    return x if x.shape == shape else apply("reshape", x, shape=shape)


def _is_extreme(x: sp.Expr, m: sp.Expr, nan_aware: bool) -> Any:
    """``x`` is the reduction's extreme ``m`` (with ``nan_aware``: or both are NaN, as torch's NaN maximum)."""
    return (sp.Eq(x, m) | (IsNan(x) & IsNan(m))) if nan_aware else sp.Eq(x, m)


def _extreme_infer(op: OpDef, a: Node, dims: tuple[int, ...], keepdim: bool, full: bool = False) -> Any:
    return _reduced_shape(a.shape, dims, keepdim), a.dtype


def _extreme_eval(fn: Any) -> Any:
    def ev(a: np.ndarray, dims: tuple[int, ...], keepdim: bool, full: bool = False) -> np.ndarray:
        return np.asarray(fn(a, axis=dims, keepdims=keepdim))
    return ev


def _spread_vjp(node: Node, g: Node) -> tuple:
    """amax / amin / full max() / min(): the gradient shared evenly by the elements equal to the result.

    torch: ``g / count * (x == result)``; a full ``max()`` also counts NaNs as equal to a NaN result
    (torch's ``evenly_distribute_backward``), ``amax`` does not (a NaN result gives NaN gradients).
    """
    a = node.inputs[0]
    m = _keep(node, node)
    hit = _is_extreme(A[0], A[1], node.attr("full"))
    mask = apply("fused", a, m, expr=sp.Piecewise((1, hit), (0, True)), dtype=node.dtype)
    count = apply("sum", mask, dims=node.attr("dims"), keepdim=True, full=False)
    return (apply("fused", _keep(g, node), mask, count, expr=A[0] * A[1] / A[2], dtype=node.dtype),)


def _first_vjp(node: Node, g: Node) -> tuple:
    """max(dim) / min(dim): the gradient goes to the returned index (input 1, the argmax), as
    torch's scatter of ``g`` at ``indices``; like torch it reads only the indices."""
    a, idx = node.inputs
    dims = node.attr("dims")
    ones = apply("expand", apply("scalar", value=1), shape=a.shape)
    position = apply("cumsum", ones, dim=dims[0] if dims else 0, reverse=False)  # 1, 2, ... along the dim
    at_index = sp.Piecewise((A[0], sp.Eq(A[1], A[2] + 1)), (0, True))
    return (apply("fused", _keep(g, node), position, _keep(idx, node), expr=at_index, dtype=node.dtype), None)


def _first_infer(op: OpDef, a: Node, idx: Node, dims: tuple[int, ...], keepdim: bool) -> Any:
    return _reduced_shape(a.shape, dims, keepdim), a.dtype


def _first_eval(fn: Any) -> Any:
    def ev(a: np.ndarray, idx: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        return np.asarray(fn(a, axis=dims, keepdims=keepdim))
    return ev


def _reduction_lower(kind: str) -> Any:
    def lower(node: Node, target: str, args: list[str]) -> list:
        return [ir.Reduce(target, kind, args[0], node.attr("dims"), node.attr("keepdim"), node.shape,
                          node.dtype.np.name)]
    return lower


def _reduction_display(label: Any) -> Any:
    def display(node: Node, ins: list) -> sp.Expr:
        name = label(node) if callable(label) else label
        dims, a = node.attr("dims"), node.inputs[0]
        whole = node.attr("full") or (len(dims) == a.ndim and not node.attr("keepdim") and name not in ("max", "min"))
        return call_expr(name, ins[0], dim=None if whole or not dims else dims_text(dims),
                         keepdim=True if node.attr("keepdim") else None)
    return display


amax = register(OpDef("amax", "reduce", lambda at: "MaxBackward1" if at.get("full") else "AmaxBackward0",
                      _extreme_eval(np.max), _extreme_infer, vjp=_spread_vjp, lower=_reduction_lower("max"),
                      display=_reduction_display(lambda n: "max" if n.attr("full") else "amax"),
                      doc="amax(dim, keepdim) and the full max(); ties share the gradient evenly"))
amin = register(OpDef("amin", "reduce", lambda at: "MinBackward1" if at.get("full") else "AminBackward0",
                      _extreme_eval(np.min), _extreme_infer, vjp=_spread_vjp, lower=_reduction_lower("min"),
                      display=_reduction_display(lambda n: "min" if n.attr("full") else "amin"),
                      doc="amin(dim, keepdim) and the full min(); ties share the gradient evenly"))
max_ = register(OpDef("max", "reduce", "MaxBackward0", _first_eval(np.max), _first_infer, vjp=_first_vjp,
                      lower=_reduction_lower("max"), display=_reduction_display("max"), diff_args=(0,),
                      doc="the values of max(dim, keepdim) of input 0; input 1 is the indices returned with them "
                          "(argmax: the first maximum), where the gradient goes"))
min_ = register(OpDef("min", "reduce", "MinBackward0", _first_eval(np.min), _first_infer, vjp=_first_vjp,
                      lower=_reduction_lower("min"), display=_reduction_display("min"), diff_args=(0,),
                      doc="the values of min(dim, keepdim) of input 0; input 1 is the indices returned with them "
                          "(argmin: the first minimum), where the gradient goes"))


def _arg_shape(shape: Shape, dim: int | None, keepdim: bool) -> Shape:
    if not shape:
        return ()
    if dim is None:
        return (1,) * len(shape) if keepdim else ()
    return _reduced_shape(shape, (dim,), keepdim)


def _arg_infer(op: OpDef, a: Node, dim: int | None, keepdim: bool) -> Any:
    return _arg_shape(a.shape, dim, keepdim), dtypes.int64


def _arg_eval(fn: Any) -> Any:
    def ev(a: np.ndarray, dim: int | None, keepdim: bool) -> np.ndarray:
        if a.ndim == 0:
            return np.zeros((), np.int64)
        return np.asarray(fn(a, axis=dim, keepdims=keepdim), dtype=np.int64)
    return ev


def _arg_lower(kind: str) -> Any:
    def lower(node: Node, target: str, args: list[str]) -> list:
        if node.inputs[0].ndim == 0:
            return [ir.Elementwise(target, sp.Integer(0), (), "int64")]
        return [ir.ArgReduce(target, kind, args[0], node.attr("dim"), node.attr("keepdim"), node.shape, "int64")]
    return lower


def _arg_display(name: str) -> Any:
    def display(node: Node, ins: list) -> sp.Expr:
        return call_expr(name, ins[0], dim=node.attr("dim"), keepdim=True if node.attr("keepdim") else None)
    return display


argmax = register(OpDef("argmax", "reduce", None, _arg_eval(np.argmax), _arg_infer, vjp=lambda node, g: (None,),
                        lower=_arg_lower("argmax"), diff_args=(), display=_arg_display("argmax"),
                        doc="index of the first maximum (NaN counts as the maximum), int64, no gradient",
                        sparsity="none"))
argmin = register(OpDef("argmin", "reduce", None, _arg_eval(np.argmin), _arg_infer, vjp=lambda node, g: (None,),
                        lower=_arg_lower("argmin"), diff_args=(), display=_arg_display("argmin"),
                        doc="index of the first minimum (NaN counts as the minimum), int64, no gradient",
                        sparsity="none"))


# --------------------------------------------------------------------------- prod

def _prod_eval(a: np.ndarray, dims: tuple[int, ...], keepdim: bool, full: bool = True) -> np.ndarray:
    return runtime.torch_prod(a, dims, keepdim)


def _prod_vjp(node: Node, g: Node) -> tuple:
    """d prod / d x_i = the product of the others, exactly, with no division by zero.

    As torch, ``result / x_i`` where that is exact: wherever ``x_i != 0`` (with zeros in the slice
    the result is 0, and so is that product). At a zero, with ``p`` the product of the non-zero
    elements and ``s`` the sum of the zero elements (0, but its derivative is 1 at each zero): ``p``
    if it is the only zero, ``p * (s - x_i)`` (0) if there are two, else 0. These factors keep the
    rule's own derivatives exact (prod's second derivatives, as torch's double backward).
    """
    a = node.inputs[0]
    dims = node.attr("dims")
    if all(a.shape[d] == 1 for d in dims):  # one element per slice (a 0-d input too): prod is the identity
        return (apply("reshape", g, shape=a.shape) if g.shape != a.shape else g,)
    zero = sp.Eq(A[0], 0)

    def over_slices(op: str, expr: sp.Expr) -> Node:
        return apply(op, apply("fused", a, expr=expr, dtype=node.dtype), dims=dims, keepdim=True, full=False)

    zeros = over_slices("sum", sp.Piecewise((1, zero), (0, True)))
    nonzero = over_slices("prod", sp.Piecewise((1, zero), (A[0], True)))
    zero_sum = over_slices("sum", sp.Piecewise((A[0], zero), (0, True)))
    # ``result / input`` as one division, a factor of its own (a Piecewise: no rewrite merges it into the product),
    # so eagerly the rule rounds as torch's ``grad * (result / input)``
    ratio = apply("fused", _keep(node, node), a, expr=sp.Piecewise((A[0] / A[1], sp.Ne(A[1], 0)), (A[0], True)),
                  dtype=node.dtype)
    g_, q, x, z, p, s = A[:6]
    rule = sp.Piecewise((g_ * q, sp.Ne(x, 0)),
                        (g_ * p, sp.Eq(z, 1)),
                        (g_ * p * (s - x), sp.Eq(z, 2)),
                        (0, True))
    return (apply("fused", _keep(g, node), ratio, a, zeros, nonzero, zero_sum, expr=rule, dtype=node.dtype),)


prod = register(OpDef("prod", "reduce", lambda at: "ProdBackward0" if at["full"] else "ProdBackward1", _prod_eval,
                      _sum_infer, vjp=_prod_vjp, lower=_reduction_lower("prod"), display=_reduction_display("prod"),
                      doc="product over all dims (full) or one dim; torch's gradient rules at zeros"))


# --------------------------------------------------------------------------- cumsum

def _cumsum_eval(a: np.ndarray, dim: int, reverse: bool = False) -> np.ndarray:
    return runtime.torch_cumsum(a, dim, reverse)


def _cumsum_infer(op: OpDef, a: Node, dim: int, reverse: bool = False) -> Any:
    return a.shape, a.dtype if a.dtype.is_floating_point else dtypes.int64


def _cumsum_lower(node: Node, target: str, args: list[str]) -> list:
    dt = node.dtype.np.name
    if node.ndim == 0:
        return [ir.Elementwise(target, sp.Symbol(args[0], real=True), (), dt)]
    return [ir.CumSum(target, args[0], node.attr("dim"), node.attr("reverse"), node.shape, dt)]


cumsum = register(OpDef(
    "cumsum", "reduce", "CumsumBackward0", _cumsum_eval, _cumsum_infer,
    vjp=lambda node, g: (apply("cumsum", g, dim=node.attr("dim"), reverse=not node.attr("reverse")),),
    lower=_cumsum_lower,
    display=lambda node, ins: call_expr("cumsum", ins[0], dim=node.attr("dim"),
                                        reverse=True if node.attr("reverse") else None),
    doc="running sum along `dim` (`reverse`: from the end, the adjoint of cumsum)", linear=True, sparsity="cumsum"))
