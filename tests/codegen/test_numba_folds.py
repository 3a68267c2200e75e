"""``codegen.numba.folds``: max/min/prod folds, argmax/argmin, cumsum and cat/stack in numba kernels.

Hand-built IR is run through both emitters (numpy is the reference); real programs go through
``sg.value_and_grad`` twice (the second call runs the numba kernel) and are compared with torch.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch
from test_numba_emit import check

import symgrad as sg
from codegen import cache as cg_cache
from codegen import load_kernel
from codegen.ir import ArgReduce, Concat, CumSum, Elementwise, Kernel, Param, Reduce
from codegen.numba import emit_numba

DTYPES = ("float64", "float32")


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("symgrad-cache")))
        mp.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
        cg_cache.reset_cache_dir()
        yield
    cg_cache.reset_cache_dir()


def _reduced(shape: tuple, axes: tuple, keep: bool) -> tuple:
    return tuple(1 if d in axes else s for d, s in enumerate(shape) if keep or d not in axes)


def _special(shape: tuple, dtype: str, seed: int = 0) -> np.ndarray:
    """Values with ties, and (floats) a NaN, infinities and an all -inf line."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(-3, 3, size=shape) * 2) / 2
    if dtype.startswith("float") and x.size >= 4:
        flat = x.reshape(-1)
        flat[1], flat[-1] = np.inf, -np.inf
        if x.size >= 8:
            flat[5] = np.nan
        if x.ndim >= 2 and x.shape[0] > 1:
            x[-1, ...] = -np.inf
    return x.astype(dtype)


CASES = [((7,), "float64"), ((3, 1, 5), "float32"), ((2, 3, 4), "float64"), ((2, 3, 4), "int64")]


def k_folds(shape: tuple, dt: str) -> Kernel:
    body, outs = [], []
    x = sp.Symbol("v0", real=True)
    body.append(Elementwise("y", x * 1, shape, dt, "copy"))
    nd = len(shape)
    groups = [(d,) for d in range(nd)] + [tuple(range(nd))] + ([(0, nd - 1)] if nd > 2 else [])
    for kind in ("max", "min", "prod"):
        for axes in groups:
            for keep in (True, False):
                name = f"{kind}_{''.join(map(str, axes))}_{int(keep)}"
                src = "v0" if kind == "min" else "y"
                body.append(Reduce(name, kind, src, axes, keep, _reduced(shape, axes, keep), dt))
                outs.append(name)
    return Kernel("folds", (Param("v0", 0, shape, dt),), tuple(body), tuple(outs))


def k_args(shape: tuple, dt: str) -> Kernel:
    body, outs = [], []
    x = sp.Symbol("v0", real=True)
    body.append(Elementwise("y", x * 1, shape, dt, "copy"))
    for kind in ("argmax", "argmin"):
        for axis in [*range(len(shape)), None]:
            for keep in (True, False):
                out = _reduced(shape, tuple(range(len(shape))) if axis is None else (axis,), keep)
                name = f"{kind}_{axis}_{int(keep)}"
                body.append(ArgReduce(name, kind, "y" if keep else "v0", axis, keep, out, "int64"))
                outs.append(name)
    return Kernel("args", (Param("v0", 0, shape, dt),), tuple(body), tuple(outs))


def k_scan_join(shape: tuple, dt: str) -> Kernel:
    x, w = sp.Symbol("v0", real=True), sp.Symbol("v1", real=True)
    body = [Elementwise("y", x * w + 1, shape, dt, "computed")]
    outs = []
    for d in range(len(shape)):
        for rev in (False, True):
            name = f"cs_{d}_{int(rev)}"
            body.append(CumSum(name, "y" if rev else "v0", d, rev, shape, dt))
            outs.append(name)
        cat = tuple(s * 3 if k == d else s for k, s in enumerate(shape))
        body.append(Concat(f"cat_{d}", ("v0", "y", "v1"), d, False, cat, dt))
        stk = shape[:d] + (2,) + shape[d:]
        body.append(Concat(f"stack_{d}", ("y", "v0"), d, True, stk, dt))
        body.append(Elementwise(f"after_{d}", sp.Symbol(f"cat_{d}", real=True) * 2, cat, dt, "reads the join"))
        outs += [f"after_{d}", f"stack_{d}"]
    params = (Param("v0", 0, shape, dt), Param("v1", 1, shape, dt))
    return Kernel("scanjoin", params, tuple(body), tuple(outs))


@pytest.mark.parametrize(("shape", "dt", "threshold"),
                         [(s, d, 1 << 17) for s, d in CASES] + [((2, 3, 4), "float64", 1)])
def test_folds_and_args_match_numpy(shape, dt, threshold):
    for make in (k_folds, k_args):
        kernel = make(shape, dt)
        x = _special(shape, dt)
        check(kernel, [x], parallel_threshold=threshold)
        check(kernel, [np.abs(x) + 1 if dt != "int64" else x], parallel_threshold=threshold)


@pytest.mark.parametrize(("shape", "dt", "threshold"), [((7,), "float32", 1 << 17), ((2, 1, 3), "float64", 1)])
def test_scans_and_joins_match_numpy(shape, dt, threshold):
    kernel = k_scan_join(shape, dt)
    rng = np.random.default_rng(1)
    args = [_special(shape, dt), rng.uniform(-1, 1, size=shape).astype(dt)]
    check(kernel, args, parallel_threshold=threshold)


def test_integer_scans_and_empty_dims():
    x = sp.Symbol("v0", real=True)
    body = (CumSum("c", "v0", 1, False, (3, 4), "int64"), CumSum("r", "v0", 0, True, (3, 4), "int64"),
            Reduce("p", "prod", "v0", (1,), False, (3,), "int64"), Reduce("m", "max", "v0", (0,), False, (4,), "int32"))
    kernel = Kernel("ints", (Param("v0", 0, (3, 4), "int32"),), body, ("c", "r", "p", "m"))
    check(kernel, [np.arange(-5, 7, dtype=np.int32).reshape(3, 4)])
    # an empty reduced dim: max is -inf (softmax's initial), prod 1; an empty concatenated operand
    body = (Reduce("m", "max", "v0", (1,), True, (3, 1), "float64"),
            Reduce("p", "prod", "v0", (1,), False, (3,), "float64"),
            Elementwise("e", sp.exp(x - sp.Symbol("m", real=True)), (3, 0), "float64"),
            Concat("j", ("v0", "v1"), 1, False, (3, 2), "float64"))
    kernel = Kernel("empty", (Param("v0", 0, (3, 0), "float64"), Param("v1", 1, (3, 2), "float64")), body,
                    ("m", "p", "e", "j"))
    fn, _ = load_kernel(emit_numba(kernel), "empty", prefix="test_nb")
    m, p, e, j = fn(np.zeros((3, 0)), np.arange(6.0).reshape(3, 2))   # numpy's max refuses an empty dim
    assert np.all(m == -np.inf) and m.shape == (3, 1) and np.all(p == 1) and e.shape == (3, 0)
    np.testing.assert_array_equal(j, np.arange(6.0).reshape(3, 2))


def test_softmax_rows_fuse():
    """Row max, exp(x - max) and the row sum share one outer pass, the max a register (no temporaries)."""
    x = sp.Symbol("v0", real=True)
    m, e, s = (sp.Symbol(n, real=True) for n in ("m", "e", "s"))
    body = (Reduce("m", "max", "v0", (1,), True, (5, 1), "float64"),
            Elementwise("e", sp.exp(x - m), (5, 9), "float64"),
            Reduce("s", "sum", "e", (1,), True, (5, 1), "float64"),
            Elementwise("lse", sp.log(s) + m, (5, 1), "float64"))
    kernel = Kernel("lse", (Param("v0", 0, (5, 9), "float64"),), body, ("lse",))
    src = emit_numba(kernel)
    assert src.count("# pass over") == 1 and "numpy.empty(" in src and src.count("numpy.empty(") == 1
    assert " m_arr" not in src and " e_arr" not in src and "m = acc" in src
    assert "prange" in emit_numba(kernel, parallel_threshold=1)
    check(kernel, [_special((5, 9), "float64")], parallel_threshold=1)


# =========================================================================== through sg.compile, vs torch

def _torch(f, arrays, argnums):
    ts = [torch.tensor(a, requires_grad=i in argnums) for i, a in enumerate(arrays)]
    out = f(torch, *ts)
    grads = torch.autograd.grad(out, [ts[i] for i in argnums])
    return out.detach().numpy(), [g.numpy() for g in grads]


def _softmax(m, x, w):
    return (m.softmax(x, dim=1) * w).sum() + (m.softmax(x, dim=0) * w).sum()


def _log_softmax(m, x, w):
    return (m.log_softmax(x, dim=1) * w).sum() + (m.log_softmax(x, dim=0) * w).sum()


def _logsumexp(m, x, w):
    return (m.logsumexp(x, dim=1) * w[:, 0]).sum() + m.logsumexp(x, dim=0, keepdim=True).sum()


def _max_dim(m, x, w):
    v0, i0 = m.max(x, dim=1)
    v1, i1 = m.min(x * w, dim=0, keepdim=True)
    return (v0 * w[:, 1]).sum() + v1.sum() + (i0 * 1.0).sum() + (m.argmax(x, dim=0) * 1.0).sum()


def _amax(m, x, w):
    return (m.amax(x * w, dim=1) * w[:, 0]).sum() + m.amin(x, dim=0).sum() + x.max() * 2


def _prod(m, x, w):
    return (m.prod(x, dim=1) * w[:, 0]).sum() + m.prod(x * w, dim=0).sum()


def _cumsum(m, x, w):
    return (m.cumsum(x, dim=1) * w).sum() + (m.cumsum(x * x, dim=0) * w).sum()


def _cat(m, x, w):
    y = m.cat([x, x * w, w[:, :2]], dim=1)
    z = m.stack([x, w], dim=0)
    return (y ** 2).sum() + (z * z.sum(0, keepdim=True)).sum()


PROGRAMS = {f.__name__[1:]: f for f in (_softmax, _log_softmax, _logsumexp, _max_dim, _amax, _prod, _cumsum, _cat)}


def _numba_used(vg) -> str:
    (e,) = vg._entries.values()
    assert e.jit is not None, e.jit_source
    return e.jit_source


@pytest.mark.parametrize(("name", "shape", "dt"), [(n, (6, 7), "float64") for n in sorted(PROGRAMS)]
                         + [(n, (5, 3), "float32") for n in ("softmax", "cat")]
                         + [("logsumexp", (1, 3), "float64"), ("prod", (5, 1), "float32")])
def test_programs_value_and_grad_vs_torch(name, shape, dt):
    f = PROGRAMS[name]
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1.5, size=shape).astype(dt)
    if name != "prod":
        x = (x - 1).astype(dt)
    w = rng.uniform(-1, 1, size=shape).astype(dt)
    vg = sg.value_and_grad(lambda a, b: f(sg, a, b), argnums=(0, 1))
    v_np, g_np = vg(x, w)
    v_nb, g_nb = vg(x, w)
    _numba_used(vg)
    v_t, g_t = _torch(f, [x, w], (0, 1))
    rtol, atol = (1e-10, 1e-12) if dt == "float64" else (2e-5, 2e-5)
    np.testing.assert_allclose(v_nb, v_np, rtol=rtol, atol=atol)
    np.testing.assert_allclose(v_nb, v_t, rtol=rtol, atol=atol)
    for a, b, c in zip(g_nb, g_np, g_t):
        assert a.dtype == np.dtype(dt)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        np.testing.assert_allclose(a, c, rtol=rtol, atol=atol)


def test_softmax_nan_and_inf_rows_vs_torch():
    x = np.random.default_rng(3).standard_normal((4, 5))
    x[0, 2] = np.nan
    x[1, :] = -np.inf
    x[2, 3] = np.inf
    w = np.ones((4, 5))
    f = lambda m, a, b: (m.softmax(a, dim=1) * b).sum(1) + m.amax(a, dim=1)  # noqa: E731
    cf = sg.compile(lambda a, b: f(sg, a, b))
    want = f(torch, torch.tensor(x), torch.tensor(w)).numpy()
    for _ in range(2):
        np.testing.assert_array_equal(np.isnan(cf(x, w)), np.isnan(want))
        np.testing.assert_allclose(cf(x, w), want, rtol=1e-12)
    _numba_used(cf)


def test_parallel_rows_large():
    """> 2**17 elements: the row passes run under prange and agree with torch."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((700, 200)), rng.standard_normal((700, 200))
    for name in ("softmax", "max_dim"):           # max(dim)'s gradient holds a cumsum
        f = PROGRAMS[name]
        vg = sg.value_and_grad(lambda a, b, f=f: f(sg, a, b), argnums=(0, 1))
        vg(x, w)
        v, g = vg(x, w)
        src = _numba_used(vg)
        assert "prange" in src, name
        v_t, g_t = _torch(f, [x, w], (0, 1))
        np.testing.assert_allclose(v, v_t, rtol=1e-10)
        for a, b in zip(g, g_t):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
