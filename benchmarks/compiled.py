"""Compiled symgrad (``sg.value_and_grad``, public API) against hand-written numba, numpy, torch and JAX.

    python benchmarks/compiled.py [--quick] [--n 1000000] [--depths 25,50,100,200,400]

Everything runs in one process, side by side, on float64:

W1  ``mean(3*(x+2)**2)``, value and gradient, n = 10**6.
W2  ``sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))``, value and gradients wrt x and y, n = 10**6.
W4  ``a*b + sin(a)`` on Python floats: per-call latency of value_and_grad (µs per call).
W6  the chain ``h = sin(h)*cos(x) + h*0.5`` repeated d times (x a vector of 1000), ``h.sum()``:
    compile-time cost of value_and_grad as a function of d.

Columns of W1/W2/W4 (one row per implementation; a missing package is reported and skipped):

* ``symgrad``: ``sg.value_and_grad(f, argnums=...)`` called on numpy arrays / Python floats, after
  enough calls that the signature is hot and its fused numba kernel is in use (the first call of a
  signature runs generated numpy code, the second compiles the numba kernel).
* ``hand numba (prange|serial)``: a fused value-and-gradient loop written by hand (``fastmath=True``,
  each transcendental once, outputs allocated per call). The best of them is the reference: the
  ``/ best hand`` column is each row's median over its median (``(by min)``: the same with minima,
  steadier on a loaded machine).
* ``numpy (hand grad)``: numpy with the gradient derived by hand (for W4 also ``math`` on floats).
* ``torch eager``: ``torch.autograd.grad`` on tensors made from the inputs at each call.
* ``jax jit(value_and_grad)``: if ``jax`` imports (``pip install -e ".[bench]"``), with x64 enabled.

Each result is checked against numpy before timing. Timing: ``time.perf_counter``; every
implementation is timed in blocks of consecutive calls (after warm-up calls in the block), the blocks
of all implementations taken in turn over several rounds so that a change in machine load hits
them alike; a block holds at least the given number of calls and lasts at least about 20 ms, so a
0.1 ms call is sampled as many times as its median needs; the figure is the median (and min) over
all timed calls. Consecutive calls rather than
a strict round robin: on this 2-core machine, numba's OpenMP workers spinning or sleeping after the
previous implementation's call can make a parallel kernel 10x slower for one call, which measures
thread hand-over, not the kernel. No timing is asserted; the summary only compares the figures to
the targets of the compiler issue.

W6 columns, per depth d (fresh ``sg.value_and_grad`` each time, so every signature is new):

* ``before numba``: the first call with the numpy backend (``symgrad.kernels.program.BACKEND = "numpy"``):
  trace + derive + simplify + lower + emit + write/import the numpy kernel + one numpy run, median
  and min over repeats; SymPy's cache is cleared before each repeat, so each starts as cold as a
  new process. ``trace+derive`` and ``lower+emit`` are the two stage times symgrad logs at debug
  level for that build (logger ``symgrad``); ``run ms`` is a later call (the numpy run alone).
* ``numba``: with the numba backend, the first hot call (the 2nd call) minus a normal call, split
  into the Python-side emission (``emit``: ``f.source(x, backend="numba")``, timed separately) and
  the rest (``jit``: numba's type inference and LLVM). One measurement per depth (a second compile
  of the same source would hit numba's on-disk cache). The cache folder is a fresh temporary one,
  so nothing is reused from earlier runs.
* op counts, from the kernel IR of the compiled signature (private access, like the diagnostic
  ``(symgrad's numba kernel alone)`` row of W1/W2; both are skipped if the internals move):
  ``kernel ops`` = SymPy ``count_ops`` of every elementwise statement (a tree count per statement)
  plus one per reduction/view statement, for the value-and-gradient kernel (``vag``) and the
  forward-only kernel of ``sg.compile(f)`` (``fwd``); ``grad ops`` = vag - fwd, the work the
  derivative adds; ``grad nodes`` = DAG nodes reachable from the gradient outputs and not from the
  value, before simplification. Linear in d means a constant ``/d`` column.
* Linearity: the log-log slope of time (or count) against d, over all depths and between the two
  largest depths (1.0 = linear, 2.0 = quadratic); "linear" is printed when the top slope is <= 1.2.

``--quick`` (under a minute on 2 cores): fewer repeats, W6 depths up to 200 and the numba compile
only up to depth 100.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import math
import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

# A fresh cache folder: compile times are cold and nothing is reused from an earlier run.
_CACHE = tempfile.mkdtemp(prefix="symgrad-bench-")
os.environ["SYMGRAD_CACHE_DIR"] = _CACHE

import numba  # noqa: E402
import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402

# the kernel pipeline module holds BACKEND (sg.set_backend sets it)
sgc = importlib.import_module("symgrad.kernels.program")

try:
    import torch
except ImportError:  # pragma: no cover - torch is in the test extra
    torch = None

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None

MISSING = []
if torch is None:
    MISSING.append("torch: not installed, column skipped")
if jax is None:
    MISSING.append('jax: not installed, column skipped (pip install -e ".[bench]")')


# ------------------------------------------------------------------------------------ workloads

def w1(x):
    return (3 * (x + 2) ** 2).mean()


def w2(x, y):
    return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum()


def w4(a, b):
    return a * b + sg.sin(a)


def chain(d):
    def w6(x):
        h = x
        for _ in range(d):
            h = sg.sin(h) * sg.cos(x) + h * 0.5
        return h.sum()
    w6.__name__ = f"chain{d}"
    return w6


# ------------------------------------------------------------------------------------ hand-written
# the reference kernels live in fused_kernels.py (this folder is on sys.path when run as a script)
from fused_kernels import _w1_hand, _w2_hand  # noqa: E402


def _hand_w1(parallel):
    return _w1_hand(parallel)


def _hand_w2(parallel):
    k = _w2_hand(parallel)

    def w2_hand(x, y):
        acc, gx, gy = k(x, y)
        return acc, (gx, gy)
    return w2_hand


@numba.njit(fastmath=True)
def _hand_w4(a, b):
    return a * b + math.sin(a), (b + math.cos(a), a)


def numpy_w1(x):
    t = x + 2
    return np.mean(3 * t**2), (6.0 / x.size) * t


def numpy_w2(x, y):
    s, e, x2, th = np.sin(x), np.exp(-y * y), x * x, np.tanh(y)
    lg = np.log1p(x2)
    return np.sum(s * e + lg * th), (np.cos(x) * e + 2 * x / (1 + x2) * th, -2 * y * s * e + lg * (1 - th * th))


def numpy_w4(a, b):
    return float(a * b + np.sin(a)), (float(b + np.cos(a)), a)


def math_w4(a, b):
    return a * b + math.sin(a), (b + math.cos(a), a)


def torch_w1(x):
    xt = torch.from_numpy(x).requires_grad_(True)
    v = (3 * (xt + 2) ** 2).mean()
    (g,) = torch.autograd.grad(v, xt)
    return v.item(), g


def torch_w2(x, y):
    xt, yt = torch.from_numpy(x).requires_grad_(True), torch.from_numpy(y).requires_grad_(True)
    v = (torch.sin(xt) * torch.exp(-yt**2) + torch.log1p(xt**2) * torch.tanh(yt)).sum()
    gx, gy = torch.autograd.grad(v, (xt, yt))
    return v.item(), (gx, gy)


def torch_w4(a, b):
    at = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    v = at * bt + torch.sin(at)
    ga, gb = torch.autograd.grad(v, (at, bt))
    return v.item(), (ga.item(), gb.item())


def jax_variants():
    """JAX ``jit(value_and_grad)`` callables (taking numpy inputs converted once) or {}."""
    if jax is None:
        return {}
    f1 = jax.jit(jax.value_and_grad(lambda x: jnp.mean(3 * (x + 2) ** 2)))
    f2 = jax.jit(jax.value_and_grad(
        lambda x, y: jnp.sum(jnp.sin(x) * jnp.exp(-y**2) + jnp.log1p(x**2) * jnp.tanh(y)), argnums=(0, 1)))
    f4 = jax.jit(jax.value_and_grad(lambda a, b: a * b + jnp.sin(a), argnums=(0, 1)))

    def w4(a, b):
        v, (ga, gb) = f4(a, b)
        return float(v), (float(ga), float(gb))
    return {"W1": lambda x: jax.block_until_ready(f1(x)), "W2": lambda x, y: jax.block_until_ready(f2(x, y)),
            "W4": w4, "device_put": jnp.asarray}


# ------------------------------------------------------------------------------------ timing helpers

def leaves(r):
    """A result's numbers, flattened, as float64 arrays (numpy, torch, jax, floats)."""
    if isinstance(r, (tuple, list)):
        return [a for x in r for a in leaves(x)]
    if torch is not None and isinstance(r, torch.Tensor):
        r = r.detach().numpy()
    return [np.asarray(r, dtype=np.float64)]


def check(name, got, want, rtol=1e-9):
    g, w = leaves(got), leaves(want)
    ok = len(g) == len(w) and all(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=1e-12)
                                  for a, b in zip(g, w))
    if not ok:
        raise SystemExit(f"{name}: wrong result")


def block_times(calls, rounds, per_block, warm=2, inner=None, min_block_s=0.02):
    """Per label: (median, min) seconds per call. Each round times every implementation in turn:
    ``warm`` untimed calls, then at least ``per_block`` timed samples of ``inner[label]`` (default 1)
    consecutive calls each, and enough samples that the block lasts about ``min_block_s`` (estimated
    from the last warm-up call): a fast call gets as many samples as a slow one gets time, so the first
    calls after the pause between blocks do not decide its median."""
    inner = inner or {}
    ts = {label: [] for label in calls}
    for _ in range(rounds):
        for label, (fn, args) in calls.items():
            k = inner.get(label, 1)
            time.sleep(0.005)  # let the previous block's OpenMP workers (numba's, torch's) park
            est = 0.0
            for _ in range(warm):
                t0 = time.perf_counter()
                fn(*args)
                est = time.perf_counter() - t0
            samples = max(per_block, min(1000, math.ceil(min_block_s / max(est * k, 1e-9))))
            for _ in range(samples):
                t0 = time.perf_counter()
                for _ in range(k):
                    fn(*args)
                ts[label].append((time.perf_counter() - t0) / k)
    return {label: (float(np.median(v)), float(np.min(v))) for label, v in ts.items()}


def print_table(title, times, unit, scale, ref_labels, notes):
    best = min(times[label][0] for label in ref_labels)
    best_min = min(times[label][1] for label in ref_labels)
    width = max(len(label) for label in times)
    print(f"\n{title}")
    print(f"  {'implementation':{width}}  {'median ' + unit:>10}  {'min ' + unit:>9}  {'/ best hand':>11}  "
          f"{'(by min)':>8}")
    for label, (med, low) in times.items():
        print(f"  {label:{width}}  {scale * med:10.3f}  {scale * low:9.3f}  {med / best:11.2f}  {low / best_min:8.2f}  "
              f"{notes.get(label, '')}")
    return best


def warm_symgrad(f, *args):
    """Call a symgrad function until its signature runs the numba kernel; return (first, second) call
    seconds (generated numpy code + build, then numba emission + compile)."""
    t = []
    for _ in range(2):
        t0 = time.perf_counter()
        f(*args)
        t.append(time.perf_counter() - t0)
    f(*args)
    return t


# ------------------------------------------------------------------------------------ W1, W2

def symgrad_kernel(cf, arrays):
    """(numba kernel, its arguments) of a compiled function's single hot signature, or None: a
    diagnostic row that separates the generated kernel from the call wrapper (private access). The
    kernel takes only the params it reads, in its own order (``kernel.params[i].index`` indexes the
    arguments followed by the closed-over constants)."""
    try:
        (e,) = cf._entries.values()
        values = list(arrays) + list(e.consts)
        return (e.jit, tuple(values[q.index] for q in e.kernel.params)) if e.jit is not None else None
    except Exception:  # noqa: BLE001 - internals moved: the row is optional
        return None


def run_arrays(name, title, f, argnums, arrays, hand, ref, tfn, jfn, rounds, per_block, results):
    want = ref(*arrays)
    calls, notes = {}, {}
    vg = sg.value_and_grad(f, argnums=argnums)
    first, hot = warm_symgrad(vg, *arrays)
    calls["symgrad value_and_grad"] = (vg, arrays)
    notes["symgrad value_and_grad"] = f"1st call {first:.2f} s (numpy code), 2nd {hot:.2f} s (numba compile)"
    kernel = symgrad_kernel(vg, arrays)
    if kernel is not None:
        label = "(symgrad's numba kernel alone)"
        calls[label] = kernel
        notes[label] = "diagnostic, private access: the same kernel without the call wrapper"
    hands = []
    for par in (True, False):
        label = f"hand numba {'prange' if par else 'serial'}"
        t0 = time.perf_counter()
        k = hand(par)
        k(*arrays)
        notes[label] = f"compile {time.perf_counter() - t0:.2f} s"
        calls[label] = (k, arrays)
        hands.append(label)
    calls["numpy (hand grad)"] = (ref, arrays)
    if torch is not None:
        calls["torch eager"] = (tfn, arrays)
    if jfn is not None:
        jarrays = tuple(jfn["device_put"](a) for a in arrays)
        t0 = time.perf_counter()
        jfn[name](*jarrays)
        notes["jax jit(value_and_grad)"] = f"first call {time.perf_counter() - t0:.2f} s"
        calls["jax jit(value_and_grad)"] = (jfn[name], jarrays)
    for label, (fn, a) in calls.items():
        check(f"{name} {label}", fn(*a), want)
    if "(symgrad's numba kernel alone)" in calls:  # diagnostic row: shown, not part of the comparison
        calls["(symgrad's numba kernel alone)"] = calls.pop("(symgrad's numba kernel alone)")
    times = block_times(calls, rounds, per_block)
    best = print_table(title, times, "ms", 1e3, hands, notes)
    results[name] = {label: med / best for label, (med, _) in times.items()}
    results[name + " ms"] = {label: 1e3 * med for label, (med, _) in times.items()}


# ------------------------------------------------------------------------------------ W4

def run_scalar(rounds, per_block, jfn, results):
    a, b = 1.0, 2.0
    want = math_w4(a, b)
    vg = sg.value_and_grad(w4, argnums=(0, 1))
    first, hot = warm_symgrad(vg, a, b)
    calls = {"symgrad value_and_grad": (vg, (a, b)), "hand numba": (_hand_w4, (a, b)),
             "python math (hand grad)": (math_w4, (a, b)), "numpy (hand grad)": (numpy_w4, (a, b))}
    notes = {"symgrad value_and_grad": f"1st call {1e3 * first:.0f} ms, 2nd {hot:.2f} s",
             "hand numba": "the reference (a jitted call from Python)",
             "python math (hand grad)": "no kernel at all: the interpreter's floor"}
    if torch is not None:
        calls["torch eager"] = (torch_w4, (a, b))
    if jfn is not None:
        calls["jax jit(value_and_grad)"] = (jfn["W4"], (a, b))
    noop = lambda a, b: None  # noqa: E731
    calls["(no-op Python call)"] = (noop, (a, b))
    notes["(no-op Python call)"] = "loop + call overhead included in every row"
    _hand_w4(a, b)
    for label, (fn, args) in calls.items():
        if fn is not noop:
            check(f"W4 {label}", fn(*args), want, rtol=1e-12)
    # calls per timed sample: about 2 ms of work each
    ts = {}
    for label, (fn, args) in calls.items():
        fn(*args)
        t0 = time.perf_counter()
        for _ in range(200):
            fn(*args)
        per = (time.perf_counter() - t0) / 200
        ts[label] = max(20, min(20000, int(2e-3 / max(per, 1e-9))))
    times = block_times(calls, rounds, per_block, inner=ts)
    best = print_table("W4  a*b + sin(a), value_and_grad on Python floats: µs per call", times, "µs", 1e6,
                       ["hand numba"], notes)
    results["W4"] = {label: med / best for label, (med, _) in times.items()}
    results["W4 us"] = {label: 1e6 * med for label, (med, _) in times.items()}


# ------------------------------------------------------------------------------------ W6

def kernel_ops(cf):
    """(kernel ops, grad-only DAG nodes) of a compiled function's single signature (private access)."""
    try:
        from codegen import ir
        from symgrad.core.graph import toposort

        (e,) = cf._entries.values()
        ops = 0
        for st in e.kernel.body:
            ops += sp.count_ops(st.expr) if isinstance(st, ir.Elementwise) else 1
        nodes = None
        if e.grads:
            fwd = {n.id for n in toposort([e.out])}
            nodes = sum(1 for n in toposort(list(e.grads)) if n.id not in fwd and n.op.family != "source")
        return ops, nodes
    except Exception:  # noqa: BLE001 - internals moved: the counts are optional
        return None, None


def slope(ds, ys):
    """Log-log slopes (all points, two largest) of y against d."""
    pts = [(d, y) for d, y in zip(ds, ys) if y is not None and y > 0]
    if len(pts) < 2:
        return None, None
    lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0]), float((ly[-1] - ly[-2]) / (lx[-1] - lx[-2]))


class _StageLog(logging.Handler):
    """Collects the stage times symgrad logs (debug level) when it builds a signature."""

    PATTERN = re.compile(r"trace\+derive ([\d.]+) ms, lower\+emit\+load ([\d.]+) ms")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.stages = []

    def emit(self, record):
        m = self.PATTERN.search(record.getMessage())
        if m:
            self.stages.append((float(m.group(1)) / 1e3, float(m.group(2)) / 1e3))


def run_chain(depths, jit_depths, reps, results):
    from sympy.core.cache import clear_cache

    x = np.linspace(-1.0, 1.0, 1000)
    rows = []
    backend = sgc.BACKEND
    logger = logging.getLogger("symgrad")
    handler, level = _StageLog(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        for d in depths:
            f6 = chain(d)
            sgc.BACKEND = "numpy"
            try:
                firsts, runs, stages = [], [], []
                for _ in range(reps):
                    clear_cache()  # SymPy's expression cache: each repeat starts as cold as a new process
                    vg = sg.value_and_grad(f6)
                    handler.stages.clear()
                    t0 = time.perf_counter()
                    vg(x)
                    firsts.append(time.perf_counter() - t0)
                    stages.append(handler.stages[0] if handler.stages else (None, None))
                    vg(x)
                    t0 = time.perf_counter()
                    vg(x)
                    runs.append(time.perf_counter() - t0)
                vag_ops, grad_nodes = kernel_ops(vg)
                fwd = sg.compile(f6)
                fwd(x)
                fwd_ops, _ = kernel_ops(fwd)
            finally:
                sgc.BACKEND = backend
            emit = jit = None
            if d in jit_depths and backend == "numba":
                vg = sg.value_and_grad(f6)
                vg(x)
                t0 = time.perf_counter()
                vg(x)
                hot = time.perf_counter() - t0
                normal = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    vg(x)
                    normal.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                vg.source(x, backend="numba")
                emit = time.perf_counter() - t0
                jit = max(hot - float(np.median(normal)) - emit, 0.0)
            grad_ops = vag_ops - fwd_ops if vag_ops is not None and fwd_ops is not None else None
            i = int(np.argsort(firsts)[len(firsts) // 2])  # the median repeat (the upper one of two)
            rows.append(dict(d=d, first=firsts[i], best=min(firsts), trace=stages[i][0], lower=stages[i][1],
                             run=float(np.median(runs)), emit=emit, jit=jit, vag=vag_ops, fwd=fwd_ops,
                             grad=grad_ops, nodes=grad_nodes))
            print(f"  ... W6 depth {d} done", file=sys.stderr, flush=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

    def fmt(v, spec, scale=1.0):
        if v is None:
            return format("-", ">" + spec[:-1].split(".")[0])
        return format(v if scale == 1.0 else scale * v, spec)
    print("\nW6  h = sin(h)*cos(x) + h*0.5 repeated d times, x: 1000 float64, value_and_grad; times in s")
    print(f"  {'':4}  {'before numba (numpy backend), 1st call':^42}  {'':8}  {'numba (2nd call)':^25}  "
          f"{'kernel ops':^17}  {'derivative size':^29}")
    print(f"  {'d':>4}  {'median':>7}  {'min':>6}  {'trace+':>7}  {'lower+':>7}  {'ms/d':>5}  "
          f"{'run ms':>8}  {'emit':>5}  {'jit':>6}  {'ms/d':>8}  {'vag':>5}  {'fwd':>5}  "
          f"{'grad ops':>8}  {'/d':>4}  {'nodes':>6}  {'/d':>4}")
    print(f"  {'':4}  {'':7}  {'':6}  {'derive':>7}  {'emit':>7}  {'':5}  {'':8}")
    for r in rows:
        d = r["d"]
        numba_total = r["jit"] + r["emit"] if r["jit"] is not None else None
        print(f"  {d:4d}  {r['first']:7.3f}  {r['best']:6.3f}  {fmt(r['trace'], '7.3f')}  {fmt(r['lower'], '7.3f')}  "
              f"{1e3 * r['first'] / d:5.2f}  {1e3 * r['run']:8.2f}  {fmt(r['emit'], '5.2f')}  {fmt(r['jit'], '6.2f')}  "
              f"{fmt(numba_total, '8.1f', 1e3 / d)}  {fmt(r['vag'], '5d')}  {fmt(r['fwd'], '5d')}  "
              f"{fmt(r['grad'], '8d')}  {fmt(None if r['grad'] is None else r['grad'] / d, '4.1f')}  "
              f"{fmt(r['nodes'], '6d')}  {fmt(None if r['nodes'] is None else r['nodes'] / d, '4.1f')}")
    ds = [r["d"] for r in rows]
    verdicts = {}
    print("  log-log slope against d (1 = linear, 2 = quadratic): all depths / two largest")
    series = {"first": ("1st call before numba (min)", [r["best"] for r in rows]),
              "trace": ("  of which trace+derive", [r["trace"] for r in rows]),
              "lower": ("  of which lower+emit+load", [r["lower"] for r in rows]),
              "numba": ("numba emit + jit", [r["jit"] + r["emit"] if r["jit"] is not None else None for r in rows]),
              "grad": ("derivative kernel ops", [r["grad"] for r in rows]),
              "nodes": ("derivative DAG nodes", [r["nodes"] for r in rows])}
    for key, (label, ys) in series.items():
        s_all, s_top = slope(ds, ys)
        if s_all is None:
            print(f"    {label:30} -")
            continue
        verdict = "linear" if s_top <= 1.2 else "SUPERLINEAR"
        verdicts[key] = (s_all, s_top, verdict)
        print(f"    {label:30} {s_all:5.2f} / {s_top:5.2f}  {verdict}")
    results["W6"] = {"rows": rows, "verdicts": verdicts}


# ------------------------------------------------------------------------------------ summary

def summary(results, depths):
    print("\nTargets (issue 3, 'Done when'), from the figures above:")

    def line(ok, text):
        print(f"  [{'met' if ok else 'MISSED' if ok is not None else 'n/a'}] {text}")
    r1 = results.get("W1", {}).get("symgrad value_and_grad")
    line(r1 is not None and r1 <= 1.25, f"W1 value_and_grad <= 1.25x best hand kernel: {r1:.3f}x")
    r2 = results.get("W2", {}).get("symgrad value_and_grad")
    line(r2 is not None and r2 <= 1.1, f"W2 value_and_grad <= 1.1x best hand kernel: {r2:.3f}x")
    jx = results.get("W2", {}).get("jax jit(value_and_grad)")
    if jx is None:
        line(None, "W2 faster than JAX jit(value_and_grad): jax not installed")
    else:
        line(r2 < jx, f"W2 faster than JAX jit(value_and_grad): {r2:.3f}x vs JAX {jx:.3f}x")
    us = results.get("W4 us", {}).get("symgrad value_and_grad")
    line(us is not None and us <= 1.0, f"W4 <= 1 µs per call: {us:.2f} µs")
    rows = {r["d"]: r for r in results["W6"]["rows"]}
    v = results["W6"]["verdicts"]
    if 200 in rows:
        line(rows[200]["first"] < 1.0, f"W6 depth 200 before numba < 1 s: median {rows[200]['first']:.2f} s "
                                       f"(min {rows[200]['best']:.2f} s)")
    if "first" in v:
        line(v["first"][2] == "linear", f"W6 trace + derive + emit linear in depth: slope {v['first'][1]:.2f} "
                                        f"between d = {depths[-2]} and {depths[-1]}")
    if "grad" in v:
        line(v["grad"][2] == "linear", f"W6 derivative op count linear: slope {v['grad'][1]:.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and smaller W6 depths (< 1 min)")
    ap.add_argument("--n", type=int, default=1_000_000, help="W1/W2 array size")
    ap.add_argument("--depths", default=None, help="W6 depths, comma separated")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    if args.quick:
        rounds, per_block, reps = 3, 5, 2
        depths, jit_limit = [25, 50, 100, 200], 100
    else:
        rounds, per_block, reps = 5, 10, 3
        depths, jit_limit = [25, 50, 100, 200, 400], 400
    if args.depths:
        depths = sorted(int(d) for d in args.depths.split(","))
    jit_depths = [d for d in depths if d <= jit_limit]
    print(f"symgrad compiled benchmarks{' (--quick)' if args.quick else ''}: float64, "
          f"{os.cpu_count()} CPUs, numba {numba.__version__} ({numba.get_num_threads()} threads), "
          f"numpy {np.__version__}"
          + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch is not None else "")
          + (f", jax {jax.__version__}" if jax is not None else ""))
    print(f"symgrad backend {sgc.BACKEND!r}, cache folder {_CACHE} (fresh)")
    for m in MISSING:
        print("  " + m)
    print(f"times: median (and min) of {rounds} rounds x at least {per_block} calls (and 20 ms) per implementation, "
          "after warm-up")
    rng = np.random.default_rng(0)
    n = args.n
    x, y = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    jfn = jax_variants() or None
    results = {}
    run_arrays("W1", f"W1  mean(3*(x+2)**2), value_and_grad, n = {n:,}", w1, 0, (x,), _hand_w1, numpy_w1,
               torch_w1, jfn, rounds, per_block, results)
    run_arrays("W2", f"W2  sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y)), grads wrt x and y, n = {n:,}", w2,
               (0, 1), (x, y), _hand_w2, numpy_w2, torch_w2, jfn, rounds, max(3, per_block // 2), results)
    run_scalar(rounds, per_block, jfn, results)
    run_chain(depths, jit_depths, reps, results)
    summary(results, depths)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(_CACHE, ignore_errors=True)
