"""Cost of torch's reduction order (``codegen/runtime.py``) against numpy's own reductions and torch itself.

Run: ``python benchmarks/torch_order.py [--repeat 7]``.

For float32 contiguous inputs (1-d full reductions of 10 to 10⁶ elements; 100x100 and 1000x1000 over rows and
columns) it times ``torch_sum`` against ``numpy.sum``, ``torch_prod`` against ``numpy.prod`` and, for reference,
torch's own ``sum`` (at torch's default threads). Times are CPU time of this process (``time.process_time``: less
sensitive to a shared machine than wall time), the best of ``--repeat`` runs, in microseconds per call.
"""
from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codegen import runtime  # noqa: E402


def _time(fn, number: int, repeat: int) -> float:
    return min(timeit.Timer(fn, timer=time.process_time).repeat(number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    runtime.set_thread_count(torch.get_num_threads)
    rng = np.random.default_rng(0)
    cases = [("10", (10,), None), ("10^3", (1000,), None), ("10^4", (10_000,), None), ("10^6", (10 ** 6,), None),
             ("100x100 rows", (100, 100), 1), ("100x100 cols", (100, 100), 0),
             ("1000x1000 rows", (1000, 1000), 1), ("1000x1000 cols", (1000, 1000), 0)]
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), numpy {np.__version__}; "
          "float32, µs per call (CPU time, best of runs)\n")
    print("| input | numpy.sum | torch_sum | ratio | numpy.prod | torch_prod | ratio | torch.sum |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, shape, axis in cases:
        print(_row(name, rng.standard_normal(shape).astype(np.float32), rng.uniform(0.9, 1.1, shape).astype(np.float32),
                   axis, args.repeat))


def _row(name: str, a: np.ndarray, p: np.ndarray, axis: int | None, repeat: int) -> str:
    t = torch.from_numpy(a)
    n = 20 if a.size >= 10 ** 6 else 2000
    ns = _time(lambda: np.sum(a, axis=axis), n, repeat)
    ts = _time(lambda: runtime.torch_sum(a, axis), n, repeat)
    npd = _time(lambda: np.prod(p, axis=axis), n, repeat)
    tp = _time(lambda: runtime.torch_prod(p, axis), n, repeat)
    tt = _time(lambda: t.sum() if axis is None else t.sum(axis), n, repeat)
    return f"| {name} | {ns:.1f} | {ts:.1f} | {ts / ns:.1f}x | {npd:.1f} | {tp:.1f} | {tp / npd:.1f}x | {tt:.1f} |"

if __name__ == "__main__":
    main()
