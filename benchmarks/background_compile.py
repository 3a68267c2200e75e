"""Background compilation against the blocking compile, in fresh processes with an empty kernel cache each.

W2 (``sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))``, ``value_and_grad`` wrt x and y), modes run alternately,
medians over ``--reps`` runs:

* ``calls`` (default): K calls per process; total wall time from the interpreter's start to the last call, the
  first call, the longest and the median call after the first, the exit after the last call, and whether the
  numba kernel took over within the K calls. Modes: ``sync background thread numpy jax`` (``numpy``: the numpy
  tier only, ``SYMGRAD_BACKEND=numpy``; ``jax``: ``jax.jit`` of the same function, x64).
* ``--during``: the numpy tier's call time alone, then while the numba kernel compiles (calls until the switch):
  the ratio, the longest call, the calls and seconds until the switch. Modes: ``background thread``.

    python benchmarks/background_compile.py --n 1000000 --k 20 --reps 3
    python benchmarks/background_compile.py --during --modes background thread
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

_CALLS = r'''
import sys, time, json
t_start = float(sys.argv[3])
import numpy as np
n, K, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[4]
rng = np.random.default_rng(0)
x = rng.standard_normal(n); y = rng.standard_normal(n)
if mode == "jax":
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(jax.value_and_grad(lambda x, y: jnp.sum(jnp.sin(x) * jnp.exp(-y**2) + jnp.log1p(x**2) * jnp.tanh(y)),
                                   argnums=(0, 1)))
    call = lambda: jax.block_until_ready(f(x, y))
else:
    import symgrad as sg
    def w2(x, y):
        return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum()
    f = sg.value_and_grad(w2, argnums=(0, 1))
    call = lambda: f(x, y)
times = []
for k in range(K):
    t0 = time.perf_counter(); call(); times.append(time.perf_counter() - t0)
switched = sg.jit_stats().tier_switches if mode != "jax" else None
print("RESULT" + json.dumps({"total": time.time() - t_start, "end": time.time(), "times": times, "switched": switched}),
      flush=True)
'''

_DURING = r'''
import sys, time, json
import numpy as np
import symgrad as sg
from symgrad.kernels import program
n = int(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.standard_normal(n); y = rng.standard_normal(n)
def w2(x, y):
    return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum()
f = sg.value_and_grad(w2, argnums=(0, 1))
program.set_backend("numpy")
f(x, y)
base = []
for _ in range(8):
    t0 = time.perf_counter(); f(x, y); base.append(time.perf_counter() - t0)
program.set_backend("numba")
during = []
t_hot = time.perf_counter()
while len(during) < 5000:
    t0 = time.perf_counter(); f(x, y); dt = time.perf_counter() - t0
    if sg.jit_stats().tier_switches:
        break
    during.append(dt)
ready = time.perf_counter() - t_hot
after = []
for _ in range(5):
    t0 = time.perf_counter(); f(x, y); after.append(time.perf_counter() - t0)
print("RESULT" + json.dumps({"base": base, "during": during, "ready": ready, "after": after}))
'''


def _child(script: str, mode: str, *args: str) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="sg_bg_bench"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("SYMGRAD_LOG", None)
    if mode in ("sync", "background", "thread", "process"):
        env["SYMGRAD_COMPILE"] = mode
    if mode == "numpy":
        env["SYMGRAD_BACKEND"] = "numpy"
    out = subprocess.run([sys.executable, "-c", script, *args, mode], env=env, capture_output=True, text=True)
    done = time.time()
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    if not lines:
        raise SystemExit(f"{mode}: {out.stderr[-3000:]}")
    r = json.loads(lines[0][6:])
    if "end" in r:
        r["exit"] = done - r["end"]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--during", action="store_true", help="per-call times while the kernel compiles")
    ap.add_argument("--modes", nargs="+")
    a = ap.parse_args()
    modes = a.modes or (["background", "thread"] if a.during else ["sync", "background", "thread", "numpy", "jax"])
    res: dict[str, list[dict]] = {m: [] for m in modes}
    for _ in range(a.reps):
        for m in modes:
            res[m].append(_child(_DURING, m, str(a.n)) if a.during else
                          _child(_CALLS, m, str(a.n), str(a.k), repr(time.time())))
    print(f"W2 n={a.n}, {a.reps} fresh processes per mode, alternating, empty cache; load {os.getloadavg()[0]:.1f}")
    if a.during:
        print(f"{'mode':<11} {'tier alone':>10} {'during':>9} {'ratio':>6} {'longest':>8} {'calls':>6} "
              f"{'switch after':>12}")
        for m, rs in res.items():
            for r in rs:
                b, d = np.median(r["base"]), np.median(r["during"]) if r["during"] else float("nan")
                print(f"{m:<11} {1e3 * b:8.1f}ms {1e3 * d:7.1f}ms {d / b:6.2f} {1e3 * max(r['during'] or [0]):6.0f}ms "
                      f"{len(r['during']):6d} {r['ready']:11.2f}s")
        return
    print(f"K={a.k}; medians in seconds")
    print(f"{'mode':<11} {'total':>7} {'first':>7} {'longest after 1st':>17} {'median after 1st':>16} {'exit':>6}  "
          "switched")
    for m, rs in res.items():
        def med(f, rs=rs):
            return float(np.median([f(r) for r in rs]))
        print(f"{m:<11} {med(lambda r: r['total']):7.2f} {med(lambda r: r['times'][0]):7.3f} "
              f"{med(lambda r: max(r['times'][1:])):17.3f} {med(lambda r: float(np.median(r['times'][1:]))):16.3f} "
              f"{med(lambda r: r['exit']):6.2f}  {[r['switched'] for r in rs]}")


if __name__ == "__main__":
    main()
