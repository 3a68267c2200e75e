"""``codegen.numba``: fused numba kernels agree with the numpy emission of the same IR.

Kernels are built by hand (``codegen.ir``) and by the real pipeline (``symgrad.lower.lower`` on a
forward graph plus ``symgrad.autodiff.backward_graph``), emitted with both ``emit_numpy`` and
``emit_numba``, loaded from a temporary cache folder and run on the same inputs. Compiling with
numba is slow, so each kernel is compiled once per module (``_compiled`` caches by source).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import log1p

import symgrad as sg
from codegen import cache as cg_cache
from codegen import emit_numpy, load_kernel
from codegen.ir import Broadcast, Elementwise, Index, IndexAdd, Kernel, Param, Reduce, Reshape, Transpose
from codegen.numba import emit_numba
from symgrad.core.graph import Node, toposort
from symgrad.derive.reverse import backward_graph
from symgrad.derive.simplify import simplify_graph
from symgrad.kernels.lower import lower
from symgrad.ops import source as _src

RTOL = {"float64": 1e-12, "float32": 1e-5}
ATOL = {"float64": 1e-13, "float32": 1e-6}
DTYPES = ("float64", "float32")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("symgrad-cache")))
        mp.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
        cg_cache.reset_cache_dir()
        yield
    cg_cache.reset_cache_dir()


_LOADED: dict = {}


def _compiled(kernel: Kernel, **kw):
    """(numpy function, numba function, numba source) of ``kernel``, loaded once per source."""
    src = emit_numba(kernel, **kw)
    key = (src, emit_numpy(kernel))
    if key not in _LOADED:
        f_np, _ = load_kernel(key[1], kernel.name, prefix="test_np")
        f_nb, path = load_kernel(src, kernel.name, prefix="test_nb")
        assert path.read_text() == src
        _LOADED[key] = (f_np, f_nb, src)
    return _LOADED[key]


def _call_numpy(kernel: Kernel, fn, args):
    groups = {g: [None] * (1 + max((p.index for p in kernel.params if p.group == g), default=-1))
              for g in kernel.groups}
    for p, a in zip(kernel.params, args):
        groups[p.group][p.index] = a
    with np.errstate(all="ignore"):
        return fn(*[groups[g] for g in kernel.groups])


def _inputs(kernel: Kernel, seed: int = 0, positive: bool = False):
    rng = np.random.default_rng(seed)
    out = []
    for p in kernel.params:
        a = rng.uniform(0.1 if positive else -1.5, 1.5, size=p.shape)
        out.append(np.asarray(a, dtype=p.dtype))
    return out


def check(kernel: Kernel, args=None, **kw) -> tuple:
    """Run both emissions on ``args``; assert same shapes, dtypes and values. Returns numba's outputs."""
    f_np, f_nb, _ = _compiled(kernel, **kw)
    args = _inputs(kernel) if args is None else args
    expected = _call_numpy(kernel, f_np, args)
    got = f_nb(*args)
    assert isinstance(got, tuple) and len(got) == len(kernel.outputs)
    for name, e, g in zip(kernel.outputs, expected, got):
        e = np.asarray(e)
        dt = e.dtype.name
        if e.ndim == 0:
            # 0-d outputs are Python scalars holding a value of the output's dtype
            assert isinstance(g, (float, int, bool)), f"{name}: 0-d outputs are scalars"
            assert e.dtype.type(g) == g or np.isnan(g), f"{name}: {g!r} is not a {e.dtype} value"
            g = e.dtype.type(g)
        g_arr = np.asarray(g)
        assert g_arr.shape == e.shape, f"{name}: shape {g_arr.shape} != {e.shape}"
        assert g_arr.dtype == e.dtype, f"{name}: dtype {g_arr.dtype} != {e.dtype}"
        np.testing.assert_allclose(g_arr, e, rtol=RTOL.get(dt, 0), atol=ATOL.get(dt, 0), equal_nan=True,
                                   err_msg=name)
    return got


def S(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


def P(name: str, index: int, shape, dtype: str, group: str = "v") -> Param:
    return Param(name, index, tuple(shape), dtype, group)


# =========================================================================== hand-built kernels

def k_chain(dt: str, n: int = 9) -> Kernel:
    v0, v1, t0, t1 = S("v0"), S("v1"), S("t0"), S("t1")
    body = (
        Elementwise("t0", sp.sin(v0) * sp.exp(-v1**2) + 3 * v0**3 - v1 / 7, (n,), dt, "chain head"),
        Elementwise("t1", sp.log(1 + t0**2) + sp.tanh(v1) / (1 + v0**2) + 1 / t0**2 + sp.sqrt(v0**2 + 1)
                    + sp.Rational(1, 3) * sp.cos(t0) ** 2 + (v1**2 + 2) ** sp.Rational(-1, 2)
                    + (v0**2 + 1) ** sp.Rational(1, 3), (n,), dt, "chain"),
        Elementwise("t2", t1 * t0 - sp.pi * v0 + sp.E, (n,), dt, "chain tail"),
    )
    return Kernel("chain", (P("v0", 0, (n,), dt), P("v1", 1, (n,), dt)), body, ("t0", "t2"))


def k_broadcast(dt: str) -> Kernel:
    a, b, c, s0, t0, t1 = S("v0"), S("v1"), S("v2"), S("s0"), S("t0"), S("t1")
    body = (
        Elementwise("t0", a * b + 1, (3, 4), dt, "(3,1) * (4,)"),
        Elementwise("t1", s0 * c + t0 - a, (3, 4), dt, "0-d * (3,4) + ..."),
        Elementwise("t2", s0**2 + 1, (), dt, "0-d only"),
        Elementwise("t3", S("t2") * S("v3") + t1 * S("v4"), (2, 3, 4), dt, "(1,4), (3,4) and (2,1,1)"),
        Elementwise("t4", S("v3") * 2, (1, 4), dt, "keeps the size-1 dim"),
        Elementwise("t5", sp.Float(2.5), (3, 4), dt, "a constant fill"),
    )
    params = (P("v0", 0, (3, 1), dt), P("v1", 1, (4,), dt), P("v2", 2, (3, 4), dt),
              P("v3", 3, (1, 4), dt), P("v4", 4, (2, 1, 1), dt), P("s0", 0, (), dt, "s"))
    return Kernel("bcast", params, body, ("t0", "t1", "t2", "t3", "t4", "t5"), groups=("v", "s"))


def k_reduce(dt: str) -> Kernel:
    x = S("v0")
    sh = (3, 4, 5)
    body = (
        Elementwise("t0", x**2 + sp.sin(x), sh, dt, "f(x)"),
        Reduce("t1", "sum", "t0", (0, 1, 2), False, (), dt, "full sum"),
        Reduce("t2", "sum", "t0", (1,), True, (3, 1, 5), dt, "middle axis, keepdims"),
        Reduce("t3", "mean", "t0", (0, 2), False, (4,), dt, "mean over 0 and 2"),
        Reduce("t4", "sum", "t0", (2,), False, (3, 4), dt, "last axis"),
        Reduce("t5", "mean", "t0", (1, 2), True, (3, 1, 1), dt, "mean of the rows, keepdims"),
        Reduce("t6", "mean", "v0", (0, 1, 2), False, (), dt, "mean of a param"),
        Elementwise("t7", S("t1") + S("t6"), (), dt, "two full reductions"),
        Reduce("t8", "sum", "t0", (0,), True, (1, 4, 5), dt, "first axis"),
    )
    return Kernel("red", (P("v0", 0, sh, dt),), body, ("t1", "t2", "t3", "t4", "t5", "t7", "t8"))


def k_softmax(dt: str) -> Kernel:
    x = S("v0")
    body = (
        Elementwise("t0", sp.exp(x), (4, 6), dt, "exp"),
        Reduce("t1", "sum", "t0", (1,), True, (4, 1), dt, "row sums"),
        Elementwise("t2", S("t0") / S("t1"), (4, 6), dt, "softmax"),
        Reduce("t3", "mean", "t2", (0, 1), False, (), dt, "mean of softmax"),
        Elementwise("t4", S("t2") - S("t3") + x, (4, 6), dt, "centred"),
        Reduce("t5", "sum", "t4", (0,), False, (6,), dt, "column sums"),
        Elementwise("t6", S("t5") * 2, (6,), dt, "scaled columns"),
    )
    return Kernel("softmax", (P("v0", 0, (4, 6), dt),), body, ("t2", "t4", "t6"))


def k_piecewise(dt: str) -> Kernel:
    x, y = S("v0"), S("v1")
    pw = sp.Piecewise((x, x > 0.5), (-y, sp.Eq(x, 0) | (y >= 0.25)), (0, True))
    body = (
        Elementwise("t0", pw, (10,), dt, "three branches"),
        Elementwise("t1", sp.Max(x, 0) + sp.Min(y, 0.5) + sp.Abs(x - y) + sp.sign(y), (10,), dt, "max/min/abs"),
        Elementwise("t2", sp.Max(sp.Min(x, 0.5), -0.5) * sp.Piecewise((1, (x >= -0.5) & (x <= 0.5)), (0, True)),
                    (10,), dt, "clamp and its gradient"),
        Elementwise("t3", sp.Piecewise((x, x > y), (y, True)) + S("t0"), (10,), dt, "where"),
    )
    return Kernel("pw", (P("v0", 0, (10,), dt), P("v1", 1, (10,), dt)), body, ("t0", "t1", "t2", "t3"))


def k_shapes(dt: str) -> Kernel:
    x, z = S("v0"), S("v1")
    body = (
        Transpose("t0", "v0", (2, 0, 1), (4, 2, 3), dt, "permute a param"),
        Elementwise("t1", S("t0") * z + 1, (4, 2, 3), dt, "use it"),
        Reshape("t2", "v0", (6, 4), dt, "merge dims"),
        Reduce("t3", "sum", "t2", (0,), False, (4,), dt, "sum the merged rows"),
        Reshape("t4", "v0", (2, 1, 3, 4), dt, "unsqueeze (a view)"),
        Elementwise("t5", sp.cos(S("t4")), (2, 1, 3, 4), dt, "through the view"),
        Elementwise("t6", x * 3, (2, 3, 4), dt, "computed"),
        Transpose("t7", "t6", (1, 0, 2), (3, 2, 4), dt, "transpose a computed value"),
        Elementwise("t8", S("t7") + sp.Symbol("t7", real=True) ** 2, (3, 2, 4), dt, "reads it transposed"),
        Reshape("t9", "t1", (24,), dt, "flatten a computed value"),
        Elementwise("t10", S("t9") - 1, (24,), dt, "after the reshape"),
        Broadcast("t11", "t3", (2, 4), dt, "broadcast a reduction"),
        Reshape("t12", "t4", (2, 3, 4), dt, "squeeze back"),
    )
    return Kernel("shapes", (P("v0", 0, (2, 3, 4), dt), P("v1", 1, (4, 2, 3), dt)), body,
                  ("t0", "t1", "t3", "t5", "t8", "t10", "t11", "t12"))


def k_index(dt: str) -> Kernel:
    x = S("v0")
    n = 8
    arr = ("a", (0, 2, 2, 5), (4,))
    body = (
        Index("t0", "v0", (("s", 1, None, None),), (n - 1,), dt, "x[1:]"),
        Index("t1", "v0", (("s", None, -1, None),), (n - 1,), dt, "x[:-1]"),
        Elementwise("t2", S("t0") - S("t1") ** 2, (n - 1,), dt, "x[1:] - x[:-1]**2"),
        Index("t3", "v0", (("s", None, None, 2),), (4,), dt, "x[::2]"),
        Index("t4", "v0", (("s", -3, None, None),), (3,), dt, "x[-3:]"),
        Index("t5", "v0", (("n",), ("s", 2, 5, None)), (1, 3), dt, "x[None, 2:5]"),
        Index("t6", "v0", (arr,), (4,), dt, "x[[0, 2, 2, 5]]"),
        Index("t7", "v1", (("s", None, None, None), ("a", (1, 0), (2,))), (3, 2), dt, "m[:, [1, 0]]"),
        Index("t8", "v1", (("i", 1), ("e",)), (4,), dt, "m[1, ...]"),
        Index("t9", "v1", (("s", 1, 3, None), ("s", None, None, 3)), (2, 2), dt, "m[1:3, ::3]"),
        Elementwise("t10", S("t9") * 2, (2, 2), dt, "use m[1:3, ::3]"),
        Elementwise("t11", S("t6") * S("t3"), (4,), dt, "gather * stride"),
        IndexAdd("t12", "t2", (("s", 1, None, None),), (n,), dt, "scatter into x[1:]"),
        IndexAdd("t13", "t2", (("s", None, -1, None),), (n,), dt, "scatter into x[:-1]"),
        Elementwise("t14", S("t12") + S("t13") * x, (n,), dt, "sum of the scatters"),
        IndexAdd("t15", "t11", (arr,), (n,), dt, "scatter with repeats"),
        IndexAdd("t16", "t8", (("i", 1), ("e",)), (3, 4), dt, "scatter into a row"),
        IndexAdd("t17", "t9", (("s", 1, 3, None), ("s", None, None, 3)), (3, 4), dt, "scatter into a strided block"),
        IndexAdd("t18", "t7", (("s", None, None, None), ("a", (1, 0), (2,))), (3, 4), dt, "scatter columns"),
        Index("t19", "v1", (("a", (2, 0), (2,)), ("s", None, None, None), ), (2, 4), dt, "m[[2, 0]]"),
        Index("t20", "v1", (("a", (2, 0), (2,)), ("a", (3, 1), (2,))), (2,), dt, "m[[2, 0], [3, 1]]"),
        Index("t21", "v0", (("i", 3),), (), dt, "x[3]"),
        Elementwise("t22", S("t21") * S("t20"), (2,), dt, "x[3] * m[[2, 0], [3, 1]]"),
    )
    params = (P("v0", 0, (n,), dt), P("v1", 1, (3, 4), dt))
    return Kernel("idx", params, body, ("t2", "t3", "t4", "t5", "t10", "t11", "t14", "t15", "t16", "t17", "t18",
                                        "t19", "t22", "t21"))


HAND = {"chain": k_chain, "broadcast": k_broadcast, "reduce": k_reduce, "softmax": k_softmax,
        "piecewise": k_piecewise, "shapes": k_shapes, "index": k_index}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", sorted(HAND))
def test_hand_built(case, dt):
    kernel = HAND[case](dt)
    args = _inputs(kernel, positive=case == "chain")
    check(kernel, args)


def test_bool_and_integer_statements():
    """Comparisons give bool arrays, integer sums accumulate in int64, mixed dtypes convert."""
    v0, v1, v2 = S("v0"), S("v1"), S("v2")
    body = (
        Elementwise("t0", sp.StrictGreaterThan(v0, v1), (5,), "bool", "x > y"),
        Reduce("t1", "sum", "t0", (0,), False, (), "int64", "count"),
        Elementwise("t2", v2 * 3 + 1, (5,), "int64", "int arithmetic"),
        Reduce("t3", "sum", "t2", (0,), True, (1,), "int64", "int sum, keepdims"),
        Elementwise("t4", v0 * S("t2"), (5,), "float64", "mixed"),
        Elementwise("t5", S("t1") + v0, (5,), "float64", "count + x"),
        Elementwise("t6", v0, (5,), "float32", "to float32"),
    )
    kernel = Kernel("ints", (P("v0", 0, (5,), "float64"), P("v1", 1, (5,), "float64"), P("v2", 2, (5,), "int64")),
                    body, ("t0", "t1", "t3", "t4", "t5", "t6"))
    rng = np.random.default_rng(5)
    check(kernel, [rng.random(5), rng.random(5), np.arange(5)])


# =========================================================================== the real pipeline

def value_and_grad_kernel(f, *arrays, name: str = "vg") -> Kernel:
    """``lower`` of [f(x...), d f/d x...] over the forward graph: params are the arrays, then the
    constants the graph holds (in the order ``graph_constants`` returns them), then a 0-d seed."""
    return _value_and_grad(f, *arrays, name=name)[0]


def _value_and_grad(f, *arrays, name: str = "vg") -> tuple[Kernel, list]:
    ts = [sg.tensor(a, requires_grad=True) for a in arrays]
    out = f(*ts)
    root = out._node
    consts = [n for n in toposort([root]) if n.op is _src.const]
    seed = Node(_src.const, (), (), root.shape, root.dtype, name="seed")
    grads, _ = backward_graph([root], [seed], [t._node for t in ts])
    outs = simplify_graph([root] + grads)
    params = [(t._node, "v", i) for i, t in enumerate(ts)]
    params += [(c, "v", len(ts) + i) for i, c in enumerate(consts)] + [(seed, "s", 0)]
    kernel, _ = lower(name, params, outs, doc="value and gradient", groups=("v", "s"))
    values = {len(ts) + i: c.value for i, c in enumerate(consts)}
    return kernel, [values[p.index] for p in kernel.params if p.group == "v" and p.index in values]


def w1(x):
    return (3 * (x + 2) ** 2).mean()


def w2(x, y):
    return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum()


def rosen(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def gates(x, y):
    return (sg.relu(x) * sg.abs(y) + sg.clamp(x, -0.5, 0.5) * y + sg.where(x > y, x, y ** 2)).sum()


def rows(x, b):
    e = sg.exp(x * b)
    return (e / e.sum(1, keepdim=True)).mean(0).sum() + (x.t() * 2).sum()


PIPE = {
    "w1": (w1, [(11,)]),
    "w2": (w2, [(11,), (11,)]),
    "rosenbrock": (rosen, [(9,)]),
    "gates": (gates, [(12,), (12,)]),
    "rows": (rows, [(3, 5), (5,)]),
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", sorted(PIPE))
def test_pipeline_value_and_grad(case, dt):
    f, shapes = PIPE[case]
    rng = np.random.default_rng(1)
    arrays = [rng.uniform(-1.5, 1.5, size=s).astype(dt) for s in shapes]
    kernel, consts = _value_and_grad(f, *arrays)
    args = [*arrays, *consts, np.asarray(1.0, dtype=dt)]
    got = check(kernel, args)
    # and the value against eager symgrad
    want = f(*[sg.tensor(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got[0], want, rtol=RTOL[dt] * 10)


def test_pipeline_eager_backward_program():
    """The gradient program eager ``backward()`` lowers (every recorded node a param in list ``v``),
    emitted with numba instead of numpy: the same gradients as ``.grad``."""
    rng = np.random.default_rng(2)
    x = sg.tensor(rng.random((3, 4)), requires_grad=True)
    y = sg.tensor(rng.random(4), requires_grad=True)
    out = (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).mean(0).sum()
    out.backward(retain_graph=True)
    order = toposort([out._node], stop=lambda n: not n.requires_grad)
    seed = Node(_src.const, (), (), (), out._node.dtype, name="seed0")
    grads, _ = backward_graph([out._node], [seed], [x._node, y._node])
    params = [(n, "v", i) for i, n in enumerate(order)] + [(seed, "s", 0)]
    kernel, _ = lower("backward", params, simplify_graph(grads), doc="gradient of the recorded graph",
                      groups=("v", "s"))
    args = [order[p.index].value if p.group == "v" else np.asarray(1.0) for p in kernel.params]
    gx, gy = check(kernel, args)
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gy, y.grad.numpy(), rtol=1e-12)


# =========================================================================== fusion and text

def _passes(src: str) -> int:
    return sum(1 for line in src.splitlines() if line.strip().startswith("# pass over"))


def test_value_and_grad_is_one_pass():
    for f, shapes in (PIPE["w1"], PIPE["w2"]):
        kernel = value_and_grad_kernel(f, *[np.ones(s) for s in shapes])
        src = emit_numba(kernel)
        assert _passes(src) == 1, src
        # only outputs are arrays: no temporaries for the elementwise intermediates
        allocs = [line for line in src.splitlines() if "numpy.empty(" in line or "numpy.zeros(" in line]
        assert len(allocs) == len(shapes), allocs
        assert "prange" not in src and "fastmath" not in src
        assert "_radd(" in src


def test_softmax_pass_structure():
    src = emit_numba(k_softmax("float64"))
    # exp, the row sum and the division share the row loop (the division in a second inner loop
    # once the row sum completes); the centring needs the full mean: a second pass; the column sums
    # complete after it: a third (over the columns)
    assert _passes(src) == 3, src
    assert "t1_arr" not in src and "t1 = acc" in src
    row_pass = src.split("# pass over")[1]
    assert row_pass.count("for i1 in range(n1)") == 2 and "/t1)" in row_pass


def test_float32_stays_float32():
    src = emit_numba(k_chain("float32"))
    assert "numpy.float32(3)" in src and "numpy.float64" not in src
    check(k_chain("float32"))                   # compiles the float32 signature (whatever ran before this test)
    _, f_nb, _ = _compiled(k_chain("float32"))
    sig = f_nb.signatures[0]
    ir = f_nb.inspect_llvm(sig)
    assert "fmul double" not in ir and "fadd double" not in ir


def _all_hand_sources() -> str:
    return "".join(emit_numba(make(dt)) for _, make in sorted(HAND.items()) for dt in DTYPES)


def test_deterministic_text():
    kernel = value_and_grad_kernel(w2, np.ones(5), np.ones(5))
    assert emit_numba(kernel) == emit_numba(kernel)
    here = _all_hand_sources()
    assert here == _all_hand_sources()
    # another process, another string hash seed: the same bytes
    code = (f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests' / 'codegen')!r}]; "
            "import test_numba_emit as t; sys.stdout.write(t._all_hand_sources())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == here


def test_prange_for_large_sizes():
    big = value_and_grad_kernel(w2, np.ones(1 << 17), np.ones(1 << 17))
    src = emit_numba(big)
    assert "numba.prange(" in src and "parallel=True" in src
    assert "prange" not in emit_numba(big, parallel_threshold=1 << 18)
    # array accumulators over the outer dim (sum over axis 0) sum per-chunk partial arrays in parallel
    red = emit_numba(k_reduce("float64"), parallel_threshold=1)
    assert "prange" in red and "_part = numpy.zeros((nchunks" in red
    check(k_reduce("float64"), parallel_threshold=1)
    assert "prange" in emit_numba(k_softmax("float64"), parallel_threshold=1)


def test_parallel_kernels_compute_the_same():
    """prange code (threshold 1): a 1-d full reduction (W1) and row loops with a full mean (softmax)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, size=(1000,))
    kernel = value_and_grad_kernel(w1, x)
    check(kernel, [x, np.asarray(1.0)], parallel_threshold=1)
    soft = k_softmax("float64")
    check(soft, parallel_threshold=1)
    for k in (kernel, soft):
        assert "numba.prange(" in _compiled(k, parallel_threshold=1)[2]


def test_parallel_kernels_same_on_any_thread_count():
    """Float sums of prange passes (the general emitter's and the stencil's) add their chunk partials in chunk
    order: the same bits on one thread as on all (codegen.threads may run a kernel on one)."""
    import numba

    rng = np.random.default_rng(5)
    x = rng.uniform(-1.5, 1.5, size=(100_000,))
    seed = np.asarray(1.0)
    for kernel in (value_and_grad_kernel(w1, x), value_and_grad_kernel(rosen, x)):
        _, f_nb, src = _compiled(kernel, parallel_threshold=1)
        assert "numba.prange(" in src and "_chunks[" in src
        args = _args(kernel, [x], seed)
        full = numba.get_num_threads()
        many = f_nb(*args)
        numba.set_num_threads(1)
        try:
            one = f_nb(*args)
        finally:
            numba.set_num_threads(full)
        assert many[0] == one[0] and all(np.array_equal(a, b) for a, b in zip(many[1:], one[1:]))


def test_other_sizes_reuse_the_source():
    kernel = value_and_grad_kernel(w2, np.ones(5), np.ones(5))
    _, f_nb, _ = _compiled(kernel)
    rng = np.random.default_rng(4)
    for n in (1, 3, 40):
        x, y = rng.random(n), rng.random(n)
        v, gx, gy = f_nb(x, y, 1.0)
        np.testing.assert_allclose(v, np.sum(np.sin(x) * np.exp(-y**2) + np.log1p(x**2) * np.tanh(y)), rtol=1e-12)
        np.testing.assert_allclose(gx, np.cos(x) * np.exp(-y**2) + 2 * x / (1 + x**2) * np.tanh(y), rtol=1e-12)
        np.testing.assert_allclose(gy, -2 * y * np.sin(x) * np.exp(-y**2) + np.log1p(x**2) * (1 - np.tanh(y)**2),
                                   rtol=1e-12)
    with pytest.raises(ValueError, match="does not match"):
        f_nb(np.ones(3), np.ones(4), 1.0)


def test_zero_size_and_nan():
    kernel = value_and_grad_kernel(w1, np.ones(4))
    _, f_nb, _ = _compiled(kernel)
    v, g = f_nb(np.ones(0), np.asarray(1.0))
    assert np.isnan(v) and g.shape == (0,)
    _, f_nb, _ = _compiled(k_chain("float64"))
    t0, t2 = f_nb(np.zeros(9), np.zeros(9))           # 1/t0**2 at 0: inf, not ZeroDivisionError
    assert np.all(np.isinf(t2) | np.isnan(t2))


@pytest.mark.parametrize("kw", [{}, {"vector_threshold": 1, "parallel_threshold": 1}])
def test_on_disk_cache(kw):
    """Imported from its real file, the kernel is cached by numba: another process loads it (also a
    vectorised parallel kernel, whose chunks run in a module-level function)."""
    kernel = value_and_grad_kernel(w2, np.ones(4), np.ones(4))
    _, f_nb, src = _compiled(kernel, **kw)
    assert ("_vm_" in src) == ("_chunk0(" in src) == bool(kw)
    f_nb(np.ones(4), np.ones(4), np.asarray(1.0))
    assert list(cg_cache.cache_dir().glob("__pycache__/test_nb_*.nbi")), "numba wrote no index"
    code = (f"import sys, numpy as np; sys.path.insert(0, {str(ROOT)!r}); from codegen.cache import load_kernel; "
            "src = sys.stdin.read(); f, _ = load_kernel(src, 'vg', prefix='test_nb'); "
            "f(np.ones(3), np.ones(3), np.asarray(1.0)); "
            "print('STATS', sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()))")
    out = subprocess.run([sys.executable, "-c", code], input=src, capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ), timeout=120)
    assert out.returncode == 0, out.stderr
    hits, misses = out.stdout.split("STATS")[1].split()
    assert int(hits) == 1 and int(misses) == 0, out.stdout


# =========================================================================== stencils and matmul (issue 4)

def tv(x, y):
    """Shifts both ways, a second param one shorter than the first, a mean and a 0-d result."""
    return ((x[1:] - y) ** 2).sum() + (x[2:] * sg.sin(x[:-2])).mean() + (x[:-1] * y).sum() * 0.5


def _args(kernel: Kernel, values: list, seed) -> list:
    """The arguments of ``kernel``'s params (those it reads, in its order) from list ``v`` and the seed."""
    return [seed if p.group == "s" else values[p.index] for p in kernel.params]


def _torch_value_and_grads(f_torch, arrays):
    import torch

    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    v = f_torch(*ts)
    return v.item(), [g.numpy() for g in torch.autograd.grad(v, ts)]


def _rosen_torch(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _tv_torch(x, y):
    import torch

    return ((x[1:] - y) ** 2).sum() + (x[2:] * torch.sin(x[:-2])).mean() + (x[:-1] * y).sum() * 0.5


STENCILS = {"rosenbrock": (rosen, _rosen_torch, lambda n: [(n,)]), "tv": (tv, _tv_torch, lambda n: [(n,), (n - 1,)])}


@pytest.mark.parametrize("case", sorted(STENCILS))
def test_stencil_one_pass(case):
    """Slices and their scatter adjoints: one pass over x, gathers instead of zeroed scatter buffers."""
    f, _, shapes = STENCILS[case]
    kernel = value_and_grad_kernel(f, *[np.ones(s) for s in shapes(9)])
    src = emit_numba(kernel)
    assert "1-d stencil" in src and "numpy.zeros" not in src and "+=" not in src.split("def ")[-1], src
    assert src.count("# pass ") == 1, src
    assert emit_numba(kernel) == src


@pytest.mark.parametrize(("threshold", "dt"), [(1 << 17, "float64"), (1 << 17, "float32"), (1, "float64")])
@pytest.mark.parametrize("case", sorted(STENCILS))
def test_stencil_values_and_grads(case, threshold, dt):
    """Numba stencil kernels equal the numpy kernel of the same IR, eager symgrad and torch, at tiny,
    odd and larger sizes (the kernel built at one size runs at all of them)."""
    f, f_torch, shapes = STENCILS[case]
    rng = np.random.default_rng(7)
    rtol = 1e-10 if dt == "float64" else 2e-5
    sources = set()
    for n in (3, 4, 5, 10, 257):
        arrays = [rng.uniform(-1.5, 1.5, size=s).astype(dt) for s in shapes(n)]
        kernel = value_and_grad_kernel(f, *arrays)
        got = check(kernel, _args(kernel, arrays, np.asarray(1.0, dtype=dt)), parallel_threshold=threshold)
        src = _compiled(kernel, parallel_threshold=threshold)[2]
        if n >= 5:                    # (a slice of one element: the general emitter takes it)
            assert "1-d stencil" in src and ("prange" in src) == (threshold == 1)
            sources.add(src)
        ts = [sg.tensor(a, requires_grad=True) for a in arrays]
        out = f(*ts)
        out.backward()
        np.testing.assert_allclose(got[0], out.item(), rtol=rtol)
        v, grads = _torch_value_and_grads(f_torch, [a.astype(np.float64) for a in arrays])
        np.testing.assert_allclose(got[0], v, rtol=rtol, atol=rtol)
        for g, t, gt in zip(got[1:], ts, grads):
            assert g.dtype == np.dtype(dt) and g.shape == t.shape
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=rtol, atol=rtol)
            np.testing.assert_allclose(g, gt, rtol=rtol, atol=rtol * np.abs(gt).max())
    assert len(sources) == 1          # one source for every size: numba compiles it once


def test_stencil_edge_sizes():
    """Sizes where a slice is empty or one element long: guarded edges, clamped reads."""
    kernel = value_and_grad_kernel(rosen, np.ones(9))
    _, f_nb, _ = _compiled(kernel)
    for n in (0, 1, 2):
        x = np.linspace(-1.0, 1.2, n)
        v, g = f_nb(*_args(kernel, [x], np.asarray(1.0)))
        xt = sg.tensor(x, requires_grad=True)
        out = rosen(xt)
        out.backward()
        np.testing.assert_allclose(v, out.item(), rtol=1e-12)
        np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="does not match"):
        kernel = value_and_grad_kernel(tv, np.ones(9), np.ones(8))
        _compiled(kernel)[1](*_args(kernel, [np.ones(9), np.ones(9)], np.asarray(1.0)))


def logistic(w, X, y):
    return sg.log1p(sg.exp(-y * (X @ w))).mean()


def matmuls(a, B, C):
    """Every 1-d/2-d form: matrix-vector both ways, vector-matrix, matrix-matrix, transposes, dot."""
    v = B @ a                       # (p,)
    u = a @ B.T                     # (p,) through a transposed right operand
    m = B.T @ C                     # (q, r) through a transposed left operand
    k = (B @ m).sum(0)              # (r,)
    return (sg.tanh(v) * u).sum() + (m ** 2).mean() + k @ k + (B.T @ v).sum() + a @ a


def _matmuls_torch(a, B, C):
    import torch

    v = B @ a
    u = a @ B.T
    m = B.T @ C
    k = (B @ m).sum(0)
    return (torch.tanh(v) * u).sum() + (m ** 2).mean() + k @ k + (B.T @ v).sum() + a @ a


def _logistic_torch(w, X, y):
    import torch

    return torch.log1p(torch.exp(-y * (X @ w))).mean()


MATMULS = {"logistic": (logistic, _logistic_torch, lambda p, q: [(q,), (p, q), (p,)], 3),
           "matmuls": (matmuls, _matmuls_torch, lambda p, q: [(q,), (p, q), (p, 3)], 3)}


@pytest.mark.parametrize(("threshold", "dt"), [(1 << 17, "float64"), (1 << 17, "float32"), (1, "float64")])
@pytest.mark.parametrize("case", sorted(MATMULS))
def test_matmul_fused(case, threshold, dt):
    """Matmul as fused loops (no BLAS call, no numpy fallback): values and gradients equal the numpy
    kernel, eager symgrad and torch; X.T @ r sums into an array over the row loop (per-chunk partial
    arrays under prange)."""
    f, f_torch, shapes, n_grads = MATMULS[case]
    rng = np.random.default_rng(11)
    kernels: dict = {}
    rtol = 1e-10 if dt == "float64" else 1e-4
    # the parallel variant compiles for seconds per source: one size-1 case fewer there
    sizes = ((3, 2), (40, 13)) if threshold == 1 else ((1, 1), (3, 2), (7, 5), (40, 13))
    for p, q in sizes:
        arrays = [rng.uniform(-1.0, 1.0, size=s).astype(dt) for s in shapes(p, q)]
        if case == "logistic":
            arrays[2] = np.where(arrays[2] < 0, -1.0, 1.0).astype(dt)
        kernel, consts = _value_and_grad(f, *arrays)
        args = _args(kernel, [*arrays, *consts], np.asarray(1.0, dtype=dt))
        if dt == "float64":
            got = check(kernel, args, parallel_threshold=threshold)
        else:   # float32 sums in another order than BLAS: compared with float64 torch below
            got = _compiled(kernel, parallel_threshold=threshold)[1](*args)
            assert all(np.asarray(g).dtype == np.float32 for g in got[1:])
        src = _compiled(kernel, parallel_threshold=threshold)[2]
        assert "numpy.dot" not in src and "matmul" in src
        if p > 1:
            assert ("prange" in src) == (threshold == 1)
            kernels[src] = kernels.get(src, 0) + 1
        ts = [sg.tensor(a, requires_grad=True) for a in arrays]
        out = f(*ts)
        out.backward()
        np.testing.assert_allclose(got[0], out.item(), rtol=rtol)
        v, grads = _torch_value_and_grads(f_torch, [a.astype(np.float64) for a in arrays])
        np.testing.assert_allclose(got[0], v, rtol=rtol)
        for g, t, gt in zip(got[1:], ts, grads):
            scale = max(np.abs(gt).max(), 1)
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=rtol, atol=rtol * scale)
            np.testing.assert_allclose(g, gt, rtol=rtol, atol=rtol * scale)
        assert len(got) == 1 + n_grads
    assert list(kernels.values()) == [sum(p > 1 for p, _ in sizes)]  # one source for the sizes without size-1 dims


def test_logistic_one_row_pass():
    """W5's kernel: X @ w, the loss and X.T @ r in one pass over the rows of X."""
    kernel = value_and_grad_kernel(logistic, np.ones(5), np.ones((7, 5)), np.ones(7))
    src = emit_numba(kernel)
    row_pass = [b for b in src.split("# pass over") if "v1[i0, i1]" in b]
    assert len(row_pass) == 1 and row_pass[0].count("v1[i0, i1]") == 2, src


def test_batched_matmul_is_not_emitted():
    """IR the numba emitter does not take raises NotImplementedError (the numpy kernel stays)."""
    a, b = np.ones((2, 3, 4)), np.ones((2, 4, 5))
    kernel = value_and_grad_kernel(lambda x, y: (x @ y).sum(), a, b)
    with pytest.raises(NotImplementedError):
        emit_numba(kernel)


# ==================================================================== vectorised transcendentals (codegen.numba.vmath)

def _w2_torch(x, y):
    import torch

    return (torch.sin(x) * torch.exp(-y**2) + torch.log1p(x**2) * torch.tanh(y)).sum()


def nested(x, y):
    """Transcendentals of transcendentals, a log, a mean, and sin and cos of one argument."""
    return (sg.exp(sg.sin(x)) * sg.cos(x) + sg.log(1 + y**2) * sg.tanh(x * y) - sg.sin(y) ** 2).mean()


def _nested_torch(x, y):
    import torch

    return (torch.exp(torch.sin(x)) * torch.cos(x) + torch.log(1 + y**2) * torch.tanh(x * y)
            - torch.sin(y) ** 2).mean()


VECTOR = {"w2": (w2, _w2_torch), "nested": (nested, _nested_torch)}


def _check_vs_torch(case: str, arrays: list, got: tuple, rtol: float) -> None:
    f, f_torch = VECTOR[case]
    v, grads = _torch_value_and_grads(f_torch, [a.astype(np.float64) for a in arrays])
    np.testing.assert_allclose(got[0], v, rtol=rtol, atol=rtol)
    for g, gt, a in zip(got[1:], grads, arrays):
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_allclose(g, gt, rtol=rtol, atol=rtol * max(1.0, np.abs(gt).max()))


@pytest.mark.parametrize(("sizes", "kw", "dt", "vector"), [
    ((1, 2, 3, 5, 17, 1000), {"vector_threshold": 1}, "float64", True),      # tiny and odd sizes
    ((40_001,), {}, "float64", True),                                        # the default rule, serial
    (((1 << 17) + 3,), {}, "float64", True),                                  # prange chunks
    ((5, 40_001), {"vector_threshold": 1}, "float32", True),                 # float64 helpers, rounded
])
@pytest.mark.parametrize("case", sorted(VECTOR))
def test_vector_math_values_and_grads(case, sizes, kw, dt, vector):
    """Kernels whose transcendentals are computed by ``codegen.numba.vmath``: values and gradients equal
    torch (float64 rtol 1e-10, float32 2e-5) and the kernel of the same IR with numpy's scalar
    functions; float32 outputs stay float32."""
    f = VECTOR[case][0]
    rng = np.random.default_rng(3)
    rtol = 1e-10 if dt == "float64" else 2e-5
    for n in sizes:
        arrays = [rng.uniform(-3, 3, n).astype(dt), rng.uniform(-3, 3, n).astype(dt)]
        kernel, consts = _value_and_grad(f, *arrays)
        args = _args(kernel, [*arrays, *consts], np.asarray(1.0, dtype=dt))
        _, f_nb, src = _compiled(kernel, **kw)
        # (a size-1 dim has no loop: one element is computed before any pass, with libm)
        assert ("_vm_" in src) == (vector and n > 1) and ("prange" in src) == (n > 1 << 17), src
        got = f_nb(*args)
        _check_vs_torch(case, arrays, got, rtol)
        if dt == "float64":
            libm = _compiled(kernel, vector_threshold=None)[1](*args)
            for g, w in zip(got, libm):
                np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("n", [1000, (1 << 17) + 3])
def test_vector_math_reruns_chunks_out_of_its_domain(n):
    """Arguments outside a helper's domain (huge, infinite, NaN) make their chunk run again with
    numpy's functions: the results are libm's there (NaN where libm gives NaN), vmath's elsewhere."""
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-3, 3, n), rng.uniform(-3, 3, n)
    x[3], y[n // 2], x[-2] = 1e7, 800.0, -6e5         # sin/cos, exp(-y**2), sin/cos: libm's range
    kernel = value_and_grad_kernel(w2, x, y)
    _, f_nb, src = _compiled(kernel, vector_threshold=1)
    assert "if vchk != vchk:" in src and ("prange" in src) == (n > 1 << 17)
    seed = np.asarray(1.0)
    _check_vs_torch("w2", [x, y], f_nb(x, y, seed), 1e-10)
    x[n // 3], y[7] = np.nan, np.inf
    got = f_nb(x, y, seed)
    want = _compiled(kernel, vector_threshold=None)[1](x, y, seed)
    assert np.isnan(got[0]) and np.isnan(want[0])
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


def test_vector_math_rule():
    """vmath only in flat float64 passes of at least ``vector_threshold`` iterations whose other work
    vectorises; the libm loop stays as the fallback; the text is deterministic."""
    big, small = np.ones(40_001), np.ones(1000)
    src = emit_numba(value_and_grad_kernel(w2, big, big))
    assert src.count("_vm_bits(") > 5 and "numpy.sin(" in src and "numpy.tanh(" in src
    assert src == emit_numba(value_and_grad_kernel(w2, big, big))
    assert "_vm_" not in emit_numba(value_and_grad_kernel(w2, small, small))
    assert "_vm_" in emit_numba(value_and_grad_kernel(w2, small, small), vector_threshold=1000)
    assert "_vm_" not in emit_numba(value_and_grad_kernel(w2, big, big), vector_threshold=None)
    f32 = big.astype(np.float32)
    assert "= numpy.float32(m0_r" in emit_numba(value_and_grad_kernel(w2, f32, f32))
    # another libm call in the pass (a non-integer power): the loop would not vectorise anyway
    assert "_vm_" not in emit_numba(value_and_grad_kernel(lambda x: (sg.sin(x) * sg.abs(x) ** 1.5).sum(), big))
    # a transcendental in a where branch would also run where the branch is not taken
    assert "_vm_" not in emit_numba(value_and_grad_kernel(lambda x: sg.where(x > 0, sg.log(x), x).sum(), big))
    assert "_vm_" in emit_numba(value_and_grad_kernel(lambda x: (sg.relu(x) * sg.tanh(x)).sum(), big))
    # no transcendental: nothing to do
    assert "_vm_" not in emit_numba(value_and_grad_kernel(w1, big))
    # rows of a matrix (inner loops): left alone
    assert "_vm_" not in emit_numba(value_and_grad_kernel(lambda x: sg.exp(x).sum(1).mean(), np.ones((300, 200))))


def test_vector_math_integer_and_float32_arguments():
    """A float64 statement's helpers take int64 arguments (converted, as numpy does) and give the numpy
    emission's results; a float32 argument of a float64 statement (numpy computes that call in
    float32) keeps the pass on libm, as does a float64 or int64 one of a float32 statement."""
    v0, v1 = S("v0"), S("v1")

    def kernel(dt1: str, dt: str = "float64") -> Kernel:
        body = (
            Elementwise("t0", sp.exp(v0 / 7) + sp.sin(v0) * log1p(v1 ** 2) + sp.tanh(v1), (50,), dt, "mixed"),
            Reduce("t1", "sum", "t0", (0,), False, (), dt, "sum"),
        )
        return Kernel("mixed", (P("v0", 0, (50,), "int64"), P("v1", 1, (50,), dt1)), body, ("t0", "t1"))
    rng = np.random.default_rng(8)
    assert "_vm_" in _compiled(kernel("float64"), vector_threshold=1)[2]
    check(kernel("float64"), [rng.integers(-600, 600, 50), rng.uniform(-3, 3, 50)], vector_threshold=1)
    assert "_vm_" not in emit_numba(kernel("float32"), vector_threshold=1)
    assert "_vm_" not in emit_numba(kernel("float64", "float32"), vector_threshold=1)
    # int64 in a float32 statement: numpy computes exp(v0 / 7) in float64
    assert "_vm_" not in emit_numba(kernel("float32", "float32"), vector_threshold=1)


def test_large_matrix_matrix_products_keep_blas():
    """A 2-d @ 2-d product with many multiply-adds stays on the numpy kernel (BLAS); values still
    equal torch. Matrix-vector products stay fused (W5)."""
    import torch

    f = sg.value_and_grad(lambda A, B: sg.tanh(A @ B).sum(), argnums=(0, 1))
    A = np.random.default_rng(0).normal(size=(64, 48))
    B = np.random.default_rng(1).normal(size=(48, 40))
    for _ in range(3):
        value, (ga, gb) = f(A, B)
    entry = next(iter(f._entries.values()))
    assert entry.jit is None and "matrix-matrix" in entry.jit_source
    At, Bt = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    out = torch.tanh(At @ Bt).sum()
    out.backward()
    np.testing.assert_allclose(value, out.item(), rtol=1e-10)
    np.testing.assert_allclose(ga, At.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb, Bt.grad.numpy(), rtol=1e-10)


def test_deep_chain_emits_without_inlining_blowup():
    """W6's chain reuses h twice per layer: inlined as one tree it doubles per layer. The 1-d stencil
    path must give up (bounded tree walk) and the general emitter keep temporaries."""
    import importlib

    from codegen.numba import emit_numba
    from codegen.numba.stencil import MAX_TREE, _too_big

    def chain(x):
        h = x
        for _ in range(40):
            h = sg.sin(h) * sg.cos(x) + h * 0.5
        return h.sum()

    compile_module = importlib.import_module("symgrad.kernels.program")
    backend, compile_module.BACKEND = compile_module.BACKEND, "numpy"
    try:
        vg = sg.value_and_grad(chain)
        vg(np.linspace(-1, 1, 50))
    finally:
        compile_module.BACKEND = backend
    (entry,) = vg._entries.values()
    src = emit_numba(entry.kernel)
    assert "def " in src and src.count("\n") < 5000
    x = sp.Symbol("x")
    e = x
    for _ in range(12):
        e = sp.sin(e) * e
    assert _too_big(e) and not _too_big(sp.sin(x) * x, MAX_TREE)
