"""Logistic loss + gradient over a Dask array: symgrad's chunked kernels against dask-glm's hand-written gradient,
a hand-written Dask expression and numpy in memory, on the same persisted chunks; the same on a 2-worker
``LocalCluster``; peak resident memory of the gradient over a lazily generated array and of the out-of-core fit.

    python benchmarks/dask_grad.py [--rows 4000000] [--chunk 250000] [--repeat 7] [--no-cluster]
                                   [--memory-rows 40000000] [--fit-rows 40000000] [--baseline-memory] [--big]

The loss is ``sum(log1p(exp(z)) - y z)`` with ``z = X @ w`` (dask-glm's ``Logistic.pointwise_loss``), the
gradient ``X.T @ (sigmoid(z) - y)``. Times are medians over ``--repeat`` rounds, implementations taken in turn
within each round, after a warm-up (symgrad's first call runs the generated numpy code, the second compiles the
numba chunk kernel). Memory figures are the peak RSS of a fresh process (``ru_maxrss``) that builds the lazy
array and computes one loss + gradient (``--memory-rows``), or runs ``examples/dask_logistic.py`` to convergence
(``--fit-rows``; ``--big``: 3·10⁸ rows); ``--baseline-memory`` adds the in-memory route (``np.asarray`` of the
lazy array, then the compiled function on numpy).
"""
from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402

import symgrad as sg  # noqa: E402

try:
    from dask_glm.families import Logistic  # noqa: E402
except ImportError:  # pragma: no cover - dask-glm is optional
    Logistic = None


def loss(w, X, y):
    z = X @ w
    return (sg.log1p(sg.exp(z)) - y * z).sum()


def hand_dask(w, X, y):
    z = X.dot(w)
    return dask.compute((da.log1p(da.exp(z)) - y * z).sum(), X.T.dot(1 / (1 + da.exp(-z)) - y))


def dask_glm(w, X, y):
    return dask.compute(Logistic.pointwise_loss(w, X, y), Logistic.pointwise_gradient(w, X, y))


def numpy_memory(w, X, y):
    z = X @ w
    return np.sum(np.log1p(np.exp(z)) - y * z), X.T @ (1 / (1 + np.exp(-z)) - y)


def data(rows: int, chunk: int, d: int = 10) -> tuple[da.Array, da.Array]:
    X = da.random.default_rng(0).standard_normal((rows, d), chunks=(chunk, d))
    y = (da.random.default_rng(1).random(rows, chunks=chunk) < 1 / (1 + da.exp(-X[:, 0]))).astype(np.float64)
    return X, y


def timed(impls: dict, w: np.ndarray, repeat: int) -> dict[str, list[float]]:
    ref = None
    for name, (fn, args) in impls.items():           # warm-up, and every result checked against the first
        fn(w, *args)
        v, g = fn(w, *args)
        if ref is None:
            ref = (float(v), np.asarray(g))
        else:
            assert np.isclose(float(v), ref[0], rtol=1e-9), (name, v, ref[0])
            assert np.allclose(g, ref[1], rtol=1e-8, atol=1e-6), name
    times: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(repeat):
        for name, (fn, args) in impls.items():
            t0 = time.perf_counter()
            fn(w, *args)
            times[name].append(time.perf_counter() - t0)
    return times


def table(title: str, times: dict[str, list[float]], base: str) -> None:
    print(f"\n{title}")
    print(f"  {'implementation':40} {'median ms':>10} {'min ms':>8} {'vs symgrad':>11}")
    ref = np.median(times[base])
    for name, ts in times.items():
        print(f"  {name:40} {1e3 * np.median(ts):10.1f} {1e3 * min(ts):8.1f} {np.median(ts) / ref:10.2f}x")


def memory_child(rows: int, chunk: int, mode: str) -> None:
    """(in a fresh process) one loss + gradient over the lazy array; prints the peak RSS as JSON."""
    X, y = data(rows, chunk)
    w = np.full(10, 0.05)
    vg = sg.value_and_grad(loss)
    t0 = time.perf_counter()
    if mode == "lazy":
        value, grad = vg(w, X, y)
    else:   # the in-memory route: materialise, then the ordinary compiled call
        value, grad = vg(w, np.asarray(X), np.asarray(y))
    print(json.dumps({"mode": mode, "rows": rows, "seconds": time.perf_counter() - t0, "value": float(value),
                      "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))


def child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return out.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-cluster", action="store_true")
    ap.add_argument("--memory-rows", type=int, default=40_000_000)
    ap.add_argument("--fit-rows", type=int, default=40_000_000)
    ap.add_argument("--baseline-memory", action="store_true")
    ap.add_argument("--big", action="store_true", help="the out-of-core fit at 3·10⁸ rows (chunks of 10⁶)")
    ap.add_argument("--memory-child", nargs=3, metavar=("ROWS", "CHUNK", "MODE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory_child:
        memory_child(int(a.memory_child[0]), int(a.memory_child[1]), a.memory_child[2])
        return

    vg = sg.value_and_grad(loss)
    w = np.full(10, 0.05)
    X, y = data(a.rows, a.chunk)
    X, y = dask.persist(X, y)
    Xn, yn = np.asarray(X), np.asarray(y)
    print(f"{a.rows:,} x 10 float64 persisted ({a.rows * 80 / 1e9:.2f} GB), chunks of {a.chunk:,} rows "
          f"({X.numblocks[0]} chunks); {os.cpu_count()} CPUs; threaded scheduler")
    impls = {"symgrad (sg.value_and_grad, chunked)": (vg, (X, y)),
             "dask-glm Logistic.pointwise_loss+gradient": (dask_glm, (X, y)),
             "hand-written Dask expression": (hand_dask, (X, y)),
             "numpy in memory (hand-derived gradient)": (numpy_memory, (Xn, yn)),
             "symgrad in memory (numpy arrays)": (vg, (Xn, yn))}
    if Logistic is None:
        del impls["dask-glm Logistic.pointwise_loss+gradient"]
    table("threaded scheduler", timed(impls, w, a.repeat), "symgrad (sg.value_and_grad, chunked)")
    del Xn, yn

    if not a.no_cluster:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as c:
            Xc, yc = c.persist(data(a.rows, a.chunk))
            dask.distributed.wait([Xc, yc])
            impls = {"symgrad (sg.value_and_grad, chunked)": (vg, (Xc, yc)),
                     "dask-glm Logistic.pointwise_loss+gradient": (dask_glm, (Xc, yc)),
                     "hand-written Dask expression": (hand_dask, (Xc, yc))}
            if Logistic is None:
                del impls["dask-glm Logistic.pointwise_loss+gradient"]
            table("LocalCluster: 2 worker processes x 1 thread", timed(impls, w, a.repeat),
                  "symgrad (sg.value_and_grad, chunked)")

    print("\npeak resident memory (fresh processes)")
    chunk = 1_000_000
    modes = ["lazy"] + (["in-memory"] if a.baseline_memory else [])
    for mode in modes:
        got = child([__file__, "--memory-child", str(a.memory_rows), str(chunk), mode])
        r = json.loads(got.strip().splitlines()[-1])
        print(f"  one loss+gradient, {r['rows']:,} x 10 lazily generated ({r['rows'] * 80 / 1e9:.1f} GB), {mode:9}: "
              f"peak {r['peak_rss_gb']:.2f} GB, {r['seconds']:.1f} s")
    rows = 300_000_000 if a.big else a.fit_rows
    if rows:
        out = child([str(ROOT / "examples" / "dask_logistic.py"), "--rows", str(rows), "--chunk", str(chunk)])
        lines = out.strip().splitlines()
        print(f"  out-of-core fit (examples/dask_logistic.py --rows {rows} --chunk {chunk}):")
        for line in lines[-3:]:
            print(f"    {line}")


if __name__ == "__main__":
    main()
