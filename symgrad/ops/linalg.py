"""Linear algebra: matmul (dot, mv, mm, batched with broadcasting); its VJP is matmuls, transposes and sum_to."""
from __future__ import annotations

from typing import Any

import numpy as np

from codegen import ir

from ..core import dtypes
from ..core.graph import Node
from .base import OpDef, apply, broadcast_shapes, register
from .reduce import sum_to_node


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy/torch matmul result shape, with torch's error texts."""
    if not a or not b:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {len(a)}D and {len(b)}D")
    if len(a) == 1 and len(b) == 1:
        if a[0] != b[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same number of "
                f"elements, but got {a[0]} and {b[0]} elements respectively")
        return ()
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        rows = int(np.prod(a2[:-1]))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a2[-1]} and {b2[-2]}x{b2[-1]})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def check_matmul_dtypes(a: dtypes.DType, b: dtypes.DType, a_ndim: int, b_ndim: int) -> None:
    """torch's error for operands of different dtypes (its matmul never promotes) or bool ones, worded by the
    kernel the ranks pick: dot, addmv (a vector on the right), mm (a matrix on the right), bmm."""
    if a_ndim == 1 and b_ndim == 1:
        kernel = "dot"
        msg = "dot : expected both vectors to have same dtype, but found {A} and {B}"
    elif b_ndim == 1:
        kernel = "addmv_impl_cpu"
        msg = "addmv input tensors must have the same dtype, but got {B}, {A}, and {B}"
    elif b_ndim == 2:
        kernel = "addmm_impl_cpu_"
        msg = (f"expected m1 and m2 to have the same dtype, but got: {dtypes.cpp_type_name(a)} != "
               f"{dtypes.cpp_type_name(b)}")
    else:
        kernel = "bmm"
        msg = "expected scalar type {A} but found {B}"
    if a != b:
        raise RuntimeError(msg.format(A=dtypes.torch_type_name(a), B=dtypes.torch_type_name(b)))
    if a == dtypes.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def check_addmm_dtypes(self: dtypes.DType, mat1: dtypes.DType, mat2: dtypes.DType) -> None:
    """torch's addmm errors (also ``linear``'s, with the bias as ``self``): self against mat2 first."""
    for name, d in (("self", self), ("mat1", mat1)):
        if d != mat2:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {dtypes.torch_type_name(d)} and "
                               f"{dtypes.torch_type_name(mat2)}")


def _grad_fn(at: dict) -> str:
    return at.get("fn", "MmBackward0")


def _infer(op: OpDef, a: Node, b: Node, fn: str = "") -> Any:
    return matmul_shape(a.shape, b.shape), dtypes.promote_types(a.dtype, b.dtype)


def _mT(x: Node) -> Node:  # noqa: N802
    dims = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return apply("permute", x, dims=dims)


def _vjp(node: Node, g: Node) -> tuple:
    a, b = node.inputs
    if a.ndim == 1 and b.ndim == 1:
        ga = apply("mul", apply("expand", g, shape=b.shape), b) if a.requires_grad else None
        gb = apply("mul", apply("expand", g, shape=a.shape), a) if b.requires_grad else None
        return ga, gb
    a2 = a if a.ndim > 1 else apply("reshape", a, shape=(1,) + a.shape)
    b2 = b if b.ndim > 1 else apply("reshape", b, shape=b.shape + (1,))
    full = broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1])
    g2 = g if g.shape == full else apply("reshape", g, shape=full)
    ga = gb = None
    if a.requires_grad:
        ga = sum_to_node(apply("matmul", g2, _mT(b2)), a2.shape)
        ga = ga if ga.shape == a.shape else apply("reshape", ga, shape=a.shape)
    if b.requires_grad:
        gb = sum_to_node(apply("matmul", _mT(a2), g2), b2.shape)
        gb = gb if gb.shape == b.shape else apply("reshape", gb, shape=b.shape)
    return ga, gb


def _lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.MatMul(target, args[0], args[1], node.shape, node.dtype.np.name)]


matmul = register(OpDef("matmul", "linalg", _grad_fn, lambda a, b, fn="": np.asarray(np.matmul(a, b)), _infer,
                        vjp=_vjp, lower=_lower, doc="a @ b; formulas print it as matmul(a, b)", bilinear=True))


def torch_name(a_ndim: int, b_ndim: int) -> str:
    """The grad_fn class torch reports for a matmul of these ranks."""
    if a_ndim == 1 and b_ndim == 1:
        return "DotBackward0"
    if a_ndim == 2 and b_ndim == 1:
        return "MvBackward0"
    if a_ndim == 1 and b_ndim == 2:
        return "SqueezeBackward4"
    if a_ndim == 2 and b_ndim == 2:
        return "MmBackward0"
    return "UnsafeViewBackward0"
