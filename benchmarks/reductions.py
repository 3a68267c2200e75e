"""Row-wise reductions: numpy kernel vs numba kernel vs torch, value_and_grad.

    python benchmarks/reductions.py [rows cols]

Programs: ``sum(softmax(x, 1) * w)``, ``sum(logsumexp(x, 1))``, ``sum(max(x, 1).values * w[:, 0])``
and ``sum(cumsum(x, 1) * w)``, gradient wrt x, float64.
"""
from __future__ import annotations

import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import sys
import time

import numpy as np
import torch

import symgrad as sg
import symgrad.kernels.program  # noqa: F401 - the module holding BACKEND

compile_module = sys.modules["symgrad.kernels.program"]

PROGRAMS = {
    "softmax": lambda m, x, w: (m.softmax(x, dim=1) * w).sum(),
    "logsumexp": lambda m, x, w: m.logsumexp(x, dim=1).sum(),
    "max(dim)": lambda m, x, w: (m.max(x, dim=1)[0] * w[:, 0]).sum(),
    "cumsum": lambda m, x, w: (m.cumsum(x, dim=1) * w).sum(),
}


def best(fn, reps: int = 20) -> float:
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main(rows: int = 1000, cols: int = 1000) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((rows, cols)), rng.standard_normal((rows, cols))
    print(f"{rows}x{cols} float64 value_and_grad (best of 20, ms); threads: torch {torch.get_num_threads()}")
    print(f"{'program':12} {'numpy kernel':>13} {'numba kernel':>13} {'torch':>8}")
    for name, f in PROGRAMS.items():
        times = []
        for backend in ("numpy", "numba"):
            saved, compile_module.BACKEND = compile_module.BACKEND, backend
            try:
                vg = sg.value_and_grad(lambda a, b, f=f: f(sg, a, b))
                vg(x, w)
                vg(x, w)
                (e,) = vg._entries.values()
                assert backend == "numpy" or e.jit is not None, e.jit_source
                times.append(best(lambda vg=vg: vg(x, w)))
            finally:
                compile_module.BACKEND = saved
        xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w)

        def run_torch(f=f, xt=xt, wt=wt):
            out = f(torch, xt, wt)
            return out.item(), torch.autograd.grad(out, xt)[0]
        times.append(best(run_torch))
        print(f"{name:12} " + " ".join(f"{1e3 * t:13.2f}" for t in times[:2]) + f" {1e3 * times[2]:8.2f}")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:3]))
