"""The compiled-kernel part of ``symgrad tour``."""
from __future__ import annotations

import time

import numpy as np


def compiled_demo() -> None:
    """Compile a loss, print its formulas and generated kernel, and time it."""
    import symgrad as sg

    def loss(x, y):
        return (sg.sin(x) * sg.exp(-y ** 2)).sum()

    vg = sg.value_and_grad(loss, argnums=(0, 1))
    x = np.linspace(0.0, 1.0, 1_000_000)
    y = np.linspace(-1.0, 1.0, 1_000_000)
    print("def loss(x, y): return (sg.sin(x) * sg.exp(-y**2)).sum()")
    print()
    print(vg.formulas(x[:3], y[:3]))
    print()
    print("generated value-and-gradient kernel:")
    print(vg.source(x, y))
    t0 = time.perf_counter()
    v, (gx, gy) = vg(x, y)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(5):
        vg(x, y)
    rep = (time.perf_counter() - t0) / 5
    ref = (np.cos(x) * np.exp(-y ** 2), -2 * y * np.sin(x) * np.exp(-y ** 2))
    ok = np.allclose(gx, ref[0]) and np.allclose(gy, ref[1])
    print(f"value = {v:.6f}; gradients match the hand-derived ones: {ok}")
    print(f"n = 10^6: first call {1e3 * first:.1f} ms (trace + derive + generate), then {1e3 * rep:.2f} ms per call")
