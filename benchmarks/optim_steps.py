"""Time of one ``optimizer.step()``: symgrad vs torch, on the parameters of a 5-64-64-1 MLP.

    python benchmarks/optim_steps.py [--repeat R]

The gradients are fixed (set once); each row times ``step()`` alone (median of R runs of 200 steps),
float32 and float64, torch single-threaded with its default CPU path (single-tensor, ``foreach=False``).
The first symgrad call (numba compile or cache load) is reported separately.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import symgrad as sg  # noqa: E402

SHAPES = [(64, 5), (64,), (64, 64), (64,), (1, 64), (1,)]
OPTIMIZERS = {
    "Adam": ("Adam", dict(lr=1e-3)),
    "SGD momentum": ("SGD", dict(lr=1e-2, momentum=0.9)),
    "AdamW amsgrad": ("AdamW", dict(lr=1e-3, amsgrad=True)),
    "RMSprop centered": ("RMSprop", dict(lr=1e-3, centered=True)),
    "Adagrad": ("Adagrad", dict(lr=1e-2)),
}


def _setup(lib: object, name: str, kw: dict, dtype: type) -> tuple[object, list]:
    rng = np.random.default_rng(0)
    ps = [lib.tensor(rng.standard_normal(s).astype(dtype) * 0.1, requires_grad=True) for s in SHAPES]
    for p in ps:
        p.grad = lib.tensor(rng.standard_normal(p.shape).astype(dtype) * 1e-3)
    return getattr(lib.optim, name)(ps, **kw), ps


def _time_steps(opt: object, n: int, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            opt.step()
        runs.append((time.perf_counter() - t0) / n)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(1)
    n = 200
    print(f"{'optimizer':18s} {'dtype':8s} {'torch µs':>9s} {'symgrad µs':>11s} {'sg/torch':>9s} "
          f"{'first sg call ms':>17s}  bit-identical")
    for label, (name, kw) in OPTIMIZERS.items():
        for dtype in (np.float32, np.float64):
            t_opt, t_ps = _setup(torch, name, kw, dtype)
            s_opt, s_ps = _setup(sg, name, kw, dtype)
            t0 = time.perf_counter()
            s_opt.step()
            first = time.perf_counter() - t0
            t_opt.step()
            tt = _time_steps(t_opt, n, args.repeat)
            ts = _time_steps(s_opt, n, args.repeat)
            same = all(np.array_equal(a.detach().numpy(), b.detach().numpy()) for a, b in zip(t_ps, s_ps))
            print(f"{label:18s} {np.dtype(dtype).name:8s} {tt * 1e6:9.1f} {ts * 1e6:11.1f} {ts / tt:9.2f} "
                  f"{first * 1e3:17.1f}  {same}")


if __name__ == "__main__":
    main()
