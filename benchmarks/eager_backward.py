"""backward() over a 50-op eager graph: first time (derive + generate) and repeated structure.

Run: python benchmarks/eager_backward.py
"""
from __future__ import annotations

import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import time

import numpy as np

import symgrad as sg
from symgrad.core.graph import toposort
from symgrad.eager import autograd


def build(x: sg.Tensor, y: sg.Tensor, k: float) -> sg.Tensor:
    h = x
    ops = [sg.sin, sg.tanh, sg.exp, sg.cos, sg.sigmoid]
    for i in range(12):  # 12 blocks x 4 ops + 2 = 50 recorded ops
        h = ops[i % 5](h) * y + h * k
    return (h * h).mean()


def main() -> None:
    rng = np.random.default_rng(0)
    x = sg.tensor(rng.standard_normal(1000), requires_grad=True)
    y = sg.tensor(rng.standard_normal(1000), requires_grad=True)
    out = build(x, y, 0.3)
    n_ops = len([n for n in toposort([out._node]) if n.op.family != "source"])
    t0 = time.perf_counter()
    out.backward()
    new = time.perf_counter() - t0
    reps = []
    for i in range(50):
        x.grad = None
        y.grad = None
        out = build(x, y, 0.3 + i * 1e-3)
        t0 = time.perf_counter()
        out.backward()
        reps.append(time.perf_counter() - t0)
    torch_ms = None
    try:
        import torch
        xt = torch.tensor(x.detach().numpy(), requires_grad=True)
        yt = torch.tensor(y.detach().numpy(), requires_grad=True)
        ts = []
        for i in range(50):
            o = _torch_build(torch, xt, yt, 0.3 + i * 1e-3)
            t0 = time.perf_counter()
            o.backward()
            ts.append(time.perf_counter() - t0)
        torch_ms = 1e3 * float(np.median(ts))
    except ImportError:
        pass
    print(f"eager graph: {n_ops} recorded ops over n=1000 (float64)")
    print(f"backward(), new structure : {1e3 * new:8.2f} ms  (derive + simplify + generate + load)")
    print(f"backward(), repeated      : {1e3 * float(np.median(reps)):8.3f} ms  (median of 50)")
    if torch_ms is not None:
        print(f"torch backward(), same graph: {torch_ms:8.3f} ms  (median of 50)")
    print(f"programs derived: {autograd.STATS['derived']}, cache hits: {autograd.STATS['hits']}")


def _torch_build(torch, x, y, k):
    h = x
    ops = [torch.sin, torch.tanh, torch.exp, torch.cos, torch.sigmoid]
    for i in range(12):
        h = ops[i % 5](h) * y + h * k
    return (h * h).mean()


if __name__ == "__main__":
    main()
