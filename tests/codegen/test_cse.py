"""codegen.cse: repeated subtrees bound once, the reduced program equal to the original, deterministic."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp

from codegen.cse import rebuild, tree_cse

x, y, z = sp.symbols("x y z", real=True)


def temps():
    return (sp.Symbol(f"c{i}", real=True) for i in itertools.count())


def evaluate(reps, reduced, point):
    env = dict(point)
    for s, e in reps:
        env[s] = e.xreplace(env)
    return [sp.N(e.xreplace(env)) for e in reduced]


CASES = [
    [sp.sin(x * y) + sp.cos(x * y)],
    [sp.exp(-(x - y) ** 2) * (x - y), sp.log(1 + (x - y) ** 2)],
    [sp.Piecewise((sp.sin(x + z), x > 0), (sp.sin(x + z) * 2, True))],
    [x + y],
    [sp.tanh(sp.sin(x) * sp.exp(y)) ** 2 + sp.sin(x) * sp.exp(y) * z],
]


@pytest.mark.parametrize("exprs", CASES)
def test_reduced_program_equals_the_original(exprs):
    reps, reduced = tree_cse(exprs, temps())
    point = {x: 0.3, y: -1.7, z: 2.5}
    want = [sp.N(e.xreplace(point)) for e in exprs]
    assert [float(v) for v in evaluate(reps, reduced, point)] == pytest.approx([float(w) for w in want], rel=1e-14)
    # nothing compound is computed twice
    seen = set()
    for e in [r for _, r in reps] + reduced:
        for sub in sp.preorder_traversal(e):
            if sub.args and not isinstance(sub, sp.Symbol):
                assert sub not in seen or isinstance(sub, sp.Tuple), sub
        seen.update(s for s in sp.preorder_traversal(e) if s.args)


def test_repeats_are_bound_innermost_first_and_named_in_order():
    e = sp.sin(x * y) * sp.sin(x * y) * 0 + sp.exp(sp.sin(x * y) + x * y) + sp.cos(sp.sin(x * y) + x * y)
    reps, (reduced,) = tree_cse([e], temps())
    names = [str(s) for s, _ in reps]
    assert names == [f"c{i}" for i in range(len(reps))]
    assert reps[0][1] == x * y                       # the innermost repeat first
    assert reduced.free_symbols <= {s for s, _ in reps} | {x, y}


def test_nothing_repeated_gives_the_expression_back():
    e = sp.sin(x) + sp.cos(y) * z
    reps, (reduced,) = tree_cse([e], temps())
    assert reps == [] and reduced is e


def test_deterministic():
    e = sp.exp(-(x - y) ** 2) * (x - y) + sp.sin(x - y) * sp.exp(-(x - y) ** 2)
    runs = {str(tree_cse([e], temps())) for _ in range(3)}
    assert len(runs) == 1


def test_deep_chain_is_linear_not_exponential():
    """A chain whose tree has 2^40 paths is a DAG of 40 nodes: each level is bound once."""
    h = x
    for _ in range(40):
        h = sp.sin(h) * sp.cos(h)
    reps, (reduced,) = tree_cse([h], temps())
    assert len(reps) <= 2 * 40
    val = float(evaluate(reps, [reduced], {x: 0.7})[0])
    ref = 0.7
    for _ in range(40):
        ref = np.sin(ref) * np.cos(ref)
    assert val == pytest.approx(ref, rel=1e-12)


def test_rebuild_keeps_the_form():
    e = sp.Mul(2, x, evaluate=False)
    assert rebuild(e, (sp.Integer(2), y)).args == (2, y)
    assert rebuild(e, e.args) is e
