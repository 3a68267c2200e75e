"""Shape ops: reshape (view, flatten, squeeze, unsqueeze) and permute (transpose, .T); their adjoints are shape ops."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from codegen import ir

from ..core.graph import Node
from .base import OpDef, Shape, apply, register


def _reshape_infer(op: OpDef, a: Node, shape: Shape, fn: str = "ViewBackward0") -> Any:
    return tuple(shape), a.dtype


def _reshape_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Reshape(target, args[0], node.shape, node.dtype.np.name)]


reshape = register(OpDef(
    "reshape", "shape", lambda at: at.get("fn", "ViewBackward0"),
    lambda a, shape, fn="ViewBackward0": np.reshape(a, shape), _reshape_infer,
    vjp=lambda node, g: (apply("reshape", g, shape=node.inputs[0].shape),),
    lower=_reshape_lower, view=True,
    doc="view / reshape / flatten / squeeze / unsqueeze; `fn` keeps torch's grad_fn name", linear=True))


def _permute_infer(op: OpDef, a: Node, dims: tuple[int, ...], fn: str = "PermuteBackward0") -> Any:
    return tuple(a.shape[d] for d in dims), a.dtype


def _permute_vjp(node: Node, g: Node) -> tuple:
    dims = node.attr("dims")
    inv = tuple(int(i) for i in np.argsort(dims))
    return (apply("permute", g, dims=inv),)


def _permute_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Transpose(target, args[0], node.attr("dims"), node.shape, node.dtype.np.name)]


def show_permute(node: Node, ins: list) -> sp.Expr:
    """A permutation is ``transpose(x)``; the identity permutation is ``x``, and so is a permutation undoing
    the one that made ``transpose(x)`` (a gradient's ``transpose(transpose(w))``)."""
    dims = node.attr("dims")
    if dims == tuple(range(node.ndim)):
        return ins[0]
    inner = node.inputs[0]
    if (inner.op is node.op and isinstance(ins[0], sp.Function) and ins[0].func.__name__ == "transpose"
            and tuple(inner.attr("dims")[d] for d in dims) == tuple(range(node.ndim))):
        return ins[0].args[0]
    return sp.Function("transpose", real=True)(ins[0])



permute = register(OpDef(
    "permute", "shape", lambda at: at.get("fn", "PermuteBackward0"),
    lambda a, dims, fn="PermuteBackward0": np.transpose(a, dims), _permute_infer,
    vjp=_permute_vjp, lower=_permute_lower, view=True, doc="permute / transpose / .T", linear=True,
    display=show_permute))
