"""The compiled-kernel part of ``symgrad tour``."""
from __future__ import annotations

import time

import numpy as np

import symgrad as sg


def compiled_demo() -> None:
    """Compile a loss, print its formulas and generated kernel, and time it."""

    def loss(x, y):
        return (sg.sin(x) * sg.exp(-y ** 2)).sum()

    vg = sg.value_and_grad(loss, argnums=(0, 1))
    x = np.linspace(0.0, 1.0, 1_000_000)
    y = np.linspace(-1.0, 1.0, 1_000_000)
    print("def loss(x, y): return (sg.sin(x) * sg.exp(-y**2)).sum()")
    print()
    print(vg.formulas(x[:3], y[:3]))
    print()
    print("generated value-and-gradient kernel (numpy, run by the first call):")
    print(vg.source(x, y, backend="numpy"))
    t0 = time.perf_counter()
    v, (gx, gy) = vg(x, y)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    vg(x, y)
    second = time.perf_counter() - t0
    hot = min(_timed(vg, x, y) for _ in range(5))
    ref = (np.cos(x) * np.exp(-y ** 2), -2 * y * np.sin(x) * np.exp(-y ** 2))
    hand = min(_timed(lambda a, b: (np.sum(np.sin(a) * np.exp(-b ** 2)), np.cos(a) * np.exp(-b ** 2),
                                    -2 * b * np.sin(a) * np.exp(-b ** 2)), x, y) for _ in range(3))
    ok = np.allclose(gx, ref[0]) and np.allclose(gy, ref[1])
    print()
    print("the fused numba kernel that takes over from the second call (one loop, no temporaries), as emitted")
    print("for n = 1000; at n = 10^6 the loop is cut into parallel chunks with vectorised sin/exp/cos:")
    print(_kernel_only(vg.source(x[:1000], y[:1000], backend="numba")))
    print(f"value = {v:.6f}; gradients match the hand-derived ones: {ok}")
    print(f"n = 10^6: 1st call {1e3 * first:.0f} ms (trace + derive + numpy code), 2nd {1e3 * second:.0f} ms "
          f"(numba compile, or load from the disk cache), then {1e3 * hot:.2f} ms per call; "
          f"numpy with the hand-derived gradient: {1e3 * hand:.2f} ms")


def _timed(f: object, *args: object) -> float:
    t0 = time.perf_counter()
    f(*args)  # type: ignore[operator]
    return time.perf_counter() - t0


def _kernel_only(source: str) -> str:
    """The generated numba module from its jitted kernel on (the helpers above it are the same in every module)."""
    lines = source.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("@numba.njit")), 0)
    return "\n".join(lines[start:])
