"""Time per step of small training loops: symgrad eager and compiled against torch eager, in one process.

Run: python benchmarks/training.py [--quick] [--steps N] [--only lin|mlp] [--torch-threads T] [--blas-threads B]
     [--warm-cache] [--profile]

Workloads (float32):

- **lin**: ``nn.Linear(100, 1)`` on 200x100 data, ``MSELoss``, ``optim.SGD(lr=0.01)``.
- **mlp**: a 5-64-64-1 ``tanh`` MLP (``nn.Sequential``) on a batch of 256, ``MSELoss``, ``optim.Adam(lr=1e-3)``.

Rows per workload: torch eager and symgrad eager run the same step function (``zero_grad``, forward, loss,
``backward``, ``step``); symgrad compiled runs the forward + loss + gradient as one ``sg.value_and_grad`` kernel
whose arguments are the parameters, with the update on numpy arrays (hand-written SGD / Adam) or through
``sg.optim`` (the parameters enter as a dict via ``sg.nn.utils.functional_call``).

The implementations take turns step by step (so that they share the machine's load) and every step is timed;
the table shows the median and the 10th percentile of the time per step over ``--steps`` steps, after a warm-up
that is excluded (for symgrad eager it covers ``SYMGRAD_EAGER_JIT_AFTER`` backward calls, so the numba tier is in
use). The one-time costs are reported apart: the first step (symgrad: derive + generate the gradient program,
and the first imports) and the slowest later warm-up step (symgrad eager: the pause when the graph structure
moves to numba; compiled: the numba compile on the second call). torch runs at ``--torch-threads`` (default 1,
``torch.set_num_threads``); numpy's BLAS, which symgrad's matmuls use, at ``--blas-threads`` (default 1: OpenBLAS
threads waiting on a busy machine cost milliseconds per step). All implementations start from the same weights;
the final parameters are compared with torch's.
"""
from __future__ import annotations

import argparse
import atexit
import os

os.environ.setdefault("SYMGRAD_COMPILE", "sync")  # steady-state timings: the numba kernel once hot, not the numpy tier
import shutil
import sys
import tempfile
import time
from typing import Any, Callable


def _threads_from_argv() -> str:
    for i, a in enumerate(sys.argv):
        if a == "--blas-threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--blas-threads="):
            return a.split("=", 1)[1]
    return "1"


# numpy's BLAS reads its thread count when it loads: before numpy is imported
_BLAS = _threads_from_argv()
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _BLAS
# a fresh kernel cache (removed at exit), so the one-time costs are those of a first run
_CACHE = None if "--warm-cache" in sys.argv else tempfile.mkdtemp(prefix="symgrad-bench-")
if _CACHE is not None:
    os.environ["SYMGRAD_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import symgrad as sg  # noqa: E402
import symgrad.nn.functional as SF  # noqa: E402
from symgrad.kernels.program import EAGER_JIT_AFTER  # noqa: E402
from symgrad.nn.utils import functional_call  # noqa: E402

Step = Callable[[], Any]


# ---------------------------------------------------------------------------- models

def _data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if kind == "lin":
        x = rng.standard_normal((200, 100)).astype(np.float32)
        y = (x @ rng.standard_normal((100, 1)) + 0.1 * rng.standard_normal((200, 1))).astype(np.float32)
    else:
        x = rng.standard_normal((256, 5)).astype(np.float32)
        y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
    return x, y


def _model(lib: Any, kind: str) -> Any:
    nn = lib.nn
    if kind == "lin":
        return nn.Linear(100, 1)
    return nn.Sequential(nn.Linear(5, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))


def _optimizer(lib: Any, kind: str, params: Any) -> Any:
    return lib.optim.SGD(params, lr=0.01) if kind == "lin" else lib.optim.Adam(params, lr=1e-3)


def _initial_weights(kind: str) -> dict[str, np.ndarray]:
    torch.manual_seed(0)
    return {k: v.detach().numpy().copy() for k, v in _model(torch, kind).state_dict().items()}


def eager_step(lib: Any, kind: str, w0: dict[str, np.ndarray]) -> tuple[Step, Any]:
    """The same training step for torch and for symgrad (``import symgrad as torch``)."""
    model = _model(lib, kind)
    model.load_state_dict({k: lib.tensor(v.copy()) for k, v in w0.items()})
    opt = _optimizer(lib, kind, model.parameters())
    loss_fn = lib.nn.MSELoss()
    xa, ya = _data(kind)
    x, y = lib.tensor(xa), lib.tensor(ya)

    def step() -> Any:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, model


# ---------------------------------------------------------------------------- compiled steps

def _forward(kind: str, p: list[Any], x: Any) -> Any:
    if kind == "lin":
        return SF.linear(x, p[0], p[1])
    h = sg.tanh(SF.linear(x, p[0], p[1]))
    h = sg.tanh(SF.linear(h, p[2], p[3]))
    return SF.linear(h, p[4], p[5])


def compiled_numpy_step(kind: str, w0: dict[str, np.ndarray]) -> tuple[Step, dict[str, np.ndarray]]:
    """``sg.value_and_grad`` of forward + loss with the parameters as array arguments; the update in numpy."""
    names = list(w0)
    params = [w0[k].copy() for k in names]
    k = len(params)
    x, y = _data(kind)

    def loss(*args: Any) -> Any:
        return SF.mse_loss(_forward(kind, list(args[:k]), args[k]), args[k + 1])

    vg = sg.value_and_grad(loss, argnums=tuple(range(k)))
    if kind == "lin":
        lr = np.float32(0.01)

        def step() -> Any:
            value, grads = vg(*params, x, y)
            for p, g in zip(params, grads):
                p -= lr * g
            return value
    else:
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        t = [0]

        def step() -> Any:
            value, grads = vg(*params, x, y)
            t[0] += 1
            c1, c2 = 1 - b1 ** t[0], np.sqrt(1 - b2 ** t[0])
            for p, g, mi, vi in zip(params, grads, m, v):
                mi += (1 - b1) * (g - mi)
                vi *= b2
                vi += (1 - b2) * g * g
                p -= (lr / c1) * mi / (np.sqrt(vi) / c2 + eps)
            return value

    return step, dict(zip(names, params))


def compiled_module_step(kind: str, w0: dict[str, np.ndarray]) -> tuple[Step, Any]:
    """The module's own forward through ``functional_call`` (parameters as a dict argument of the compiled
    function, numpy arrays sharing the parameters' memory) and ``sg.optim`` for the update."""
    model = _model(sg, kind)
    model.load_state_dict({k: sg.tensor(v.copy()) for k, v in w0.items()})
    opt = _optimizer(sg, kind, model.parameters())
    loss_fn = sg.nn.MSELoss()
    named = list(model.named_parameters())
    arrays = {k: p.detach().numpy() for k, p in named}  # the optimizer updates these in place
    x, y = _data(kind)
    vg = sg.value_and_grad(lambda params, xb, yb: loss_fn(functional_call(model, params, (xb,)), yb))

    def step() -> Any:
        value, grads = vg(arrays, x, y)
        for k, p in named:
            p.grad = sg.from_numpy(grads[k])
        opt.step()
        return value

    return step, model


# ---------------------------------------------------------------------------- timing

def _timed_steps(step: Step, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


def _params_of(obj: Any) -> dict[str, np.ndarray]:
    if isinstance(obj, dict):
        return {k: np.asarray(v) for k, v in obj.items()}
    return {k: np.asarray(v.detach().numpy()) for k, v in obj.state_dict().items()}


def run(kind: str, steps: int, warmup: int) -> dict[str, Any]:
    w0 = _initial_weights(kind)
    impls: dict[str, tuple[Step, Any]] = {
        "torch eager": eager_step(torch, kind, w0),
        "symgrad eager": eager_step(sg, kind, w0),
        "symgrad compiled + numpy update": compiled_numpy_step(kind, w0),
        "symgrad compiled (functional_call) + sg.optim": compiled_module_step(kind, w0),
    }
    first: dict[str, list[float]] = {}
    for name, (step, _) in impls.items():
        first[name] = _timed_steps(step, warmup)
    times: dict[str, list[float]] = {name: [] for name in impls}
    clock = time.perf_counter
    for _ in range(steps):  # the implementations in turn, step by step: they share the machine's load
        for name, (step, _) in impls.items():
            t0 = clock()
            step()
            times[name].append(clock() - t0)
    ref = _params_of(impls["torch eager"][1])
    diffs = {}
    for name, (_, state) in impls.items():
        got = _params_of(state)
        scale = max(float(np.max(np.abs(ref[k]))) for k in ref)
        diffs[name] = max(float(np.max(np.abs(got[k] - ref[k]))) for k in ref) / scale
    return {"first": first, "times": times, "diffs": diffs}


def _pause(ts: list[float]) -> tuple[int, float]:
    """The slowest warm-up step after the first (1-based step number) and its excess over the median."""
    rest = ts[1:]
    k = int(np.argmax(rest))
    return k + 2, rest[k] - float(np.median(rest))


TITLES = {"lin": "(a) linear: nn.Linear(100, 1), 200x100 float32, MSELoss, SGD(lr=0.01)",
          "mlp": "(b) MLP 5-64-64-1 tanh, batch 256 float32, MSELoss, Adam(lr=1e-3)"}


def report(kind: str, res: dict[str, Any]) -> dict[str, tuple[float, float]]:
    print(f"\n{TITLES[kind]}")
    t_ref = float(np.median(res["times"]["torch eager"]))
    p10_ref = float(np.percentile(res["times"]["torch eager"], 10))
    print("| implementation | median ms/step | p10 ms/step | / torch (median) | / torch (p10) | first step ms "
          "| slowest later warm-up step | final params vs torch (max abs diff / max abs param) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios = {}
    for name, ts in res["times"].items():
        med, lo = float(np.median(ts)), float(np.percentile(ts, 10))
        ratios[name] = (med / t_ref, lo / p10_ref)
        f = res["first"][name]
        k, extra = _pause(f)
        print(f"| {name} | {1e3 * med:.3f} | {1e3 * lo:.3f} | {med / t_ref:.2f}x | {lo / p10_ref:.2f}x | "
              f"{1e3 * f[0]:.1f} | step {k}: +{1e3 * extra:.1f} ms | {res['diffs'][name]:.1e} |")
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer timed steps")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per implementation")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int, default=1, help="numpy BLAS threads (set before numpy loads)")
    ap.add_argument("--only", choices=sorted(TITLES), default=None)
    ap.add_argument("--warm-cache", action="store_true", help="keep symgrad's kernel cache (default: a fresh one)")
    ap.add_argument("--profile", action="store_true", help="then cProfile symgrad's eager step (top functions)")
    args = ap.parse_args()
    steps = args.steps or (400 if args.quick else 2000)
    warmup = EAGER_JIT_AFTER + 10
    torch.set_num_threads(args.torch_threads)
    print(f"torch {torch.__version__} at {torch.get_num_threads()} thread(s) (torch.set_num_threads); numpy "
          f"{np.__version__}, BLAS threads {os.environ['OPENBLAS_NUM_THREADS']} (OPENBLAS/OMP/MKL_NUM_THREADS); "
          f"symgrad eager moves a graph structure to numba after {EAGER_JIT_AFTER} backward calls "
          "(SYMGRAD_EAGER_JIT_AFTER); kernel cache: " + ("the user's" if _CACHE is None else "fresh"))
    print(f"{warmup} warm-up steps per implementation (excluded), then {steps} timed steps each, the "
          "implementations in turn step by step; each step timed (median and 10th percentile)")
    summary = {}
    for kind in ([args.only] if args.only else list(TITLES)):
        summary[kind] = report(kind, run(kind, steps, warmup))
    print("\ntargets: symgrad eager <= 1.0x torch eager per step after warm-up; compiled <= 0.5x")
    for kind, r in summary.items():
        eager = r["symgrad eager"]
        comp = min((v for k, v in r.items() if "compiled" in k), key=lambda v: v[0])
        print(f"  {kind}: eager {eager[0]:.2f}x median / {eager[1]:.2f}x p10 "
              f"({'met' if max(eager) <= 1.0 else 'not met'}); best compiled {comp[0]:.2f}x / {comp[1]:.2f}x "
              f"({'met' if max(comp) <= 0.5 else 'not met'})")
    if args.profile:
        for kind in summary:
            profile(kind, 500)


def profile(kind: str, steps: int, top: int = 25) -> None:
    """cProfile of symgrad's eager step after warm-up: where its per-step overhead is."""
    import cProfile
    import pstats
    step, _ = eager_step(sg, kind, _initial_weights(kind))
    for _ in range(EAGER_JIT_AFTER + 10):
        step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    print(f"\ncProfile of {steps} symgrad eager steps, {TITLES[kind]} (profiler overhead inflates small calls)")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


if __name__ == "__main__":
    main()
