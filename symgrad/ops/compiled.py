"""A compiled function applied to eager tensors, as registry ops: ``compiled_call`` (its value, one node whose VJP
is the kernel's saved gradients or the traced derivative) and ``compiled_grad`` (a gradient as the kernel computed
it; its VJP is the traced second derivative). Both reach the compiled function only through the ``rebuild``
callable in their attrs: ``rebuild(kinds, args, g, which)`` returns the traced VJP rebuilt on ``args``."""
from __future__ import annotations

from typing import Any

import sympy as sp

from codegen import ir

from ..core.graph import Node
from .base import A, OpDef, apply, register


def _pass_through_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Elementwise(target, sp.Symbol(args[0], real=True), node.shape, node.dtype.np.name)]


def _call_vjp(node: Node, g: Node) -> tuple:
    """Input 0 is the value; then the arguments, then (scalar results) the kernel's gradients for the
    ``saved`` arguments: the upstream gradient times them."""
    n, saved = node.attr("nargs"), node.attr("saved")
    args = node.inputs[1:1 + n]
    if saved:
        by_arg = dict(zip(saved, node.inputs[1 + n:]))
        at = {"rebuild": node.attr("rebuild"), "kinds": node.attr("kinds")}
        res = [None if i not in by_arg or not x.requires_grad else
               apply("fused", g, apply(compiled_grad, by_arg[i], *args, which=i, **at), expr=A[0] * A[1], dtype=x.dtype)
               for i, x in enumerate(args)]
    else:
        res = node.attr("rebuild")(node.attr("kinds"), args, g, None)
    return (None, *res, *([None] * (len(node.inputs) - 1 - n)))


def _grad_vjp(node: Node, g: Node) -> tuple:
    """A kernel-computed gradient: its VJP is the traced second derivative rebuilt on the arguments."""
    res = node.attr("rebuild")(node.attr("kinds"), node.inputs[1:], g, node.attr("which"))
    return (None, *res)


def _value_infer(op: OpDef, *inputs: Node, **attrs: Any) -> tuple:
    return inputs[0].shape, inputs[0].dtype


#: a compiled function applied to tensors: input 0 its value, then its arguments, then the gradients
#: its value_and_grad kernel computed (scalar results)
compiled_call = register(OpDef("compiled_call", "custom", "CompiledFunctionBackward", lambda *a, **k: a[0],
                               _value_infer, vjp=_call_vjp, lower=_pass_through_lower,
                               diff_args=tuple(range(1, 256)),
                               doc="a compiled function applied to tensors (one node; its kernel's gradients)"))
#: the gradient of a compiled function with respect to argument ``which``, as the kernel computed it
compiled_grad = register(OpDef("compiled_grad", "custom", "CompiledFunctionBackward", lambda *a, **k: a[0],
                               _value_infer, vjp=_grad_vjp, lower=_pass_through_lower,
                               diff_args=tuple(range(1, 256)),
                               doc="a compiled function's gradient, as its kernel computed it (second order: traced)"))
