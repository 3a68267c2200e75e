"""Common-subexpression elimination in linear time: repeated subtrees bound to temporaries.

``sympy.cse`` also searches Add/Mul argument subsets for shared partial sums and products; that
search was the costliest step of emitting a deep program, and LLVM (numba) or the repeated-subtree
binding here already catch what matters for kernels. This pass binds every compound subexpression
that occurs more than once, innermost first, in a deterministic order (first completed visit).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair


def _bindable(e: sp.Basic) -> bool:
    return isinstance(e, sp.Expr) and bool(e.args) and not isinstance(e, ExprCondPair)


def repeats(expr: sp.Basic) -> bool:
    """Whether some compound subexpression occurs twice (else CSE has nothing to bind but partial products,
    and ``sympy.cse`` is the costliest step of emission)."""
    seen: set = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if not e.args:
            continue
        if e in seen:
            return True
        seen.add(e)
        stack.extend(e.args)
    return False


def has_ops(expr: sp.Basic, limit: int) -> bool:
    """Whether ``expr`` has at least ``limit`` operation nodes, counted as a tree (a shared subtree
    counts each time), with an early exit (unlike ``count_ops``)."""
    seen = 0
    stack = [expr]
    while stack:
        e = stack.pop()
        if e.args:
            seen += 1
            if seen >= limit:
                return True
            stack.extend(e.args)
    return False


def rebuild(e: sp.Basic, args: tuple) -> sp.Basic:
    """``e`` with new arguments, not re-evaluated (the tree is canonical already)."""
    if args == e.args:
        return e
    if isinstance(e, (sp.Piecewise, ExprCondPair)):  # their constructors fold conditions even unevaluated
        return sp.Basic.__new__(e.func, *args)
    try:
        return e.func(*args, evaluate=False)
    except TypeError:
        return e.func(*args)


def tree_cse(exprs: Sequence[sp.Basic], symbols: Iterator[sp.Symbol]
             ) -> tuple[list[tuple[sp.Symbol, sp.Basic]], list[sp.Basic]]:
    """``(replacements, reduced)`` like ``sympy.cse``: each repeated compound subtree of ``exprs`` is
    computed once, as a replacement, and the reduced expressions read the temporaries."""
    count: dict[sp.Basic, int] = {}
    post: list[sp.Basic] = []
    for root in exprs:
        stack: list[tuple[sp.Basic, bool]] = [(root, False)]
        while stack:
            e, done = stack.pop()
            if done:
                post.append(e)
                continue
            if not e.args:
                continue
            if e in count:
                count[e] += 1
                continue
            count[e] = 1
            stack.append((e, True))
            stack.extend((a, False) for a in reversed(e.args))
    new: dict[sp.Basic, sp.Basic] = {}
    reps: list[tuple[sp.Symbol, sp.Basic]] = []
    for e in post:                            # children complete before their parents
        r = rebuild(e, tuple(new.get(a, a) for a in e.args))
        if count[e] > 1 and _bindable(e):
            s = next(symbols)
            reps.append((s, r))
            new[e] = s
        elif r is not e:
            new[e] = r
    return reps, [new.get(e, e) for e in exprs]
