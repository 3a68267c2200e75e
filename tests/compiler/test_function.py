"""@compile, grad, value_and_grad: values and gradients vs eager symgrad, numpy and torch."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

import symgrad as sg
from codegen import fastcall
from codegen.numba_cache import jit_stats
from symgrad.compiler.function import STATS


def w2(x, y):
    return (sg.sin(x) * sg.exp(-y ** 2) + sg.log1p(x ** 2) * sg.tanh(y)).sum()


def rosen(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


FUNCS = [
    (lambda x: (3 * (x + 2) ** 2).mean(), 1),
    (w2, 2),
    (rosen, 1),
    (lambda x, y: (sg.sigmoid(x) * y - sg.relu(y - x) + sg.abs(x) * sg.tanh(y)).sum(), 2),
    (lambda x, y: sg.where(x > y, x * y, sg.exp(x)).mean(), 2),
    (lambda x: (x.reshape(-1, 2).sum(1) ** 2).sum(), 1),
    (lambda x, y: ((x[:, None] - y[None, :]) ** 2).sum() / x.shape[0], 2),
]


def _eager_grads(f, arrays):
    ts = [sg.tensor(a, requires_grad=True) for a in arrays]
    out = f(*ts)
    out.backward()
    return out.item(), [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("f,nargs", FUNCS)
@pytest.mark.parametrize("n", [4, 10])
def test_value_and_grad_equals_eager(f, nargs, n):
    rng = np.random.default_rng(n)
    arrays = [rng.uniform(0.2, 1.5, size=n) for _ in range(nargs)]
    vg = sg.value_and_grad(f, argnums=tuple(range(nargs)))
    v, grads = vg(*arrays)
    ev, egrads = _eager_grads(f, arrays)
    np.testing.assert_allclose(v, ev, rtol=1e-10)
    for g, e in zip(grads, egrads):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(sg.compile(f)(*arrays), ev, rtol=1e-10)


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(50), rng.standard_normal(50)
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out = (torch.sin(xt) * torch.exp(-yt ** 2) + torch.log1p(xt ** 2) * torch.tanh(yt)).sum()
    out.backward()
    v, (gx, gy) = sg.value_and_grad(w2, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(v, out.item(), rtol=1e-10)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gy, yt.grad.numpy(), rtol=1e-10)


def test_one_trace_per_signature():
    f = sg.value_and_grad(lambda x: (x * x).sum())
    before = STATS["traces"]
    for _ in range(3):
        f(np.ones(5))
    assert STATS["traces"] == before + 1


def test_python_floats_in_floats_out():
    vg = sg.value_and_grad(lambda a, b: a * b + sg.sin(a), argnums=(0, 1))
    v, (ga, gb) = vg(1.0, 2.0)
    assert isinstance(v, float) and isinstance(ga, float)
    assert v == pytest.approx(2 + np.sin(1.0), rel=1e-12)
    assert ga == pytest.approx(2 + np.cos(1.0), rel=1e-12) and gb == pytest.approx(1.0)


def test_grad_of_grad():
    d2 = sg.grad(sg.grad(lambda a: a ** 3 + sg.sin(a)))
    assert d2(2.0) == pytest.approx(12 - np.sin(2.0), rel=1e-12)


def test_tensor_inputs_compose_with_backward():
    f = sg.compile(w2)
    x = sg.tensor(np.linspace(0, 1, 6), requires_grad=True)
    y = sg.tensor(np.linspace(-1, 1, 6), requires_grad=True)
    out = f(x, y) * 2
    out.backward()
    _, (gx, gy) = sg.value_and_grad(w2, argnums=(0, 1))(x.detach().numpy(), y.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), 2 * gx, rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), 2 * gy, rtol=1e-12)


def test_detach_no_grad_and_stop_gradient_are_constants():
    def f(x):
        with sg.no_grad():
            c = x * 3
        return (x * x.detach() + sg.stop_gradient(x) * x + c * x).sum()
    g = sg.grad(f)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [1 + 1 + 3, 2 + 2 + 6])


def test_data_dependent_control_flow_raises_with_line():
    def bad(x):
        if x.sum() > 0:
            return x.sum()
        return -x.sum()
    with pytest.raises(sg.TracingError, match=r"sg\.where") as e:
        sg.compile(bad)(np.ones(3))
    assert "if x.sum() > 0" in str(e.value)
    with pytest.raises(sg.TracingError, match="float"):
        sg.compile(lambda x: float(x.sum()))(np.ones(3))


def test_scalar_output_required():
    with pytest.raises(TypeError, match="scalar-output"):
        sg.grad(lambda x: x * 2)(np.ones(3))


def test_scipy_minimize_rosenbrock():
    r = so.minimize(sg.compile(rosen), np.zeros(6), jac=sg.grad(rosen), method="BFGS")
    assert r.success
    np.testing.assert_allclose(r.x, np.ones(6), atol=1e-4)


def test_formulas_and_source():
    vg = sg.value_and_grad(w2, argnums=(0, 1))
    rep = vg.formulas(np.ones(3), np.ones(3))
    assert "dw2/dx" in str(rep) and r"\frac{\partial w2}{\partial x}" in rep.latex()
    assert str(rep.gradients["x"]) == "2*x*tanh(y)/(x**2 + 1) + exp(-y**2)*cos(x)"
    src = vg.source(np.ones(3), np.ones(3), backend="numpy")
    assert src == vg.source(np.ones(3), np.ones(3), backend="numpy")
    assert "def value_and_grad" in src and "# sin(" in src


def test_closed_over_arrays_are_constants():
    data = np.array([1.0, 2.0, 3.0])
    g = sg.grad(lambda w: ((w * data - 1.0) ** 2).sum())(0.5)
    assert g == pytest.approx(float(np.sum(2 * (0.5 * data - 1) * data)))


def test_hot_signature_moves_to_numba_and_agrees():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(1000), rng.standard_normal(1000)
    vg = sg.value_and_grad(w2, argnums=(0, 1))
    v0, (gx0, gy0) = vg(x, y)           # first call: generated numpy code
    v1, (gx1, gy1) = vg(x, y)           # hot: the fused numba kernel
    e = next(iter(vg._entries.values()))
    assert e.jit is not None and "numba" in e.jit_source
    np.testing.assert_allclose(v1, v0, rtol=1e-12)
    np.testing.assert_allclose(gx1, gx0, rtol=1e-12)
    np.testing.assert_allclose(gy1, gy0, rtol=1e-12)


def test_float_fast_path_after_warmup():
    vg = sg.value_and_grad(lambda a, b: a * b + sg.sin(a), argnums=(0, 1))
    first = [vg(1.0, 2.0) for _ in range(3)]
    assert vg._fast is not None
    assert first[0] == first[2]
    v, (ga, gb) = vg(0.5, -1.0)
    assert v == pytest.approx(-0.5 + np.sin(0.5), rel=1e-14)
    assert ga == pytest.approx(-1.0 + np.cos(0.5), rel=1e-14) and gb == pytest.approx(0.5)
    assert isinstance(vg(np.float64(0.5), 2.0)[0], float)   # non-float args take the general path
    g = sg.grad(lambda a: a ** 3)
    assert [g(2.0) for _ in range(3)] == [12.0, 12.0, 12.0]


def _ref_w4(a, b):
    return a * b + np.sin(a), (b + np.cos(a), a)


def test_float_fast_path_is_the_general_path_for_floats_only():
    torch = pytest.importorskip("torch")
    vg = sg.value_and_grad(lambda a, b: a * b + sg.sin(a), argnums=(0, 1))
    for _ in range(3):
        vg(1.0, 2.0)
    assert isinstance(vg, sg.CompiledFunction) and type(vg) is not sg.CompiledFunction   # generated __call__
    if fastcall.available():       # the checks in machine code (codegen.fastcall): no Python frame on the call
        assert type(type(vg).__dict__["__call__"]).__name__ == "builtin_function_or_method"
    for a, b in [(0.3, -2.0), (-1.5, 4.0)]:
        v, (ga, gb) = vg(a, b)
        assert all(type(r) is float for r in (v, ga, gb))
        want = _ref_w4(a, b)
        assert v == pytest.approx(want[0], rel=1e-14) and (ga, gb) == pytest.approx(want[1], rel=1e-14)
    # everything that is not exactly two Python floats takes the general path
    v, (ga, gb) = vg(1, 2)                                       # ints: floats out
    assert (type(v), type(ga)) == (float, float) and v == pytest.approx(_ref_w4(1.0, 2.0)[0], rel=1e-14)
    v, (ga, gb) = vg(np.array(0.5), np.array(2.0))                 # 0-d arrays: numpy scalars out
    assert type(v) is np.float64 and type(ga) is np.float64
    assert ga == pytest.approx(2.0 + np.cos(0.5), rel=1e-14)
    v, (ga, gb) = vg(np.float64(0.5), np.float32(2.0))             # numpy scalars: numbers, floats out
    assert type(ga) is float and ga == pytest.approx(2.0 + np.cos(0.5), rel=1e-14)
    ta, tb = (sg.tensor(t, dtype=sg.float64, requires_grad=True) for t in (0.5, 2.0))
    v, (ga, gb) = vg(ta, tb)
    v.backward()
    tta, ttb = torch.tensor(0.5, dtype=torch.float64, requires_grad=True), torch.tensor(2.0, dtype=torch.float64,
                                                                                          requires_grad=True)
    (tta * ttb + torch.sin(tta)).backward()
    assert ta.grad.item() == pytest.approx(tta.grad.item(), rel=1e-14)
    assert tb.grad.item() == pytest.approx(ttb.grad.item(), rel=1e-14)
    with pytest.raises(TypeError):
        vg(1.0)                                                 # the lambda's own error, as before
    with pytest.raises(TypeError, match="out="):
        vg(1.0, 2.0, out=3.0)
    outs = (np.zeros(()), np.zeros(()))
    v, (ga, gb) = vg(np.array(0.5), np.array(2.0), out=outs)
    assert ga is outs[0] and float(ga) == pytest.approx(2.0 + np.cos(0.5), rel=1e-14)
    # composed inside another trace: tracers take the general path
    d2 = sg.grad(lambda a: vg(a, 2.0)[1][0])
    assert [d2(0.5) for _ in range(3)][-1] == pytest.approx(-np.sin(0.5), rel=1e-14)


@pytest.mark.parametrize("make,args,want,fast", [
    # the kernel reads only b, in its own parameter order
    (lambda: sg.value_and_grad(lambda a, b: b * 2.0, argnums=(0, 1)), (1.0, 3.0), (6.0, (0.0, 2.0)), True),
    (lambda: sg.grad(lambda a, b, c: c * a, argnums=(2, 0)), (2.0, 5.0, 3.0), (2.0, 3.0), True),
    # a closed-over 0-d array is a kernel argument after the call's own
    (lambda: sg.value_and_grad(lambda a: a * np.array(3.0) + a ** 2), (2.0,), (10.0, 7.0), True),
    (lambda: sg.value_and_grad(lambda a: (a * np.arange(3.0)).sum()), (2.0,), (6.0, 3.0), True),
    (lambda: sg.compile(lambda a, b: sg.sin(a) * b), (0.5, 2.0), 2.0 * np.sin(0.5), True),
    # non-float results never take the fast path: the general path's floats
    (lambda: sg.compile(lambda a: a > 0.0), (1.0,), 1.0, False),
])
def test_float_fast_path_agrees_with_the_general_path(make, args, want, fast):
    f = make()
    res = [f(*args) for _ in range(4)]
    assert (f._fast is not None) is fast
    assert all(r == res[0] for r in res)
    flat = [res[0]] if not isinstance(res[0], tuple) else [x for r in res[0] for x in (r if isinstance(r, tuple)
                                                                                     else (r,))]
    want_flat = [want] if not isinstance(want, tuple) else [x for w in want for x in (w if isinstance(w, tuple)
                                                                                    else (w,))]
    assert all(type(x) is float for x in flat)
    assert flat == pytest.approx(want_flat, rel=1e-14)


def test_logistic_loss_with_matmul_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    X, y, w0 = rng.standard_normal((50, 6)), np.sign(rng.standard_normal(50)), rng.standard_normal(6) * 0.1
    vg = sg.value_and_grad(lambda w: sg.log1p(sg.exp(-y * (X @ w))).mean())
    wt = torch.tensor(w0, requires_grad=True)
    lt = torch.log1p(torch.exp(-torch.tensor(y) * (torch.tensor(X) @ wt))).mean()
    lt.backward()
    for _ in range(2):   # numpy kernel, then the hot path
        v, g = vg(w0)
        np.testing.assert_allclose(v, lt.item(), rtol=1e-10)
        np.testing.assert_allclose(g, wt.grad.numpy(), rtol=1e-10)
    rep = str(vg.formulas(w0))
    assert "matmul" in rep and "transpose" in rep


def test_unused_argument_in_hot_kernel():
    vg = sg.value_and_grad(lambda x, y: (x ** 2).mean(), argnums=(0, 1))
    for _ in range(3):
        v, (gx, gy) = vg(np.ones((3, 4)), np.ones((3, 4)))
    assert v == 1.0
    np.testing.assert_allclose(gx, np.full((3, 4), 2 / 12))
    np.testing.assert_array_equal(gy, np.zeros((3, 4)))
    f = sg.value_and_grad(lambda a, b: a * 2.0, argnums=(0, 1))
    assert [f(1.5, 3.0) for _ in range(3)][-1] == (3.0, (2.0, 0.0))


#: (function on symgrad or torch, argument shapes as functions of n): slices, broadcasting, reductions with
#: dim and keepdim, reshape, mean (whose gradient's 1/n must come from the arrays, not the kernel text)
SIZE_GENERIC = [
    (lambda lib, x: (3 * (x + 2) ** 2).mean(), [lambda n: (n,)]),
    (lambda lib, x: (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum(), [lambda n: (n,)]),
    (lambda lib, x, y: ((x[:, None] - y[None, :]) ** 2).mean(), [lambda n: (n,), lambda n: (n + 2,)]),
    (lambda lib, x, y: (lib.sin(x) * y).sum(), [lambda n: (n, 3), lambda n: (1, 3)]),
    (lambda lib, x: ((x - x.mean(1, keepdim=True)) ** 2).mean(), [lambda n: (n, 4)]),
    (lambda lib, x: lib.exp(x.mean(0)).sum(), [lambda n: (n, 4)]),
    (lambda lib, x: (x.sum(1) ** 2).mean(), [lambda n: (4, n)]),
    (lambda lib, x: (x.reshape(-1, 2).sum(1) ** 2).sum(), [lambda n: (2 * n,)]),
    (lambda lib, x: (x[1::3] ** 2).sum(), [lambda n: (n,)]),
]


@pytest.mark.parametrize("k", range(len(SIZE_GENERIC)))
def test_new_sizes_reuse_one_numba_compilation(k):
    """Traced per exact shape, but one kernel text, hence one numba compilation, across sizes."""
    torch = pytest.importorskip("torch")
    f, shapes = SIZE_GENERIC[k]
    argnums = tuple(range(len(shapes)))
    vg = sg.value_and_grad(lambda *a: f(sg, *a), argnums=argnums)
    sizes = [5, 8, 13, 21]
    for n in sizes:
        rng = np.random.default_rng(n)
        arrays = [rng.uniform(0.2, 1.5, s(n)) for s in shapes]
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = f(torch, *ts)
        out.backward()
        for _ in range(2):      # the numpy kernel, then the numba kernel
            v, grads = vg(*arrays)
            np.testing.assert_allclose(v, out.item(), rtol=1e-10)
            for g, t in zip(grads, ts):
                np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-13)
    entries = list(vg._entries.values())
    assert len(entries) == len(sizes)                    # one trace per exact shape...
    jits = {id(e.jit) for e in entries}
    assert len(jits) == 1 and entries[0].jit is not None  # ...one kernel text and numba dispatcher
    stats = jit_stats(entries[0].jit)
    assert stats["signatures"] == 1 and stats["compiles"] + stats["loads"] <= 1, stats


# ---------------------------------------------------------------------------- out=


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_out_form_writes_into_the_callers_arrays(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(40).astype(dtype), rng.standard_normal((3, 40)).astype(dtype)
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    ref = (torch.sin(xt) * torch.exp(-yt ** 2) + torch.log1p(xt ** 2) * torch.tanh(yt)).sum()
    ref.backward()
    rtol = 1e-10 if dtype == "float64" else 1e-5
    vg = sg.value_and_grad(w2, argnums=(0, 1))
    gx, gy = np.full_like(x, np.nan), np.full_like(y, np.nan)
    for _ in range(3):      # the numpy kernel, then the numba kernel with out params
        v, grads = vg(x, y, out=(gx, gy))
        assert grads[0] is gx and grads[1] is gy
        np.testing.assert_allclose(v, ref.item(), rtol=rtol)
        np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=rtol, atol=rtol)
        np.testing.assert_allclose(gy, yt.grad.numpy(), rtol=rtol, atol=rtol)
        gx[:], gy[:] = np.nan, np.nan
    e = next(iter(vg._entries.values()))
    assert e.jit_out, "the hot out= call runs a numba kernel"
    g = np.empty(40, dtype)
    assert sg.grad(w2)(x, y, out=g) is g
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=rtol, atol=rtol)


def test_out_form_kernel_has_no_gradient_temporaries():
    vg = sg.value_and_grad(lambda x: (3 * (x + 2) ** 2).mean())
    x = np.linspace(0.0, 1.0, 1000)
    g = np.empty_like(x)
    for _ in range(3):
        vg(x, out=g)
    e = next(iter(vg._entries.values()))
    src = e.jit_out.py_func.__code__.co_filename
    text = open(src).read()
    assert "numpy.empty" not in text and "= out1  # the caller's array" in text
    np.testing.assert_allclose(g, 6 * (x + 2) / x.size, rtol=1e-12)


def test_out_form_single_zero_d_and_copy_fallback():
    # a gradient the kernel does not allocate itself (an argument returned as is) is copied into out
    f = sg.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))
    x, y = np.arange(3.0), np.ones(3)
    gx, gy = np.empty(3), np.empty(3)
    for _ in range(3):
        assert f(x, y, out=(gx, gy)) == (gx, gy)
        np.testing.assert_array_equal(gx, y)
        np.testing.assert_array_equal(gy, x)
    g0 = np.empty(())
    for _ in range(3):
        assert sg.grad(lambda a: a ** 3)(2.0, out=g0) is g0
        assert g0[()] == 12.0


def test_out_form_validates_its_arrays():
    vg = sg.value_and_grad(w2, argnums=(0, 1))
    x, y = np.ones(4), np.ones(4)
    ok = np.empty(4)
    with pytest.raises(TypeError, match=r"tuple of 2 arrays"):
        vg(x, y, out=ok)
    with pytest.raises(TypeError, match=r"tuple of 2 arrays"):
        vg(x, y, out=(ok,))
    with pytest.raises(TypeError, match=r"out\[1\] must be a numpy array, not list"):
        vg(x, y, out=(ok, [0.0] * 4))
    with pytest.raises(ValueError, match=r"out\[0\] has shape \(5,\), but the gradient with respect to argument 0 "
                                         r"has shape \(4,\)"):
        vg(x, y, out=(np.empty(5), np.empty(4)))
    with pytest.raises(ValueError, match=r"out\[1\] has dtype float32, but .* has dtype float64"):
        vg(x, y, out=(np.empty(4), np.empty(4, np.float32)))
    with pytest.raises(ValueError, match="writeable, C-contiguous"):
        vg(x, y, out=(np.empty(8)[::2], np.empty(4)))
    ro = np.empty(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable, C-contiguous"):
        vg(x, y, out=(np.empty(4), ro))
    with pytest.raises(ValueError, match="overlaps"):
        vg(x, y, out=(x, np.empty(4)))
    with pytest.raises(ValueError, match="overlaps"):
        vg(x, y, out=(ok, ok))
    with pytest.raises(TypeError, match="sg.grad or sg.value_and_grad"):
        sg.compile(w2)(x, y, out=ok)
    with pytest.raises(ValueError, match=r"^out has shape"):
        sg.grad(w2)(x, y, out=np.empty(3))


# ---------------------------------------------------------------------------- tensor arguments: one node


def _w2_torch(torch, x, y):
    return (torch.sin(x) * torch.exp(-y ** 2) + torch.log1p(x ** 2) * torch.tanh(y)).sum()


def _pair(torch, arr, dtype="float64"):
    a = np.asarray(arr, dtype=dtype)
    return sg.tensor(a.copy(), requires_grad=True), torch.tensor(a.copy(), requires_grad=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tensor_call_is_one_compiled_node_composing_with_eager_code(dtype):
    torch = pytest.importorskip("torch")
    rtol = 1e-10 if dtype == "float64" else 1e-5
    f = sg.compile(w2)
    x, xt = _pair(torch, np.linspace(0.1, 1.0, 7), dtype)
    y, yt = _pair(torch, np.linspace(-1.0, 1.0, 7), dtype)
    for _ in range(3):         # numpy kernels, then numba
        out = f(x * 2, y)
        assert out.grad_fn.name() == "CompiledFunctionBackward"
        assert [type(fn).__name__ for fn, _ in out.grad_fn.next_functions][:2] == ["MulBackward0", "AccumulateGrad"]
        ref = _w2_torch(torch, xt * 2, yt)
        np.testing.assert_allclose(out.item(), ref.item(), rtol=rtol)
        (out ** 2).backward(retain_graph=True)
        (out ** 2).backward()      # retain_graph: a second backward accumulates
        (ref ** 2).backward(retain_graph=True)
        (ref ** 2).backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=rtol)
        np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=rtol, atol=rtol)
    (gx,) = sg.autograd.grad(f(x, y) * 3, x)
    (gxt,) = torch.autograd.grad(_w2_torch(torch, xt, yt) * 3, xt)
    np.testing.assert_allclose(gx.numpy(), gxt.numpy(), rtol=rtol, atol=rtol)


def test_tensor_call_backward_uses_the_kernels_gradients():
    f = sg.compile(w2)
    x = sg.tensor(np.linspace(0.1, 1.0, 5), requires_grad=True)
    y = sg.tensor(np.ones(5))
    node = f(x, y).grad_fn._node
    assert node.attr("saved") == (0,)
    saved = node.inputs[1 + node.attr("nargs")].value      # computed by the value_and_grad kernel
    _, g = sg.value_and_grad(w2)(x.detach().numpy(), y.numpy())
    np.testing.assert_array_equal(saved, g)


def test_tensor_call_double_backward_and_grad_of_tensors():
    torch = pytest.importorskip("torch")
    f = sg.compile(w2)
    x, xt = _pair(torch, np.linspace(0.1, 1.0, 6))
    y, yt = _pair(torch, np.linspace(-1.0, 1.0, 6))
    (gx,) = sg.autograd.grad(f(x, y) * 3, x, create_graph=True)
    (gxt,) = torch.autograd.grad(_w2_torch(torch, xt, yt) * 3, xt, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gxt.detach().numpy(), rtol=1e-10)
    h = sg.autograd.grad((gx ** 2).sum(), (x, y))
    ht = torch.autograd.grad((gxt ** 2).sum(), (xt, yt))
    for a, b in zip(h, ht):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    # sg.grad of tensors gives differentiable gradients
    gy = sg.grad(w2, argnums=1)(x, y)
    assert gy.grad_fn.name() == "CompiledFunctionBackward"
    (gyt,) = torch.autograd.grad(_w2_torch(torch, xt, yt), yt, create_graph=True)
    np.testing.assert_allclose(gy.detach().numpy(), gyt.detach().numpy(), rtol=1e-10)
    (gy * y).sum().backward()
    (gyt * yt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_tensor_call_with_a_non_scalar_result():
    torch = pytest.importorskip("torch")
    f = sg.compile(lambda a, b: sg.sin(a) * b[:, None])
    a, at = _pair(torch, np.linspace(0.0, 1.0, 12).reshape(3, 4))
    b, bt = _pair(torch, np.array([1.0, -2.0, 0.5]))
    w = np.arange(12.0).reshape(3, 4)
    out = f(a, b)
    assert out.grad_fn.name() == "CompiledFunctionBackward" and out.shape == (3, 4)
    out.backward(sg.tensor(w))
    ref = torch.sin(at) * bt[:, None]
    ref.backward(torch.tensor(w))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-12)
    with sg.no_grad():
        assert f(a, b).grad_fn is None


def test_callers_no_grad_does_not_reach_the_trace():
    x = np.array([1.0, 2.0])
    with sg.no_grad():
        g = sg.grad(lambda a: (a.sin() * a).sum())(x)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-12)


# ---------------------------------------------------------------------------- random compiled programs

import importlib  # noqa: E402

import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: steps of a random program over a vector x (n,) and a matrix y (3, n); lib is sg or torch
_UNARY = {
    "sin": lambda lib, v: lib.sin(v), "tanh": lambda lib, v: lib.tanh(v), "erf": lambda lib, v: lib.erf(v),
    "atan": lambda lib, v: lib.atan(v), "gauss": lambda lib, v: lib.exp(-v ** 2),
    "log1p_sq": lambda lib, v: lib.log1p(v ** 2), "sigmoid": lambda lib, v: lib.sigmoid(v),
    "relu": lambda lib, v: lib.relu(v - 0.1), "abs": lambda lib, v: lib.abs(v + 0.05),
    "softplus": lambda lib, v: lib.nn.functional.softplus(v), "cosh": lambda lib, v: lib.cosh(lib.tanh(v)),
    "clamp": lambda lib, v: v.clamp(-0.6, 0.8), "rsqrt": lambda lib, v: lib.rsqrt(1 + v ** 2),
    "softmax": lambda lib, v: lib.softmax(v, -1), "cumsum": lambda lib, v: lib.cumsum(v, -1) / 3,
    "center": lambda lib, v: v - v.mean(-1, keepdim=True), "norm": lambda lib, v: v / (1 + v.norm()),
    "shift": lambda lib, v: lib.cat([v[..., 1:], v[..., :1]], -1), "flip": lambda lib, v: v.flip(-1),
}
_BINARY = {
    "add": lambda lib, a, b: a + b, "mul": lambda lib, a, b: a * b, "div": lambda lib, a, b: a / (1.5 + b * b),
    "atan2": lambda lib, a, b: lib.atan2(a, b + 2.5), "hypot": lambda lib, a, b: lib.hypot(a, b + 0.3),
    "max": lambda lib, a, b: lib.maximum(a, b), "where": lambda lib, a, b: lib.where(a > b, a * b, a - b),
    "logaddexp": lambda lib, a, b: lib.logaddexp(a, b),
}
_REDUCE = {
    "sum": lambda lib, v: v.sum(), "mean_sq": lambda lib, v: (v ** 2).mean(), "std": lambda lib, v: v.std(),
    "logsumexp": lambda lib, v: lib.logsumexp(v.reshape(-1), 0), "amax": lambda lib, v: v.amax(),
    "rows": lambda lib, v: (v.sum(-1) ** 2).sum() if v.ndim > 1 else (v * v).sum(),
}


@st.composite
def _compiled_programs(draw):
    steps = []
    for k in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            steps.append(("b", draw(st.sampled_from(sorted(_BINARY))), draw(st.integers(0, k + 1)),
                          draw(st.integers(0, k + 1))))
        else:
            steps.append(("u", draw(st.sampled_from(sorted(_UNARY))), draw(st.integers(0, k + 1))))
    return steps, draw(st.sampled_from(sorted(_REDUCE)))


def _program(lib, steps, red, x, y):
    vals = [x, y]
    for s in steps:
        vals.append(_UNARY[s[1]](lib, vals[s[2]]) if s[0] == "u" else _BINARY[s[1]](lib, vals[s[2]], vals[s[3]]))
    return _REDUCE[red](lib, vals[-1]) + (vals[-1] * x).sum() / 4


def _torch_value_and_grad(steps, red, x, y):
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out = _program(torch, steps, red, tx, ty)
    gx, gy = torch.autograd.grad(out, (tx, ty), allow_unused=True)
    zero = np.zeros
    return out.item(), gx.numpy() if gx is not None else zero(x.shape), gy.numpy() if gy is not None else zero(y.shape)


def _check_compiled_program(prog, backend):
    steps, red = prog
    cm = importlib.import_module("symgrad.kernels.program")
    saved, cm.BACKEND = cm.BACKEND, backend
    try:
        vg = sg.value_and_grad(lambda x, y: _program(sg, steps, red, x, y), argnums=(0, 1))
        rng = np.random.default_rng(len(steps))
        for n in (5, 9):                               # two sizes, one kernel (numba compiles once per rank)
            x, y = rng.uniform(-1, 1, n), rng.uniform(-1, 1, (3, n))
            want = _torch_value_and_grad(steps, red, x, y)
            for _ in range(3):                         # the numpy kernel, then the backend's
                v, (gx, gy) = vg(x, y)
                np.testing.assert_allclose(v, want[0], rtol=1e-10, atol=1e-12, err_msg=str(prog))
                np.testing.assert_allclose(gx, want[1], rtol=1e-10, atol=1e-12, err_msg=str(prog))
                np.testing.assert_allclose(gy, want[2], rtol=1e-10, atol=1e-12, err_msg=str(prog))
        if backend == "numba":
            jits = {id(e.jit) for e in vg._entries.values()}
            assert None not in {e.jit for e in vg._entries.values()}, f"numba refused {prog}"
            sources = {e.jit_source for e in vg._entries.values()}
            # kernels that read sizes at run time serve both sizes with one numba compile; ops that bake
            # positions into the text (flip's, shift's index arrays) give a kernel per size
            assert len(jits) == len(sources), "an identical kernel text was compiled twice"
            if not {s[1] for s in steps} & {"flip", "shift"}:
                assert len(sources) == 1, f"a size was baked into the kernel text: {prog}"
            for e in vg._entries.values():
                assert jit_stats(e.jit)["signatures"] == 1
    finally:
        cm.BACKEND = saved


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(_compiled_programs())
def test_random_compiled_programs_match_torch_numpy_backend(prog):
    _check_compiled_program(prog, "numpy")


@settings(max_examples=8, derandomize=True, deadline=None, database=None)
@given(_compiled_programs())
def test_random_compiled_programs_match_torch_numba_backend(prog):
    _check_compiled_program(prog, "numba")


# ---------------------------------------------------------------------------- keyword arguments

def _scaled(x, scale=2.0, shift=0.0):
    return (scale * (x - shift) ** 2).sum()


def test_keyword_arguments_bind_to_their_positions():
    x = np.arange(3.0)
    f = sg.compile(_scaled)
    assert f(x, scale=3.0) == f(x, 3.0) == 15.0
    assert f(x, shift=1.0) == f(x, 2.0, 1.0) == 4.0         # skipped parameters take their defaults
    assert f(x=x, scale=1.0) == 5.0
    v, (gx, gs) = sg.value_and_grad(_scaled, argnums=(0, 1))(x, scale=3.0)
    assert v == 15.0 and np.allclose(gx, 6 * x) and gs == 5.0
    np.testing.assert_allclose(sg.grad(_scaled)(x, shift=1.0), 4 * (x - 1))
    np.testing.assert_allclose(sg.hessian(_scaled)(x, scale=3.0), 6 * np.eye(3))
    g = sg.grad(lambda a, b=1.0: a * b + sg.sin(a))
    for _ in range(4):                                    # through the all-float fast path too
        assert g(2.0, b=3.0) == pytest.approx(3.0 + np.cos(2.0), rel=1e-15)
        assert g(2.0) == pytest.approx(1.0 + np.cos(2.0), rel=1e-15)


def test_keyword_argument_errors():
    f = sg.compile(_scaled)
    with pytest.raises(TypeError, match="unexpected keyword argument 'scal'"):
        f(np.ones(2), scal=3.0)

    def kwonly(x, *, k=2.0):
        return (k * x).sum()
    assert sg.compile(kwonly)(np.ones(2)) == 4.0          # left at its default: traced as a constant
    with pytest.raises(TypeError, match="keyword-only parameter 'k'"):
        sg.compile(kwonly)(np.ones(2), k=3.0)


@pytest.mark.parametrize("bad", [None, "sum", {"a": "x"}, [[1.0], [1.0, 2.0]]])  # a dict's entries are arguments
def test_non_numeric_arguments_are_refused_not_converted_to_nan(bad):
    f = sg.compile(lambda x, w: x.sum() if w is None else (x * w).sum())
    with pytest.raises(TypeError, match="arguments must be arrays, numbers or tensors"):
        f(np.ones(2), bad)


# ---------------------------------------------------------------------------- several results, has_aux

def test_compiled_function_returns_tuples_lists_and_dicts():
    x = np.linspace(-1.0, 1.0, 5)
    f = sg.compile(lambda v: (v.sum(), [v * 2, sg.sin(v)], {"m": v.mean()}))
    for _ in range(3):                                   # numpy kernel, then numba
        s, (d, sn), m = f(x)
        assert s == pytest.approx(x.sum(), abs=1e-15) and m["m"] == pytest.approx(x.mean(), abs=1e-15)
        np.testing.assert_allclose(d, 2 * x)
        np.testing.assert_allclose(sn, np.sin(x), rtol=1e-15)
        assert isinstance(f(x)[1], list)
    with pytest.raises(NotImplementedError, match="several results"):
        f(sg.tensor(x, requires_grad=True))
    with pytest.raises(TypeError, match="returns several"):
        f.formulas(x)
    assert "return (t0, " in f.source(x, backend="numpy")


@pytest.mark.parametrize("mode", ["value_and_grad", "grad"])
def test_has_aux_matches_torch(mode):
    def loss(lib, w, x):
        pred = lib.tanh(x * w)
        return ((pred - 0.5) ** 2).mean(), {"pred": pred, "w2": w * w}

    x = np.linspace(-1.0, 1.0, 6)
    tw = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    tl, taux = loss(torch, tw[:, None], torch.tensor(x))
    tl.backward()
    t = getattr(sg, mode)(lambda w, x: loss(sg, w[:, None], x), has_aux=True)
    for _ in range(3):
        r = t(np.array([0.3, -0.2]), x)
        (value, aux), g = r if mode == "value_and_grad" else ((tl.item(), r[1]), r[0])
        assert value == pytest.approx(tl.item(), rel=1e-12)
        np.testing.assert_allclose(g, tw.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(aux["pred"], taux["pred"].detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(aux["w2"], taux["w2"].detach().numpy(), rtol=1e-12)


def test_has_aux_errors_and_torch_func_spelling():
    with pytest.raises(TypeError, match=r"return a pair \(output, aux\), got a single tensor"):
        sg.grad(lambda x: x.sum(), has_aux=True)(np.ones(2))
    f = lambda lib, x: ((x ** 2).sum(), x.sin())  # noqa: E731
    x = np.array([0.5, 1.0])
    g, aux = sg.func.grad(lambda t: f(sg, t), has_aux=True)(sg.tensor(x))
    tg, taux = torch.func.grad(lambda t: f(torch, t), has_aux=True)(torch.tensor(x))
    np.testing.assert_allclose(g.numpy(), tg.numpy())
    np.testing.assert_allclose(aux.numpy(), taux.numpy())
    g, (v, aux) = sg.func.grad_and_value(lambda t: f(sg, t), has_aux=True)(sg.tensor(x))
    tg, (tv, taux) = torch.func.grad_and_value(lambda t: f(torch, t), has_aux=True)(torch.tensor(x))
    assert v.item() == pytest.approx(tv.item())
    # inside another trace: grad of a has_aux gradient
    h = sg.grad(lambda w: sg.grad(lambda u: f(sg, u), has_aux=True)(w)[0].sum())
    np.testing.assert_allclose(h(x), 2 * np.ones(2))


def test_array_fast_path_packs_results_like_the_general_path():
    """Hot numpy-array calls go through a generated per-signature caller: same values and types as the
    general path (0-d results as numpy scalars, fresh gradient arrays), any other call falls back."""
    f = lambda x, y: (sg.sin(x) * y).sum()  # noqa: E731
    vg = sg.value_and_grad(f, argnums=(0, 1))
    general = sg.value_and_grad(f, argnums=(0, 1))
    general._install_fast_arrays = lambda *a: None         # the general path only
    for n in (4, 9, 4):
        x, y = np.linspace(-1, 1, n), np.linspace(0, 2, n)
        for _ in range(4):
            (v, (gx, gy)), (v2, (gx2, gy2)) = vg(x, y), general(x, y)
            assert type(v) is type(v2) is np.float64 and v == v2
            np.testing.assert_array_equal(gx, gx2)
            np.testing.assert_array_equal(gy, gy2)
            assert gx is not x and gy is not y and gx.flags.writeable
    assert "array dispatch" in type(vg).__call__.__code__.co_filename and len(vg._fast_table) == 2
    x32 = np.linspace(-1, 1, 4, dtype=np.float32)
    v32, (g32, _) = vg(x32, x32)                             # another dtype: the general path
    assert g32.dtype == np.float32
    assert vg(x=np.ones(4), y=np.ones(4))[0] == pytest.approx(4 * np.sin(1.0))
    xs = np.linspace(-1, 1, 8)[::2]                          # a strided view of a known shape
    np.testing.assert_allclose(vg(xs, np.ones(4))[1][0], np.cos(xs))


def test_parallel_kernels_run_through_the_thread_choice():
    """A hot signature whose numba kernel has a prange pass runs it through ``codegen.threads.Adaptive`` (all
    threads or the calling thread alone, by recent timings) on the array fast path and the general path; both
    settings give the same bits."""
    from codegen.threads import FIRST, Adaptive

    vg = sg.value_and_grad(lambda x: (3 * (x + 2) ** 2).mean())
    x = np.linspace(-1, 1, 1 << 17)
    vg(x)                       # the first call runs the numpy kernel, the later ones numba's
    values, grads = set(), []
    for _ in range(4 * FIRST):
        v, g = vg(x)
        values.add(v)
        grads.append(g)
    (e,) = vg._entries.values()
    assert "numba.prange(" in e.prog.jit_source
    (run,) = [r for _, r in e.runners.values()]
    assert isinstance(run, Adaptive) and run.calls > FIRST and all(run.samples)   # both settings ran
    assert next(iter(vg._fast_table.values())).__globals__["_jit"] is run
    assert len(values) == 1 and all(np.array_equal(g, grads[0]) for g in grads)
    assert values.pop() == pytest.approx(3 * np.mean((x + 2) ** 2))
    np.testing.assert_allclose(grads[0], 6 * (x + 2) / x.size)


def test_source_shows_the_kernel_that_runs_once_hot():
    vg = sg.value_and_grad(w2, argnums=(0, 1))
    x = np.linspace(0, 1, 5)
    default = vg.source(x, x)
    assert "numba.njit" in default and default == vg.source(x, x, backend="numba")
    assert "numba" not in vg.source(x, x, backend="numpy")
    with pytest.raises(ValueError, match="backend"):
        vg.source(x, x, backend="jax")
    h = sg.hessian(lambda x: (x ** 3).sum())
    assert "numba.njit" in h.source(x) and "numba.njit" not in h.source(x, backend="numpy")


def test_matrix_trace_survives_compiling():
    """Regression: the tracing module was named ``trace`` and replaced ``sg.trace`` once imported."""
    sg.compile(lambda x: (x * 2).sum())(np.ones(3))
    assert float(sg.trace(sg.eye(3))) == 3.0
    import symgrad
    for name in ("trace", "compile", "formula", "tensor", "grad", "jacobian", "hessian"):
        assert callable(getattr(symgrad, name)) and not isinstance(getattr(symgrad, name), type(symgrad)), name
