"""Forward mode on the DAG: tangent nodes pushed from inputs to outputs (``jvp``).

Elementwise ops contribute ``t_i * d(form)/d(a_i)`` (the same SymPy partials reverse mode uses,
with ``Piecewise`` folded so the branch a ``where`` did not take contributes exactly 0); ops that
are linear in their inputs (reshape, index, sum, cat, ...) are applied to the tangent; matmul
uses the product rule; every other op gets its JVP by transposing its own VJP (which is linear in
the cotangent) once, symbolically, on a placeholder cotangent.
"""
from __future__ import annotations

from typing import Sequence

import sympy as sp

from ..core.graph import Node, toposort
from ..ops import OUT, A, apply
from ..ops import source as _src
from .reverse import backward_graph, fused


def _zeros(like: Node) -> Node:
    z = Node(_src.scalar, (), (("value", 0),), (), like.dtype, value=0)
    return apply("expand", z, shape=like.shape) if like.shape else apply("fused", z, expr=A[0], dtype=like.dtype)


def _add(a: Node | None, b: Node | None) -> Node | None:
    if a is None:
        return b
    if b is None:
        return a
    return fused((a, b), A[0] + A[1], a.dtype)


def _fit(t: Node, node: Node) -> Node:
    if t.shape != node.shape:
        t = apply("expand", t, shape=node.shape)
    return t


def _elementwise(node: Node, ts: Sequence[Node | None]) -> Node | None:
    n = len(node.inputs)
    parts = node.op.local_partials(n, node.attrs)
    shift = {A[k]: A[k + 1] for k in range(n)}
    shift[OUT] = A[n + 1]
    total = None
    for t, p in zip(ts, parts):
        if t is None or p == 0:
            continue
        if p == 1:
            c = t if t.dtype is node.dtype else fused((t,), A[0], node.dtype)
        else:
            e = sp.piecewise_fold(A[0] * p.xreplace(shift))
            c = fused((t, *node.inputs, node), e, node.dtype)
        total = _add(total, _fit(c, node))
    return total


def _linear(node: Node, ts: Sequence[Node | None]) -> Node | None:
    if "dtype" in dict(node.attrs):  # ``to``: its attr shares its name with ``apply``'s dtype argument
        return Node(node.op, (ts[0],), node.attrs, node.shape, node.dtype, requires_grad=True)
    if len(node.inputs) == 1:
        return apply(node.op, ts[0], dtype=node.dtype, **dict(node.attrs))
    full = [t if t is not None else _zeros(x) for x, t in zip(node.inputs, ts)]
    return apply(node.op, *full, dtype=node.dtype, **dict(node.attrs))


def _bilinear(node: Node, ts: Sequence[Node | None]) -> Node | None:
    a, b = node.inputs
    ta, tb = ts
    out = None
    if ta is not None:
        out = apply(node.op, ta, b, **dict(node.attrs))
    if tb is not None:
        out = _add(out, apply(node.op, a, tb, **dict(node.attrs)))
    return out


def _transposed_vjp(node: Node, ts: Sequence[Node | None]) -> Node | None:
    """JVP from the op's VJP: ``J t = d/du <vjp(u), t>`` for a placeholder cotangent ``u``."""
    u = Node(_src.leaf, (), (), node.shape, node.dtype, requires_grad=True)
    contribs = node.op.vjp(node, u)
    s = None
    for c, t in zip(contribs, ts):
        if c is None or t is None:
            continue
        prod = fused((c, t), A[0] * A[1], node.dtype)
        term = apply("sum", prod, dims=tuple(range(prod.ndim)), keepdim=False, full=True) if prod.ndim else prod
        s = _add(s, term)
    if s is None:
        return None
    one = Node(_src.scalar, (), (("value", 1),), (), node.dtype, value=1)
    (jt,), _ = backward_graph([s], [one], [u])
    return jt


def jvp_graph(outs: Sequence[Node], wrt: Sequence[Node], tangents: Sequence[Node]) -> list[Node | None]:
    """Tangent nodes of ``outs`` when ``wrt`` move along ``tangents`` (None: structurally zero)."""
    tan: dict[int, Node | None] = {w.id: t for w, t in zip(wrt, tangents)}
    for node in toposort(outs):
        if node.id in tan or node.op.family == "source":
            continue
        ts = [tan.get(x.id) for x in node.inputs]
        if node.op.diff_args is not None:
            ts = [t if i in node.op.diff_args else None for i, t in enumerate(ts)]
        if all(t is None for t in ts):
            continue
        if node.op.jvp is not None:
            tan[node.id] = node.op.jvp(node, ts)
        elif node.op.linear:
            tan[node.id] = _linear(node, ts)
        elif node.op.family == "elementwise":
            tan[node.id] = _elementwise(node, ts)
        elif node.op.bilinear:
            tan[node.id] = _bilinear(node, ts)
        elif node.op.vjp is not None:
            tan[node.id] = _transposed_vjp(node, ts)
        else:
            raise NotImplementedError(f"forward mode: op {node.op.name!r} has neither a JVP nor a VJP rule")
    return [tan.get(o.id) for o in outs]
