"""``codegen.llvm`` and the LLVM tier (``symgrad.kernels.llvm_tier``): loop programs compiled by llvmlite on their
first call agree with the numpy kernels of the same IR (float64 to 1e-12; the numba kernel gives the same bits:
both compile the lines of ``codegen.numba.scalar``); programs outside the backend's class keep numba's path; the
calling convention is ``emit_numba``'s."""
from __future__ import annotations

import io
import math
import sys

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from codegen import ir
from codegen.llvm import compile_kernel, emit_llvm
from symgrad.kernels import llvm_tier, stats
from symgrad.kernels import program as _program

H = 0.01


def rhs(s, p):
    x, y, z = s[0], s[1], s[2]
    return sg.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def rk4(s, p):
    k1 = rhs(s, p)
    k2 = rhs(s + H / 2 * k1, p)
    k3 = rhs(s + H / 2 * k2, p)
    k4 = rhs(s + H * k3, p)
    return s + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def lorenz(p, s0):
    return (sg.fori_loop(0, 60, lambda i, s: rk4(s, p), s0) ** 2).sum()


def scan_xs(a, xs):
    def f(c, x):
        c = c * a + sg.sin(x)
        return c, (c ** 2).sum()
    c, ys = sg.scan(f, sg.zeros(3, dtype=sg.float64), xs)
    return ys.sum() + c.sum()


def scan_reverse(a, xs):
    def f(c, x):
        c = sg.tanh(c * a + x)
        return c, c[0] * c[1]
    c, ys = sg.scan(f, sg.ones(2, dtype=sg.float64), xs, reverse=True)
    return (ys * sg.arange(xs.shape[0], dtype=sg.float64)).sum() + c.sum()


def where_body(a, x0):
    return (sg.fori_loop(0, 25, lambda i, s: sg.where(s > 0.5, s * a, s + 0.3 * sg.exp(-s)), x0) ** 2).sum()


def counter(a, x0):
    def body(i, c):
        x, acc = c
        x = sg.sin(x * a + i.double() * 0.1)
        return x, acc + (x * x).sum() * (i + 1)
    x, acc = sg.fori_loop(2, 12, body, (x0, sg.zeros((), dtype=sg.float64)))
    return acc + x.sum()


def nested(a, x0):
    def outer(i, s):
        return sg.fori_loop(0, 4, lambda j, t: t + 0.1 * sg.sin(t * a), s) * 0.9
    return (sg.fori_loop(0, 5, outer, x0) ** 2).sum()


def functions(a, x0):
    # the math the scalar lines print: libm and intrinsics, selects, max/min, powers, abs, comparisons
    def body(i, s):
        u = sg.log1p(sg.abs(s)) + sg.atan2(s, a + 2.0) + sg.expm1(0.1 * s) + sg.sqrt(s * s + 1.0) ** 3
        v = sg.maximum(s, a * 0.5) - sg.minimum(s, -a) + sg.cosh(0.2 * s) + sg.erf(s) + sg.sigmoid(s)
        w = sg.clamp(s, -0.8, 0.9) + sg.where((s > 0) & (s < 1.5), s ** 2, 1.0 / (1.0 + s * s))
        return 0.3 * sg.tanh(u + v + w) + 0.6 * s
    return (sg.fori_loop(0, 8, body, x0) ** 2).sum()


def lorenz32(p, s0):
    return (sg.fori_loop(0, 30, lambda i, s: rk4(s, p), s0) ** 2).sum()


def big_carry(a, x0):
    return (sg.fori_loop(0, 200, lambda i, s: sg.tanh(s * a + 0.1), x0) ** 2).sum()


_rng = np.random.default_rng(3)
PROGRAMS = {
    "lorenz": (lorenz, [np.array([10.0, 28.0, 8 / 3]), np.ones(3)]),
    "scan_xs": (scan_xs, [np.array(0.8), _rng.normal(size=(30, 3))]),
    "reverse": (scan_reverse, [np.array([0.7, -0.4]), _rng.normal(size=(20, 2))]),
    "where": (where_body, [np.array(0.9), np.array([0.1, 0.5, 1.2, -0.4])]),
    "counter": (counter, [np.array(0.7), np.array([0.2, -0.3, 0.5])]),
    "nested": (nested, [np.array(0.7), np.array([0.3, 0.9])]),
    "functions": (functions, [np.array(0.6), np.array([-1.3, -0.2, 0.4, 1.1, 2.5])]),
}


def _flat(r) -> np.ndarray:
    if isinstance(r, (tuple, list)):
        return np.concatenate([_flat(x) for x in r])
    return np.atleast_1d(np.asarray(r, dtype=np.float64)).ravel()


def _numpy_tier(make, args):
    """The numpy kernel's result for the same program (the numba backend off: no program becomes hot)."""
    _program.set_backend("numpy")
    try:
        return make()(*args)
    finally:
        _program.set_backend("numba")


def _llvm_calls(make, args, calls=2):
    before = sg.jit_stats()
    f = make()
    outs = [f(*args) for _ in range(calls)]
    after = sg.jit_stats()
    return outs, f, after.llvm_compiles - before.llvm_compiles, after.numba_compiles - before.numba_compiles


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_value_and_grad_equals_numpy_tier(name):
    fn, args = PROGRAMS[name]
    make = lambda: sg.value_and_grad(fn, argnums=(0, 1))  # noqa: E731
    want = _flat(_numpy_tier(make, args))
    outs, f, compiled, numba = _llvm_calls(make, args)
    assert compiled == 1 and numba == 0                      # the first call compiled it; numba never ran
    for got in outs:
        np.testing.assert_allclose(_flat(got), want, rtol=1e-12, atol=1e-300)
    e = next(iter(f._entries.values()))
    assert e.prog.compiled() is e.prog.jit and "define i32" in e.prog.jit_source


@pytest.mark.parametrize("name", ["reverse", "counter"])
def test_hessian_and_jvp_through_loops(name):
    fn, args = PROGRAMS[name]
    want = _numpy_tier(lambda: sg.hessian(fn), args)
    outs, _, compiled, numba = _llvm_calls(lambda: sg.hessian(fn), args)
    assert compiled >= 1 and numba == 0
    np.testing.assert_allclose(outs[-1], want, rtol=1e-12, atol=1e-300)
    tangents = tuple(np.ones_like(a) for a in args)
    before = sg.jit_stats().llvm_compiles
    got = [sg.jvp(fn, tuple(args), tangents) for _ in range(2)]
    assert sg.jit_stats().llvm_compiles > before
    want = _numpy_tier(lambda: (lambda *a: sg.jvp(fn, a, tangents)), args)
    for g in got:
        np.testing.assert_allclose(_flat(g), _flat(want), rtol=1e-12, atol=1e-300)


def test_float32_loop_rounds_in_float32():
    p, s0 = np.array([10.0, 28.0, 8 / 3], dtype=np.float32), np.ones(3, dtype=np.float32)
    make = lambda: sg.value_and_grad(lorenz32, argnums=(0, 1))  # noqa: E731
    want = _numpy_tier(make, [p, s0])
    outs, _, compiled, _ = _llvm_calls(make, [p, s0])
    v, (gp, gs) = outs[-1]
    assert compiled == 1 and gp.dtype == np.float32 and gs.dtype == np.float32
    np.testing.assert_allclose(_flat(outs[-1]), _flat(want), rtol=2e-5)
    f64 = sg.value_and_grad(lorenz32, argnums=(0, 1))(p.astype(np.float64), s0.astype(np.float64))
    assert not np.array_equal(_flat(outs[-1]), _flat(f64))     # float32 arithmetic, not float64 rounded at the end


def test_while_loop_forward():
    def fwd(a, x0):
        body = lambda c: (c[0] * a + sg.sin(c[0]), c[1] + 1.0)  # noqa: E731
        s, k = sg.while_loop(lambda c: c[1] < 7.0, body, (x0, sg.zeros((), dtype=sg.float64)))
        return (s ** 2).sum() + k
    args = [np.array(0.9), np.array([0.2, 0.4])]
    want = _numpy_tier(lambda: sg.compile(fwd), args)
    outs, _, compiled, _ = _llvm_calls(lambda: sg.compile(fwd), args)
    assert compiled == 1
    np.testing.assert_allclose(outs[-1], want, rtol=1e-12)


def test_refused_program_keeps_numba_tier_timing():
    # a 20-element carry is outside the class: the early try (200 steps) is refused, the first call runs the numpy
    # kernel, numba's tier starts at the call it always did (HOT_CALLS)
    args = [np.array(0.9), np.linspace(-1, 1, 20)]
    f = sg.value_and_grad(big_carry, argnums=(0, 1))
    before = sg.jit_stats()
    got = f(*args)
    after = sg.jit_stats()
    assert after.llvm_refused == before.llvm_refused + 1 and after.llvm_compiles == before.llvm_compiles
    e = next(iter(f._entries.values()))
    assert e.prog.hot_after == _program.HOT_CALLS and e.prog.compiled() is None
    want = _numpy_tier(lambda: sg.value_and_grad(big_carry, argnums=(0, 1)), args)
    np.testing.assert_allclose(_flat(got), _flat(want), rtol=1e-12)
    with pytest.raises(ir.Unsupported, match="large carry"):
        emit_llvm(e.prog.kernel)


def test_off_switch_and_programs_without_loops(monkeypatch):
    monkeypatch.setattr(llvm_tier, "ENABLED", False)
    f = sg.value_and_grad(lorenz, argnums=(0,))
    f(*PROGRAMS["lorenz"][1])
    e = next(iter(f._entries.values()))
    assert e.prog.hot_after == _program.HOT_CALLS and e.prog.compiled() is None
    monkeypatch.setattr(llvm_tier, "ENABLED", True)
    g = sg.value_and_grad(lambda x: (x * x).sum())
    g(np.ones(3))
    e = next(iter(g._entries.values()))
    assert e.prog.hot_after == _program.HOT_CALLS          # no loop: numba's tiering, untouched
    assert llvm_tier.take(e.prog, e.prog._tier(())) is False and e.prog.compiled() is None


def test_compile_log_and_stats():
    stats.set_log_compiles(True)
    buf = io.StringIO()
    old, sys.stderr = sys.stderr, buf
    try:
        f = sg.value_and_grad(where_body, argnums=(0, 1))
        f(*PROGRAMS["where"][1])
        f(*PROGRAMS["where"][1])
    finally:
        sys.stderr = old
        stats.set_log_compiles(False)
    text = buf.getvalue()
    assert "symgrad: llvm value_and_grad of where_body" in text and "LLVM" in text
    assert "numpy -> llvm kernel after 2 calls" in text     # 25 steps: the numpy kernel first (EARLY_STEPS)
    s = sg.jit_stats()
    assert s.llvm_compiles >= 1 and s.seconds["llvm"] > 0


def test_out_arguments_take_the_llvm_kernel():
    p, s0 = PROGRAMS["lorenz"][1]
    f = sg.value_and_grad(lorenz)
    v0, g0 = f(p, s0)
    buf = np.empty(3)
    before = sg.jit_stats().llvm_compiles
    v1, g1 = f(p, s0, out=buf)
    assert g1 is buf and sg.jit_stats().llvm_compiles == before + 1     # the out= variant, compiled by LLVM
    np.testing.assert_array_equal(buf, g0)
    assert v1 == v0


# ---------------------------------------------------------------------------- the calling convention, by hand
def _kernel():
    body = ir.Kernel("step", (ir.Param("carry0", 0, (2,), "float64", "carry"), ir.Param("const0", 0, (), "float64",
                                                                                       "const")),
                     (ir.Elementwise("t0", sp.Symbol("carry0", real=True) * sp.Symbol("const0", real=True) + 1.0, (2,),
                                     "float64"),), ("t0", "carry0"), groups=("carry", "row", "step", "const"))
    stmts = (
        ir.Scan("t1", body, "v0", None, ("v1",), 5, False, 0, 2, 2, (12,), "float64"),
        ir.Reduce("t2", "sum", "t1", (0,), False, (), "float64"),
        ir.Elementwise("t3", sp.Symbol("t2", real=True) > 3.0, (), "bool"),
        ir.Index("t4", "t1", (("s", 2, None, None),), (10,), "float64"),
        ir.Size("t5", "t1", (0,), (), "int64"),
    )
    return ir.Kernel("k", (ir.Param("v0", 0, (2,), "float64"), ir.Param("v1", 1, (), "float64")), stmts,
                     ("t2", "t3", "t4", "v0", "t5", "2.5"))


def test_calling_convention_by_hand():
    run = compile_kernel(_kernel())
    x0 = np.array([1.0, -2.0])
    t2, t3, t4, v0, t5, lit = run(x0, 0.5)
    c, hist = x0.copy(), []
    for _ in range(5):
        hist.append(c.copy())
        c = c * 0.5 + 1.0
    want4 = np.concatenate(hist)
    assert type(t2) is float and math.isclose(t2, c.sum() + sum(h.sum() for h in hist), rel_tol=1e-15)
    assert type(t3) is bool and t3 == (t2 > 3.0)
    assert type(t5) is int and t5 == 12 and lit == 2.5 and v0 is x0
    np.testing.assert_array_equal(t4, want4)
    assert t4.flags.c_contiguous and t4.flags.writeable and t4.base is None
    strided = np.array([1.0, 9.0, -2.0, 9.0])[::2]                 # not contiguous: retried with a copy
    np.testing.assert_array_equal(run(strided, 0.5)[2], want4)
    np.testing.assert_array_equal(run(np.array([1, -2]), np.float64(0.5))[2], want4)   # int64 array: converted
    np.testing.assert_array_equal(run(x0.astype(">f8"), 0.5)[2], want4)               # big-endian: converted
    with pytest.raises(TypeError, match="shape"):
        run(np.ones(3), 0.5)
    run_out = compile_kernel(_kernel(), out_params=(2,))
    buf = np.zeros(10)
    r = run_out(x0, 0.5, buf)
    assert r[2] is buf
    np.testing.assert_array_equal(buf, want4)


def test_unsupported_forms_are_refused():
    k = _kernel()
    big = ir.Kernel("k", (ir.Param("v0", 0, (40,), "complex128"),), (), ("v0",))
    with pytest.raises(ir.Unsupported):
        emit_llvm(big)
    scan = k.body[0]
    wide = ir.Kernel("k", (ir.Param("v0", 0, (20,), "float64"), ir.Param("v1", 1, (), "float64")),
                     (ir.Scan("t1", scan.body, "v0", None, ("v1",), 5, False, 0, 20, 0, (20,), "float64"),), ("t1",))
    with pytest.raises(ir.Unsupported, match="large carry"):
        emit_llvm(wide)
    call = ir.Kernel("k", (ir.Param("v0", 0, (3, 3), "float64"),),
                     (ir.Call("t0", "inv", ("v0",), (), (3, 3), "float64"),), ("t0",))
    with pytest.raises(ir.Unsupported, match="Call"):      # a statement type the backend has no emission for
        emit_llvm(call)


def test_float_arguments_take_the_fast_path():
    def f(a, x):
        return sg.fori_loop(0, 200, lambda i, s: s + 0.01 * sg.sin(s * a), x) ** 2
    g = sg.value_and_grad(f, argnums=(0, 1))
    first = g(0.7, 0.3)                             # 200 steps: compiled on the first call
    assert g._fast is not None                      # the generated __call__ sends floats straight to the kernel
    v, (da, dx) = g(0.7, 0.3)
    assert (v, da, dx) == (first[0], *first[1]) and type(v) is float and type(da) is float
    want = _numpy_tier(lambda: sg.value_and_grad(f, argnums=(0, 1)), [0.7, 0.3])
    np.testing.assert_allclose(_flat((v, da, dx)), _flat(want), rtol=1e-12)


def test_short_loops_run_the_numpy_kernel_first():
    fn, args = PROGRAMS["where"]                    # 25 steps a loop, 50 with its adjoint: under EARLY_STEPS
    f = sg.value_and_grad(fn, argnums=(0, 1))
    f(*args)
    e = next(iter(f._entries.values()))
    assert llvm_tier.steps(e.prog.kernel) == 50 and e.prog.compiled() is None and e.prog.hot_after == 2
    f(*args)
    assert e.prog.compiled() is not None            # the hot call: LLVM, where numba's tier would start
    long = lambda a, x0: (sg.fori_loop(0, 70, lambda i, s: s * a, x0) ** 2).sum()  # noqa: E731
    g = sg.value_and_grad(long, argnums=(0, 1))
    g(*args)
    assert next(iter(g._entries.values())).prog.compiled() is not None     # 140 steps: on the first call


def test_threads_get_their_own_results():
    import threading

    def f(a, x):
        return (sg.fori_loop(0, 200, lambda i, s: s + 0.001 * sg.sin(s * a), x) ** 2).sum()
    g = sg.value_and_grad(f, argnums=(0,))
    xs = [np.full(3, 0.1 * (k + 1)) for k in range(4)]
    want = [g(np.array(0.7), x) for x in xs]
    bad: list = []

    def work(k: int) -> None:
        for _ in range(200):
            v, (da,) = g(np.array(0.7), xs[k])
            if v != want[k][0] or da != want[k][1][0]:
                bad.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad and next(iter(g._entries.values())).prog.compiled() is not None
