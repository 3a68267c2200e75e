"""Reverse accumulation on the DAG: one adjoint per node, summed over users; None is the symbolic zero."""
from __future__ import annotations

from typing import Sequence

import sympy as sp

from codegen.functions import IsInf, IsNan

from ..core.graph import Node, toposort
from ..ops import OUT, A, apply
from ..ops.reduce import sum_to_node


def fused(inputs: Sequence[Node], expr: sp.Expr, dtype, shape_hint: tuple | None = None) -> Node:
    """An elementwise node computing ``expr`` (over ``a0..``) of ``inputs``, tidied.

    Unused and repeated inputs are dropped. Scalar inputs stay inputs (eager programs are cached
    by structure, so a Python number's value is a runtime parameter); lowering folds them into
    literals where the program is specialised to them.
    """
    subs: dict = {}
    kept: list[Node] = []
    index: dict[int, int] = {}
    for i, node in enumerate(inputs):
        if A[i] not in expr.free_symbols:
            continue
        if node.id in index:
            subs[A[i]] = A[index[node.id]]
        else:
            index[node.id] = len(kept)
            subs[A[i]] = A[len(kept)]
            kept.append(node)
    subs = {k: v for k, v in subs.items() if k is not v}
    if subs:  # (an identity renaming would rebuild, and so re-associate, every product)
        expr = expr.xreplace(subs)
    return apply("fused", *kept, expr=expr, dtype=dtype)


def IsNotFinite(x: sp.Expr) -> sp.Basic:  # noqa: N802 - reads as the SymPy predicate it builds
    # an Or of opaque predicates: SymPy's logic simplification can't negate an opaque one (Not(isfinite))
    return IsInf(x) | IsNan(x)


def _elementwise_vjp(node: Node, g: Node, masked: bool) -> tuple[tuple[Node | None, ...], bool]:
    """Contributions ``g * d(form)/d(a_i)`` summed to each input's shape.

    ``masked`` adjoints are exactly zero where a ``where`` did not take this branch; their
    products are zero-preserving (``0 * inf == 0``), so no NaN leaks from the branch not taken.
    """
    n = len(node.inputs)
    parts = node.op.local_partials(n, node.attrs)
    shift = {A[k]: A[k + 1] for k in range(n)}
    shift[OUT] = A[n + 1]
    ins = (g, *node.inputs, node)
    out: list[Node | None] = []
    saves = False
    for i, (x, p) in enumerate(zip(node.inputs, parts)):
        if p == 0 or not x.requires_grad or (node.op.diff_args is not None and i not in node.op.diff_args):
            out.append(None)
            continue
        if node.op.name == "pow":
            c = _pow_contribution(node, g, x, masked)
            saves = True
        elif p == 1:
            c = g
        else:
            e = A[0] * p.xreplace(shift)
            if node.op.literal_zero and isinstance(p, sp.Piecewise):
                # torch writes 0 where the partial is 0 (threshold_backward, where): +0.0, not g * 0 = -0.0 for g < 0
                e = sp.piecewise_fold(e)
            if masked and not p.is_Number:
                # zero only where the partial is not finite: a coincidental g == 0 on the branch taken
                # keeps its exact derivative (second order)
                e = sp.Piecewise((0, sp.Eq(A[0], 0) & IsNotFinite(p.xreplace(shift))), (e, True))
            c = fused(ins, e, node.dtype)
            # torch also saves a Python number a rule reads (``x * 2`` keeps ``2``), as a wrapped tensor
            saves = saves or any(inp is not g and inp.op.name != "scalar" for inp in c.inputs) or any(
                A[k] in p.free_symbols for k, inp in enumerate(node.inputs) if inp.op.name == "scalar")
        out.append(sum_to_node(c, x.shape))
    return tuple(out), saves


def _pow_contribution(node: Node, g: Node, x: Node, masked: bool) -> Node:
    """``g * e * x ** (e - 1)`` with ``x ** (e - 1)`` a node of its own, as torch's rule computes it: the
    derivative keeps depending on ``x`` even where it is constant (``x ** 1``, the second derivative of
    ``x ** 2``), so ``create_graph`` results keep their grad_fn as torch's do (and the rule saves ``x``)."""
    e = node.attr("exponent")
    base = apply("pow", x, exponent=e - 1)
    expr = sp.Mul(A[0], e * A[1], evaluate=False)  # torch's grad * (e * x.pow(e - 1)), in that association
    if masked:
        expr = sp.Piecewise((0, sp.Eq(A[0], 0) & IsNotFinite(A[1])), (expr, True))
    return fused((g, base), expr, node.dtype)


def _add(a: Node, b: Node) -> Node:
    return fused((a, b), A[0] + A[1], a.dtype)


def _forward_reads(c: Node, forward: set[int], seen: set[int]) -> list[Node]:
    """The forward nodes an adjoint contribution ``c`` reads (walking only nodes not seen before)."""
    out, stack, found = [], [c], set()
    while stack:
        n = stack.pop()
        if n.id in forward:
            if n.op.name != "scalar" and n.id not in found:
                found.add(n.id)
                out.append(n)
            continue
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.op.name != "numel":        # reads only its input's shape, not a saved value
            stack.extend(n.inputs)
    return out


def _reads_forward(contribs: Sequence[Node | None], g: Node, forward: set[int]) -> bool:
    """Whether a rule's contributions read a forward value other than through ``g`` (torch's node saved
    a tensor for it: ``mm`` its operands, ``max`` its indices, ``softmax`` its result)."""
    seen = {g.id}                           # the walk stops at g: what g reads, other rules saved
    return any(c is not None and _forward_reads(c, forward, seen) for c in contribs)


def backward_graph(roots: Sequence[Node], seeds: Sequence[Node], wrt: Sequence[Node],
                   reads: list[tuple[int, int]] | None = None, cut: frozenset[int] | set[int] = frozenset()
                   ) -> tuple[list[Node | None], set[int]]:
    """Adjoint nodes of ``wrt`` for cotangents ``seeds`` on ``roots``.

    Returns the adjoints (None where structurally zero) and the ids of forward nodes whose rule
    read saved values (torch frees those after a backward without ``retain_graph``). When
    ``reads`` is a list, (rule's node id, read node id) pairs are appended to it: which forward
    values each rule saved, for torch's check that none was modified in place since. Nodes in ``cut`` (ids)
    get their adjoint (when in ``wrt``) but pass nothing on: the eager engine splits a backward there.
    """
    order = toposort(roots, stop=lambda n: not n.requires_grad or n.id in cut)
    forward = {n.id for n in order}
    walked: set[int] = {s.id for s in seeds}
    adj: dict[int, list[Node]] = {}
    for r, s in zip(roots, seeds):
        adj.setdefault(r.id, []).append(s)
    total: dict[int, Node] = {}
    saving: set[int] = set()
    masked: set[int] = set()
    wrt_ids = {w.id for w in wrt}
    for node in reversed(order):
        parts = adj.pop(node.id, None)
        if not parts or not node.requires_grad:
            continue
        g = parts[0]
        for p in parts[1:]:
            g = _add(g, p)
        if node.id in wrt_ids:
            total[node.id] = g
        if node.op.family == "source" or node.id in cut:
            continue
        is_masked = any(p.id in masked for p in parts)
        if node.op.family == "elementwise":
            contribs, saves = _elementwise_vjp(node, g, is_masked)
        else:
            contribs = node.op.vjp(node, g)
            # torch's index nodes also save their integer index tensors
            saves = _reads_forward(contribs, g, forward) or any(
                e[0] == "a" for e in (node.attr("index", ()) or ()) if isinstance(e, tuple) and e)
        if saves:
            saving.add(node.id)
        for x, c in zip(node.inputs, contribs):
            if c is not None and x.requires_grad:
                adj.setdefault(x.id, []).append(c)
                if reads is not None:
                    reads.extend((node.id, r.id) for r in _forward_reads(c, forward, walked))
                if is_masked or node.op.name == "where":
                    masked.add(c.id)
    return [total.get(w.id) for w in wrt], saving
