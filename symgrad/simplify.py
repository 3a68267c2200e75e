"""Budgeted simplification: cheap graph rewrites before codegen, bounded ``simplify`` for display."""
from __future__ import annotations

import signal
import threading
from typing import Sequence

import sympy as sp

from .graph import Node
from .ops import A


def simplify_graph(outputs: Sequence[Node]) -> list[Node]:
    """Drop identity elementwise nodes (``a0`` of an input of the same shape and dtype).

    Zero pruning happens during differentiation (None adjoints), dead code is never reached by
    the topological walk from the outputs, and CSE runs per fused expression at emission.
    """
    memo: dict[int, Node] = {}

    def visit(n: Node) -> Node:
        if n.id in memo:
            return memo[n.id]
        r = n
        if (n.op.name == "fused" and n.attr("expr") == A[0] and len(n.inputs) == 1
                and n.inputs[0].shape == n.shape and n.inputs[0].dtype is n.dtype):
            r = n.inputs[0]
        memo[n.id] = r
        return r

    return [visit(o) for o in outputs]


def _shortest(*cands: sp.Expr) -> sp.Expr:
    return min(cands, key=lambda e: (len(str(e)), sp.count_ops(e)))


def _with_timeout(fn, seconds: float):
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return None

    class _Timeout(Exception):
        pass

    def handler(signum, frame):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    except _Timeout:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def display_simplify(expr: sp.Expr, max_ops: int = 150, seconds: float = 1.0) -> sp.Expr:
    """The shortest of a few equivalent forms, trying costly ones only on small expressions and
    never for longer than ``seconds``."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom:
        return expr
    ops = sp.count_ops(expr)
    cands = [expr]
    if ops > max_ops:
        return expr
    for f in (lambda: sp.expand(expr), lambda: sp.factor_terms(expr), lambda: sp.simplify(expr),
              lambda: sp.together(expr)):
        r = _with_timeout(f, seconds)
        if r is not None:
            cands.append(r)
    return _shortest(*cands)
