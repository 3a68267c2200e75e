"""Unrolled Python loops rolled back into ``scan`` nodes (``kernels/roll.py``): values and gradients equal the
unrolled graph's, and only proven repeats roll."""
from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.compiler.tracing import trace_signature
from symgrad.core.graph import toposort
from symgrad.kernels import roll

H = 0.01


def rhs(s, p):
    x, y, z = s[0], s[1], s[2]
    return sg.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def rk4(s, p):
    k1 = rhs(s, p)
    k2 = rhs(s + (H / 2) * k1, p)
    k3 = rhs(s + (H / 2) * k2, p)
    k4 = rhs(s + H * k3, p)
    return s + (H / 6) * (k1 + 2 * k2 + 2 * k3 + k4)


def lorenz(p):
    s = sg.tensor([1.0, 1.0, 1.0], dtype=sg.float64)
    for _ in range(25):
        s = rk4(s, p)
    return (s ** 2).sum()


def lorenz32(p):
    s = sg.tensor([1.0, 1.0, 1.0], dtype=sg.float32)
    for _ in range(12):
        s = rk4(s, p)
    return (s ** 2).sum()


def rnn(W, U, b, xs):
    h = sg.zeros(4, dtype=sg.float64)
    for t in range(10):
        h = sg.tanh(W @ h + U @ xs[t] + b)
    return (h ** 2).sum()


def step_index(p):
    # the step number enters the arithmetic as a Python number: a row per step, or no loop
    s = p * 1.0
    for k in range(16):
        s = s * 0.9 + sg.sin(s) * (0.01 * k) + p * 0.1
    return (s ** 2).sum()


def index_by_step(p):
    # which element is read depends on the step (an index attr that changes, over the carry): never a loop
    s = p * 1.0
    for k in range(12):
        s = s * 0.5 + sg.sin(s[k % 3])
    return (s ** 2).sum()


def almost(p):
    # step 6 differs: at most the steps around it roll
    s = p * 1.0
    for k in range(14):
        s = sg.cos(s) * p + s if k != 6 else sg.sin(s) * p + s
    return (s ** 2).sum()


def two_back(p):
    # each step reads the state two steps back (a leapfrog-like recurrence): not a one-step carry
    a, b = p * 1.0, p * 2.0
    for _ in range(12):
        a, b = b, sg.tanh(a * 0.5 + b * p)
    return (b ** 2).sum()


def every_state(p):
    # the states of all steps are read after the loop: not rolled (only the last block may be read)
    s, acc = p * 1.0, []
    for _ in range(10):
        s = sg.tanh(s * p + 0.1)
        acc.append(s)
    return sg.stack(acc).sum()


def two_loops(p):
    s = p * 1.0
    for _ in range(8):
        s = sg.tanh(s * p + 0.1)
    q = s.sum() * p
    for _ in range(9):
        q = q * 0.5 + sg.exp(-q * q)
    return (q ** 2).sum()


P3 = np.array([10.0, 28.0, 8.0 / 3.0])
RNG = np.random.default_rng(0)
RNN_ARGS = (0.5 * RNG.standard_normal((4, 4)), 0.5 * RNG.standard_normal((4, 3)), 0.1 * RNG.standard_normal(4),
            RNG.standard_normal((10, 3)))
P_SMALL = np.array([0.3, -0.2, 0.5])

# (function, arguments, argnums, the scan lengths the rolled graph must hold)
CASES = {
    "lorenz": (lorenz, (P3,), 0, [24]),        # step 0 reads constants made inside it: unrolled
    "lorenz32": (lorenz32, (P3.astype(np.float32),), 0, [11]),
    "rnn": (rnn, RNN_ARGS, (0, 1, 2), [10]),
    "step_index": (step_index, (P_SMALL,), 0, [16]),
    "step_index32": (step_index, (P_SMALL.astype(np.float32),), 0, [16]),
    "index_by_step": (index_by_step, (P_SMALL,), 0, []),
    "almost": (almost, (P_SMALL,), 0, [6, 7]),      # the steps before and after the odd one
    "two_back": (two_back, (P_SMALL,), 0, []),
    "every_state": (every_state, (P_SMALL,), 0, []),
    "two_loops": (two_loops, (P_SMALL,), 0, [8, 9]),
}


def _scans(fn, args):
    kinds = [("arr", a.dtype, a.shape) for a in args]
    sig = trace_signature(fn, kinds, [f"a{i}" for i in range(len(args))], set())
    rolled = roll.roll_loops(sig.outs)
    return sorted(n.attr("length") for n in toposort(rolled) if n.op.name == "scan")


@pytest.mark.parametrize("name", list(CASES))
def test_rolls_only_proven_repeats(name):
    fn, args, _, lengths = CASES[name]
    assert _scans(fn, args) == lengths


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_equal_unrolled(name, monkeypatch):
    fn, args, argnums, _ = CASES[name]
    monkeypatch.setattr(roll, "ENABLED", True)
    v1, g1 = sg.value_and_grad(fn, argnums=argnums)(*args)
    monkeypatch.setattr(roll, "ENABLED", False)
    v0, g0 = sg.value_and_grad(fn, argnums=argnums)(*args)
    assert v1 == v0         # the same ops on the same values
    rtol = 1e-5 if np.asarray(v0).dtype == np.float32 else 1e-12
    for a, b in zip(g1 if isinstance(g1, tuple) else (g1,), g0 if isinstance(g0, tuple) else (g0,)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.max(np.abs(b)))


def test_disabled_keeps_the_graph(monkeypatch):
    monkeypatch.setattr(roll, "ENABLED", False)
    assert _scans(lorenz, (P3,)) == []
