"""Budgeted simplification: cheap graph rewrites before codegen, bounded ``simplify`` for display."""
from __future__ import annotations

import signal
import threading
from typing import Sequence

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.functions.elementary.piecewise import ExprCondPair

from ..core.graph import Node
from ..ops import A


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


def _opaque(e: sp.Basic) -> bool:
    """A display-only application that is not elementwise (``sum(...)``, ``softmax(x, dim=1)``, ``x[0:2]``):
    SymPy must not see into it (``piecewise_fold`` would move a ``Piecewise`` out of a sum's argument)."""
    return isinstance(e, AppliedUndef) or getattr(e, "opaque", False)


def shield(e: sp.Basic, table: dict, simplify_args: tuple | None = None) -> sp.Basic:
    """``e`` with each opaque application replaced by a placeholder recorded in ``table`` (with
    ``simplify_args`` = (max_ops, seconds), its arguments simplified on their own first)."""
    if _opaque(e):
        args = e.args if simplify_args is None else [
            display_simplify(a, *simplify_args) if isinstance(a, sp.Expr) else a for a in e.args]
        d = sp.Dummy(f"op{len(table)}", real=True)
        table[d] = e.func(*args)
        return d
    if e.is_Atom or not e.args:
        return e
    args = [shield(a, table, simplify_args) for a in e.args]
    return e if all(a is b for a, b in zip(args, e.args)) else e.func(*args)


def unshield(e: sp.Basic, table: dict) -> sp.Basic:
    """The placeholders of ``shield`` put back, without re-evaluating what contains them (a
    ``Piecewise`` whose condition holds ``sum(Piecewise(...))`` would otherwise be folded through the sum)."""
    if not table:
        return e

    def put_back(x: sp.Basic) -> sp.Basic:
        if x in table:
            return table[x]
        if x.is_Atom or not x.args:
            return x
        args = [put_back(a) for a in x.args]
        if all(a is b for a, b in zip(args, x.args)):
            return x
        if isinstance(x, (ExprCondPair, sp.Piecewise)):  # their constructors fold a Piecewise out of conditions
            return sp.Basic.__new__(type(x), *args)
        with sp.evaluate(False):
            return x.func(*args)

    return put_back(e)


def display_simplify(expr: sp.Expr, max_ops: int = 150, seconds: float = 1.0) -> sp.Expr:
    """The shortest of a few equivalent forms, trying costly ones only on small expressions and
    never for longer than ``seconds``; opaque applications (reductions...) are simplified inside only."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom:
        return expr
    ops = sp.count_ops(expr)
    if ops > max_ops:
        return expr
    table: dict = {}
    shielded = shield(expr, table, (max_ops, seconds))
    if shielded.is_Atom:
        return unshield(shielded, table)
    cands = [shielded]
    for f in (lambda: sp.expand(shielded), lambda: sp.factor_terms(shielded), lambda: sp.simplify(shielded),
              lambda: sp.together(shielded)):
        r = _with_timeout(f, seconds)
        if r is not None:
            cands.append(r)
    return unshield(_shortest(*cands), table)
