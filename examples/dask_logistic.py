"""Out-of-core logistic regression: symgrad's compiled gradient over a Dask array that is never in memory.

The data are generated lazily, chunk by chunk (Dask's random generator: each chunk is a task, the same numbers
every time it runs), so every evaluation of the loss streams the rows through one fused kernel per chunk and
keeps only a few chunks in memory at a time. ``scipy.optimize.minimize(..., jac=True, method="L-BFGS-B")`` takes
``sg.value_and_grad``'s ``(loss, gradient)`` pair as it is.

Run: python examples/dask_logistic.py                 (2·10⁶ × 10, chunks of 2.5·10⁵ rows)
     python examples/dask_logistic.py --big           (3·10⁸ × 10 float64: 24 GB if materialised)
     python examples/dask_logistic.py --rows 40000000 --chunk 1000000 [--workers 2]
"""
from __future__ import annotations

import argparse
import resource
import time
from typing import Any

import dask.array as da
import numpy as np
from scipy.optimize import minimize

import symgrad as sg
import symgrad.nn.functional as F

LAMBDA = 1e-4   # a small ridge penalty on the weights (not on the intercept)


def objective(p, X, y):
    """Mean logistic loss of the linear model ``X @ p[:-1] + p[-1]``, plus a ridge penalty."""
    z = X @ p[:-1] + p[-1]
    return F.binary_cross_entropy_with_logits(z, y) + 0.5 * LAMBDA * (p[:-1] ** 2).sum()


def synthetic(rows: int, features: int, chunk: int, seed: int = 0) -> tuple[da.Array, da.Array, np.ndarray]:
    """Lazily generated features (uniform on [-1, 1]), labels drawn from a known logistic model, and its weights."""
    truth = np.random.default_rng(seed).normal(0.0, 1.0, features + 1)
    X = da.random.default_rng(seed + 1).uniform(-1.0, 1.0, (rows, features), chunks=(chunk, features))
    u = da.random.default_rng(seed + 2).random(rows, chunks=chunk)
    y = (u < 1 / (1 + da.exp(-(X @ truth[:-1] + truth[-1])))).astype(np.float64)
    return X, y, truth


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main(rows: int = 2_000_000, chunk: int = 250_000, features: int = 10, workers: int = 0,
         verbose: bool = True) -> dict[str, Any]:
    """Fit; returns the scipy result, the true weights, the gradient norm at the optimum and the peak memory."""
    client = None
    if workers:
        from distributed import Client, LocalCluster
        client = Client(LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None))
    try:
        X, y, truth = synthetic(rows, features, chunk)
        loss_and_grad = sg.value_and_grad(objective)
        calls = []

        def fun(p: np.ndarray) -> tuple[float, np.ndarray]:
            t = time.perf_counter()
            value, grad = loss_and_grad(p, X, y)
            calls.append(time.perf_counter() - t)
            if verbose:
                print(f"  eval {len(calls):3d}: loss {float(value):.10f}  |grad| {np.linalg.norm(grad):.2e}  "
                      f"({calls[-1]:.2f} s)", flush=True)
            return float(value), grad

        if verbose:
            size = rows * features * 8 / 1e9
            print(f"{rows:,} x {features} float64 ({size:.1f} GB if materialised), chunks of {chunk:,} rows, "
                  f"{'threads' if not workers else f'{workers} workers'}")
        t0 = time.perf_counter()
        res = minimize(fun, np.zeros(features + 1), jac=True, method="L-BFGS-B")
        elapsed = time.perf_counter() - t0
        gnorm = float(np.linalg.norm(loss_and_grad(res.x, X, y)[1]))
    finally:
        if client is not None:
            client.close()
    out = {"result": res, "truth": truth, "grad_norm": gnorm, "seconds": elapsed, "evals": len(calls),
           "peak_rss_gb": peak_rss_gb()}
    if verbose:
        print(f"L-BFGS-B: {res.message} after {res.nit} iterations, {len(calls)} evaluations, {elapsed:.1f} s "
              f"({np.median(calls):.2f} s per evaluation)")
        print(f"|grad| at the optimum {gnorm:.2e}; max |w - w_true| = {np.abs(res.x - truth).max():.3f}")
        print(f"peak resident memory: {out['peak_rss_gb']:.2f} GB")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--features", type=int, default=10)
    ap.add_argument("--workers", type=int, default=0, help="run on a LocalCluster of this many workers")
    ap.add_argument("--big", action="store_true", help="3·10⁸ rows (24 GB of float64), chunks of 10⁶")
    a = ap.parse_args()
    if a.big:
        a.rows, a.chunk = 300_000_000, 1_000_000
    main(a.rows, a.chunk, a.features, a.workers)
