"""torch's elementwise math (``symgrad/math_ops.py``) beyond the registry matrix: every op in one numba
kernel, in-place methods, integer inputs, special values, torch's errors, formulas, forward mode and
Hessian sparsity. The registry matrix (``tests/test_ops_registry.py``) checks each op on its own.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import assert_close, assert_same_error, grad_fn_name

import symgrad as sg
import symgrad.nn.functional as F


def _everything(lib: Any, F_: Any, x: Any, y: Any) -> Any:
    """Every new op (and activation) once, on arguments inside its domain."""
    u = 0.5 * lib.tanh(x)
    p = 1.2 + x * x
    out = (lib.sinh(x) + lib.cosh(u) + lib.asinh(x) + lib.acosh(p) + lib.atanh(u) + lib.asin(u) + lib.acos(u)
           + lib.atan(x) + lib.expm1(u) + lib.exp2(u) + lib.log2(p) + lib.log10(p) + lib.erf(x) + lib.erfc(u)
           + lib.rsqrt(p) + lib.sign(x) * x + lib.floor(3 * x) + lib.ceil(3 * x) + lib.round(3 * x) + lib.trunc(3 * x)
           + lib.frac(3 * x) + lib.deg2rad(x) + lib.rad2deg(u) + lib.sinc(x) + lib.square(x) + lib.sgn(y) * y
           + lib.atan2(x, y) + lib.hypot(x, y) + lib.logaddexp(x, y) + lib.xlogy(x, p) + lib.fmod(x, y)
           + lib.remainder(x, y) + lib.round(x, decimals=1) + lib.xlogy(x, 2.0) + lib.xlogy(3.0, p)
           + lib.fmod(x, 0.3) + F_.softplus(x) + F_.softplus(x, beta=2, threshold=1.0) + F_.silu(x) + F_.gelu(x)
           + F_.gelu(x, approximate="tanh") + F_.elu(x, alpha=0.5) + F_.leaky_relu(x, 0.1) + F_.logsigmoid(x)
           + F_.hardtanh(x, -0.5, 0.5) + F_.relu6(4 * x) + F_.mish(x))
    return out.sum()


def test_every_op_in_one_numba_kernel():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, 40)
    y = rng.choice([-1.0, 1.0], 40) * rng.uniform(0.3, 2, 40)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    tv = _everything(torch, TF, tx, ty)
    tg = torch.autograd.grad(tv, [tx, ty])
    vg = sg.value_and_grad(lambda a, b: _everything(sg, F, a, b), argnums=(0, 1))
    for _ in range(3):  # numpy kernel, then the numba kernel (from the second call)
        value, grads = vg(x, y)
        assert value == pytest.approx(tv.item(), rel=1e-12)
        for g, t in zip(grads, tg):
            np.testing.assert_allclose(g, t.numpy(), rtol=1e-10, atol=1e-12)
    e = next(iter(vg._entries.values()))
    assert e.jit is not None and "math.erf(" in e.jit_source  # the numba kernel ran (erf through libm)
    assert "scipy.special.erf(" in e.source  # and the numpy kernel before it


UNARY_INPLACE = ["sinh", "cosh", "asinh", "acosh", "arccosh", "atanh", "asin", "acos", "atan", "arcsinh",
                 "arctanh", "arcsin", "arccos", "arctan", "expm1", "exp2", "erf", "erfc", "floor", "ceil", "round",
                 "trunc", "frac", "deg2rad", "rad2deg", "sinc", "sign", "sgn", "square", "exp", "log1p", "sin",
                 "cos", "tan", "tanh", "sigmoid", "relu", "abs", "neg", "reciprocal", "absolute", "negative", "fix"]


#: torch records these in-place forms (``AsinhBackward1``...) but has no derivative for them; symgrad's
#: is the out-of-place op's
_NO_TORCH_GRAD = {"asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh"}


@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_inplace_unary_matches_torch(name: str):
    arr = np.array([[-0.7, -0.2, 0.3], [0.45, 0.6, -0.85]])
    if "cosh" in name and name != "cosh":
        arr = 1 + np.abs(arr)
    x, t = sg.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    y, ty = x * 1.5, t * 1.5
    out, tout = getattr(y, name + "_")(), getattr(ty, name + "_")()
    assert out is y and tout is ty
    assert_close(y, ty)
    assert grad_fn_name(y) == grad_fn_name(ty)
    (y * y).sum().backward()
    if name in _NO_TORCH_GRAD:
        with pytest.raises(NotImplementedError, match="inplace version"):
            (ty * ty).sum().backward()
        ty = getattr(t * 1.5, name)()
    (ty * ty).sum().backward()
    assert_close(x.grad, t.grad)


@pytest.mark.parametrize(("name", "other"), [("atan2", "t"), ("hypot", "t"), ("xlogy", "t"), ("xlogy", 2.0),
                                             ("fmod", "t"), ("fmod", 0.4), ("remainder", "t"), ("remainder", -0.4),
                                             ("clip", None)])
def test_inplace_binary_matches_torch(name: str, other: Any):
    a, b = np.array([0.5, -1.3, 2.2, 0.0]), np.array([0.7, 0.9, -1.1, 1.5])
    x, t = sg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    o, to = sg.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    y, ty = x * 1, t * 1
    if name == "clip":
        y.clip_(-0.5, 1.0)
        ty.clip_(-0.5, 1.0)
    else:
        getattr(y, name + "_")(o if other == "t" else other)
        getattr(ty, name + "_")(to if other == "t" else other)
    assert_close(y, ty)
    assert grad_fn_name(y) == grad_fn_name(ty)
    y.sum().backward()
    ty.sum().backward()
    assert_close(x.grad, t.grad)
    assert_close(o.grad, to.grad)


def test_methods_and_torch_names():
    a, b = np.array([[0.5, -1.3], [2.2, 0.0]]), np.array([0.7, -1.1])
    x, t = sg.tensor(a), torch.tensor(a)
    o, to = sg.tensor(b), torch.tensor(b)
    for name in ("maximum", "minimum", "atan2", "arctan2", "hypot", "logaddexp", "xlogy", "fmod", "remainder"):
        assert_close(getattr(x, name)(o), getattr(t, name)(to), what=name)
        assert_close(getattr(sg, name)(x, o), getattr(torch, name)(t, to), what=name)
    assert_close(x.where(x > 0, o), t.where(t > 0, to))
    assert_close(x.where(x > 0, 2.5), t.where(t > 0, 2.5))
    assert_close(x % 0.6, t % 0.6)
    assert_close(x.round(decimals=1), t.round(decimals=1))
    assert_close(sg.clip(x, -1, 1), torch.clip(t, -1, 1))
    assert_close(sg.xlogy(2, o.abs()), torch.xlogy(2, to.abs()))


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "sign", "sgn", "square", "abs"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_inputs_keep_their_dtype(name: str, dtype: str):
    arr = np.array([3, 0, 7, 2]).astype(dtype)
    if name == "abs" and dtype == "uint8":
        return
    assert_close(getattr(sg, name)(sg.tensor(arr)), getattr(torch, name)(torch.tensor(arr)), what=name)


def test_integer_modulo_and_float_results():
    i, j = np.array([7, -7, 5, -5]), np.array([3, 3, -2, -2])
    for name in ("fmod", "remainder"):
        assert_close(getattr(sg, name)(sg.tensor(i), sg.tensor(j)), getattr(torch, name)(torch.tensor(i),
                                                                                         torch.tensor(j)))
        assert_close(getattr(sg, name)(sg.tensor(i), 3), getattr(torch, name)(torch.tensor(i), 3))
        assert_close(getattr(sg, name)(sg.tensor(i), 2.5), getattr(torch, name)(torch.tensor(i), 2.5))
    for name in ("sinh", "erf", "rsqrt", "exp2", "log2", "deg2rad", "sinc", "atan"):
        assert_close(getattr(sg, name)(sg.tensor(i)), getattr(torch, name)(torch.tensor(i)), what=name)
    assert_close(sg.atan2(sg.tensor(i), sg.tensor(j)), torch.atan2(torch.tensor(i), torch.tensor(j)))
    assert_close(sg.xlogy(sg.tensor(i), sg.tensor(j)), torch.xlogy(torch.tensor(i), torch.tensor(j)))
    assert_close(sg.erf(sg.tensor([True, False])), torch.erf(torch.tensor([True, False])))


def test_special_values_match_torch_eager_and_compiled():
    nan, inf = float("nan"), float("inf")
    a = np.array([nan, 0.0, -0.0, 2.5, -2.5, 0.5, -inf, inf, 0.0, 0.0, 0.0, 1.0])
    b = np.array([0.0, 0.0, -inf, inf, 2.0, -1.0, -inf, inf, nan, inf, -1.0, 0.0])

    def f(lib: Any, x: Any, y: Any) -> Any:
        return lib.stack([lib.sign(x), lib.sinc(x), lib.logaddexp(x, y), lib.xlogy(x, y), lib.round(x),
                          lib.frac(x), lib.hypot(x, y), lib.atan2(x, y), lib.erf(x), lib.expm1(x)])

    expected = f(torch, torch.tensor(a), torch.tensor(b))
    assert_close(f(sg, sg.tensor(a), sg.tensor(b)), expected)
    compiled = sg.compile(lambda x, y: f(sg, x, y))
    for _ in range(3):
        np.testing.assert_allclose(compiled(a, b), expected.numpy(), rtol=1e-12, equal_nan=True)
    x, t = sg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = sg.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    for fn in (lambda lib, p, q: lib.xlogy(p, q), lambda lib, p, q: lib.logaddexp(p, q),
               lambda lib, p, q: lib.sinc(p) + lib.sign(q)):
        g = sg.autograd.grad(fn(sg, x, y).sum(), [x, y])
        tg = torch.autograd.grad(fn(torch, t, ty).sum(), [t, ty], allow_unused=True)
        for gi, ti in zip(g, tg):
            assert_close(gi, torch.zeros_like(t) if ti is None else ti)


def test_errors_match_torch():
    i, b = np.array([3, -2]), np.array([True, False])
    f = np.array([0.5, -1.0], np.float32)
    cases = [
        (lambda lib: lib.floor(lib.tensor(b))), (lambda lib: lib.round(lib.tensor(b))),
        (lambda lib: lib.frac(lib.tensor(i))), (lambda lib: lib.frac(lib.tensor(b))),
        (lambda lib: lib.hypot(lib.tensor(i), lib.tensor(i))),
        (lambda lib: lib.logaddexp(lib.tensor(i), lib.tensor(i))),
        (lambda lib: lib.fmod(lib.tensor(b), lib.tensor(b))), (lambda lib: lib.round(lib.tensor(i), decimals=1)),
        (lambda lib: lib.atan2(lib.tensor(f), 2.0)), (lambda lib: lib.atan2(2.0, lib.tensor(f))),
        (lambda lib: lib.tensor(f).atan2(2.0)), (lambda lib: lib.hypot(lib.tensor(f), 2)),
        (lambda lib: lib.tensor(f).maximum(1.0)), (lambda lib: lib.tensor(i).exp_()),
        (lambda lib: lib.tensor(i).sqrt_()), (lambda lib: lib.tensor(i).frac_()),
        (lambda lib: lib.fmod(lib.tensor(i), lib.tensor([0, 1]))),
        (lambda lib: lib.remainder(lib.tensor(i), lib.tensor([1, 0]))),
        (lambda lib: lib.tensor(f, requires_grad=True).sin_()),
    ]
    for case in cases:
        assert_same_error(lambda c=case: c(sg), lambda c=case: c(torch))


def test_formulas_print_the_new_functions():
    x = sg.tensor([0.5, 1.5], requires_grad=True, name="x")
    y = sg.tensor([2.0, 3.0], requires_grad=True, name="y")
    assert str(sg.formula(sg.erf(x) + sg.asinh(x))) == "asinh(x) + erf(x)"
    assert r"\operatorname{erf}" in sg.formula(sg.erf(x)).latex()
    assert str(sg.grad_formula((sg.erf(x) * 2).sum(), x)) == "4*exp(-x**2)/sqrt(pi)"
    assert str(sg.formula(sg.fmod(x, y))) == "fmod(x, y)"
    assert str(sg.grad_formula(sg.fmod(x, y).sum(), y)) == "-trunc(x/y)"
    assert r"\operatorname{trunc}" in sg.grad_formula(sg.fmod(x, y).sum(), y).latex()
    assert str(sg.formula(sg.floor(x) + sg.frac(x))) == "x + floor(x) - trunc(x)"
    assert str(sg.grad_formula(sg.xlogy(x, y).sum(), x)) == "Piecewise((log(y), x != 0), (0, y <= 0), (log(y), True))"
    assert r"x \neq 0" in sg.formula(sg.xlogy(x, y)).latex()
    assert str(sg.formula(F.softplus(x))) == "Piecewise((x, x > 20.0), (log1p(exp(x)), True))"
    assert "erf" in str(sg.formula(F.gelu(x)))


def test_forward_mode_and_second_derivatives_match_torch():
    def f(lib: Any, F_: Any, x: Any) -> Any:
        return (lib.sinh(x) * lib.erf(x) + lib.atan2(x, x * x + 1) + lib.logaddexp(x, -x) + F_.gelu(x)
                + F_.mish(x) * lib.expm1(x / 3) + lib.hypot(x, x + 2) + lib.xlogy(x, x * x + 1)).sum()

    a = np.array([0.3, -1.2, 0.7, 1.9])
    v = np.array([1.0, -0.5, 2.0, 0.25])
    _, tangent = sg.jvp(lambda x: f(sg, F, x), (a,), (v,))
    _, t_tangent = torch.func.jvp(lambda x: f(torch, TF, x), (torch.tensor(a),), (torch.tensor(v),))
    assert tangent == pytest.approx(t_tangent.item(), rel=1e-12)
    h = sg.hessian(lambda x: f(sg, F, x))(a)
    th = torch.autograd.functional.hessian(lambda x: f(torch, TF, x), torch.tensor(a))
    np.testing.assert_allclose(h, th.numpy(), rtol=1e-10, atol=1e-12)
    hs = sg.hessian(lambda x: f(sg, F, x), sparse=True)(a)
    assert hs.nnz == 4  # elementwise: a diagonal Hessian
    np.testing.assert_allclose(hs.toarray(), th.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("expr", ["torch.tensor([1, 100], dtype=torch.int8) + 300",
                                  "torch.tensor([1, 3], dtype=torch.uint8) - 2",
                                  "torch.tensor([1, 2], dtype=torch.uint8) * 300",
                                  "torch.tensor([5], dtype=torch.int16) * 70000"])
def test_out_of_range_python_int_wraps_like_torch(expr):
    got, want = eval(expr, {"torch": sg}), eval(expr, {"torch": torch})
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("expr", ["7 % torch.tensor([3, -3])", "7.5 % torch.tensor([2, -2])",
                                  "7 % torch.tensor([2.5, -0.5])", "-7 % torch.tensor([2, 3], dtype=torch.int32)",
                                  "3 % torch.tensor(2.0, dtype=torch.float64)"])
def test_number_modulo_tensor_matches_torch(expr):
    got, want = eval(expr, {"torch": sg}), eval(expr, {"torch": torch})
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("value", [5, 0, 2.5, 0.0, True, False])
@pytest.mark.parametrize("as_tuple", [False, True])
def test_nonzero_of_a_0d_tensor_matches_torch(value, as_tuple):
    got, want = sg.tensor(value).nonzero(as_tuple=as_tuple), torch.tensor(value).nonzero(as_tuple=as_tuple)
    for a, b in zip(got if as_tuple else (got,), want if as_tuple else (want,)):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(got if as_tuple else (got,)) == len(want if as_tuple else (want,))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_shifts_match_torch_for_every_count(dtype):
    torch = pytest.importorskip("torch")
    vals = [0, 1, 3, 7, 100, 127] + ([] if dtype == "uint8" else [-1, -7, -128])
    counts = [-3, -1, 0, 1, 2, 7, 8, 9, 15, 16, 31, 32, 63, 64, 65, 200]
    a = [v for v in vals for _ in counts]
    b = counts * len(vals)
    for op in ("bitwise_left_shift", "bitwise_right_shift"):
        want = getattr(torch, op)(torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b))
        got = getattr(sg, op)(sg.tensor(a, dtype=getattr(sg, dtype)), sg.tensor(b))
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_shift_operators_and_errors_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, sg):
        lib.x = lib.tensor([7, -7, 10, 3])
    assert str(sg.x << 1) == str(torch.x << 1) and str(sg.x >> 2) == str(torch.x >> 2)
    assert str(3 << sg.x.abs()) == str(3 << torch.x.abs()) and str(100 >> sg.x.abs()) == str(100 >> torch.x.abs())
    assert str(sg.tensor([True, False]) << 1) == str(torch.tensor([True, False]) << 1)
    for bad, kernel, name in ((lambda lib: lib.tensor([1.5]) << 1, "lshift_cpu", "Float"),
                              (lambda lib: lib.x >> 1.5, "rshift_cpu", "Float"),
                              (lambda lib: lib.tensor([True]) << lib.tensor([True]), "lshift_cpu", "Bool")):
        for lib in (torch, sg):
            with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for '{name}'"):
                bad(lib)
    y = sg.x.clone()
    y <<= 2
    assert y.tolist() == [28, -28, 40, 12]


def test_shifts_compile():
    def fn(a, b):
        a, b = a.long(), b.long()
        return ((a << b) + (a >> b)).double()
    f = sg.compile(fn)
    a, b = np.array([7.0, -7, 10, 3, 5, -9]), np.array([1.0, 2, 64, -1, 70, 63])
    want = fn(sg.tensor(a), sg.tensor(b))
    for _ in range(3):                          # the numpy code, then the numba kernel
        np.testing.assert_array_equal(np.asarray(f(a, b)), want.numpy())
