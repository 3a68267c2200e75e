"""Fidelity table: how often symgrad's eager results are bit-identical to torch's, per op and dtype.

Run: ``python benchmarks/fidelity.py [--seeds 3] [--out docs/fidelity.md]``.

For float32 and float64, over deterministic random inputs (``numpy.random.default_rng``, several shapes from 0-d
to 10⁴ elements, values in each op's domain), every op runs eagerly in symgrad and in torch on identical inputs.
Per (op, dtype) the table gives the share of output elements whose bits are identical (NaN == NaN counts as
identical, whatever its payload; -0.0 against +0.0 does not), the largest difference in units in the last place
(floats mapped to ordered integers: the bits viewed as a signed integer, negatives flipped, so that -0.0 and +0.0
are 0 ulp apart and inf is one past the largest finite number; NaN against a number is counted as "NaN"), and the
same for the gradient of ``out.sum()`` with respect to each floating input (``backward()``). Comparisons compare
booleans. ``--out`` writes the Markdown document (header, machine, the table, per-size reductions, summary).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import textwrap
import time
import traceback
import warnings
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402

DTYPES = {"float32": np.float32, "float64": np.float64}


# ============================================================================================= ulps

def _ordered(a: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of their values (±0 -> 0), as int64."""
    if a.dtype == np.float32:
        i = a.view(np.int32).astype(np.int64)
        mag = i & np.int64(0x7FFF_FFFF)
    else:
        i = a.view(np.int64)
        mag = i & np.int64(0x7FFF_FFFF_FFFF_FFFF)
    return np.where(i < 0, -mag, mag)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise distance in ulps between float arrays of one dtype (uint64; no NaN expected)."""
    oa, ob = _ordered(a), _ordered(b)
    same_side = (oa >= 0) == (ob >= 0)
    with np.errstate(over="ignore"):
        d_same = np.abs(oa - ob).astype(np.uint64)  # exact when both are on one side of zero
    d_across = np.abs(oa).astype(np.uint64) + np.abs(ob).astype(np.uint64)
    return np.where(same_side, d_same, d_across)


@dataclass
class Stat:
    """Agreement of one quantity (values, or gradients) accumulated over several runs."""

    n: int = 0
    same: int = 0
    max_ulp: int | None = None  # None: no float comparison was made (booleans, integers)
    nan_mismatch: int = 0
    notes: set = field(default_factory=set)

    def add(self, other: Stat) -> None:
        self.n += other.n
        self.same += other.same
        if other.max_ulp is not None:
            self.max_ulp = other.max_ulp if self.max_ulp is None else max(self.max_ulp, other.max_ulp)
        self.nan_mismatch += other.nan_mismatch
        self.notes |= other.notes

    @property
    def exact(self) -> bool:
        return self.n > 0 and self.same == self.n and not self.notes

    def fraction(self) -> float:
        return self.same / self.n if self.n else 1.0


def compare(ours: np.ndarray | None, theirs: np.ndarray, note: str | None = None) -> Stat:
    """Stat of ``ours`` (symgrad's, None if it failed) against ``theirs`` (torch's)."""
    theirs = np.ascontiguousarray(theirs)
    st = Stat(n=max(theirs.size, 1))
    if ours is None:
        st.notes.add(note or "missing")
        return st
    ours = np.ascontiguousarray(ours)
    if ours.shape != theirs.shape:
        st.notes.add(f"shape {tuple(ours.shape)} vs torch {tuple(theirs.shape)}")
        return st
    if ours.dtype != theirs.dtype:
        st.notes.add(f"dtype {ours.dtype} vs torch {theirs.dtype}")
        return st
    st.n = theirs.size
    if theirs.size == 0:
        return st
    if ours.dtype.kind != "f":
        st.same = int((ours == theirs).sum())
        return st
    bits = ours.view(np.uint8).reshape(ours.size, -1) == theirs.view(np.uint8).reshape(theirs.size, -1)
    na, nb = np.isnan(ours), np.isnan(theirs)
    ident = bits.all(axis=1).reshape(ours.shape) | (na & nb)
    st.same = int(ident.sum())
    one_nan = na ^ nb
    st.nan_mismatch = int(one_nan.sum())
    finite_pair = ~(na | nb)
    d = ulp_distance(ours[finite_pair], theirs[finite_pair])
    st.max_ulp = int(d.max()) if d.size else 0
    return st


# ============================================================================================= cases

Gen = Callable[[np.random.Generator, Any, Any], list]


@dataclass
class Case:
    name: str
    group: str
    fn: Callable  # fn(m, dtype_name, *inputs) with m = symgrad or torch
    gen: Gen  # gen(rng, numpy dtype, shape) -> inputs (numpy arrays become tensors; anything else passes as is)
    shapes: list
    grad: bool = True


@dataclass
class Const:
    """A floating input that does not require grad (a fixed cotangent weight)."""

    array: np.ndarray


def _arr(x: Any, dt: Any) -> np.ndarray:
    return np.asarray(x).astype(dt)


def U(lo: float, hi: float) -> Callable:
    return lambda rng, dt, shape: _arr(rng.uniform(lo, hi, shape), dt)


def N(scale: float = 1.0) -> Callable:
    return lambda rng, dt, shape: _arr(rng.standard_normal(shape) * scale, dt)


def LOGU(lo: float, hi: float) -> Callable:
    """Log-uniform on [lo, hi]: every magnitude in between."""
    return lambda rng, dt, shape: _arr(np.exp(rng.uniform(np.log(lo), np.log(hi), shape)), dt)


def NONZERO(lo: float, hi: float) -> Callable:
    """±uniform(lo, hi): away from zero (divisors)."""
    return lambda rng, dt, shape: _arr(rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape), dt)


def WITH(spec: Callable, frac: float, values: Callable) -> Callable:
    """``spec`` with a fraction of its elements replaced by ``values(rng, shape)`` (zeros, ties, tiny numbers)."""
    def gen(rng, dt, shape):
        a = spec(rng, dt, shape)
        mask = rng.random(np.shape(a)) < frac
        return _arr(np.where(mask, values(rng, np.shape(a)), a), dt)
    return gen


def ZEROS(rng, shape):
    return np.zeros(shape)


def SMALL(rng, shape):
    return rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-9, -2, shape)


def inputs(*specs: Callable) -> Gen:
    """Independent inputs of one shape."""
    return lambda rng, dt, shape: [s(rng, dt, shape) for s in specs]


def tied_pair(spec: Callable, frac: float = 0.1) -> Gen:
    """Two inputs of one shape, equal at a fraction of the positions (ties for comparisons, maximum...)."""
    def gen(rng, dt, shape):
        a, b = spec(rng, dt, shape), spec(rng, dt, shape)
        tie = rng.random(np.shape(a)) < frac
        return [a, _arr(np.where(tie, a, b), dt)]
    return gen


def shaped(*specs: Callable) -> Gen:
    """Inputs of different shapes: ``shape`` is a tuple of shapes, one per spec."""
    return lambda rng, dt, shapes: [s(rng, dt, sh) for s, sh in zip(specs, shapes)]


EW = [(), (7,), (3, 5), (100, 100)]  # elementwise: 0-d .. 10⁴ elements
RED_FULL = [(10,), (1000,), (10000,)]  # full reductions over contiguous 1-d
RED_DIM = [(2, 5), (10, 100), (100, 100)]  # reductions over one dim of contiguous 2-d (10, 1000, 10⁴ elements)
ROWS = [(7,), (3, 5), (100, 100)]  # softmax & co. over the last dim


def F(m):
    return m.nn.functional


def _cases() -> list[Case]:
    c: list[Case] = []

    def add(name, group, fn, gen, shapes=EW, grad=True):
        c.append(Case(name, group, fn, gen, shapes, grad))

    # ---- arithmetic (same shapes, and a Python-number operand)
    two = inputs(U(-10, 10), U(-10, 10))
    add("a + b", "arithmetic", lambda m, d, a, b: a + b, two)
    add("a - b", "arithmetic", lambda m, d, a, b: a - b, two)
    add("a * b", "arithmetic", lambda m, d, a, b: a * b, two)
    add("a / b", "arithmetic", lambda m, d, a, b: a / b, inputs(U(-10, 10), NONZERO(0.1, 10)))
    add("-a", "arithmetic", lambda m, d, a: -a, inputs(U(-10, 10)))
    add("abs(a)", "arithmetic", lambda m, d, a: m.abs(a), inputs(WITH(U(-10, 10), 0.1, ZEROS)))
    add("a + 0.3", "arithmetic", lambda m, d, a: a + 0.3, inputs(U(-10, 10)))
    add("0.3 - a", "arithmetic", lambda m, d, a: 0.3 - a, inputs(U(-10, 10)))
    add("a * 0.3", "arithmetic", lambda m, d, a: a * 0.3, inputs(U(-10, 10)))
    add("a / 0.3", "arithmetic", lambda m, d, a: a / 0.3, inputs(U(-10, 10)))
    add("0.3 / a", "arithmetic", lambda m, d, a: 0.3 / a, inputs(NONZERO(0.1, 10)))
    # broadcasting: the gradient of the broadcast operand is a sum over the broadcast dims
    bshapes = [((7,), ()), ((3, 5), (5,)), ((100, 100), (100, 1))]
    bc = shaped(U(-10, 10), U(-10, 10))
    add("a + b (broadcast)", "arithmetic, broadcast", lambda m, d, a, b: a + b, bc, bshapes)
    add("a * b (broadcast)", "arithmetic, broadcast", lambda m, d, a, b: a * b, bc, bshapes)
    add("a / b (broadcast)", "arithmetic, broadcast", lambda m, d, a, b: a / b,
        shaped(U(-10, 10), NONZERO(0.1, 10)), bshapes)

    # ---- comparisons (booleans; ties at 10 % of the positions)
    tp = tied_pair(U(-10, 10))
    for sym, f in (("<", lambda a, b: a < b), ("<=", lambda a, b: a <= b), ("==", lambda a, b: a == b),
                   ("!=", lambda a, b: a != b), (">", lambda a, b: a > b), (">=", lambda a, b: a >= b)):
        add(f"a {sym} b", "comparison", lambda m, d, a, b, f=f: f(a, b), tp, grad=False)
    add("a < 0.3", "comparison", lambda m, d, a: a < 0.3, inputs(WITH(U(-10, 10), 0.1, lambda r, s: np.full(s, 0.3))),
        grad=False)

    # ---- pow
    pos = LOGU(0.1, 10)
    for e in (2, 3, 0.5, -0.5, -1, -2, 2.5, -1.5):
        add(f"a ** {e}", "pow", lambda m, d, a, e=e: a ** e, inputs(pos))
    add("a ** b", "pow", lambda m, d, a, b: a ** b, inputs(pos, U(-3, 3)))
    add("2.5 ** a", "pow", lambda m, d, a: 2.5 ** a, inputs(U(-10, 10)))

    # ---- transcendental & co. (elementwise, one input)
    unary = [
        ("exp", lambda m, d, a: m.exp(a), U(-10, 10)),
        ("log", lambda m, d, a: m.log(a), LOGU(1e-4, 1e4)),
        ("log1p", lambda m, d, a: m.log1p(a), WITH(U(-0.9, 10), 0.2, SMALL)),
        ("expm1", lambda m, d, a: m.expm1(a), WITH(U(-5, 5), 0.2, SMALL)),
        ("sqrt", lambda m, d, a: m.sqrt(a), LOGU(1e-4, 1e4)),
        ("rsqrt", lambda m, d, a: m.rsqrt(a), LOGU(1e-4, 1e4)),
        ("sin", lambda m, d, a: m.sin(a), U(-10, 10)),
        ("cos", lambda m, d, a: m.cos(a), U(-10, 10)),
        ("tan", lambda m, d, a: m.tan(a), U(-1.5, 1.5)),
        ("tanh", lambda m, d, a: m.tanh(a), U(-5, 5)),
        ("sigmoid", lambda m, d, a: m.sigmoid(a), U(-10, 10)),
        ("erf", lambda m, d, a: m.erf(a), U(-4, 4)),
        ("atan", lambda m, d, a: m.atan(a), N(5)),
        ("asinh", lambda m, d, a: m.asinh(a), N(5)),
        ("sinh", lambda m, d, a: m.sinh(a), U(-8, 8)),
        ("cosh", lambda m, d, a: m.cosh(a), U(-8, 8)),
        ("relu", lambda m, d, a: m.relu(a), WITH(N(), 0.1, ZEROS)),
    ]
    for name, fn, spec in unary:
        add(name, "elementwise", fn, inputs(spec))

    # ---- piecewise (ties at the boundaries)
    add("clamp(a, -0.5, 0.5)", "piecewise", lambda m, d, a: m.clamp(a, -0.5, 0.5),
        inputs(WITH(N(), 0.1, lambda r, s: r.choice([-0.5, 0.5], s))))
    add("maximum(a, b)", "piecewise", lambda m, d, a, b: m.maximum(a, b), tied_pair(N()))
    add("minimum(a, b)", "piecewise", lambda m, d, a, b: m.minimum(a, b), tied_pair(N()))
    add("where(c, a, b)", "piecewise", lambda m, d, c, a, b: m.where(c, a, b),
        lambda rng, dt, shape: [np.asarray(rng.random(shape) < 0.5), N()(rng, dt, shape), N()(rng, dt, shape)])

    # ---- reductions
    red = [("sum", lambda m, x, **k: m.sum(x, **k), N()),
           ("mean", lambda m, x, **k: m.mean(x, **k), N()),
           ("prod", lambda m, x, **k: m.prod(x, **k), U(0.9, 1.1)),
           ("amax", lambda m, x, **k: m.amax(x, **k), N())]
    for name, f, spec in red:
        add(f"{name}(a)", "reduction", lambda m, d, a, f=f: f(m, a), inputs(spec), RED_FULL)
        add(f"{name}(a, dim=-1)", "reduction", lambda m, d, a, f=f: f(m, a, dim=-1), inputs(spec), RED_DIM)
        add(f"{name}(a, dim=0)", "reduction", lambda m, d, a, f=f: f(m, a, dim=0), inputs(spec), RED_DIM)
    add("cumsum(a, dim=-1)", "scan", lambda m, d, a: m.cumsum(a, dim=-1), inputs(N()), [(10,), (1000,), (100, 100)])
    add("cumsum(a, dim=0)", "scan", lambda m, d, a: m.cumsum(a, dim=0), inputs(N()), RED_DIM)

    # ---- softmax & co.
    add("softmax(a, -1)", "softmax", lambda m, d, a: m.softmax(a, dim=-1), inputs(N(3)), ROWS)
    add("softmax(a, 0)", "softmax", lambda m, d, a: m.softmax(a, dim=0), inputs(N(3)), ROWS[1:])
    # sum(softmax) == 1, so the gradient of out.sum() is zero up to rounding: weight the rows instead
    weighted = lambda rng, dt, shape: [N(3)(rng, dt, shape), Const(N()(rng, dt, shape))]
    add("softmax(a, -1) * w", "softmax", lambda m, d, a, w: m.softmax(a, dim=-1) * w, weighted, ROWS)
    add("softmax(a, 0) * w", "softmax", lambda m, d, a, w: m.softmax(a, dim=0) * w, weighted, ROWS[1:])
    add("log_softmax(a, -1)", "softmax", lambda m, d, a: m.log_softmax(a, dim=-1), inputs(N(3)), ROWS)
    add("logsumexp(a, -1)", "softmax", lambda m, d, a: m.logsumexp(a, dim=-1), inputs(N(3)), ROWS)

    # ---- chains: the gradient under a random upstream gradient ``w`` (above it is 1), where the association of
    # the products in a rule shows
    def chained(*specs):
        return lambda rng, dt, shape: [sp(rng, dt, shape) for sp in specs] + [Const(N()(rng, dt, shape))]
    chain = [
        ("exp(a) * w", lambda m, d, a, w: m.exp(a) * w, chained(U(-5, 5))),
        ("log(a) * w", lambda m, d, a, w: m.log(a) * w, chained(LOGU(1e-2, 1e2))),
        ("tanh(a) * w", lambda m, d, a, w: m.tanh(a) * w, chained(U(-5, 5))),
        ("sigmoid(a) * w", lambda m, d, a, w: m.sigmoid(a) * w, chained(U(-10, 10))),
        ("sqrt(a) * w", lambda m, d, a, w: m.sqrt(a) * w, chained(LOGU(1e-2, 1e2))),
        ("rsqrt(a) * w", lambda m, d, a, w: m.rsqrt(a) * w, chained(LOGU(1e-2, 1e2))),
        ("a ** 3 * w", lambda m, d, a, w: a ** 3 * w, chained(U(-3, 3))),
        ("(a * b) * w", lambda m, d, a, b, w: (a * b) * w, chained(U(-10, 10), U(-10, 10))),
        ("(a / b) * w", lambda m, d, a, b, w: (a / b) * w, chained(U(-10, 10), NONZERO(0.1, 10))),
    ]
    for name, fn, gen in chain:
        add(name, "chain", fn, gen, EW[1:])
    add("sum(a, dim=0) * w", "chain", lambda m, d, a, w: m.sum(a, dim=0) * w,
        lambda rng, dt, shape: [N()(rng, dt, shape), Const(N()(rng, dt, shape[1:]))], RED_DIM)
    add("prod(a, dim=-1) * w", "chain", lambda m, d, a, w: m.prod(a, dim=-1) * w,
        lambda rng, dt, shape: [U(0.9, 1.1)(rng, dt, shape), Const(N()(rng, dt, shape[:-1]))], RED_DIM)
    add("mean(a, dim=-1) * w", "chain", lambda m, d, a, w: m.mean(a, dim=-1) * w,
        lambda rng, dt, shape: [N()(rng, dt, shape), Const(N()(rng, dt, shape[:-1]))], RED_DIM)

    # ---- norms and moments
    add("norm(a)", "moments", lambda m, d, a: m.norm(a), inputs(N()), ROWS)
    add("norm(a, dim=-1)", "moments", lambda m, d, a: m.norm(a, dim=-1), inputs(N()), ROWS)
    add("var(a)", "moments", lambda m, d, a: m.var(a), inputs(N()), ROWS)
    add("var(a, dim=-1)", "moments", lambda m, d, a: m.var(a, dim=-1), inputs(N()), ROWS[1:])
    add("std(a)", "moments", lambda m, d, a: m.std(a), inputs(N()), ROWS)
    add("std(a, dim=-1)", "moments", lambda m, d, a: m.std(a, dim=-1), inputs(N()), ROWS[1:])

    # ---- matmul
    mm = shaped(N(), N())
    add("matmul (vector·vector)", "matmul", lambda m, d, a, b: m.matmul(a, b), mm, [((7,), (7,)), ((1000,), (1000,))])
    add("matmul (matrix·vector)", "matmul", lambda m, d, a, b: m.matmul(a, b), mm, [((5, 3), (3,)), ((50, 40), (40,))])
    add("matmul (matrix·matrix)", "matmul", lambda m, d, a, b: m.matmul(a, b), mm,
        [((3, 5), (5, 4)), ((64, 64), (64, 64))])

    # ---- nn.functional
    add("F.linear", "nn.functional", lambda m, d, x, w, b: F(m).linear(x, w, b),
        lambda rng, dt, s: [N()(rng, dt, (s[0], s[1])), N(0.3)(rng, dt, (s[2], s[1])), N(0.3)(rng, dt, (s[2],))],
        [(1, 4, 3), (8, 16, 4), (64, 32, 16)])
    add("F.mse_loss", "nn.functional", lambda m, d, a, b: F(m).mse_loss(a, b), inputs(N(), N()))
    add("F.cross_entropy", "nn.functional", lambda m, d, x, t: F(m).cross_entropy(x, t),
        lambda rng, dt, s: [N(3)(rng, dt, s), rng.integers(0, s[1], s[0]).astype(np.int64)],
        [(1, 3), (8, 5), (100, 10)])
    add("F.gelu", "nn.functional", lambda m, d, a: F(m).gelu(a), inputs(N(3)))
    add("F.gelu (tanh)", "nn.functional", lambda m, d, a: F(m).gelu(a, approximate="tanh"), inputs(N(3)))
    add("F.silu", "nn.functional", lambda m, d, a: F(m).silu(a), inputs(N(5)))
    add("F.softplus", "nn.functional", lambda m, d, a: F(m).softplus(a), inputs(U(-30, 30)))

    # ---- creation: seeded random numbers, ranges
    seed_and = lambda rng, dt, shape: [int(rng.integers(2 ** 31)), shape]

    def seeded(draw):
        def fn(m, d, seed, shape):
            m.manual_seed(seed)
            return draw(m, shape, getattr(m, d))
        return fn

    rshapes = [(1,), (7,), (16,), (17,), (3, 5), (1000,), (10000,)]
    add("randn (manual_seed)", "creation", seeded(lambda m, s, dt: m.randn(*s, dtype=dt)), seed_and, rshapes, False)
    add("rand (manual_seed)", "creation", seeded(lambda m, s, dt: m.rand(*s, dtype=dt)), seed_and, rshapes, False)
    passthrough = lambda rng, dt, spec: [spec]
    add("arange", "creation", lambda m, d, spec: m.arange(*spec, dtype=getattr(m, d)), passthrough,
        [(0, 10, 1), (-3.5, 7.25, 0.1), (0, 1, 1e-3), (1e3, -1e3, -7.3), (0.1, 100.3, 0.37), (0, 10000, 1)], False)
    add("linspace", "creation", lambda m, d, spec: m.linspace(*spec, dtype=getattr(m, d)), passthrough,
        [(-1, 1, 1), (-1, 1, 2), (0, 1, 7), (-3.7, 12.1, 100), (0, 1e4, 1001), (-1, 1, 10000)], False)
    return c


# ============================================================================================= running

def _tensor(m, a: Any, requires_grad: bool) -> Any:
    if isinstance(a, Const):
        return m.tensor(a.array.copy())
    if not isinstance(a, np.ndarray):
        return a
    t = m.tensor(a.copy())
    if requires_grad:
        t.requires_grad_(True)
    return t


def _run(m, case: Case, d: str, args: list) -> tuple[np.ndarray, list]:
    """Value of ``case`` in module ``m`` and the gradients of its sum wrt each floating input (None: no grad)."""
    ts = [_tensor(m, a, case.grad and isinstance(a, np.ndarray) and a.dtype.kind == "f") for a in args]
    out = case.fn(m, d, *ts)
    value = np.asarray(out.detach().numpy()).copy()
    grads: list = []
    if case.grad and value.dtype.kind == "f":
        out.sum().backward()
        for t, a in zip(ts, args):
            if isinstance(a, np.ndarray) and a.dtype.kind == "f":
                grads.append(None if t.grad is None else np.asarray(t.grad.numpy()).copy())
    return value, grads


def _err(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg[:80]}"


def measure(case: Case, d: str, shape: Any, seed: int) -> tuple[Stat, Stat | None]:
    rng = np.random.default_rng([seed, zlib.crc32(f"{case.name}|{d}|{shape}".encode())])
    args = case.gen(rng, DTYPES[d], shape)
    theirs, their_grads = _run(torch, case, d, args)
    try:
        ours, our_grads = _run(sg, case, d, args)
        err = None
    except Exception as e:  # noqa: BLE001 - a failing op is a row of the table
        ours, our_grads, err = None, [], f"symgrad raised {_err(e)}"
        if os.environ.get("FIDELITY_TRACEBACK"):
            traceback.print_exc()
    value = compare(ours, theirs, err)
    if not case.grad or theirs.dtype.kind != "f":
        return value, None
    grad = Stat()
    for k, tg in enumerate(their_grads):
        if tg is None:
            continue
        og = our_grads[k] if k < len(our_grads) else None
        grad.add(compare(og, tg, err or "symgrad gave no gradient"))
    return value, grad


@dataclass
class Row:
    case: Case
    dtype: str
    value: Stat = field(default_factory=Stat)
    grad: Stat | None = None
    by_shape: dict = field(default_factory=lambda: defaultdict(lambda: [Stat(), Stat()]))


def run_all(seeds: int, only: str | None = None) -> list[Row]:
    rows = []
    for case in _cases():
        if only and only not in case.name:
            continue
        for d in DTYPES:
            row = Row(case, d)
            for shape in case.shapes:
                for seed in range(seeds):
                    v, g = measure(case, d, shape, seed)
                    row.value.add(v)
                    row.by_shape[shape][0].add(v)
                    if g is not None:
                        if row.grad is None:
                            row.grad = Stat()
                        row.grad.add(g)
                        row.by_shape[shape][1].add(g)
            rows.append(row)
    return rows

# ============================================================================================= diagnostics

def _multi_row_sum(rows: np.ndarray) -> np.ndarray:
    """torch's ``multi_row_sum`` (SumKernel.cpp): sum over axis 0 in a 4-level cascade, elementwise over the rest."""
    size, dt = rows.shape[0], rows.dtype.type
    levels = 4
    power = max(4, (int(np.ceil(np.log2(size))) if size > 1 else 0) // levels)
    step, mask = 1 << power, (1 << power) - 1
    acc = [np.zeros(rows.shape[1:], dt) for _ in range(levels)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] = acc[0] + rows[i]
            i += 1
        for j in range(1, levels):
            acc[j], acc[j - 1] = acc[j] + acc[j - 1], np.zeros_like(acc[j - 1])
            if i & (mask << (j * power)):
                break
    for k in range(i, size):
        acc[0] = acc[0] + rows[k]
    for j in range(1, levels):
        acc[0] = acc[0] + acc[j]
    return acc[0]


def _row_sum(items: np.ndarray) -> np.ndarray:
    """torch's ``row_sum``: 4 interleaved accumulators (``ilp_factor``) fed to ``multi_row_sum``, then folded."""
    n, k = items.shape[0], items.shape[0] // 4
    if k:
        part = list(_multi_row_sum(items[:k * 4].reshape((k, 4) + items.shape[1:])))
    else:
        part = [np.zeros(items.shape[1:], items.dtype) for _ in range(4)]
    for i in range(k * 4, n):
        part[0] = part[0] + items[i]
    for j in range(1, 4):
        part[0] = part[0] + part[j]
    return part[0]


def torch_order_sum(a: np.ndarray, lanes: int) -> np.ndarray:
    """torch's ``cascade_sum`` of a contiguous 1-d array (``vectorized_inner_sum`` with ``lanes``-wide vectors, or
    ``row_sum`` on scalars for fewer than ``lanes`` elements), evaluated with numpy in the array's dtype."""
    dt = a.dtype.type
    n = a.size
    if n < lanes:
        return np.asarray(dt(0) + _row_sum(a))
    v = n // lanes
    vec = _row_sum(a[:v * lanes].reshape(v, lanes))
    acc = dt(0)
    for k in range(v * lanes, n):
        acc = dt(acc + a[k])
    for k in range(lanes):
        acc = dt(acc + vec[k])
    return np.asarray(dt(0) + acc)


def _same(x: Any, y: Any) -> bool:
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def diagnostics(seeds: int) -> str:
    """Checks of the causes named in the document: what torch computes where symgrad differs."""
    rows = []
    sizes = [3, 10, 17, 100, 1000, 4097, 10000]
    res: dict = defaultdict(lambda: [0, 0])
    for d, dt in DTYPES.items():
        item = np.dtype(dt).itemsize
        for n in sizes:
            for seed in range(seeds):
                a = np.random.default_rng([seed, n, item]).standard_normal(n).astype(dt)
                t = torch.from_numpy(a.copy()).sum().numpy()
                ours = sg.tensor(a.copy()).sum().numpy()
                for key, val in (("avx2", torch_order_sum(a, 32 // item)), ("avx512", torch_order_sum(a, 64 // item)),
                                 ("numpy", np.sum(a)), ("sg", ours)):
                    res[key, d][0] += _same(t, np.asarray(val, dt))
                    res[key, d][1] += 1

    def cell(key, d):
        k, n = res[key, d]
        return f"{k}/{n}"

    def line(text, key):
        rows.append(f"| {text} | {cell(key, 'float32')} | {cell(key, 'float64')} |")

    rows += ["| check (contiguous 1-d, n in " + ", ".join(map(str, sizes)) + f", {seeds} seeds) | float32 | float64 |",
             "| --- | --- | --- |"]
    line("`torch.sum` == torch's `cascade_sum` re-evaluated in numpy with 256-bit vectors (8 / 4 lanes)", "avx2")
    line("`torch.sum` == the same with 512-bit vectors (16 / 8 lanes)", "avx512")
    line("`torch.sum` == `numpy.sum` (pairwise)", "numpy")
    line("`sg.sum` == `torch.sum`", "sg")

    rng = np.random.default_rng(0)
    c = rng.standard_normal(10000).astype(np.float32)
    tc = torch.cumsum(torch.from_numpy(c.copy()), 0).numpy()
    f64 = np.cumsum(c.astype(np.float64)).astype(np.float32)
    sc = sg.cumsum(sg.tensor(c.copy()), 0).numpy()
    rows.append(f"| float32 `torch.cumsum` (10⁴) == float64 running sum rounded to float32 | "
                f"{100 * np.mean(tc == f64):.2f} % | |")
    rows.append(f"| float32 `sg.cumsum` (10⁴) == the same | {100 * np.mean(sc == f64):.2f} % | |")
    x = np.exp(rng.uniform(np.log(1e-4), np.log(1e4), 10000)).astype(np.float32)
    exact = np.sqrt(x.astype(np.float64)).astype(np.float32)  # correctly rounded (53 >= 2*24 + 2)
    rows.append(f"| float32 `torch.sqrt` correctly rounded (10⁴ log-uniform) | "
                f"{100 * np.mean(torch.sqrt(torch.from_numpy(x.copy())).numpy() == exact):.2f} % | |")
    ours_sqrt = sg.sqrt(sg.tensor(x.copy())).numpy()
    rows.append(f"| float32 `sg.sqrt` correctly rounded | {100 * np.mean(ours_sqrt == exact):.2f} % | |")
    p = rng.uniform(0.9, 1.1, (100, 100)).astype(np.float32)
    tp = torch.from_numpy(p.copy()).requires_grad_(True)
    tr = tp.prod(dim=0)
    tr.sum().backward()
    r = tr.detach().numpy()
    sp = sg.tensor(p.copy(), requires_grad=True)
    sg.prod(sp, dim=0).sum().backward()
    rows.append(f"| float32 `prod(dim=0)` grad: torch == `result / input` | "
                f"{100 * np.mean(tp.grad.numpy() == r / p):.2f} % | |")
    rows.append(f"| float32 `prod(dim=0)` grad: symgrad == `result / input` | "
                f"{100 * np.mean(sp.grad.numpy() == r / p):.2f} % | |")
    return "\n".join(rows)


# ============================================================================================= report

def fmt_pct(st: Stat | None) -> str:
    if st is None:
        return "—"
    if st.notes and st.same == 0:
        return "error"
    if st.same == st.n:
        return "100"
    s = f"{100 * st.fraction():.2f}"
    return "99.99" if s == "100.00" else s


def fmt_ulp(st: Stat | None) -> str:
    if st is None or (st.notes and st.same == 0):
        return "—"
    parts = []
    if st.max_ulp is not None:
        parts.append(f"{st.max_ulp:,}".replace(",", " ") if st.max_ulp < 10 ** 7 else f"{st.max_ulp:.1e}")
    if st.nan_mismatch:
        parts.append(f"NaN×{st.nan_mismatch}")
    return ", ".join(parts) if parts else "— (bool)" if st.max_ulp is None else "0"


def table(rows: list[Row]) -> tuple[str, list[str]]:
    lines = ["| op | dtype | value bit-identical % | max ulp | grad bit-identical % | grad max ulp |",
             "| --- | --- | --- | --- | --- | --- |"]
    notes: list[str] = []
    group = None
    for r in rows:
        name = f"`{r.case.name}`"
        marks = []
        for st in (r.value, r.grad):
            for note in sorted(st.notes) if st is not None else ():
                if note not in notes:
                    notes.append(note)
                marks.append(notes.index(note) + 1)
        if marks:
            name += " " + "".join(f"[{k}]" for k in sorted(set(marks)))
        if r.case.group != group:
            group = r.case.group
            lines.append(f"| **{group}** | | | | | |")
        lines.append(f"| {name} | {r.dtype} | {fmt_pct(r.value)} | {fmt_ulp(r.value)} | {fmt_pct(r.grad)} | "
                     f"{fmt_ulp(r.grad)} |")
    return "\n".join(lines), notes


def size_table(rows: list[Row]) -> str:
    """Reductions per input size (the issue's target: contiguous float32 up to 10⁴ elements)."""
    shapes = RED_DIM + RED_FULL
    head = "| op | dtype | " + " | ".join(f"{int(np.prod(s))}" for s in RED_FULL) + " |"
    lines = [head, "| --- | --- |" + " --- |" * len(RED_FULL)]
    for r in rows:
        if r.case.group != "reduction":
            continue
        cells = []
        for s in shapes:
            if s in r.by_shape:
                v, g = r.by_shape[s]
                cells.append(f"{fmt_pct(v)} / {fmt_pct(g)} ({fmt_ulp(v)} / {fmt_ulp(g)} ulp)")
        lines.append(f"| `{r.case.name}` | {r.dtype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def is_target(r: Row) -> bool:
    return r.case.group in ("arithmetic", "comparison") or (r.case.group == "reduction" and r.dtype == "float32")


def summary(rows: list[Row], elapsed: float) -> str:
    both = [r for r in rows if r.value.exact and (r.grad is None or r.grad.exact)]
    out = [f"- {len(both)} of {len(rows)} (op, dtype) rows are bit-identical to torch in value and gradient "
           f"({sum(r.value.exact for r in rows)} in value); {len(rows)} rows measured in {elapsed:.0f} s."]
    errs = [r for r in rows if r.value.notes or (r.grad is not None and r.grad.notes)]
    if errs:
        out.append("- rows with failures or mismatched shapes/dtypes: "
                   + ", ".join(f"`{r.case.name}` {r.dtype}" for r in errs) + ".")
    targets = [r for r in rows if is_target(r)]
    missed = [r for r in targets if not (r.value.exact and (r.grad is None or r.grad.exact))]
    out.append(f"- issue target (100 % for float32 and float64 arithmetic and comparisons and their gradients, and "
               f"for reductions over contiguous float32 up to 10⁴ elements): {len(targets) - len(missed)} of "
               f"{len(targets)} target rows met.")
    for r in missed:
        parts = []
        if not r.value.exact:
            parts.append(f"value {fmt_pct(r.value)} % (max {fmt_ulp(r.value)} ulp)")
        if r.grad is not None and not r.grad.exact:
            parts.append(f"grad {fmt_pct(r.grad)} % (max {fmt_ulp(r.grad)} ulp)")
        out.append(f"  - `{r.case.name}` {r.dtype}: " + "; ".join(parts))
    creation = [r for r in rows if r.case.group == "creation"]
    if creation:
        ok = all(r.value.exact for r in creation)
        out.append(f"- creation (seeded `randn`/`rand`, `arange`, `linspace`): "
                   f"{'all bit-identical' if ok else 'NOT all bit-identical'}.")
    return "\n".join(out)


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def git(*a):
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", "symgrad", "codegen"))
    return {"cpu": cpu, "cores": os.cpu_count(), "capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "threads": torch.get_num_threads(), "commit": commit + (" (with uncommitted changes)" if dirty else "")}


HEADER = """# Fidelity: symgrad's numbers against torch's

Produced by `benchmarks/fidelity.py` (the issue "The same numbers as torch"). Command:

```sh
{command}
```

**What is measured.** For float32 and float64, each op runs eagerly in symgrad and in torch 2.13 on identical
inputs: deterministic random arrays (`numpy.random.default_rng([seed, crc32(op, dtype, shape)])`, seeds
0..{last_seed}), in several shapes per op (elementwise: 0-d, 7, 3×5 and 100×100 = 10⁴ elements; reductions: 10,
1000 and 10⁴ elements), with values in each op's domain (divisors away from 0, `log`/`sqrt` log-uniform on
[1e-4, 1e4], `tan` on (-1.5, 1.5), ...). Piecewise ops get ties on purpose: 10 % exact zeros for `abs`/`relu`,
10 % of the elements at the bounds of `clamp`, 10 % of the pairs equal for `maximum`/`minimum` and the
comparisons; `log1p`/`expm1` get 20 % tiny arguments (1e-9..1e-2).

- **value bit-identical %**: the share of output elements whose bits equal torch's (NaN == NaN counts as
  identical; -0.0 against +0.0 does not). Comparisons compare the booleans.
- **max ulp**: the largest distance in units in the last place, with floats mapped to ordered integers (the bits
  viewed as a signed integer, negative ones flipped: -0.0 and +0.0 are 0 ulp apart, inf is one ulp past the
  largest finite number); `NaN×k` counts elements where exactly one side is NaN.
- **grad**: the same for the gradient of `out.sum()` with respect to every floating input (`backward()`),
  pooled over the inputs.
- `—`: not applicable (boolean or creation ops have no gradient; booleans have no ulps).

Symgrad's eager backward moves a graph structure to a numba kernel after `SYMGRAD_EAGER_JIT_AFTER` (50)
backward calls; every structure here runs at most {seeds} times, so the gradients are those of the generated
numpy code.

**Machine.** {cpu} ({cores} logical CPUs visible), torch {torch} with CPU capability `{capability}`
(`torch.backends.cpu.get_cpu_capability()`), {threads} torch threads, numpy {numpy}, Python {python}, symgrad at
`{commit}`. Other machines differ: torch dispatches its vectorised kernels on the CPU capability (AVX2 vs AVX512
changes the lane count of some transcendental kernels; the sum and prod kernels run at 256 bits on both, other
architectures are not covered), its threads split large reductions, and numpy's BLAS and SIMD paths are chosen at
run time too.

**What limits which rows.** The section *Diagnostics* below re-checks the first four points on this machine.

- **arithmetic, comparisons** (`+ - * / neg abs`, a Python-number operand, `< <= == != > >=`, `clamp maximum
  minimum where relu`): one IEEE operation per element on both sides (torch converts a Python number to the
  tensor's dtype first, as symgrad does), so the bits agree, gradients included.
- **reductions** (`sum mean prod cumsum`, the gradient of a broadcast operand): symgrad's eager values and the
  generated numpy code of eager backward programs follow torch's CPU order (`codegen/runtime.py`, re-implemented
  from `aten/src/ATen/native/cpu/SumKernel.cpp`, `cpu/Reduce.h` and `TensorIterator`): the iterator's dims (reduced
  dims innermost, merged where contiguous), `cascade_sum` (a contiguous row in `Vectorized<T>` lanes, 4 interleaved
  vector accumulators, each a 4-level cascade with chunks of 2^max(4, ⌈log2 n⌉/4) rows, then the scalar tail and the
  lanes one after the other; outer dims in groups of 4 vectors; scalar `row_sum` where nothing is contiguous), the
  vectorised product (4 vector accumulators, `(a0*a1)*(a2*a3)`, the lanes, then the tail), and above 32768 elements
  a full reduction split over torch's threads (`two_pass_reduction`). The kernels run at 256-bit width although
  torch reports `AVX512` (they are registered for its AVX2 build: *Diagnostics* re-evaluates `cascade_sum` in numpy
  at both widths). `mean` is `sum / n`; `cumsum` accumulates float32 in float64 and rounds each prefix; the gradient
  of a broadcast operand is one `at::sum_to` sum; prod's gradient is torch's `grad * (result / input)` (no zero in
  the input). Compiled kernels keep their own order. Not reproduced: the sums inside `softmax`, `log_softmax`,
  `logsumexp` (torch's softmax kernels reduce each row with their own vectorised loops), `norm` (its own norm
  kernel) and `var` / `std` (Welford), and the matrix products below. `amax` does not round.
- **matmul, F.linear**: BLAS. symgrad calls numpy's (OpenBLAS), torch its own (MKL here); blocking, the order of
  the dot products and FMA use differ. The gradients of `a @ b` are themselves products with a vector of ones;
  those of the vector and matrix-vector products agree here, those of matrix products go through BLAS again.
- **transcendentals** (`exp log log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid erf atan asinh sinh cosh`, `pow`
  with an exponent other than 2 and -1, `gelu silu softplus`): symgrad evaluates them with numpy (its own SIMD
  kernels for some float32 functions, otherwise libm), torch with SLEEF or its own vectorised polynomials, each
  within 1–4 ulp but not the same algorithm. Even `sqrt` differs: numpy's is correctly rounded, torch 2.13's is not
  always (float32: *Diagnostics*; 1 ulp off also for 0-d and strided tensors, so not only its vectorised path).
  torch special-cases `pow` with the scalar exponents 2, 3, 0.5, -0.5, -1, -2 (`a*a`, `a*a*a`, `sqrt`, `rsqrt`,
  `1/a`, `1/(a*a)`), symgrad evaluates `a ** 3`, `a ** 0.5` with `numpy.power`. Large ulp counts (10⁶ and more) come
  from results near zero, where an ulp is tiny: torch's `gelu` computes `x * 0.5 * (1 + erf(x/√2))` and returns -0.0
  in the negative tail, where symgrad returns the small negative value.
- **gradients**: symgrad's eager backward differentiates the recorded graph symbolically and evaluates the
  derived DAG as generated numpy code; each node's local derivative is an explicit rule or SymPy's derivative of
  its form. Where the rule is torch's formula the bits agree given the same forward values: `tanh` (`1 - y*y`),
  `sigmoid` (`y*(1 - y)`), `sqrt` (`grad / (2*y)`), `pow` (`e * x.pow(e - 1)` with torch's special exponents), `prod`.
  Most gradient differences in this table come from the forward values of transcendentals (`1 - y*y` amplifies a
  1-ulp difference of `tanh` near saturation: thousands of ulps). The gradient of `out.sum()` has an upstream
  gradient of 1; the *chain* rows weight the output by a fixed random `w`, so the rules see another upstream
  gradient `g`. There products are reassociated where SymPy flattens them: the divisor's gradient of `a / b` is
  `((-g) * y) / b` against torch's `(-g) * ((a / b) / b)`, sigmoid's `(g * y) * (1 - y)` against
  `(g * (1 - y)) * y`, pow's `(3 * g) * (x * x)` against `g * (3 * (x * x))`. Reductions, `mul`, `log` and `rsqrt`
  agree there too. The gradient of
  `softmax(a).sum()` is zero up to rounding (the rows sum to 1), so its rows compare rounding noise around 0; the
  `softmax(a) * w` rows weight the outputs by a fixed random `w` instead.
"""


def rewrap(text: str, width: int = 116) -> str:
    """Re-fill the paragraphs and bullets of Markdown ``text`` (code blocks, headings and tables kept)."""
    out, block, fence = [], [], False

    def flush():
        if block:
            para = " ".join(line.strip() for line in block)
            bullet = para.startswith("- ")
            out.append(textwrap.fill(para, width, subsequent_indent="  " if bullet else "",
                                     break_long_words=False, break_on_hyphens=False))
            block.clear()

    for line in text.splitlines():
        if line.startswith("```"):
            flush()
            fence = not fence
            out.append(line)
        elif fence or line.startswith(("#", "|")) or not line.strip():
            flush()
            out.append(line)
        else:
            if line.startswith("- "):
                flush()
            block.append(line)
    flush()
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="random inputs per (op, dtype, shape); default 3")
    ap.add_argument("--out", type=Path, help="write the Markdown document there (e.g. docs/fidelity.md)")
    ap.add_argument("--only", help="only the ops whose name contains this")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    np.seterr(all="ignore")
    t0 = time.perf_counter()
    rows = run_all(args.seeds, args.only)
    elapsed = time.perf_counter() - t0
    tab, notes = table(rows)
    foot = "\n".join(f"[{k}] {n}" for k, n in enumerate(notes, 1))
    summ = summary(rows, elapsed)
    sizes = size_table(rows)
    print(tab)
    if foot:
        print("\n" + foot)
    print("\nReductions by size (value % / grad %, max ulp value / grad):\n" + sizes)
    diag = diagnostics(args.seeds)
    print("\nDiagnostics:\n" + diag)
    print("\nSummary:\n" + summ)
    if args.out:
        cmd = "python benchmarks/fidelity.py" + (f" --seeds {args.seeds}" if args.seeds != 3 else "") + \
            f" --out {args.out}" + (f" --only {args.only}" if args.only else "")
        info = machine()
        text = rewrap(HEADER.format(command=cmd, seeds=args.seeds, last_seed=args.seeds - 1, **info))
        text += "\n## Summary\n\n" + summ + "\n\n## Table\n\n" + tab + "\n"
        if foot:
            text += "\n" + "\n".join(f"{line}  " for line in foot.splitlines()) + "\n"
        text += ("\n## Reductions by size\n\nPer input size (elements): value bit-identical % / grad bit-identical % "
                 "(max ulp value / grad). `dim=-1` and `dim=0` rows reduce a 2×5, 10×100 or 100×100 array.\n\n"
                 + sizes + "\n")
        text += ("\n## Diagnostics\n\nWhat torch computes, checked in this run: torch's sum re-evaluated in plain "
                 "numpy (`torch_order_sum` in the script, independent of `codegen/runtime.py`) at both vector widths, "
                 "the accumulator of `cumsum`, the rounding of `sqrt` (torch's is not correctly rounded here, "
                 "symgrad's is), the formula of `prod`'s gradient.\n\n" + diag + "\n")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
