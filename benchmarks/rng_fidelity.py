"""Bit-for-bit fidelity of symgrad.core.rng / symgrad.core.ranges against torch, plus randn timings.

Run: ``python benchmarks/rng_fidelity.py [--seeds 50] [--quick]``. Prints, per function, the number of
mismatching elements (raw bits) over the grid: seeds x sizes {1..40, 100, 1000, 10**6} x {float32, float64}
(and the integer dtypes where a function takes them), then mixed call sequences, and randn(10**6) timings.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
import timeit
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from symgrad.core import ranges as SR  # noqa: E402
from symgrad.core import rng as R  # noqa: E402

F32, F64 = np.float32, np.float64
TD = {name: getattr(torch, name) for name in ("float32", "float64", "float16", "int64", "int32", "int16", "int8",
                                              "uint8", "bool")}  # fmt: skip


def bits_mismatch(a: np.ndarray, t: np.ndarray) -> int:
    """Elements whose raw bytes differ (shape/dtype mismatch counts every element)."""
    a = np.ascontiguousarray(a)
    t = np.ascontiguousarray(t)
    if a.shape != t.shape or a.dtype != t.dtype:
        return max(a.size, t.size, 1)
    if a.size == 0:
        return 0
    av = a.reshape(-1).view(np.uint8).reshape(a.size, -1)
    tv = t.reshape(-1).view(np.uint8).reshape(t.size, -1)
    return int(np.any(av != tv, axis=1).sum())


def pair(seed: int) -> tuple[R.Generator, torch.Generator]:
    return R.Generator(seed), torch.Generator().manual_seed(seed)


def state_mismatch(g: R.Generator, tg: torch.Generator) -> int:
    return int(g.get_state() != tg.get_state().numpy().tobytes())


# ------------------------------------------------------------------------------------------- cases
# Each case: (seed, n, dtype name) -> (ours: thunk, torch's: thunk, our generator, torch's generator); the values,
# any error (type and message) and the final generator states are compared.


def _t(n, dt):
    return torch.empty(n, dtype=TD[dt])


def _c_rand(seed, n, dt):
    g, tg = pair(seed)
    return lambda: R.uniform(g, n, dt), lambda: torch.rand(n, dtype=TD[dt], generator=tg), g, tg


def _c_uniform(seed, n, dt):
    g, tg = pair(seed)
    a, b = [(-2.5, 3.25), (0.1, 0.2), (-1e6, 1e-3), (100.0, 100.5)][seed % 4]
    return lambda: R.uniform(g, n, dt, a, b), lambda: _t(n, dt).uniform_(a, b, generator=tg), g, tg


def _c_randn(seed, n, dt):
    g, tg = pair(seed)
    return lambda: R.normal(g, n, dt), lambda: torch.randn(n, dtype=TD[dt], generator=tg), g, tg


def _c_normal(seed, n, dt):
    g, tg = pair(seed)
    m, s = [(2.0, 3.0), (-1.3, 0.37), (0.0, 1e-3), (1e3, 2.5)][seed % 4]
    return lambda: R.normal(g, n, dt, m, s), lambda: torch.normal(m, s, (n,), dtype=TD[dt], generator=tg), g, tg


def _c_normal_strided(seed, n, dt):
    g, tg = pair(seed)
    ours = lambda: R.normal(g, n, dt, 0.5, 2.0, contiguous=False)  # noqa: E731
    theirs = lambda: torch.empty(2 * n, dtype=TD[dt])[::2].normal_(0.5, 2.0, generator=tg)  # noqa: E731
    return ours, theirs, g, tg


def _c_normal_tt(seed, n, dt):
    g, tg = pair(seed)
    rs = np.random.RandomState(seed)
    mean = rs.randn(n).astype(dt)
    std = rs.rand(n).astype(dt) * 3
    tm, ts = torch.from_numpy(mean), torch.from_numpy(std)
    kind = seed % 3
    if kind == 0:
        return lambda: R.normal_tensor(g, mean, std), lambda: torch.normal(tm, ts, generator=tg), g, tg
    if kind == 1:
        return lambda: R.normal_tensor(g, mean, 1.5), lambda: torch.normal(tm, 1.5, generator=tg), g, tg
    return lambda: R.normal_tensor(g, 0.25, std), lambda: torch.normal(0.25, ts, generator=tg), g, tg


def _c_randint(seed, n, dt):
    g, tg = pair(seed)
    lo, hi = [(0, 10), (-5, 7), (0, 2**28), (-(2**40), 2**41), (3, 2**31 - 1), (0, 2**24)][seed % 6]
    d = {"float32": "int64", "float64": "int32", "float16": "int16"}[dt]
    info = np.iinfo(d)
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    return lambda: R.randint(g, lo, hi, n, d), lambda: torch.randint(lo, hi, (n,), dtype=TD[d], generator=tg), g, tg


def _c_randint_float(seed, n, dt):
    g, tg = pair(seed)
    lo, hi = [(0, 10), (-100, 3), (0, 2**20), (-2048, 2048)][seed % 4]
    return lambda: R.randint(g, lo, hi, n, dt), lambda: torch.randint(lo, hi, (n,), dtype=TD[dt], generator=tg), g, tg


def _c_random_default(seed, n, dt):
    g, tg = pair(seed)
    d = ["int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float64", "float16"][seed % 9]
    return lambda: R.random_(g, n, d), lambda: _t(n, d).random_(generator=tg), g, tg


def _c_randperm(seed, n, dt):
    g, tg = pair(seed)
    d = {"float32": "float32", "float64": "int64", "float16": "float16"}[dt]
    if n > 2**24:
        d = "int64"
    return lambda: R.randperm(g, n, d), lambda: torch.randperm(n, dtype=TD[d], generator=tg), g, tg


def _c_bernoulli_p(seed, n, dt):
    g, tg = pair(seed)
    p = [0.5, 0.1, 0.9, 0.0, 1.0][seed % 5]
    return lambda: R.bernoulli(g, p, n, dt), lambda: _t(n, dt).bernoulli_(p, generator=tg), g, tg


def _c_bernoulli_t(seed, n, dt):
    g, tg = pair(seed)
    p = np.random.RandomState(seed).rand(n).astype(dt)
    return lambda: R.bernoulli(g, p), lambda: torch.bernoulli(torch.from_numpy(p), generator=tg), g, tg


def _c_dropout(seed, n, dt):
    g = R.Generator(seed)
    torch.manual_seed(seed)
    p = [0.5, 0.1, 0.75][seed % 3]
    x = np.random.RandomState(seed).randn(n).astype(dt)
    theirs = lambda: torch.nn.functional.dropout(torch.from_numpy(x), p, training=True)  # noqa: E731
    return lambda: R.dropout(g, x, p), theirs, g, torch.default_generator


def _c_exponential(seed, n, dt):
    g, tg = pair(seed)
    lam = [1.0, 2.5, 0.3][seed % 3]
    return lambda: R.exponential(g, n, dt, lam), lambda: _t(n, dt).exponential_(lam, generator=tg), g, tg


def _c_geometric(seed, n, dt):
    g, tg = pair(seed)
    p = [0.3, 0.01, 0.9, 0.5][seed % 4]
    d = dt if seed % 2 else "int64"
    return lambda: R.geometric(g, n, d, p), lambda: _t(n, d).geometric_(p, generator=tg), g, tg


def _c_cauchy(seed, n, dt):
    g, tg = pair(seed)
    m, s = [(0.0, 1.0), (1.5, 0.3), (-2.0, 4.0)][seed % 3]
    return lambda: R.cauchy(g, n, dt, m, s), lambda: _t(n, dt).cauchy_(m, s, generator=tg), g, tg


def _c_log_normal(seed, n, dt):
    g, tg = pair(seed)
    m, s = [(1.0, 2.0), (0.0, 0.5), (-1.0, 0.25)][seed % 3]
    return lambda: R.log_normal(g, n, dt, m, s), lambda: _t(n, dt).log_normal_(m, s, generator=tg), g, tg


def _c_multinomial(seed, n, dt):
    g, tg = pair(seed)
    rs = np.random.RandomState(seed)
    cats = max(n, 2)
    p = rs.rand(cats).astype(dt)
    if seed % 4 == 1:  # zero probabilities: ties among the zeros once k exceeds the non-zero count
        p[rs.rand(cats) < 0.5] = 0
        p[0] = 1
    k = max(1, min(cats, [1, 3, cats, cats // 2][seed % 4]))
    repl = seed % 2 == 0
    if seed % 4 == 3:  # 2-D
        p = rs.rand(3, cats).astype(dt)
    tp = torch.from_numpy(p)
    return lambda: R.multinomial(g, p, k, repl), lambda: torch.multinomial(tp, k, repl, generator=tg), g, tg


CASES = {
    "rand": _c_rand,
    "uniform_(a,b)": _c_uniform,
    "randn": _c_randn,
    "normal(mean,std,size)": _c_normal,
    "normal_ non-contiguous": _c_normal_strided,
    "normal(tensor mean/std)": _c_normal_tt,
    "randint (int dtypes)": _c_randint,
    "randint (float dtypes)": _c_randint_float,
    "random_() per dtype": _c_random_default,
    "randperm": _c_randperm,
    "bernoulli_(p)": _c_bernoulli_p,
    "bernoulli(p tensor)": _c_bernoulli_t,
    "dropout": _c_dropout,
    "exponential_": _c_exponential,
    "geometric_": _c_geometric,
    "cauchy_": _c_cauchy,
    "log_normal_": _c_log_normal,
    "multinomial": _c_multinomial,
}
# torch's own CPU topk / strided normal_ are slow at 10**6: fewer seeds there
FEW_SEEDS_AT_1E6 = {"multinomial": 5, "normal_ non-contiguous": 10}


def _call(thunk):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = thunk()
        return (r.numpy() if isinstance(r, torch.Tensor) else r), None
    except Exception as e:  # noqa: BLE001 - errors are compared too
        return None, (type(e).__name__, str(e))


def compare(fn, seed, n, dt):
    """(value mismatches, elements, state differs) for one case; an error mismatch counts every element."""
    ours_f, theirs_f, g, tg = fn(seed, n, dt)
    theirs, terr = _call(theirs_f)
    ours, oerr = _call(ours_f)
    if terr or oerr:  # both raising the same error is a match (of no values)
        return (0 if terr == oerr else max(n, 1)), (0 if terr == oerr else max(n, 1)), state_mismatch(g, tg)
    return bits_mismatch(ours, theirs), theirs.size, state_mismatch(g, tg)


def run_grid(seeds, sizes, dtypes=("float32", "float64"), names=None, out=print):
    """Mismatch counts per case over seeds x sizes x dtypes; returns {name: (mismatches, elements, states)}."""
    res = {}
    for name, fn in CASES.items():
        if names is not None and name not in names:
            continue
        bad = tot = sbad = 0
        t0 = time.perf_counter()
        for dt in dtypes:
            for n in sizes:
                use = seeds[: FEW_SEEDS_AT_1E6.get(name, len(seeds))] if n >= 10**6 else seeds
                for seed in use:
                    m, t, s = compare(fn, seed, n, dt)
                    bad += m
                    tot += t
                    sbad += s
                    if (m or s) and out is not None:
                        out(f"    MISMATCH {name} seed={seed} n={n} {dt}: {m} values, state {'differs' if s else 'ok'}")
        res[name] = (bad, tot, sbad)
        if out is not None:
            out(f"{name:26s} mismatches {bad:>9d} / {tot:>11d} values   states differing {sbad}   "
                f"({time.perf_counter() - t0:.1f}s)")  # fmt: skip
    return res


# ------------------------------------------------------------------------------------------- mixed sequences

_MIXED_OPS = ["randn", "rand", "randn64", "randint", "normal", "perm", "bern", "exp", "lognorm", "save", "restore",
              "seed", "randn_small", "uniform64", "cauchy"]  # fmt: skip


def _mixed_step(op, g, tg, n, dt):
    td = TD[dt]
    if op in ("randn", "randn_small", "randn64"):
        return R.normal(g, n, dt), torch.randn(n, dtype=td, generator=tg)
    if op == "rand":
        return R.uniform(g, n, dt), torch.rand(n, dtype=td, generator=tg)
    if op == "uniform64":
        return R.uniform(g, n, "float64", -3, 5), _t(n, "float64").uniform_(-3, 5, generator=tg)
    if op == "randint":
        return R.randint(g, -3, 2**29, n), torch.randint(-3, 2**29, (n,), generator=tg)
    if op == "normal":
        return R.normal(g, n, dt, 1.5, 0.5), torch.normal(1.5, 0.5, (n,), dtype=td, generator=tg)
    if op == "perm":
        return R.randperm(g, n), torch.randperm(n, generator=tg)
    if op == "bern":
        return R.bernoulli(g, 0.3, n, dt), _t(n, dt).bernoulli_(0.3, generator=tg)
    if op == "exp":
        return R.exponential(g, n, dt), _t(n, dt).exponential_(generator=tg)
    if op == "cauchy":
        return R.cauchy(g, n, dt, 1, 2), _t(n, dt).cauchy_(1, 2, generator=tg)
    return R.log_normal(g, n, dt), _t(n, dt).log_normal_(generator=tg)


def mixed_sequences(n_seq: int, out=print) -> tuple[int, int]:
    """Random programs of calls on 1-3 generators, with state save/restore and reseeding.

    The cached normal carries across calls (small randn / log_normal_ leave one behind, big fills leave it
    alone). Returns (mismatching calls, calls); each call compares values and the generator's full state.
    """
    bad = checks = 0
    for s in range(n_seq):
        rnd = random.Random(s)
        k = rnd.randint(1, 3)
        gs = [R.Generator(1000 + s + 7 * i) for i in range(k)]
        ts = [torch.Generator().manual_seed(1000 + s + 7 * i) for i in range(k)]
        saved = None
        for _step in range(rnd.randint(5, 25)):
            i = rnd.randrange(k)
            g, tg = gs[i], ts[i]
            op = rnd.choice(_MIXED_OPS)
            n = rnd.choice([1, 2, 3, 5, 7, 15, 16, 17, 31, 33, 100, 625, 1000])
            dt = rnd.choice(["float32", "float64"])
            if op == "save":
                saved = (i, g.get_state(), tg.get_state())
                continue
            if op == "restore":
                if saved is not None:
                    j, a, b = saved
                    gs[j].set_state(a)
                    ts[j].set_state(b)
                continue
            if op == "seed":
                sd = rnd.randrange(-(2**63), 2**64)
                g.manual_seed(sd)
                tg.manual_seed(sd)
                continue
            if op == "randn_small":
                n = rnd.randint(1, 15)
            if op == "randn64":
                dt = "float64"
            a, b = _mixed_step(op, g, tg, n, dt)
            m = bits_mismatch(a, b.numpy()) + state_mismatch(g, tg)
            checks += 1
            if m:
                bad += 1
                if out is not None:
                    out(f"    MIXED MISMATCH seq={s} op={op} n={n} {dt}")
    return bad, checks


# ------------------------------------------------------------------------------------------- ranges


def _range_calls(dt, start, end, step, steps, base):
    td = TD.get(dt) or getattr(torch, dt)
    calls = [
        ("arange", lambda: SR.arange(start, end, step, dt), lambda: torch.arange(start, end, step, dtype=td)),
        ("linspace", lambda: SR.linspace(start, end, steps, dt), lambda: torch.linspace(start, end, steps, dtype=td)),
    ]
    if dt.startswith("float"):
        a, b = start / 50, end / 50
        calls.append(("logspace", lambda: SR.logspace(a, b, steps, base, dt),
                      lambda: torch.logspace(a, b, steps, base, dtype=td)))  # fmt: skip
        calls.append(("range", lambda: SR.range_(start, end, step, dt),
                      lambda: torch.range(start, end, step, dtype=td)))  # fmt: skip
    return calls


def range_grid(n_random: int = 1500, out=print) -> tuple[int, int]:
    """arange / linspace / logspace / range over random arguments, 8 dtypes, plus long (chunked) ranges."""
    bad = tot = 0
    rs = random.Random(0)
    dts = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "float16"]
    combos = []
    for _ in range(n_random):
        dt = rs.choice(dts)
        fl = dt.startswith("float")
        start = rs.choice([0, 1, -3, 2.5, -1.75, 0.1, 1e3, -7]) if fl else rs.choice([0, 1, -3, 5, -7, 2])
        step = rs.choice([1, 2, 0.1, -0.3, 0.25, -1, 3, 1e-3]) if fl else rs.choice([1, 2, -1, 3, -2])
        cnt = rs.randint(0, 200)
        end = start + step * cnt + rs.choice([0, step / 2, -step / 3, step * 1e-9]) if fl else start + step * cnt
        if dt in ("int8", "uint8", "int16"):
            start, end = start % 50, (start % 50) + step * min(cnt, 40)
            if dt == "uint8" and (start < 0 or end < 0):
                continue
        combos.append((dt, start, end, step, rs.randint(0, 300), rs.choice([2.0, 10.0, 3.5])))
    for dt in ("float32", "float64"):  # past GRAIN_SIZE: torch splits the vectorised loop over its threads
        for start, step, cnt in [(0, 0.3, 40000), (0.1, 1e-3, 70000), (-3, 0.0137, 100003), (5, -0.25, 65537)]:
            combos.append((dt, start, start + step * cnt, step, cnt, 10.0))
    for combo in combos:
        for nm, f_ours, f_torch in _range_calls(*combo):
            tot += 1
            t, terr = _call(f_torch)
            o, oerr = _call(f_ours)
            if terr or oerr:
                if terr != oerr:
                    bad += 1
                    if out is not None:
                        out(f"    RANGE ERROR MISMATCH {nm}{combo}: {oerr} vs {terr}")
            elif bits_mismatch(o, t):
                bad += 1
                if out is not None:
                    out(f"    RANGE MISMATCH {nm}{combo}")
    return bad, tot


# ------------------------------------------------------------------------------------------- timing


def _best(f, number=5, repeat=7) -> float:
    return min(timeit.repeat(f, number=number, repeat=repeat)) / number


def timings(out=print) -> dict:
    """randn / rand of 10**6 elements, symgrad vs torch (best of repeats; both single-threaded kernels)."""
    res = {}
    for what in ("randn", "rand"):
        for dt in ("float32", "float64"):
            g = R.Generator(0)
            tg = torch.Generator().manual_seed(0)
            ours_f = functools.partial(R.normal if what == "randn" else R.uniform, g, 10**6, dt)
            tfun = torch.randn if what == "randn" else torch.rand
            theirs_f = functools.partial(tfun, 10**6, dtype=TD[dt], generator=tg)
            ours_f()  # warm: load / compile the kernels
            ours = _best(ours_f)
            theirs = _best(theirs_f)
            res[f"{what}(10**6) {dt}"] = (ours, theirs)
            out(f"{what}(10**6) {dt}: symgrad {ours * 1e3:.2f} ms, torch {theirs * 1e3:.2f} ms, "
                f"ratio {ours / theirs:.2f}x")  # fmt: skip
    g = R.Generator(0)
    blk = R._u24(g, 10**6)
    t0 = time.perf_counter()
    R._np_fill16_avx2(blk, np.float32(0), np.float32(1))
    out(f"  numpy-only fallback (no numba) of the AVX2 transform: {(time.perf_counter() - t0) * 1e3:.0f} ms per 10**6")
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="sizes 1..40, 100, 1000 only")
    ap.add_argument("--only", nargs="*", default=None, help="case names to run (grid only)")
    ap.add_argument("--dtypes", nargs="*", default=["float32", "float64"])
    args = ap.parse_args()
    kernels = "on" if R._kernels() is not None else "off"
    print(f"torch {torch.__version__}, torch CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"symgrad path {R.cpu_capability()}, numba kernels {kernels}")  # fmt: skip
    seeds = list(range(args.seeds))
    sizes = list(range(1, 41)) + [100, 1000] + ([] if args.quick else [10**6])
    print(f"grid: {len(seeds)} seeds x sizes 1..40,100,1000{'' if args.quick else ',10**6'} x {'/'.join(args.dtypes)}")
    t0 = time.perf_counter()
    res = run_grid(seeds, sizes, dtypes=tuple(args.dtypes), names=args.only)
    total = defaultdict(int)
    for bad, tot, sb in res.values():
        total["bad"] += bad
        total["tot"] += tot
        total["sb"] += sb
    print(f"TOTAL mismatches {total['bad']} / {total['tot']} values, {total['sb']} final states differ "
          f"({time.perf_counter() - t0:.0f}s)")  # fmt: skip
    if args.only is None:
        b, c = mixed_sequences(300)
        print(f"mixed call sequences (1-3 generators, save/restore, reseeding): {b} mismatching calls / {c}")
        b, c = range_grid()
        print(f"ranges (arange/linspace/logspace/range, 8 dtypes): {b} mismatches / {c} calls")
        timings()


if __name__ == "__main__":
    main()
