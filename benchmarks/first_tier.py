"""The first tier (symgrad's generated numpy code) against numpy with a hand-derived gradient.

    python benchmarks/first_tier.py [--quick] [--sizes 1000000,1000] [--show]

The first call of a compiled signature, and every call with ``SYMGRAD_BACKEND=numpy``, runs the numpy
source that ``codegen/numpy/emit.py`` prints for the signature's kernel IR. This script times that code
on the value-and-gradient workloads of ``compiled.py`` and ``operators.py`` (float64):

W1  ``mean(3*(x+2)**2)``, gradient wrt x, x of n elements.
W2  ``sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))``, gradients wrt x and y, n elements each.
W3  Rosenbrock ``sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2)``, gradient wrt x, n elements.
W5  logistic loss ``mean(log1p(exp(-y*(X@w))))``, gradient wrt w; X is (n/100) x 100 (n elements), y = +-1.

Rows, per workload and size:

* ``generated kernel``: the numpy kernel of the signature called directly (``Program.fn`` on the
  argument list; private access to the compiled function's one entry): the code the emitter prints.
* ``sg.value_and_grad``: the public call with the numpy backend (``symgrad.kernels.program.set_backend``,
  what ``SYMGRAD_BACKEND=numpy`` sets), so the call wrapper's own cost is included.
* ``numpy (hand grad)``: ``compiled.py``'s / ``operators.py``'s numpy reference with the gradient
  derived by hand (the reference, ratio 1.00).

numpy's BLAS runs on one thread (``OPENBLAS_NUM_THREADS`` etc. default to 1 here; W5's products are BLAS calls
in both implementations, and BLAS threads spinning on a busy small machine make them jumpy). The kernel's
results are checked against numpy before timing. Times: medians (and minima) of blocks of
consecutive calls per implementation, the implementations in turn over several rounds
(``compiled.block_times``); at small sizes each sample is a loop of calls. The summary compares the
kernel's ratio with the goal of issue 16 (within 1.2x of the hand-written numpy). ``--show`` prints the
generated sources.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # before numpy is imported (by compiled.py)

# compiled.py points SYMGRAD_CACHE_DIR at a fresh temporary folder and puts the repository on sys.path
import compiled as cb  # noqa: E402
import numpy as np  # noqa: E402
import operators as ob  # noqa: E402

import symgrad as sg  # noqa: E402

GOAL = 1.2


def inputs(name: str, n: int, rng: np.random.Generator) -> tuple:
    if name == "W1":
        return (rng.standard_normal(n),)
    if name == "W2":
        return rng.standard_normal(n), rng.standard_normal(n)
    if name == "W3":
        return (rng.uniform(-1.5, 1.5, n),)
    rows = max(n // 100, 1)
    return 0.1 * rng.standard_normal(100), rng.standard_normal((rows, 100)), rng.choice([-1.0, 1.0], rows)


WORKLOADS = {
    "W1": (cb.w1, 0, cb.numpy_w1),
    "W2": (cb.w2, (0, 1), cb.numpy_w2),
    "W3": (ob.w3, 0, ob.numpy_w3),
    "W5": (ob.w5, 0, ob.numpy_w5),
}


def kernel_call(vg, arrays):
    """(the signature's numpy kernel, its argument list): private access to the one entry."""
    (e,) = vg._entries.values()
    return e.fn, ([*arrays, *e.consts],), e.source


def measure(name: str, n: int, rounds: int, per_block: int, show: bool) -> dict:
    f, argnums, ref = WORKLOADS[name]
    arrays = inputs(name, n, np.random.default_rng(0))
    vg = sg.value_and_grad(f, argnums=argnums)
    want = ref(*arrays)
    cb.check(f"{name} sg.value_and_grad", vg(*arrays), want)
    fn, args, source = kernel_call(vg, arrays)
    if show:
        print(f"\n--- {name}, n = {n:,}: generated numpy kernel\n{source}")
    with np.errstate(all="ignore"):
        cb.check(f"{name} generated kernel", fn(*args), want)

        def kernel(*a):
            return fn(*a)
        calls = {"generated kernel": (kernel, args), "sg.value_and_grad": (vg, arrays),
                 "numpy (hand grad)": (ref, arrays)}
        inner = max(1, int(2e5 // n))  # samples of about a millisecond at small sizes
        times = cb.block_times(calls, rounds, per_block, inner={k: inner for k in calls})
    return times


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (about 20 s on 2 cores)")
    ap.add_argument("--sizes", default="1000000,1000", help="comma-separated n")
    ap.add_argument("--only", default="W1,W2,W3,W5", help="comma-separated workloads")
    ap.add_argument("--show", action="store_true", help="print the generated numpy sources")
    args = ap.parse_args(argv)
    rounds, per_block = (3, 5) if args.quick else (7, 9)
    cb.sgc.set_backend("numpy")
    t_start = time.perf_counter()
    print(f"symgrad first tier (generated numpy code) vs hand-written numpy{' (--quick)' if args.quick else ''}: "
          f"float64, numpy {np.__version__}, {os.cpu_count()} CPUs; median (min) of {rounds} rounds x "
          f"{per_block} samples")
    sizes = [int(s) for s in args.sizes.split(",")]
    ratios = {}
    for n in sizes:
        print(f"\nn = {n:,}")
        print(f"  {'workload':8}  {'hand numpy ms':>14}  {'kernel ms':>10}  {'kernel / hand':>13}  "
              f"{'(by min)':>8}  {'vag ms':>8}  {'vag / hand':>10}")
        for name in args.only.split(","):
            t = measure(name, n, rounds, per_block, args.show)
            (hm, hl), (km, kl), (vm, _) = t["numpy (hand grad)"], t["generated kernel"], t["sg.value_and_grad"]
            ratios[name, n] = km / hm
            print(f"  {name:8}  {1e3 * hm:14.4f}  {1e3 * km:10.4f}  {km / hm:13.2f}  {kl / hl:8.2f}  "
                  f"{1e3 * vm:8.4f}  {vm / hm:10.2f}")
    print(f"\nGoal (issue 16): the generated kernel within {GOAL}x of hand-written numpy")
    for (name, n), r in ratios.items():
        print(f"  [{'met' if r <= GOAL else 'MISSED'}] {name} n = {n:,}: {r:.2f}x")
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(cb._CACHE, ignore_errors=True)
