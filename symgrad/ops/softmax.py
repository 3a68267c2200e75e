"""logsumexp, softmax, log_softmax: numerically stable (the max is subtracted first), lowered to
max/sum reductions around elementwise statements; their VJPs are fused expressions and sums."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from codegen import ir
from codegen.functions import IsInf

from ..core.graph import Node
from .base import A, OpDef, apply, call_expr, dims_text, register
from .reduce import _reduced_shape


def _axes(node: Node) -> tuple[int, ...]:
    return node.attr("dims")


def _keep(x: Node, node: Node) -> Node:
    shape = _reduced_shape(node.inputs[0].shape, _axes(node), True)
    return x if x.shape == shape else apply("reshape", x, shape=shape)


def _shift(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """The max over ``dims`` (kept), with infinite maxima replaced by 0 as torch's logsumexp does."""
    m = np.max(a, axis=dims, keepdims=True, initial=-np.inf)
    return np.where(np.isinf(m), np.zeros((), a.dtype), m)


def _sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


# --------------------------------------------------------------------------- logsumexp

def _lse_eval(a: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        m = _shift(a, dims)
        out = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
    return np.asarray(out if keepdim else np.reshape(out, _reduced_shape(a.shape, dims, False)), dtype=a.dtype)


def _lse_infer(op: OpDef, a: Node, dims: tuple[int, ...], keepdim: bool) -> Any:
    return _reduced_shape(a.shape, dims, keepdim), a.dtype


def _lse_vjp(node: Node, g: Node) -> tuple:
    # torch: grad * exp(x - result)
    a = node.inputs[0]
    return (apply("fused", _keep(g, node), a, _keep(node, node), expr=A[0] * sp.exp(A[1] - A[2]),
                  dtype=node.dtype),)


def _lse_lower(node: Node, target: str, args: list[str]) -> list:
    a, dims, dt = node.inputs[0], _axes(node), node.dtype.np.name
    keep = _reduced_shape(a.shape, dims, True)
    x, m, c, s = _sym(args[0]), _sym(f"{target}_max"), _sym(f"{target}_shift"), _sym(f"{target}_sum")
    last = target if node.attr("keepdim") else f"{target}_keep"
    out = [ir.Reduce(m.name, "max", args[0], dims, True, keep, dt),
           ir.Elementwise(c.name, sp.Piecewise((0, IsInf(m)), (m, True)), keep, dt),
           ir.Elementwise(f"{target}_exp", sp.exp(x - c), a.shape, dt),
           ir.Reduce(s.name, "sum", f"{target}_exp", dims, True, keep, dt),
           ir.Elementwise(last, sp.log(s) + c, keep, dt)]
    if last != target:
        out.append(ir.Reshape(target, last, node.shape, dt))
    return out


logsumexp = register(OpDef(
    "logsumexp", "reduce", "LogsumexpBackward0", _lse_eval, _lse_infer, vjp=_lse_vjp, lower=_lse_lower,
    display=lambda node, ins: call_expr("logsumexp", ins[0], dim=dims_text(_axes(node)) if _axes(node) else None,
                                        keepdim=True if node.attr("keepdim") else None),
    doc="log(sum(exp(x), dims)), computed as log(sum(exp(x - max))) + max"))


# --------------------------------------------------------------------------- softmax / log_softmax

def _same_infer(op: OpDef, a: Node, dims: tuple[int, ...]) -> Any:
    return a.shape, a.dtype


def _softmax_eval(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(a - np.max(a, axis=dims, keepdims=True, initial=-np.inf))
        return np.asarray(e / np.sum(e, axis=dims, keepdims=True), dtype=a.dtype)


def _softmax_vjp(node: Node, g: Node) -> tuple:
    # torch's _softmax_backward_data: y * (g - sum(g * y))
    gy = apply("sum", apply("fused", g, node, expr=A[0] * A[1], dtype=node.dtype), dims=_axes(node), keepdim=True,
               full=False)
    return (apply("fused", node, g, gy, expr=A[0] * (A[1] - A[2]), dtype=node.dtype),)


def _softmax_lower(node: Node, target: str, args: list[str]) -> list:
    dims, dt, shape = _axes(node), node.dtype.np.name, node.shape
    keep = _reduced_shape(shape, dims, True)
    x, m, e, s = _sym(args[0]), _sym(f"{target}_max"), _sym(f"{target}_exp"), _sym(f"{target}_sum")
    return [ir.Reduce(m.name, "max", args[0], dims, True, keep, dt),
            ir.Elementwise(e.name, sp.exp(x - m), shape, dt),
            ir.Reduce(s.name, "sum", e.name, dims, True, keep, dt),
            ir.Elementwise(target, e / s, shape, dt)]


def _log_softmax_eval(a: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        t = a - np.max(a, axis=dims, keepdims=True, initial=-np.inf)
        return np.asarray(t - np.log(np.sum(np.exp(t), axis=dims, keepdims=True)), dtype=a.dtype)


def _log_softmax_vjp(node: Node, g: Node) -> tuple:
    # torch's _log_softmax_backward_data: g - exp(y) * sum(g)
    gs = apply("sum", g, dims=_axes(node), keepdim=True, full=False)
    return (apply("fused", g, node, gs, expr=A[0] - sp.exp(A[1]) * A[2], dtype=node.dtype),)


def _log_softmax_lower(node: Node, target: str, args: list[str]) -> list:
    dims, dt, shape = _axes(node), node.dtype.np.name, node.shape
    keep = _reduced_shape(shape, dims, True)
    x, m, s = _sym(args[0]), _sym(f"{target}_max"), _sym(f"{target}_sum")
    return [ir.Reduce(m.name, "max", args[0], dims, True, keep, dt),
            ir.Elementwise(f"{target}_exp", sp.exp(x - m), shape, dt),
            ir.Reduce(s.name, "sum", f"{target}_exp", dims, True, keep, dt),
            ir.Elementwise(target, x - m - sp.log(s), shape, dt)]


def _dim_display(name: str) -> Any:
    def display(node: Node, ins: list) -> sp.Expr:
        return call_expr(name, ins[0], dim=_axes(node)[0] if _axes(node) else 0)
    return display


softmax = register(OpDef("softmax", "reduce", "SoftmaxBackward0", _softmax_eval, _same_infer, vjp=_softmax_vjp,
                         lower=_softmax_lower, display=_dim_display("softmax"),
                         doc="exp(x - max) / sum(exp(x - max)) along one dim", sparsity="softmax"))
log_softmax = register(OpDef("log_softmax", "reduce", "LogSoftmaxBackward0", _log_softmax_eval, _same_infer,
                             vjp=_log_softmax_vjp, lower=_log_softmax_lower, display=_dim_display("log_softmax"),
                             doc="x - max - log(sum(exp(x - max))) along one dim", sparsity="softmax"))
