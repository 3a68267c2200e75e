"""A matrix-matrix product large enough for BLAS, as a ``numpy.dot`` call of its own in the numba kernel.

Fused loops beat a BLAS call for the small products inside a pass (``plan.Planner.matmul``), but a real gemm
(``plan.BLAS_MATMUL_FLOPS`` multiply-adds and more) runs 4-25x faster blocked. A kernel without loops then keeps the
numpy kernel (BLAS through numpy); a kernel holding an ``ir.Scan`` cannot (the numpy tier runs the loop in Python),
so there the product is a ``numpy.dot`` call: the sum over a loop's steps of the outer products its adjoint pulled
out (``dW = Aᵀ H``, ``derive/loops.py``). numba's ``numpy.dot`` calls scipy's BLAS: without scipy, or for operands of
another dtype than the float result, the product keeps the numpy kernel (``ir.Unsupported``).
"""
from __future__ import annotations

import importlib.util
from typing import Any

from .. import ir
from .folds import src_name, standalone
from .plan import BLAS_MATMUL_FLOPS, Planner

_FLOATS = ("float32", "float64")


def blas_available() -> bool:
    """Whether numba can call BLAS (it takes scipy's)."""
    return importlib.util.find_spec("scipy") is not None


def is_gemm(a_shape: tuple, b_shape: tuple) -> bool:
    """Whether ``a @ b`` is a matrix-matrix product for BLAS (``plan.Planner.matmul`` refuses it)."""
    return (len(a_shape) == 2 and len(b_shape) == 2 and min(a_shape[0], b_shape[1]) > 1
            and a_shape[0] * a_shape[1] * b_shape[1] >= BLAS_MATMUL_FLOPS)


def plan_matmul(em: Planner, st: ir.MatMul) -> None:
    """``st`` as ``Planner.matmul`` places it, or (a gemm) as an array made by one ``numpy.dot`` call after the
    passes writing its operands."""
    a, b = em.lookup(st.a), em.lookup(st.b)
    if not is_gemm(a.shape, b.shape) or not any(isinstance(s, ir.Scan) for s in em.kernel.body):
        em.matmul(st)       # (a gemm outside loop kernels: Planner.matmul refuses it, the numpy kernel runs it)
        return
    if st.dtype not in _FLOATS or a.dtype != st.dtype or b.dtype != st.dtype:
        raise ir.Unsupported("emit_numba: matrix-matrix product large enough for BLAS, of mixed or integer dtypes")
    if not blas_available():
        raise ir.Unsupported("emit_numba: matrix-matrix product large enough for BLAS (numba's needs scipy)")
    cls = em.fresh_cls(tuple(st.shape), [a.cls[0], b.cls[1]])
    standalone(em, st, cls, [st.a, st.b], _render_dot)


def _render_dot(em: Any, op: Any, out: list[str], ind: int) -> None:
    x, y = (src_name(s) for s in op.data["srcs"])
    out.append(f"{'    ' * ind}{op.val.arr} = numpy.dot(numpy.ascontiguousarray({x}), numpy.ascontiguousarray({y}))")
