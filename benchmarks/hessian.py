"""Hessians: symgrad's exact sparse Hessian against dense peers, and small dense Hessian latency.

    python benchmarks/hessian.py [--quick]

Rosenbrock ``sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2)`` for n = 10², 10³, 10⁴, 10⁵:
``sg.hessian(f, sparse=True)`` (a CSR matrix of the 3n-2 structural non-zeros from three
Hessian-vector sweeps) against dense ``torch.func.hessian`` and ``jax.hessian`` where installed
(dense peers stop at n = 10⁴: 10⁵ would need 80 GB). Then a dense n = 10 Hessian, per call.
Every result is checked against the first peer's (or symgrad's dense one) before timing.
"""
from __future__ import annotations

import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import symgrad as sg  # noqa: E402


def timeit(fn: Callable[[], Any], repeat: int, budget: float = 5.0) -> float:
    """Median seconds per call (after one warm-up call), stopping early past ``budget`` seconds;
    a warm-up call longer than ``budget`` is the measurement."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first > budget:
        return first
    times: list[float] = []
    start = time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget:
            break
    return statistics.median(times)


def rosen(x: Any) -> Any:
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def peers() -> dict[str, Callable[[np.ndarray], Callable[[], Any]]]:
    out: dict[str, Callable[[np.ndarray], Callable[[], Any]]] = {}
    try:
        import torch
        hess_t = torch.func.hessian(rosen)

        def torch_dense(x: np.ndarray) -> Callable[[], Any]:
            xt = torch.tensor(x)
            return lambda: hess_t(xt)
        out["torch.func.hessian (dense)"] = torch_dense
    except ImportError:
        print("torch not installed: no torch row")
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        hess_j = jax.jit(jax.hessian(rosen))

        def jax_dense(x: np.ndarray) -> Callable[[], Any]:
            xj = jax.numpy.asarray(x)
            return lambda: hess_j(xj).block_until_ready()
        out["jax.jit(jax.hessian) (dense)"] = jax_dense
    except ImportError:
        print("jax not installed: no JAX row (pip install -e '.[bench]')")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats, dense peers up to n = 10^3")
    args = ap.parse_args()
    repeat = 5 if args.quick else 20
    dense_max = 1000 if args.quick else 10_000
    others = peers()
    print("Rosenbrock Hessian, float64; times are medians per call after warm-up")
    print(f"{'n':>7} {'implementation':<34} {'time':>12} {'vs symgrad sparse':>18}")
    sparse_times = {}
    for n in (100, 1_000, 10_000, 100_000):
        x = np.random.default_rng(0).uniform(-1, 1, n)
        h = sg.hessian(rosen, sparse=True)
        t0 = time.perf_counter()
        hs = h(x)
        first = time.perf_counter() - t0
        ts = timeit(lambda h=h, x=x: h(x), repeat)
        sparse_times[n] = ts
        print(f"{n:>7} {'symgrad sparse (first call)':<34} {first * 1e3:>9.1f} ms")
        print(f"{n:>7} {'symgrad sparse':<34} {ts * 1e3:>9.3f} ms {1.0:>17.1f}x   ({hs.nnz} non-zeros)")
        if n > dense_max:
            continue
        for name, make in others.items():
            call = make(x)
            t0 = time.perf_counter()
            ref = np.asarray(call())
            once = time.perf_counter() - t0
            assert np.allclose(hs.toarray(), ref, rtol=1e-10, atol=1e-8), name
            td = once if once > 5.0 else timeit(call, max(2, repeat // 4), budget=20.0)
            print(f"{n:>7} {name:<34} {td * 1e3:>9.3f} ms {td / ts:>17.1f}x")
    ns = sorted(sparse_times)
    slope = np.polyfit(np.log(ns[1:]), np.log([sparse_times[n] for n in ns[1:]]), 1)[0]
    print(f"symgrad sparse: log-log slope of time vs n over 10^3..10^5 = {slope:.2f} (1.0 is linear)")

    print("\nDense Hessian, n = 10 (per call)")
    x = np.random.default_rng(1).uniform(-1, 1, 10)
    f = lambda x: (sg.sin(x) * sg.exp(-x ** 2)).sum() + rosen(x)
    h = sg.hessian(f)
    ref = h(x)
    ts = timeit(lambda: h(x), repeat * 50)
    print(f"{'symgrad sg.hessian':<34} {ts * 1e6:>9.1f} us {1.0:>17.1f}x")
    try:
        import torch
        ft = lambda x: (torch.sin(x) * torch.exp(-x ** 2)).sum() + rosen(x)
        ht = torch.func.hessian(ft)
        xt = torch.tensor(x)
        assert np.allclose(ht(xt).numpy(), ref, rtol=1e-10)
        td = timeit(lambda: ht(xt), repeat * 10)
        print(f"{'torch.func.hessian':<34} {td * 1e6:>9.1f} us {td / ts:>17.1f}x")
    except ImportError:
        pass
    try:
        import jax
        fj = lambda x: (jax.numpy.sin(x) * jax.numpy.exp(-x ** 2)).sum() + rosen(x)
        hj = jax.jit(jax.hessian(fj))
        xj = jax.numpy.asarray(x)
        assert np.allclose(np.asarray(hj(xj)), ref, rtol=1e-10)
        td = timeit(lambda: hj(xj).block_until_ready(), repeat * 10)
        print(f"{'jax.jit(jax.hessian)':<34} {td * 1e6:>9.1f} us {td / ts:>17.1f}x")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
