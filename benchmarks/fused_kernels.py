"""Fused value-and-gradient kernels from ``codegen.numba`` against hand-written numba and numpy.

    python benchmarks/fused_kernels.py [--n 1000000] [--repeat 31]

W1 ``mean(3*(x+2)**2)`` (gradient wrt x) and W2 ``sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))``
(gradients wrt x and y), float64. The emitted kernel is built by the real pipeline (forward graph,
``symgrad.derive.reverse.backward_graph``, ``symgrad.kernels.lower.lower``), emitted with ``emit_numba`` and
loaded with ``codegen.cache.load_kernel``, as the default (``prange`` above the threshold) and as a
serial variant. "hand" kernels are written once by hand: one fused loop, each transcendental
evaluated once, output allocated per call like the emitted one; ``fastmath=True`` and with and
without ``prange``. The best hand kernel is the reference (ratio 1.00). JAX's ``jit(value_and_grad)``
is a row when ``jax`` imports (x64 enabled; set ``JAX_PLATFORMS=cpu``). Every variant is checked
against numpy first; times are medians (and minima) of ``--repeat`` calls after warm-up, all in one
process, the variants called in turn so that load changes hit them alike.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402
from codegen.cache import load_kernel, reset_cache_dir  # noqa: E402
from codegen.numba import emit_numba  # noqa: E402
from symgrad.core.graph import Node  # noqa: E402
from symgrad.derive.reverse import backward_graph  # noqa: E402
from symgrad.derive.simplify import simplify_graph  # noqa: E402
from symgrad.kernels.lower import lower  # noqa: E402
from symgrad.ops import source as _src  # noqa: E402

# ------------------------------------------------------------------------------------ emitted kernels

def emitted(f, arrays, **kw):
    """(function, source, emit seconds) of the fused value-and-gradient kernel of ``f``."""
    t0 = time.perf_counter()
    ts = [sg.tensor(a, requires_grad=True) for a in arrays]
    root = f(*ts)._node
    seed = Node(_src.const, (), (), root.shape, root.dtype, name="seed")
    grads, _ = backward_graph([root], [seed], [t._node for t in ts])
    params = [(t._node, "v", i) for i, t in enumerate(ts)] + [(seed, "s", 0)]
    kernel, _ = lower("value_and_grad", params, simplify_graph([root] + grads), doc="value and gradient",
                      groups=("v", "s"))
    src = emit_numba(kernel, **kw)
    t1 = time.perf_counter()
    fn, _ = load_kernel(src, "value_and_grad", prefix="bench")
    return fn, src, t1 - t0


def w1(x):
    return (3 * (x + 2) ** 2).mean()


def w2(x, y):
    return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum()


# ------------------------------------------------------------------------------------ hand-written

def _w1_hand(parallel):
    rng = numba.prange if parallel else range

    @numba.njit(fastmath=True, parallel=parallel)
    def w1_hand(x):
        n = x.shape[0]
        g = np.empty_like(x)
        c = 6.0 / n
        acc = 0.0
        for i in rng(n):
            t = x[i] + 2.0
            acc += t * t
            g[i] = c * t
        return 3.0 * acc / n, g
    return w1_hand


def _w2_hand(parallel):
    rng = numba.prange if parallel else range

    @numba.njit(fastmath=True, parallel=parallel)
    def w2_hand(x, y):
        n = x.shape[0]
        gx = np.empty_like(x)
        gy = np.empty_like(y)
        acc = 0.0
        for i in rng(n):
            xi, yi = x[i], y[i]
            s, c = np.sin(xi), np.cos(xi)
            e = np.exp(-yi * yi)
            x2 = xi * xi
            lg = np.log1p(x2)
            th = np.tanh(yi)
            acc += s * e + lg * th
            gx[i] = c * e + 2.0 * xi / (1.0 + x2) * th
            gy[i] = -2.0 * yi * s * e + lg * (1.0 - th * th)
        return acc, gx, gy
    return w2_hand


def jax_variants() -> dict:
    """W1/W2 as ``jax.jit(jax.value_and_grad(...))``, results flattened; empty without jax."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    f1 = jax.jit(jax.value_and_grad(lambda x: jnp.mean(3 * (x + 2) ** 2)))
    f2 = jax.jit(jax.value_and_grad(
        lambda x, y: jnp.sum(jnp.sin(x) * jnp.exp(-y**2) + jnp.log1p(x**2) * jnp.tanh(y)), argnums=(0, 1)))

    def w1_jax(x):
        v, g = jax.block_until_ready(f1(x))
        return v, g

    def w2_jax(x, y):
        v, (gx, gy) = jax.block_until_ready(f2(x, y))
        return v, gx, gy
    return {"W1": w1_jax, "W2": w2_jax}


def w1_numpy(x):
    t = x + 2
    return np.mean(3 * t**2), (6.0 / x.size) * t


def w2_numpy(x, y):
    s, e, x2, th = np.sin(x), np.exp(-y * y), x * x, np.tanh(y)
    lg = np.log1p(x2)
    return np.sum(s * e + lg * th), np.cos(x) * e + 2 * x / (1 + x2) * th, -2 * y * s * e + lg * (1 - th * th)


# ------------------------------------------------------------------------------------ timing

def interleaved_times(calls: dict, repeat: int) -> dict:
    """Per label: (median, min) seconds of ``repeat`` calls, the variants timed in turn (round robin)
    so that a change in machine load hits all of them alike."""
    for fn, a in calls.values():
        fn(*a)
        fn(*a)
    ts: dict = {label: [] for label in calls}
    for _ in range(repeat):
        for label, (fn, a) in calls.items():
            t0 = time.perf_counter()
            fn(*a)
            ts[label].append(time.perf_counter() - t0)
    return {label: (float(np.median(v)), float(np.min(v))) for label, v in ts.items()}


def close(got, want):
    return all(np.allclose(g, w, rtol=1e-9, atol=1e-12) for g, w in zip(got, want))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=31)
    args = ap.parse_args(argv)
    os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-bench-"))
    reset_cache_dir()
    rng = np.random.default_rng(0)
    n = args.n
    x, y = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    seed = np.asarray(1.0)
    print(f"n = {n:,} float64, {numba.get_num_threads()} numba threads, median of {args.repeat} calls\n")
    rows = []
    jfn = jax_variants()
    for name, f, arrays, hand, ref in (("W1", w1, [x], _w1_hand, w1_numpy), ("W2", w2, [x, y], _w2_hand, w2_numpy)):
        want = ref(*arrays)
        variants = {}
        for label, kw in (("emitted (default)", {}), ("emitted (serial)", {"parallel_threshold": 1 << 62}),
                          ("emitted (libm)", {"vector_threshold": None}),
                          ("emitted (serial, libm)", {"parallel_threshold": 1 << 62, "vector_threshold": None})):
            fn, src, t_emit = emitted(f, arrays, **kw)
            t0 = time.perf_counter()
            fn(*arrays, seed)
            t_jit = time.perf_counter() - t0
            label += " prange" if "prange" in src else ""
            variants[label] = (fn, (*arrays, seed), f"emit {1e3 * t_emit:.0f} ms, first call {t_jit:.2f} s")
        for par in (True, False):
            variants[f"hand fastmath {'prange' if par else 'serial'}"] = (hand(par), tuple(arrays), "")
        variants["numpy"] = (ref, tuple(arrays), "")
        if name in jfn:
            variants["jax jit(value_and_grad)"] = (jfn[name], tuple(arrays), "")
        for label, (fn, a, _note) in variants.items():
            if not close(fn(*a), want):
                raise SystemExit(f"{name} {label}: wrong result")
        times = interleaved_times({label: (fn, a) for label, (fn, a, _) in variants.items()}, args.repeat)
        best = min(t[0] for label, t in times.items() if label.startswith("hand"))
        for label, (med, low) in times.items():
            rows.append((name, label, 1e3 * med, 1e3 * low, med / best, variants[label][2]))
    width = max(len(r[1]) for r in rows)
    print(f"{'':4}{'kernel':{width}}  {'median ms':>9}  {'min ms':>8}  {'/ best hand':>11}")
    for name, label, med, low, ratio, note in rows:
        print(f"{name:4}{label:{width}}  {med:9.3f}  {low:8.3f}  {ratio:11.2f}  {note}")
    print("\nratio: median time over the best hand-written kernel's median time")


if __name__ == "__main__":
    main()
