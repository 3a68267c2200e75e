"""The numpy emitter's plan (codegen/numpy/emit.py): folded one-element broadcasts, scalar-first products,
dtype-proved statements without casts, sums of IndexAdd regions, redefined targets, and chunked passes
giving the values of the unchunked code (broadcasting, 0-d, float32, NaN/inf)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from codegen import ir
from codegen.numpy import emit as emit_mod
from codegen.numpy.emit import emit_numpy
from symgrad.kernels import program

S = {n: sp.Symbol(n, real=True) for n in ("v0", "v1", "v2", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8")}


def run(kernel: ir.Kernel, *arrays: np.ndarray) -> tuple:
    ns: dict = {}
    exec(compile(emit_numpy(kernel), "<kernel>", "exec"), ns)
    with np.errstate(all="ignore"):
        return ns[kernel.name](list(arrays))


def code_lines(src: str) -> list[str]:
    return [ln.strip() for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#")]


@pytest.fixture
def chunked(monkeypatch):
    """Chunked passes from 64 elements on, 16 float64 (32 float32) elements per chunk."""
    monkeypatch.setattr(emit_mod, "CHUNKED_MIN", 64)
    monkeypatch.setattr(emit_mod, "CHUNK_BYTES", 128)


def special(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    flat = x.reshape(-1)
    flat[[1, 4, 7, 9]] = [np.nan, np.inf, -np.inf, -0.0]
    return x


# ---------------------------------------------------------------------------- folded broadcasts, products

def _w1_ir(n: int, dtype: str = "float64") -> ir.Kernel:
    """W1's value and gradient as lowering makes it: mean, its count, the seed's reshape and broadcast."""
    v0, t0, t4, t7 = S["v0"], S["t0"], S["t4"], S["t7"]
    body = (ir.Elementwise("t0", v0 + 2, (n,), dtype),
            ir.Elementwise("t2", t0 * t0 * 3, (n,), dtype),
            ir.Reduce("t3", "mean", "t2", (0,), False, (), dtype),
            ir.Size("t4", "t2", (0,), (), dtype),
            ir.Elementwise("t5", 1 / t4, (), dtype),
            ir.Reshape("t6", "t5", (1,), dtype),
            ir.Broadcast("t7", "t6", (n,), dtype),
            ir.Elementwise("t8", sp.Mul(2, sp.Mul(t7, 3, evaluate=False), t0, evaluate=False), (n,), dtype))
    return ir.Kernel("k", (ir.Param("v0", 0, (n,), dtype),), body, ("t3", "t8"))


def test_one_element_values_are_read_unbroadcast_and_scale_first():
    k = _w1_ir(10)
    src = emit_numpy(k)
    lines = code_lines(src)
    assert not any("broadcast_to" in ln or "reshape" in ln for ln in lines), src
    assert "t8 = (2*(t5*3))*t0" in lines, src        # the one-element factors first: one pass over t0
    assert "t4 = numpy.float64(10)" in lines and "t5 = (1.0/(t4))" in lines, src   # numpy scalars, a literal count
    assert "t3 = numpy.add.reduce(t2, axis=(0,), keepdims=False) / 10" in lines, src
    x = np.linspace(-2, 2, 10)
    value, grad = run(k, x)
    assert value == np.mean(3 * (x + 2) ** 2) and isinstance(grad, np.ndarray)
    np.testing.assert_allclose(grad, 6 * (x + 2) / 10, rtol=1e-15)


def test_a_broadcast_one_is_no_factor_and_stays_where_a_reduction_reads_it():
    """The seed's broadcast ones: no multiplication where an elementwise product reads them; the real
    broadcast where a sum (``sum_to``) reads them."""
    n, m = 4, 3
    v0, t2 = S["v0"], S["t2"]
    body = (ir.Reshape("t1", "numpy.asarray(1)", (1, 1), "float64"),
            ir.Broadcast("t2", "t1", (n, m), "float64"),
            ir.Elementwise("t3", sp.Mul(t2, sp.sin(v0), evaluate=False), (n, m), "float64"),
            ir.Reduce("t4", "sum", "t2", (0,), False, (m,), "float64"),
            ir.Elementwise("t5", sp.Mul(t2, v0, evaluate=False), (n, m), "float64"))
    k = ir.Kernel("k", (ir.Param("v0", 0, (n, m), "float64"),), body, ("t3", "t4", "t5"))
    lines = code_lines(emit_numpy(k))
    assert "t3 = numpy.sin(v0)" in lines and "t2 = numpy.broadcast_to(t1, (4, 3))" in lines, lines
    assert "t5 = numpy.array(v0, dtype=numpy.float64)" in lines, lines   # a result is never the argument
    x = np.arange(12.0).reshape(n, m)
    t3, t4, t5 = run(k, x)
    np.testing.assert_array_equal(t3, np.sin(x))
    np.testing.assert_array_equal(t4, np.full(m, n))
    assert t5 is not x and np.array_equal(t5, x)


def test_one_inside_a_function_is_not_substituted():
    """1 replaces a broadcast one only as a factor (``log(ones)`` keeps the array: SymPy would fold it)."""
    v0, t1 = S["v0"], S["t1"]
    body = (ir.Broadcast("t1", "numpy.asarray(1)", (3,), "float64"),
            ir.Elementwise("t2", v0 * sp.log(t1 - 1), (3,), "float64"))
    k = ir.Kernel("k", (ir.Param("v0", 0, (3,), "float64"),), body, ("t2",))
    (t2,) = run(k, np.array([1.0, -2.0, 0.0]))
    with np.errstate(all="ignore"):
        want = np.array([1.0, -2.0, 0.0]) * np.log(np.zeros(3))
    np.testing.assert_array_equal(t2, want)


# ---------------------------------------------------------------------------- dtypes

def test_casts_and_mixed_dtypes_keep_their_conversion():
    """A statement whose dtype numpy's promotion does not give keeps ``numpy.asarray(..., dtype)``."""
    v0, v1 = S["v0"], S["v1"]
    body = (ir.Elementwise("t0", v0 * 0.5, (3,), "float32"),             # int32 * 0.5 is float64 in numpy
            ir.Elementwise("t1", v1 * 2 + 1, (3,), "float32"),           # float32 stays float32 by itself
            ir.Elementwise("t2", sp.Piecewise((v1, v1 > 0), (0.0, True)), (3,), "float32"))
    params = (ir.Param("v0", 0, (3,), "int32"), ir.Param("v1", 1, (3,), "float32"))
    k = ir.Kernel("k", params, body, ("t0", "t1", "t2"))
    lines = code_lines(emit_numpy(k))
    assert "t0 = numpy.asarray(0.5*v0, dtype=numpy.float32)" in lines, lines
    assert "t1 = 1 + 2*v1" in lines, lines
    assert any(ln.startswith("t2 = numpy.asarray(numpy.where(") for ln in lines), lines
    outs = run(k, np.array([1, 2, 3], np.int32), np.array([-1, 0, 2], np.float32))
    assert [o.dtype for o in outs] == [np.float32] * 3


def test_zero_d_values_are_scalars_only_where_elementwise_code_reads_them():
    v0, t0 = S["v0"], S["t0"]
    body = (ir.Reduce("t0", "sum", "v0", (0,), False, (), "float64"),
            ir.Elementwise("t1", t0 * 2, (), "float64"),                 # read by an index: an array
            ir.Elementwise("t2", t0 + 1, (), "float64"),                 # read by elementwise code only
            ir.Elementwise("t3", S["t2"] * v0, (4,), "float64"),
            ir.Index("t4", "t1", (("n",),), (1,), "float64"),
            ir.Concat("t5", ("t4", "t3"), 0, False, (5,), "float64"),
            ir.Elementwise("t6", t0 - 1, (), "float64"))                # a 0-d result: an array
    k = ir.Kernel("k", (ir.Param("v0", 0, (4,), "float64"),), body, ("t5", "t6"))
    lines = code_lines(emit_numpy(k))
    assert "t1 = numpy.asarray(2*t0, dtype=numpy.float64)" in lines, lines
    assert "t2 = 1 + t0" in lines, lines
    assert "t6 = numpy.asarray(-1 + t0, dtype=numpy.float64)" in lines, lines
    x = np.arange(4.0)
    t5, t6 = run(k, x)
    np.testing.assert_array_equal(t5, np.concatenate([[12.0], 7 * x]))
    assert isinstance(t6, np.ndarray) and t6.shape == () and t6 == 5


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_gradients_keep_the_dtype(dtype):
    """Every output of the generated code has the signature's dtype, float32 computed in float32."""
    def f(x, y):
        return (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum() + (x * y).mean()

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(50).astype(dtype), rng.standard_normal(50).astype(dtype)
    vg = sg.value_and_grad(f, argnums=(0, 1))
    vg(x, y)
    (e,) = vg._entries.values()
    outs = e.fn([x, y, *e.consts])
    assert all(np.asarray(o).dtype == dtype for o in outs)
    assert "float64" not in e.source or dtype == "float64"
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    gx = np.cos(x64) * np.exp(-y64**2) + 2 * x64 / (1 + x64**2) * np.tanh(y64) + y64 / 50
    np.testing.assert_allclose(outs[1], gx, rtol=1e-5 if dtype == "float32" else 1e-13, atol=1e-6)


# ---------------------------------------------------------------------------- sums of regions, redefinitions

def _stencil_ir(n: int, dtype: str = "float64") -> ir.Kernel:
    """The adjoint of ``x[1:]`` and ``x[:-1]``: two IndexAdd regions summed."""
    t0, t1, t2 = S["t0"], S["t1"], S["t2"]
    body = (ir.Index("t0", "v0", (("s", 1, None, None),), (n - 1,), dtype),
            ir.Index("t1", "v0", (("s", None, -1, None),), (n - 1,), dtype),
            ir.Elementwise("t2", t0 * t1 - t1, (n - 1,), dtype),
            ir.Elementwise("t3", sp.sin(t0) + 2 * t2, (n - 1,), dtype),
            ir.IndexAdd("t4", "t2", (("s", None, -1, None),), (n,), dtype),
            ir.IndexAdd("t5", "t3", (("s", 1, None, None),), (n,), dtype),
            ir.Elementwise("t6", S["t4"] + S["t5"], (n,), dtype),
            ir.Reduce("t7", "sum", "t3", (0,), False, (), dtype))
    return ir.Kernel("k", (ir.Param("v0", 0, (n,), dtype),), body, ("t6", "t7"))


def _stencil_ref(x: np.ndarray) -> tuple:
    a, b = x[1:], x[:-1]
    with np.errstate(all="ignore"):
        t2 = a * b - b
        t3 = np.sin(a) + 2 * t2
        g = np.zeros_like(x)
        g[:-1] += t2
        g[1:] += t3
    return g, t3.sum()


def test_a_sum_of_regions_is_one_buffer():
    src = emit_numpy(_stencil_ir(20))
    lines = code_lines(src)
    assert lines.count("t6 = numpy.zeros((20,), dtype=numpy.float64)") == 1 and "t4" not in src.split("#")[-1]
    assert "t6[:-1:,] = t2" in lines and "t6[1::,] += t3" in lines, src
    x = special(np.linspace(-1, 1, 20))
    g, s = run(_stencil_ir(20), x)
    g_ref, s_ref = _stencil_ref(x)
    np.testing.assert_array_equal(g, g_ref)
    np.testing.assert_array_equal(s, s_ref)


def test_redefined_targets_are_renamed():
    """``sum_to`` lowers to a keepdims sum and a reshape into the same target."""
    v0, v1 = S["v0"], S["v1"]
    body = (ir.Elementwise("t0", v0 * v1, (5, 3), "float64"),
            ir.Reduce("t1", "sum", "t0", (0,), True, (1, 3), "float64"),
            ir.Reshape("t1", "t1", (3,), "float64"),
            ir.Elementwise("t2", S["t1"] * 2, (3,), "float64"))
    params = (ir.Param("v0", 0, (5, 3), "float64"), ir.Param("v1", 1, (3,), "float64"))
    k = ir.Kernel("k", params, body, ("t1", "t2"))
    x, y = np.arange(15.0).reshape(5, 3), np.array([1.0, -1.0, 2.0])
    t1, t2 = run(k, x, y)
    np.testing.assert_array_equal(t1, (x * y).sum(0))
    np.testing.assert_array_equal(t2, 2 * (x * y).sum(0))


def test_a_vector_reshaped_to_one_column_is_multiplied_as_a_vector():
    """``X.T @ r`` of a VJP reaches the IR as reshape-to-(k, 1), matmul, reshape back: gemv, not a gemm."""
    body = (ir.Reshape("t0", "v1", (4, 1), "float64"),
            ir.MatMul("t1", "v0", "t0", (3, 1), "float64"),
            ir.Reshape("t2", "t1", (3,), "float64"),
            ir.Reshape("t3", "v2", (1, 3), "float64"),
            ir.MatMul("t4", "t3", "v0", (1, 4), "float64"),
            ir.Reshape("t5", "v1", (4, 1), "float64"),
            ir.MatMul("t6", "v0", "t5", (3, 1), "float64"))
    params = (ir.Param("v0", 0, (3, 4), "float64"), ir.Param("v1", 1, (4,), "float64"),
              ir.Param("v2", 2, (3,), "float64"))
    k = ir.Kernel("k", params, body, ("t2", "t4", "t5", "t6"))
    lines = code_lines(emit_numpy(k))
    assert "t1 = numpy.matmul(v0, v1)[:, None]" in lines and "t4 = numpy.matmul(v2, v0)[None, :]" in lines, lines
    assert "t6 = numpy.matmul(v0, t5)" in lines, lines        # its column is also a result: kept
    X, w, r = np.arange(12.0).reshape(3, 4), np.array([1.0, -2.0, 0.5, 3.0]), np.array([2.0, 1.0, -1.0])
    t2, t4, t5, t6 = run(k, X, w, r)
    np.testing.assert_allclose(t2, X @ w, rtol=1e-15)
    np.testing.assert_allclose(t4, (r @ X)[None, :], rtol=1e-15)
    assert t4.shape == (1, 4) and t5.shape == (4, 1) and t6.shape == (3, 1)


# ---------------------------------------------------------------------------- chunked passes

def _chain_ir(n: int, m: int, dtype: str) -> ir.Kernel:
    """Elementwise work over (n, m) reading a row (m,), a column (n, 1) and a 0-d value; a full sum and
    mean, a sum over rows (not chunkable: after the loop) and values read after the pass."""
    v0, v1, v2, t0, t1, t2, t3 = S["v0"], S["v1"], S["v2"], S["t0"], S["t1"], S["t2"], S["t3"]
    c = sp.Symbol("v3", real=True)
    body = (ir.Elementwise("t0", sp.sin(v0) * v1 + c, (n, m), dtype),
            ir.Elementwise("t1", sp.exp(-t0 * t0) - v2 / (1 + v0 * v0), (n, m), dtype),
            ir.Elementwise("t2", t1 * t0 + sp.Max(v0, 0), (n, m), dtype),
            ir.Reduce("t3", "sum", "t2", (0, 1), False, (), dtype),
            ir.Reduce("t4", "mean", "t1", (1, 0), True, (1, 1), dtype),
            ir.Reduce("t5", "sum", "t1", (1,), False, (n,), dtype),
            ir.Elementwise("t6", t2 * t3 + sp.tanh(t0), (n, m), dtype),    # reads the sum: a second pass
            ir.Elementwise("t7", t0 * 3, (n, m), dtype))
    params = (ir.Param("v0", 0, (n, m), dtype), ir.Param("v1", 1, (m,), dtype),
              ir.Param("v2", 2, (n, 1), dtype), ir.Param("v3", 3, (), dtype))
    return ir.Kernel("k", params, body, ("t2", "t3", "t4", "t5", "t6", "t7"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_chunked_pass_gives_the_unchunked_values(dtype, monkeypatch):
    n, m = 37, 5
    k = _chain_ir(n, m, dtype)
    rng = np.random.default_rng(1)
    args = [special(rng.standard_normal((n, m))).astype(dtype), rng.standard_normal(m).astype(dtype),
            rng.standard_normal((n, 1)).astype(dtype), np.asarray(0.25, dtype)]
    plain = run(k, *args)
    assert "for lo in" not in emit_numpy(k)
    monkeypatch.setattr(emit_mod, "CHUNKED_MIN", 64)
    monkeypatch.setattr(emit_mod, "CHUNK_BYTES", 8 * m * 4)       # 4 float64 rows (8 float32) per chunk
    src = emit_numpy(k)
    assert src.count("for lo in range(0, 37,") == 2, src          # t6 reads the full sum: a second pass
    chunked = run(k, *args)
    for name, a, b in zip(k.outputs, plain, chunked):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype == dtype and a.shape == b.shape, name
        if name in ("t3", "t4", "t6") and dtype == "float64":      # float64 sums: partial sums per chunk
            np.testing.assert_allclose(b, a, rtol=1e-13, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(b, a, err_msg=name)
    if dtype == "float32":   # float32 sums stay numpy's own, after the pass, over the full array
        assert "t3 = numpy.sum(t2, axis=(0, 1), keepdims=False)" in code_lines(src)


def test_chunked_regions_and_sums(chunked):
    n = 101
    src = emit_numpy(_stencil_ir(n))
    assert "for lo in range(0, 100, 16):" in src and "t6[1 + lo:1 + hi] += t3_c" in src, src
    rng = np.random.default_rng(2)
    x = special(rng.standard_normal(n))
    g, s = run(_stencil_ir(n), x)
    g_ref, s_ref = _stencil_ref(x)
    np.testing.assert_array_equal(g, g_ref)
    x = rng.standard_normal(n)
    g, s = run(_stencil_ir(n), x)
    g_ref, s_ref = _stencil_ref(x)
    np.testing.assert_allclose(g, g_ref, rtol=1e-15)
    np.testing.assert_allclose(s, s_ref, rtol=1e-13)


def test_chunked_w1_reads_the_count_before_the_pass(chunked):
    k = _w1_ir(100)
    src = emit_numpy(k)
    lines = code_lines(src)
    assert lines.index("t4 = numpy.float64(100)") < lines.index("for lo in range(0, 100, 16):"), src
    assert "t2" not in "".join(ln for ln in lines if "numpy.empty" in ln), src   # t2 only lives in chunks
    x = special(np.linspace(-3, 3, 100))
    value, grad = run(k, x)
    np.testing.assert_array_equal(grad, 6 * (1 / np.float64(100)) * (x + 2))
    assert np.isnan(value)
    x = np.linspace(-3, 3, 100)
    value, _ = run(k, x)
    assert value == pytest.approx(np.mean(3 * (x + 2) ** 2), rel=1e-14)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("c, joins", [(2, True), (-1, True), (sp.Rational(1, 4), True), (sp.Float(0.5), True),
                                      (3, False), (sp.Rational(1, 3), False), (sp.Float(0.1), False)])
def test_a_power_of_two_factor_joins_the_one_element_head(dtype, c, joins):
    """``(s*3)*(c*x)`` scales ``x`` once when ``c`` is ``±2**k`` (``(s*3*c)*x``, the same bits), twice otherwise."""
    n = 10
    v0, t4, t5 = S["v0"], S["t4"], S["t5"]
    body = (ir.Size("t4", "v0", (0,), (), dtype), ir.Elementwise("t5", 1 / t4, (), dtype),
            ir.Elementwise("t8", sp.Mul(sp.Mul(t5, 3, evaluate=False), sp.Mul(c, v0, evaluate=False),
                                        evaluate=False), (n,), dtype))
    k = ir.Kernel("k", (ir.Param("v0", 0, (n,), dtype),), body, ("t8",))
    line = next(ln for ln in code_lines(emit_numpy(k)) if ln.startswith("t8 = "))
    assert line.endswith(")*v0") == joins, line
    x = special(np.random.default_rng(3).standard_normal(n) * 1e30).astype(dtype)
    (got,) = run(k, x)
    s5 = np.asarray(1, dtype) / np.asarray(n, dtype)
    with np.errstate(all="ignore"):
        want = (s5 * 3) * (np.asarray(float(c), dtype) * x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


def test_ufunc_form_of_the_last_operation():
    form = emit_mod._ufunc_form
    assert form("(t5*3)*(2*t0)") == ("multiply", ["t5*3", "2*t0"])
    assert form("a - b/c") == ("subtract", ["a", "b/c"])
    assert form("-numpy.sin(x)") == ("negative", ["numpy.sin(x)"])
    assert form("numpy.arctan2(a, b + 1)") == ("arctan2", ["a", "b + 1"])
    for code in ("x**2", "numpy.where(a, b, c)", "numpy.asarray(x, dtype=numpy.float32)", "a < b", "x",
                 "numpy.sin(*a)"):
        assert form(code) is None, code


def test_chunked_values_kept_whole_are_computed_into_their_rows(chunked):
    """A value the pass keeps in a full array is written by its last ufunc (``out=``), not copied from a chunk;
    a value whose code ends in a cast keeps the copy. Same values as the unchunked code."""
    k = _w1_ir(100)
    lines = code_lines(emit_numpy(k))
    assert "t8_c = t8[lo:hi]" in lines and "numpy.multiply(2*(t5*3), t0_c, out=t8_c)" in lines, lines
    assert "t8[lo:hi] = t8_c" not in lines
    n = 100
    v0 = S["v0"]
    body = (ir.Elementwise("t0", v0 * 3, (n,), "float64"), ir.Elementwise("t1", v0 + 1, (n,), "float32"))
    k2 = ir.Kernel("k", (ir.Param("v0", 0, (n,), "float64"),), body, ("t0", "t1"))
    lines = code_lines(emit_numpy(k2))
    assert "numpy.multiply(3, v0_c, out=t0_c)" in lines and "t1[lo:hi] = t1_c" in lines, lines
    x = special(np.linspace(-3, 3, n))
    t0, t1 = run(k2, x)
    np.testing.assert_array_equal(t0, x * 3)
    assert t1.dtype == np.float32
    np.testing.assert_array_equal(t1, (x + 1).astype(np.float32))


# ---------------------------------------------------------------------------- the public API, numpy tier

@pytest.fixture
def numpy_tier():
    before = program.get_backend()
    program.set_backend("numpy")
    yield
    program.set_backend(before)


def _w3(x):
    a = x[:-1]
    return (100 * (x[1:] - a**2) ** 2 + (1 - a) ** 2).sum()


def _w5(w, X, y):
    return sg.log1p(sg.exp(-y * (X @ w))).mean()


@pytest.mark.parametrize("chunks", [False, True])
def test_first_tier_workloads_match_hand_written_numpy(chunks, numpy_tier, monkeypatch):
    """W1, W2, W3, W5 of the benchmarks through ``sg.value_and_grad`` on the numpy tier, chunked or not."""
    if chunks:
        monkeypatch.setattr(emit_mod, "CHUNKED_MIN", 64)
        monkeypatch.setattr(emit_mod, "CHUNK_BYTES", 256)
    rng = np.random.default_rng(3)
    n = 300
    x, y = rng.uniform(-1.5, 1.5, n), rng.standard_normal(n)
    v, g = sg.value_and_grad(lambda x: (3 * (x + 2) ** 2).mean())(x)
    assert v == pytest.approx(np.mean(3 * (x + 2) ** 2), rel=1e-14)
    np.testing.assert_allclose(g, 6.0 / n * (x + 2), rtol=1e-14)
    f2 = sg.value_and_grad(lambda x, y: (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum(),
                           argnums=(0, 1))
    v, (gx, gy) = f2(x, y)
    s, e, th = np.sin(x), np.exp(-y * y), np.tanh(y)
    assert v == pytest.approx(np.sum(s * e + np.log1p(x * x) * th), rel=1e-13)
    np.testing.assert_allclose(gx, np.cos(x) * e + 2 * x / (1 + x * x) * th, rtol=1e-13)
    np.testing.assert_allclose(gy, -2 * y * s * e + np.log1p(x * x) * (1 - th * th), rtol=1e-13, atol=1e-15)
    v, g = sg.value_and_grad(_w3)(x)
    a = x[:-1]
    d, o = x[1:] - a * a, 1.0 - a
    g_ref = np.zeros_like(x)
    g_ref[:-1] = -400.0 * a * d - 2.0 * o
    g_ref[1:] += 200.0 * d
    assert v == pytest.approx(np.sum(100.0 * d * d + o * o), rel=1e-13)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12)
    X, w, t = rng.standard_normal((40, 8)), 0.1 * rng.standard_normal(8), rng.choice([-1.0, 1.0], 40)
    v, g = sg.value_and_grad(_w5)(w, X, t)
    ez = np.exp(-t * (X @ w))
    assert v == pytest.approx(np.mean(np.log1p(ez)), rel=1e-14)
    np.testing.assert_allclose(g, ((-1.0 / 40) * t * ez / (1.0 + ez)) @ X, rtol=1e-12)
