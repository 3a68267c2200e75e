"""Compiled functions over Dask arrays (``symgrad/compiler/dask.py``): the chunked results equal the in-memory
compiled ones (float64, rtol 1e-10) on separable programs and on programs needing combine steps and later passes,
on irregular chunks and one chunk; programs that need rows across chunks raise ``DaskSplitError`` naming the op
and the line. Small arrays, the threaded scheduler; first calls run the numpy tier (one numba test)."""
from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import dask
import dask.array as da
import distributed
import numpy as np
import pytest

import symgrad as sg
import symgrad.nn.functional as F

N, D, K, H = 203, 4, 3, 5
CHUNKS = {"irregular": (60, 60, 60, 23), "one": (N,), "tiny": (100, 1, 102)}

_rng = np.random.default_rng(7)
DATA = {
    "X": _rng.standard_normal((N, D)),
    "y": _rng.random(N),
    "c": _rng.poisson(2.0, N).astype(float),
    "Y": np.eye(K)[_rng.integers(0, K, N)],
}
W = _rng.standard_normal(D) * 0.4
WK = _rng.standard_normal((D, K)) * 0.4
MLP = {"W1": _rng.standard_normal((D, H)) * 0.5, "b1": _rng.standard_normal(H), "W2": _rng.standard_normal(H),
       "b2": 0.25}


def chunked(name: str, chunks: tuple[int, ...]) -> da.Array:
    a = DATA[name]
    return da.from_array(a, chunks=(chunks,) + a.shape[1:])


def assert_close(got, want) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            assert_close(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, type(want)) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w)
    else:
        assert isinstance(got, (np.ndarray, np.floating)), type(got)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def lsq(w, X, y):
    return 0.5 * ((X @ w - y) ** 2).mean()


def logistic(w, X, y):
    z = X @ w
    return (sg.log1p(sg.exp(z)) - y * z).sum()


def logistic_f(w, X, y):
    return F.binary_cross_entropy_with_logits(X @ w, y)


def poisson(w, X, c):
    z = X @ w
    return (sg.exp(z) - c * z).mean()


def softmax_regression(W, X, Y):
    return -(Y * F.log_softmax(X @ W, dim=1)).sum(1).mean()


def mlp(p, X, y):
    hidden = sg.tanh(X @ p["W1"] + p["b1"])
    return F.mse_loss(hidden @ p["W2"] + p["b2"], y)


def lse_rows(w, X):
    return sg.logsumexp(X @ w, 0)


def variance(w, X):
    z = X @ w
    return sg.var(z) + sg.std(2 * z + 1)


def extremes(w, X):
    z = X @ w
    return z.max() - z.min() + sg.amax(X, 0) @ w


def centred(w, X):
    return (((X - X.mean(0)) @ w) ** 2).mean()


def columns(w, X):
    """Slices, gathers and joins of the other axes (and broadcasts of a row-wise column)."""
    picked = sg.cat([X[:, [0, 2]], X[..., 1:2], X.permute(1, 0)[[3], :].T], 1)
    return sg.exp(picked @ w * 0.5).mean() + (X[:, 0, None] * X[:, 1:] @ w[1:]).sum()


CORPUS = [  # (function, parameter, data names)
    (lsq, W, "Xy"), (logistic, W, "Xy"), (logistic_f, W, "Xy"), (poisson, W, "Xc"),
    (softmax_regression, WK, "XY"), (mlp, MLP, "Xy"),
    (lse_rows, W, "X"), (variance, W, "X"), (extremes, W, "X"), (centred, W, "X"), (columns, W, "X"),
]


@pytest.mark.parametrize("chunks", ["irregular", "one"])
@pytest.mark.parametrize("fn, param, names", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_value_and_grad_equal_in_memory(fn, param, names, chunks):
    f = sg.value_and_grad(fn)
    want = f(param, *[DATA[n] for n in names])
    got = f(param, *[chunked(n, CHUNKS[chunks]) for n in names])
    assert_close(got, want)


def test_passes_follow_the_reductions():
    """A separable loss is one pass over the chunks; a logsumexp over rows reads its value in a second pass,
    centring by a mean likewise; the maximum's mask and its count take three."""
    counts = {}
    for fn in (logistic, lse_rows, centred, extremes):
        f = sg.value_and_grad(fn)
        f(W, *[chunked(n, CHUNKS["irregular"]) for n in ("Xy" if fn is logistic else "X")])
        (plan,) = f._dask_plans.values()
        counts[fn.__name__] = len(plan.passes)
    assert counts == {"logistic": 1, "lse_rows": 2, "centred": 2, "extremes": 3}


def test_tiny_chunks_and_a_deeper_tree():
    f = sg.value_and_grad(lse_rows)
    want = f(W, DATA["X"])
    with sg.dask_options(split_every=2):
        got = f(W, chunked("X", CHUNKS["tiny"]))
    assert_close(got, want)


def test_rows_of_different_chunking_are_aligned():
    f = sg.grad(logistic)
    want = f(W, DATA["X"], DATA["y"])
    got = f(W, chunked("X", CHUNKS["irregular"]), da.from_array(DATA["y"], chunks=50))
    assert_close(got, want)


def test_row_wise_results_and_data_gradients():
    """Results with the row axis come back as numpy in row order (Dask arrays with compute=False); the
    gradient with respect to the data is one."""
    def fit(w, X):
        p = sg.sigmoid(X @ w)
        return (p ** 2).sum(), p

    f = sg.compile(fit)
    assert_close(f(W, chunked("X", CHUNKS["irregular"])), f(W, DATA["X"]))
    g = sg.grad(lsq, argnums=(0, 1, 2))
    assert_close(g(W, chunked("X", CHUNKS["irregular"]), chunked("y", CHUNKS["irregular"])),
                 g(W, DATA["X"], DATA["y"]))


def test_lazy_results_are_dask_arrays():
    f = sg.value_and_grad(mlp)
    want = f(MLP, DATA["X"], DATA["y"])
    with sg.dask_options(compute=False):
        value, grads = f(MLP, chunked("X", CHUNKS["irregular"]), chunked("y", CHUNKS["irregular"]))
    assert isinstance(value, da.Array) and value.shape == ()
    assert all(isinstance(g, da.Array) for g in grads.values())
    got = dask.compute(value, grads)
    assert_close((got[0][()], got[1]), want)


def test_hessian_jacobian_and_out():
    X, y = chunked("X", CHUNKS["irregular"]), chunked("y", CHUNKS["irregular"])
    h = sg.hessian(logistic_f)
    assert_close(h(W, X, y), h(W, DATA["X"], DATA["y"]))
    j = sg.jacobian(lambda w, X: sg.tanh(X @ w).sum() * w)
    assert_close(j(W, X), j(W, DATA["X"]))
    residuals = sg.jacobian(lambda w, b, X, y: sg.tanh(X @ w + b[0]) * b[1] - y, argnums=(0, 1))   # (rows, ...)
    b = np.array([0.3, -1.2])
    assert_close(residuals(W, b, X, y), residuals(W, b, DATA["X"], DATA["y"]))
    hs = sg.hessian(lambda w, X: (sg.tanh(X @ w[:2] * w[2]) ** 2).sum() + (w[1:] * w[:-1]).sum(), sparse=True)
    want, got = hs(W, DATA["X"][:, :2]), hs(W, da.from_array(DATA["X"][:, :2], chunks=(60, 2)))
    assert got.nnz == want.nnz and (got != 0).sum() <= got.nnz
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_allclose(got.data, want.data, rtol=1e-10)
    vg = sg.value_and_grad(logistic)
    buf = np.empty(D)
    value, g = vg(W, X, y, out=buf)
    assert g is buf
    assert_close((value, buf), vg(W, DATA["X"], DATA["y"]))


def test_float32_data():
    f = sg.value_and_grad(logistic)
    X32, y32 = DATA["X"].astype(np.float32), DATA["y"].astype(np.float32)
    want = f(W.astype(np.float32), X32, y32)
    got = f(W.astype(np.float32), da.from_array(X32, chunks=(60, D)), da.from_array(y32, chunks=60))
    assert got[1].dtype == np.float32
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


def test_numba_chunk_kernels_release_the_gil():
    """From the second call the chunk kernels are numba's, serial and nogil=True, with the same results."""
    f = sg.value_and_grad(poisson)
    X, c = chunked("X", CHUNKS["irregular"]), chunked("c", CHUNKS["irregular"])
    want = f(W, DATA["X"], DATA["c"])
    first = f(W, X, c)
    second = f(W, X, c)
    assert_close(first, want)
    assert_close(second, want)
    (plan,) = f._dask_plans.values()
    kernels = list(plan.passes[0].kernels.values())
    if sg.kernels.program.BACKEND == "numba":
        assert all(k.numba_source is not None and "nogil=True" in k.numba_source for k in kernels)
        assert all("prange" not in k.numba_source for k in kernels)


REFUSED = [  # (function, op named in the error, words of the reason)
    (lambda w, X: sg.cumsum(X @ w, 0).sum(), "cumsum", "running sum"),
    (lambda w, X: (X[1:] @ w).sum(), "index", "along the rows"),
    (lambda w, X: X.reshape(-1).sum() * w.sum(), "reshape", "merges the rows"),
    (lambda w, X: sg.softmax(X @ w, 0)[0].sum(), "softmax", "normalisation"),
    (lambda w, X: (X @ X.T).sum() * w.sum(), "matmul", "outer product"),
    (lambda w, X: (X @ w).max(0).values, "argmax", "position along the rows"),
]


@pytest.mark.parametrize("fn, op, why", REFUSED, ids=[r[1] for r in REFUSED])
def test_refused_programs_name_the_op_and_line(fn, op, why):
    line = inspect.getsourcelines(fn)[1]
    with pytest.raises(sg.DaskSplitError) as info:
        sg.grad(fn)(W, chunked("X", CHUNKS["irregular"]))
    msg = str(info.value)
    assert f"`{op}`" in msg and why in msg and "`X`" in msg
    assert f"test_dask.py:{line}:" in msg, msg


def test_data_errors():
    f = sg.grad(logistic)
    with pytest.raises(ValueError, match="different row counts"):
        f(W, chunked("X", CHUNKS["one"]), da.from_array(DATA["y"][:-1], chunks=50))
    with pytest.raises(TypeError, match="0-d Dask array"):
        f(W, chunked("X", CHUNKS["one"]), da.from_array(np.float64(1.0)))
    with pytest.raises(ValueError, match="split_every"):
        with sg.dask_options(split_every=1):
            pass


def test_local_cluster():
    f = sg.value_and_grad(softmax_regression)
    want = f(WK, DATA["X"], DATA["Y"])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cl, \
            distributed.Client(cl):
        got = f(WK, chunked("X", CHUNKS["irregular"]), chunked("Y", CHUNKS["irregular"]))
    assert_close(got, want)


def test_out_of_core_example_small(monkeypatch):
    """examples/dask_logistic.py's small form converges (the numpy tier: no numba compile in the suite)."""
    monkeypatch.setattr(sg.kernels.program, "BACKEND", "numpy")
    path = Path(__file__).resolve().parents[2] / "examples" / "dask_logistic.py"
    spec = importlib.util.spec_from_file_location("dask_logistic_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(rows=20_000, chunk=3_000, features=4, verbose=False)
    assert out["result"].success
    assert out["grad_norm"] < 1e-4
    assert np.abs(out["result"].x - out["truth"]).max() < 0.15
    X, y, _ = mod.synthetic(20_000, 4, 3_000)
    want = sg.value_and_grad(mod.objective)(out["result"].x, np.asarray(X), np.asarray(y))
    assert_close(sg.value_and_grad(mod.objective)(out["result"].x, X, y), want)
