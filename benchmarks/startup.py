"""What a user's whole program takes: fresh processes that import the library and call value_and_grad K times.

    python benchmarks/startup.py [--quick] [--reps 5] [--workloads W1,W2,W3] [--cases 1000:1,1000:20,1000000:20]

Each measurement is one new Python process (``python benchmarks/startup.py --child ...``) that imports numpy
and the library, makes the inputs (float64, seeded), builds ``value_and_grad`` and calls it K times; the
figure is the process's wall time, from spawning it to its exit, as the parent sees it. Columns:

* ``symgrad empty``: ``sg.value_and_grad`` with a new, empty ``SYMGRAD_CACHE_DIR`` (nothing compiled before);
* ``symgrad warm``: the same with a cache folder that one earlier process (not timed, ``SYMGRAD_COMPILE=sync``
  so that it finished its numba kernels) filled for the same workload and size;
* ``JAX jit``: ``jax.jit(jax.value_and_grad(f))`` with x64 enabled, ``JAX_PLATFORMS=cpu``, each result
  waited for (``block_until_ready``); skipped when jax does not import (``pip install -e ".[bench]"``);
* ``torch eager``: ``torch.autograd.grad`` on tensors made from the numpy inputs at each call.

The processes are run in turn (every column of every case, then the next repetition), so that a change in
the machine's load hits them alike; each figure is the median over ``--reps`` (at least 3) processes. For
symgrad the table also gives, in parentheses, the longest time one call after the first spent (the call
blocked, e.g. on a numba compile, or ran at first-tier speed), and the summary compares it with the time
of one call of the generated numpy code (the first tier, timed in the same process after the K calls,
through the compiled function's one entry: private access; the time that measurement takes is subtracted from
the process's wall time, as the peers make none).

Workloads (the benchmarks' W1, W2, W3):
W1 ``mean(3*(x+2)**2)`` wrt x; W2 ``sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))`` wrt x and y;
W3 Rosenbrock ``sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2)`` wrt x.

``--bytecode``: symgrad imported from a byte-compiled copy of the package (a checkout run with
``PYTHONDONTWRITEBYTECODE``, as the development machine is, compiles every module of symgrad at each import, where
jax's and torch's installed files are byte-compiled).

``--quick``: W2 at every case and W1, W3 at n = 10⁶, K = 20 only, 3 repetitions (65 processes: 11 minutes on
the shared 2-core development machine at load average 6).
No time is asserted; the closing lines compare the figures with the targets of issue 16.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBS = ("symgrad empty", "symgrad warm", "JAX jit", "torch eager")


# ------------------------------------------------------------------------------------ the child process

def _inputs(np, workload: str, n: int) -> tuple:
    rng = np.random.default_rng(0)
    if workload == "W3":
        return (rng.uniform(-1.5, 1.5, n),)
    if workload == "W1":
        return (rng.standard_normal(n),)
    return rng.standard_normal(n), rng.standard_normal(n)


def _symgrad(workload: str):
    sys.path.insert(0, os.environ.get("SYMGRAD_BENCH_ROOT") or str(ROOT))
    import symgrad as sg

    def w1(x):
        return (3 * (x + 2) ** 2).mean()

    def w2(x, y):
        return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum()

    def w3(x):
        a = x[:-1]
        return (100 * (x[1:] - a**2) ** 2 + (1 - a) ** 2).sum()

    f = {"W1": sg.value_and_grad(w1), "W2": sg.value_and_grad(w2, argnums=(0, 1)),
         "W3": sg.value_and_grad(w3)}[workload]
    return f, (lambda a: a), (lambda r: r)


def _jax(workload: str):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def w1(x):
        return jnp.mean(3 * (x + 2) ** 2)

    def w2(x, y):
        return jnp.sum(jnp.sin(x) * jnp.exp(-y**2) + jnp.log1p(x**2) * jnp.tanh(y))

    def w3(x):
        return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    fn = {"W1": (w1, 0), "W2": (w2, (0, 1)), "W3": (w3, 0)}[workload]
    f = jax.jit(jax.value_and_grad(fn[0], argnums=fn[1]))
    return f, jnp.asarray, jax.block_until_ready


def _torch(workload: str):
    import torch

    def vg(*arrays):
        ts = [torch.from_numpy(a).requires_grad_(True) for a in arrays]
        if workload == "W1":
            v = (3 * (ts[0] + 2) ** 2).mean()
        elif workload == "W2":
            x, y = ts
            v = (torch.sin(x) * torch.exp(-y**2) + torch.log1p(x**2) * torch.tanh(y)).sum()
        else:
            x = ts[0]
            a = x[:-1]
            v = (100 * (x[1:] - a**2) ** 2 + (1 - a) ** 2).sum()
        return v.item(), torch.autograd.grad(v, ts)
    return vg, (lambda a: a), (lambda r: r)


def _tier_call(f, arrays, np) -> float | None:
    """Seconds of one call of the signature's generated numpy kernel (private access; None if it moved)."""
    try:
        (e,) = f._entries.values()
        fn, consts = e.fn, list(e.consts)
        ts = []
        with np.errstate(all="ignore"):
            for _ in range(3):
                t0 = time.perf_counter()
                fn([*arrays, *consts])
                ts.append(time.perf_counter() - t0)
        return min(ts)
    except Exception:  # noqa: BLE001 - internals moved: the figure is optional
        return None


def child(lib: str, workload: str, n: int, k: int) -> None:
    t0 = time.perf_counter()
    import numpy as np
    make = {"symgrad": _symgrad, "jax": _jax, "torch": _torch}[lib]
    f, put, ready = make(workload)
    t_import = time.perf_counter() - t0
    arrays = tuple(put(a) for a in _inputs(np, workload, n))
    calls = []
    for _ in range(k):
        t1 = time.perf_counter()
        ready(f(*arrays))
        calls.append(time.perf_counter() - t1)
    out = {"import_s": t_import, "calls_s": calls}
    if lib == "symgrad":
        t2 = time.perf_counter()
        out["tier_s"] = _tier_call(f, arrays, np)
        out["aside_s"] = time.perf_counter() - t2      # the parent takes this measurement out of the wall time
        import symgrad as sg
        if hasattr(sg, "jit_stats"):
            st = sg.jit_stats()
            out["stats"] = {key: getattr(st, key) for key in ("numba_compiles", "cache_hits", "tier_switches")
                            if hasattr(st, key)}
    print("RESULT " + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------------ the parent

def run_child(lib: str, workload: str, n: int, k: int, cache: str, extra_env: dict | None = None) -> dict:
    env = {**os.environ, "SYMGRAD_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu", **(extra_env or {})}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", lib, workload, str(n), str(k)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"{lib} {workload} n={n} K={k} failed:\n{p.stderr[-3000:]}")
    out = json.loads(lines[-1][len("RESULT "):])
    return {"wall_s": wall - out.get("aside_s", 0.0), **out}


def have(module: str) -> bool:
    p = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return p.returncode == 0


def fmt_n(n: int) -> str:
    return f"10^{len(str(n)) - 1}" if str(n).strip("0") == "1" else f"{n:,}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, metavar=("LIB", "WORKLOAD", "N", "K"), help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="W2 at every case, W1/W3 at 10^6 x 20; 3 repetitions")
    ap.add_argument("--reps", type=int, default=5, help="processes per figure (median; at least 3)")
    ap.add_argument("--workloads", default="W1,W2,W3")
    ap.add_argument("--cases", default="1000:1,1000:20,1000000:20", help="comma-separated n:K")
    ap.add_argument("--bytecode", action="store_true",
                    help="symgrad as installed: a byte-compiled copy of symgrad/ and codegen/ (as pip leaves it, "
                         "and as jax and torch are), for a checkout run under PYTHONDONTWRITEBYTECODE")
    args = ap.parse_args(argv)
    if args.child:
        lib, workload, n, k = args.child
        child(lib, workload, int(n), int(k))
        return
    reps = 3 if args.quick else max(3, args.reps)
    cases = [tuple(int(v) for v in c.split(":")) for c in args.cases.split(",")]
    plan = [(w, n, k) for w in args.workloads.split(",") for n, k in cases
            if not args.quick or w == "W2" or (n, k) == (1_000_000, 20)]
    libs = [lib for lib in LIBS if (lib != "JAX jit" or have("jax")) and (lib != "torch eager" or have("torch"))]
    t_start = time.perf_counter()
    print(f"fresh-process start-up: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {reps} processes per "
          f"figure (median), libraries in turn; columns: {', '.join(libs)}")
    for lib in LIBS:
        if lib not in libs:
            print(f"  {lib}: not importable, column skipped")
    tmp = Path(tempfile.mkdtemp(prefix="symgrad-startup-"))
    warm = str(tmp / "warm")
    if args.bytecode:
        lib = tmp / "lib"
        for pkg in ("symgrad", "codegen"):
            shutil.copytree(ROOT / pkg, lib / pkg, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash", str(lib)],
                       check=True, capture_output=True)
        os.environ["SYMGRAD_BENCH_ROOT"] = str(lib)
        print(f"  symgrad byte-compiled ({lib})")
    try:
        for w, n in dict.fromkeys((w, n) for w, n, _ in plan):   # fill the warm cache, untimed
            run_child("symgrad", w, n, 3, warm, {"SYMGRAD_COMPILE": "sync"})
        res: dict = {}
        for r in range(reps):
            for w, n, k in plan:
                for lib in libs:
                    cache = warm if lib == "symgrad warm" else str(tmp / f"empty-{r}-{w}-{n}-{k}")
                    name = {"JAX jit": "jax", "torch eager": "torch"}.get(lib, "symgrad")
                    res.setdefault((w, n, k, lib), []).append(run_child(name, w, n, k, cache))
                    if lib == "symgrad empty":
                        shutil.rmtree(cache, ignore_errors=True)
        report(plan, libs, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


def _median(runs: list[dict], key) -> float:
    return statistics.median(key(r) for r in runs)


def report(plan: list, libs: list, res: dict) -> None:
    head = "| workload | n, K | " + " | ".join(libs) + " |"
    print("\nWall time of the whole process, median (symgrad: longest call after the first, median):\n")
    print(head)
    print("|" + " --- |" * (2 + len(libs)))
    for w, n, k in plan:
        cells = []
        for lib in libs:
            runs = res[(w, n, k, lib)]
            cell = f"{_median(runs, lambda r: r['wall_s']):.2f} s"
            if lib.startswith("symgrad") and k > 1:
                cell += f" ({_median(runs, lambda r: max(r['calls_s'][1:])):.2f} s)"
            cells.append(cell)
        print(f"| {w} | {fmt_n(n)}, {k} | " + " | ".join(cells) + " |")
    print("\nPer figure: import (s), first call (s), median of the later calls (ms), symgrad's first tier (ms):")
    for w, n, k in plan:
        for lib in libs:
            runs = res[(w, n, k, lib)]
            later = (f"{1e3 * _median(runs, lambda r: statistics.median(r['calls_s'][1:])):.2f} ms"
                     if k > 1 else "-")
            tier = [r["tier_s"] for r in runs if r.get("tier_s") is not None]
            stats = runs[-1].get("stats", "")
            tier_ms = f", tier {1e3 * statistics.median(tier):.2f} ms" if tier else ""
            print(f"  {w} {fmt_n(n)} K={k} {lib:13}: import {_median(runs, lambda r: r['import_s']):.2f}, "
                  f"first {_median(runs, lambda r: r['calls_s'][0]):.3f}, later {later}{tier_ms}"
                  + (f"  {stats}" if stats else ""))
    summary(plan, libs, res)


def summary(plan: list, libs: list, res: dict) -> None:
    print("\nTargets (issue 16, 'Done when'), from the figures above:")

    def wall(w, n, k, lib):
        runs = res.get((w, n, k, lib))
        return _median(runs, lambda r: r["wall_s"]) if runs else None

    def line(ok, text):
        print(f"  [{'met' if ok else 'MISSED' if ok is not None else 'n/a'}] {text}")
    for (n, k, col, bound) in ((1_000_000, 20, "symgrad empty", 1.0), (1_000_000, 20, "symgrad warm", 0.5),
                               (1000, 20, "symgrad empty", 0.8)):
        s, j = wall("W2", n, k, col), wall("W2", n, k, "JAX jit")
        if s is None or j is None:
            line(None, f"W2 n={fmt_n(n)} K={k} {col} <= {bound}x JAX: not measured")
        else:
            line(s <= bound * j, f"W2 n={fmt_n(n)} K={k} {col} <= {bound}x JAX: {s:.2f} s vs {j:.2f} s = {s / j:.2f}x")
    for w in ("W1", "W2", "W3"):
        runs = res.get((w, 1_000_000, 20, "symgrad empty"))
        if not runs:
            continue
        blocked = _median(runs, lambda r: max(r["calls_s"][1:]))
        tier = [r["tier_s"] for r in runs if r.get("tier_s") is not None]
        if not tier:
            line(None, f"{w} n=10^6: no call after the first blocks > 2x a first-tier call: tier time unavailable")
            continue
        t = statistics.median(tier)
        line(blocked <= 2 * t, f"{w} n=10^6 K=20 (empty cache): longest later call {1e3 * blocked:.1f} ms, "
                               f"first-tier call {1e3 * t:.1f} ms = {blocked / t:.1f}x (target <= 2x)")


if __name__ == "__main__":
    main()
