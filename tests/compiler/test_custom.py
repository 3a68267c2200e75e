"""sg.custom_op (elementwise ops from a SymPy form) and sg.custom_rule (explicit VJP / JVP rules).

Oracles: torch's own functions (softplus, logsigmoid, hypot, leaky_relu) and torch.autograd.Function
classes with the same rule, float32 and float64; finite differences where torch has no twin.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sympy as sp
import torch
from conftest import FLOAT_DTYPES, assert_close, grad_fn_name, leaf_pair, numpy_of

import symgrad as sg
from symgrad.compiler.custom import CustomRule, is_custom

softplus = sg.custom_op("t_softplus", lambda x, beta=1: sp.log(1 + sp.exp(beta * x)) / beta)
sp_leaky = sg.custom_op("t_leaky", lambda x, slope=0.01: sp.Piecewise((x, x > 0), (slope * x, True)),
                        grad_fn="LeakyReluBackward0")
hypot = sg.custom_op("t_hypot", lambda x, y: sp.sqrt(x ** 2 + y ** 2), partials=lambda x, y, out: [x / out, y / out])
shown = sg.custom_op("t_shown", lambda x: x * sp.exp(-x), display="form")

CALLS = {"n": 0}


def _counted(x: np.ndarray) -> np.ndarray:
    CALLS["n"] += 1
    return x * x * x


cube = sg.custom_op("t_cube", lambda x: x ** 3, numpy=_counted)


@sg.custom_rule(vjp=lambda g, out, x: (g * (1 - out ** 2),))
def my_tanh(x: Any) -> Any:
    return sg.tanh(x)


@sg.custom_rule(jvp=lambda t, out, x: t * (1 - out ** 2))
def jvp_tanh(x: Any) -> Any:
    return sg.tanh(x)


@sg.custom_rule(vjp=lambda g, out, x: (g,))
def straight_through(x: Any) -> Any:
    """clamp forward, identity backward (a straight-through estimator)."""
    return x.clamp(-0.5, 0.5)


@sg.custom_rule(vjp=lambda g, out, x, y, k, scale=1.0: (g * y * k * scale, g * x * k * scale, None))
def scaled_mul(x: Any, y: Any, k: float, scale: float = 1.0) -> Any:
    return x * y * k * scale


@sg.custom_rule(jvp=lambda tx, ty, out, x, y: tx * y + x * ty)
def jvp_mul(x: Any, y: Any) -> Any:
    return x * y


class MyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = torch.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * (1 - out ** 2)


class StraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.clamp(-0.5, 0.5)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g


def _arr(shape: tuple, seed: int = 0, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# ---------------------------------------------------------------------------- custom_op: eager

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_custom_op_value_grad_and_grad_fn_match_torch(dtype: str):
    x, t = leaf_pair(_arr((3, 4)), dtype)
    y, ty = softplus(x), torch.nn.functional.softplus(t)
    assert grad_fn_name(y) == "TSoftplusBackward0" and y.dtype is x.dtype
    assert_close(y, ty)
    g = _arr((3, 4), 1).astype(dtype)
    y.backward(sg.tensor(g))
    ty.backward(torch.tensor(g))
    assert_close(x.grad, t.grad)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_custom_op_attrs_and_torch_grad_fn_name(dtype: str):
    x, t = leaf_pair(_arr((5,), 2), dtype)
    y, ty = softplus(x, beta=2), torch.nn.functional.softplus(t, beta=2)
    assert_close(y, ty)
    y.sum().backward()
    ty.sum().backward()
    assert_close(x.grad, t.grad)
    x2, t2 = leaf_pair(np.array([-1.5, -0.3, 0.4, 2.0]), dtype)
    z, tz = sp_leaky(x2, slope=0.2), torch.nn.functional.leaky_relu(t2, 0.2)
    assert grad_fn_name(z) == grad_fn_name(tz) == "LeakyReluBackward0"
    assert_close(z, tz)
    (z * z).sum().backward()
    (tz * tz).sum().backward()
    assert_close(x2.grad, t2.grad)


def test_custom_op_broadcasts_and_promotes_like_builtin_ops():
    a = sg.tensor(_arr((2, 1, 3)).astype(np.float32), requires_grad=True)
    b = sg.tensor(_arr((4, 1), 1), requires_grad=True)  # float64
    ta, tb = torch.tensor(numpy_of(a), requires_grad=True), torch.tensor(numpy_of(b), requires_grad=True)
    y, ty = hypot(a, b), torch.hypot(ta.double(), tb)
    assert y.shape == (2, 4, 3) and y.dtype is sg.float64
    assert_close(y, ty)
    y.sum().backward()
    ty.sum().backward()
    assert a.grad.dtype is sg.float32 and b.grad.shape == (4, 1)
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)
    i = sg.tensor([1, 2, 3])
    assert softplus(i).dtype is sg.float32  # integer inputs give the default float, as exp does
    assert_close(hypot(sg.tensor([3.0, 6.0]), 4), np.array([5.0, np.hypot(6.0, 4.0)], np.float32))
    with pytest.raises(RuntimeError, match="must match the size"):
        hypot(sg.ones(2, 3), sg.ones(4))


def test_custom_op_on_numbers_arrays_and_sympy():
    assert isinstance(softplus(0.5), float)
    assert softplus(0.5) == pytest.approx(np.log1p(np.exp(0.5)), rel=1e-15)
    assert softplus(1.0, beta=3) == pytest.approx(np.log1p(np.exp(3.0)) / 3, rel=1e-15)
    arr = np.array([0.1, 2.0], np.float32)
    out = softplus(arr)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.log1p(np.exp(arr)), rtol=1e-6)
    assert softplus(np.array([1, 2])).dtype == np.float64
    np.testing.assert_allclose(hypot(np.array([3.0, 5.0]), 4.0), [5.0, np.hypot(5.0, 4.0)], rtol=1e-15)
    z = sp.Symbol("z")
    assert softplus(z) == sp.log(1 + sp.exp(z))
    assert softplus(z, beta=2) == sp.log(1 + sp.exp(2 * z)) / 2
    assert softplus.form() == sp.log(1 + sp.exp(sg.ops.A[0]))


def test_custom_op_uses_its_numpy_eval():
    CALLS["n"] = 0
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = cube(x)
    assert CALLS["n"] == 1
    assert_close(y, np.array([1.0, 8.0], np.float32))
    assert cube(3.0) == 27.0 and CALLS["n"] == 2
    y.sum().backward()
    assert_close(x.grad, np.array([3.0, 12.0], np.float32))


def test_custom_op_second_derivative_matches_torch():
    arr = _arr((6,), 3)
    x, t = leaf_pair(arr, "float64")
    y = (softplus(x) * hypot(x, 1.5)).sum()
    ty = (torch.nn.functional.softplus(t) * torch.hypot(t, torch.tensor(1.5, dtype=torch.float64))).sum()
    (gx,) = sg.autograd.grad(y, [x], create_graph=True)
    (tg,) = torch.autograd.grad(ty, [t], create_graph=True)
    assert_close(gx, tg)
    (hx,) = sg.autograd.grad((gx * gx).sum(), [x])
    (th,) = torch.autograd.grad((tg * tg).sum(), [t])
    assert_close(hx, th)


# ---------------------------------------------------------------------------- custom_op: compile

def _loss(x: Any, y: Any) -> Any:
    return (softplus(x, beta=2) * hypot(x, y) + shown(y)).sum()


def _torch_loss(x: Any, y: Any) -> Any:
    return (torch.nn.functional.softplus(x, beta=2) * torch.hypot(x, y) + y * torch.exp(-y)).sum()


def test_custom_op_compiles_to_numpy_and_numba_kernels():
    a, b = _arr((3, 4), 4), _arr((4,), 5)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tl = _torch_loss(ta, tb)
    tl.backward()
    vg = sg.value_and_grad(_loss, argnums=(0, 1))
    for _ in range(3):  # the first call runs the numpy kernel, the next ones the numba kernel
        value, (ga, gb) = vg(a, b)
        assert value == pytest.approx(tl.item(), rel=1e-12)
        assert_close(ga, ta.grad)
        assert_close(gb, tb.grad)
    src = vg.source(a, b, backend="numpy")
    assert "numpy.log(" in src and "numpy.sqrt(" in src
    assert "t_softplus(" in src  # the node comments name the op
    numba_src = vg.source(a, b, backend="numba")
    assert "numba.njit" in numba_src and "numpy.exp(" in numba_src
    f = sg.compile(_loss)
    assert f(a, b) == pytest.approx(tl.item(), rel=1e-12)
    f32 = f(a.astype(np.float32), b.astype(np.float32))
    assert f32.dtype == np.float32 and float(f32) == pytest.approx(tl.item(), rel=1e-5)


def test_custom_op_grad_of_grad_and_hessian_compiled():
    a = _arr((5,), 6)
    x = torch.tensor(a)

    def f(v: Any) -> Any:
        return (softplus(v) * sp_leaky(v, slope=0.3)).sum()

    def tf(v: Any) -> Any:
        return (torch.nn.functional.softplus(v) * torch.nn.functional.leaky_relu(v, 0.3)).sum()

    assert_close(sg.hessian(f)(a), torch.autograd.functional.hessian(tf, x))
    gg = sg.grad(lambda v: (sg.grad(f)(v) ** 2).sum())
    v = x.clone().requires_grad_(True)
    (tg,) = torch.autograd.grad(tf(v), [v], create_graph=True)
    (tgg,) = torch.autograd.grad((tg ** 2).sum(), [v])
    assert_close(gg(a), tgg)


# ---------------------------------------------------------------------------- custom_op: formulas

def test_custom_op_formulas():
    x = sg.tensor([0.5, 1.0], requires_grad=True)
    y = softplus(x).sum()
    f = sg.formula(y)
    assert str(f) == "sum(t_softplus(x))"
    assert r"\operatorname{t\_softplus}" in f.latex()
    xs = f.symbols["x"]
    (call,) = f.expr.atoms(softplus.function())
    assert call.doit() == sp.log(1 + sp.exp(xs))
    # SymPy differentiates the displayed call with the op's own partials
    assert sp.simplify(sp.diff(call, xs) - sp.exp(xs) / (1 + sp.exp(xs))) == 0
    assert sp.simplify(sg.grad_formula(y, x).expr - sp.exp(xs) / (1 + sp.exp(xs))) == 0
    assert str(sg.formula(softplus(x, beta=2))) == "t_softplus(x, beta=2)"
    assert str(sg.formula(shown(x))) == "x*exp(-x)"
    # partials written with the result print with the op's call
    h = hypot(x, 2.0).sum()
    assert str(sg.grad_formula(h, x)) == "x/t_hypot(x, 2)"
    assert sp.lambdify(xs, sg.formula(softplus(x)).expr, "numpy")(0.5) == pytest.approx(np.log1p(np.exp(0.5)))


# ---------------------------------------------------------------------------- custom_op: errors and registration

def test_custom_op_validates_its_definition():
    with pytest.raises(ValueError, match="cannot be printed as numpy code"):
        sg.custom_op("t_bad1", lambda x: sp.Function("g")(x))
    with pytest.raises(ValueError, match="needs math"):
        sg.custom_op("t_bad2", lambda x: sp.gamma(x))
    with pytest.raises(ValueError, match="not its arguments"):
        sg.custom_op("t_bad3", lambda x: x + sp.Symbol("y"))
    with pytest.raises(TypeError, match="SymPy expression"):
        sg.custom_op("t_bad4", lambda x: x > 0)
    with pytest.raises(ValueError, match="expected 2"):
        sg.custom_op("t_bad5", lambda x, y: x * y, partials=lambda x, y: [y])
    with pytest.raises(TypeError, match="partials of 't_bad6'"):
        sg.custom_op("t_bad6", lambda x: x, partials=lambda x, y, z: [1])
    with pytest.raises(ValueError, match="Python identifier"):
        sg.custom_op("not a name", lambda x: x)
    with pytest.raises(ValueError, match="built-in op"):
        sg.custom_op("exp", sp.exp)
    with pytest.raises(TypeError, match="nargs"):
        sg.custom_op("t_bad7", lambda *xs: sum(xs))
    assert "t_bad1" not in sg.ops.REGISTRY and "t_bad7" not in sg.ops.REGISTRY
    summed = sg.custom_op("t_sum3", lambda *xs: xs[0] + 2 * xs[1] + 3 * xs[2], nargs=3)
    assert_close(summed(sg.ones(2), sg.ones(2), sg.ones(2)), np.full(2, 6.0, np.float32))
    with pytest.raises(TypeError, match="takes 1 positional arguments but 2 were given"):
        softplus(sg.ones(2), sg.ones(2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        softplus(sg.ones(2), alpha=2)


def test_custom_op_registration_is_idempotent_for_one_definition():
    again = sg.custom_op("t_softplus", lambda x, beta=1: sp.log(1 + sp.exp(beta * x)) / beta)
    assert again is softplus  # re-running a notebook cell
    with pytest.raises(ValueError, match="different definition"):
        sg.custom_op("t_softplus", lambda x, beta=1: sp.log(1 + sp.exp(x)))
    assert is_custom("t_softplus") and is_custom(softplus.op) and not is_custom("exp")


# ---------------------------------------------------------------------------- custom_rule: eager

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rule", [my_tanh, jvp_tanh], ids=["vjp", "jvp"])
def test_custom_rule_matches_torch_function(rule: CustomRule, dtype: str):
    x, t = leaf_pair(_arr((3, 2), 7), dtype)
    y, ty = rule(x), MyTanh.apply(t)
    assert grad_fn_name(y) == {"my_tanh": "MyTanhBackward", "jvp_tanh": "JvpTanhBackward"}[rule.name]
    assert grad_fn_name(ty) == "MyTanhBackward"
    assert_close(y, ty)
    g = _arr((3, 2), 8).astype(dtype)
    (y * 2).backward(sg.tensor(g))
    (ty * 2).backward(torch.tensor(g))
    assert_close(x.grad, t.grad)
    assert x.grad.dtype is x.dtype


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_custom_rule_replaces_the_forward_derivative(dtype: str):
    arr = np.array([-2.0, -0.3, 0.2, 0.9])
    x, t = leaf_pair(arr, dtype)
    y, ty = straight_through(x), StraightThrough.apply(t)
    assert_close(y, ty)
    assert grad_fn_name(y) == grad_fn_name(ty) == "StraightThroughBackward"
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_close(x.grad, t.grad)  # 2 * clamp(x): non-zero where clamp's own derivative is 0
    assert abs(float(x.grad[0])) > 0
    assert straight_through.__doc__.startswith("clamp forward")


def test_custom_rule_second_derivative_through_its_output():
    """``out`` in the rule is the rule's own result: differentiating the VJP again goes through the rule."""
    arr = _arr((5,), 9)
    for rule in (my_tanh, jvp_tanh):
        x, t = leaf_pair(arr, "float64")
        (gx,) = sg.autograd.grad((rule(x) ** 3).sum(), [x], create_graph=True)
        (tg,) = torch.autograd.grad((MyTanh.apply(t) ** 3).sum(), [t], create_graph=True)
        assert_close(gx, tg)
        (hx,) = sg.autograd.grad(gx.sum(), [x])
        (th,) = torch.autograd.grad(tg.sum(), [t])
        assert_close(hx, th)


def test_custom_rule_non_tensor_arguments_are_part_of_the_graph_key():
    arr_x, arr_y = _arr((2, 3), 10), _arr((3,), 11)
    for k in (1.5, -2.0, 1.5):  # the same structure with another constant must not reuse a stale program
        for scale in (1.0, 3.0):
            x = sg.tensor(arr_x, requires_grad=True)
            y = sg.tensor(arr_y, requires_grad=True)
            out = scaled_mul(x, y, k, scale=scale)
            assert_close(out, arr_x * arr_y * k * scale)
            out.sum().backward()
            assert_close(x.grad, np.broadcast_to(arr_y * k * scale, (2, 3)))
            assert_close(y.grad, arr_x.sum(0) * k * scale)
    assert str(sg.formula(scaled_mul(x, y, 2.0, scale=3.0))) == "scaled_mul(x, y, 2, scale=3)"


def test_custom_rule_numpy_argument_is_a_constant_tensor():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    out = scaled_mul(x, np.array([3.0, 4.0]), 2.0)
    out.sum().backward()
    assert_close(x.grad, np.array([6.0, 8.0], np.float32))


def test_custom_rule_transposes_a_multi_input_jvp():
    a, b = _arr((2, 3), 12), _arr((3,), 13)
    x, tx = leaf_pair(a, "float64")
    y, ty = leaf_pair(b, "float64")
    jvp_mul(x, y).pow(2).sum().backward()
    (tx * ty).pow(2).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)
    # a constant tensor and a number among the arguments: no tangent for them (None for the number)
    def jvp(tx: Any, ty: Any, tk: Any, out: Any, x: Any, y: Any, k: float) -> Any:
        assert tk is None
        return (tx * y + x * ty) * k

    scaled = sg.custom_rule(jvp=jvp)(lambda x, y, k: x * y * k)
    x = sg.tensor(a, requires_grad=True)
    scaled(x, sg.tensor(b), 3.0).sum().backward()
    assert_close(x.grad, np.broadcast_to(3.0 * b, (2, 3)))
    assert_close(sg.grad(lambda u, w: scaled(u, w, 2.0).sum(), argnums=1)(a, b), 2.0 * a.sum(0))


def test_custom_rule_without_grad_runs_the_function():
    x = sg.tensor([0.5, 1.0])
    assert my_tanh(x).grad_fn is None
    with sg.no_grad():
        assert my_tanh(sg.tensor([0.5], requires_grad=True)).grad_fn is None
    assert_close(my_tanh(np.array([0.5])), np.tanh([0.5]))


def test_custom_rule_result_does_not_alias_its_input():
    @sg.custom_rule(vjp=lambda g, out, x: (g,))
    def ident(x: Any) -> Any:
        return x

    base = sg.tensor([1.0, 2.0], requires_grad=True)
    x = base * 1
    y = ident(x)
    assert y.grad_fn.name() == "IdentBackward"
    with sg.no_grad():
        y.add_(1)
    assert_close(x, np.array([1.0, 2.0], np.float32))


def test_custom_rule_defvjp_and_unique_op_names():
    @sg.custom_rule
    def cube_rule(x: Any) -> Any:
        return x ** 3

    with pytest.raises(RuntimeError, match="has no vjp or jvp rule"):
        cube_rule(sg.tensor([1.0], requires_grad=True))

    @cube_rule.defvjp
    def _(g: Any, out: Any, x: Any) -> Any:
        return (3 * g * x ** 2,)

    x = sg.tensor([2.0], requires_grad=True)
    cube_rule(x).backward(sg.ones(1))
    assert_close(x.grad, np.array([12.0], np.float32))

    @sg.custom_rule(vjp=lambda g, out, x: (g,))
    def cube_rule(x: Any) -> Any:  # noqa: F811 - the same name again: a new op
        return x

    assert cube_rule.op.name == "cube_rule_1" and cube_rule.name == "cube_rule"
    assert cube_rule(x).grad_fn.name() == "CubeRuleBackward"


# ---------------------------------------------------------------------------- custom_rule: errors

def test_custom_rule_validates_its_gradients_with_torch_messages():
    x = sg.tensor(_arr((2, 3)), requires_grad=True)

    def check(vjp: Any, match: str, exc: type = RuntimeError, *args: Any) -> None:
        rule = sg.custom_rule(vjp=vjp)(lambda x, *rest: x * 2)
        y = rule(x, *args)
        with pytest.raises(exc, match=match):
            y.sum().backward()

    check(lambda g, out, x: (g, g), r"returned an incorrect number of gradients \(expected 1, got 2\)")
    check(lambda g, out, x: (g.sum(0),), r"invalid gradient at index 0 - got \[3\] but expected shape compatible "
                                         r"with \[2, 3\]")
    check(lambda g, out, x, k: (g, g), "different than None at position 2", RuntimeError, 3.0)
    check(lambda g, out, x: (2.0,), "must be tensors or None", TypeError)
    check(lambda g, out, x: {"x": g}, "must return a tuple", TypeError)


def test_custom_rule_sums_broadcast_gradients_and_casts_dtype():
    rule = sg.custom_rule(vjp=lambda g, out, x: (g.double().expand(4, 3),))(lambda x: x * 1)
    x = sg.tensor(np.ones(3, np.float32), requires_grad=True)
    rule(x).backward(sg.ones(3))
    assert x.grad.dtype is sg.float32
    assert_close(x.grad, np.full(3, 4.0, np.float32))


def test_custom_rule_refuses_a_nonlinear_jvp_and_bad_outputs():
    bad = sg.custom_rule(jvp=lambda t, out, x: t * t)(lambda x: x * 1)
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="not linear in its tangents"):
        bad(x).sum().backward()
    pair = sg.custom_rule(vjp=lambda g, out, x: (g,))(lambda x: (x, x))
    with pytest.raises(TypeError, match="must return one tensor"):
        pair(x)
    with pytest.raises(TypeError, match="must be hashable"):
        scaled_mul(x, x, [1.0])
    with pytest.raises(TypeError, match="pass tensor arguments positionally"):
        scaled_mul(x, x, 1.0, scale=x)


# ------------------------------------------------------------------------- custom_rule: compile, formulas, transforms

def _rule_loss(x: Any) -> Any:
    return (my_tanh(x) * jvp_tanh(x) + straight_through(x)).sum()


def _torch_rule_loss(x: Any) -> Any:
    return (MyTanh.apply(x) * MyTanh.apply(x) + StraightThrough.apply(x)).sum()


def test_custom_rule_compiles_and_prints():
    a = _arr((7,), 14)
    t = torch.tensor(a, requires_grad=True)
    _torch_rule_loss(t).backward()
    g = sg.grad(_rule_loss)
    for _ in range(3):  # numpy kernel, then numba
        assert_close(g(a), t.grad)
    assert "numba.njit" in g.source(a, backend="numba")
    text = str(sg.compile(_rule_loss).formulas(a))
    assert "sum(jvp_tanh(x)*my_tanh(x) + straight_through(x))" in text
    assert "1 - my_tanh(x)**2" in text and "1 - jvp_tanh(x)**2" in text
    x = sg.tensor(a, requires_grad=True)
    assert str(sg.grad_formula(my_tanh(x).sum(), x)) == "1 - my_tanh(x)**2"


def test_custom_rule_under_transforms():
    a = _arr((4,), 15)
    t = torch.tensor(a)

    def tf(v: Any) -> Any:
        return (MyTanh.apply(v) ** 2 * v).sum()

    for rule in (my_tanh, jvp_tanh):
        def f(v: Any, rule: Any = rule) -> Any:
            return (rule(v) ** 2 * v).sum()
        assert_close(sg.hessian(f)(a), torch.autograd.functional.hessian(tf, t))
        v = np.linspace(-1, 1, 4)
        _, tangent = sg.jvp(f, (a,), (v,))
        _, t_tangent = torch.func.jvp(lambda z: (torch.tanh(z) ** 2 * z).sum(), (t,), (torch.tensor(v),))
        assert_close(tangent, t_tangent)
    # sparse Hessians through custom ops: the same values in the exact pattern
    def band(v: Any) -> Any:
        return (softplus(v[1:] - v[:-1]) * my_tanh(v[1:]) + jvp_tanh(v[:-1]) ** 2).sum()

    dense = sg.hessian(band)(np.linspace(-1, 1, 6))
    sparse = sg.hessian(band, sparse=True)(np.linspace(-1, 1, 6))
    assert_close(sparse.toarray(), dense)
    assert sparse.nnz == 16  # tridiagonal


def test_docs_examples_run():
    """The code blocks of docs/custom_ops.md run as written."""
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "custom_ops.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    ns: dict = {}
    for block in blocks:
        exec(compile(block, "docs/custom_ops.md", "exec"), ns)  # noqa: S102
    assert ns["softplus"](1.0) == pytest.approx(np.log1p(np.e), rel=1e-15)
    x = sg.tensor([0.5], requires_grad=True)
    assert grad_fn_name(ns["y"]) == "SoftplusBackward0"
    assert_close(ns["mytanh"](x), np.tanh([0.5]).astype(np.float32))
    assert_close(ns["jtanh"](x), np.tanh([0.5]).astype(np.float32))


def test_custom_rule_checks_in_place_changes_of_what_it_reads():
    reads_x = sg.custom_rule(vjp=lambda g, out, x: (g * (1 - sg.tanh(x) ** 2),))(lambda x: sg.tanh(x))
    x = sg.tensor([0.5, -1.0], requires_grad=True)
    h = x * 1
    y = reads_x(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    h2 = x * 1
    z = my_tanh(h2)  # reads only its own result: an in-place change of the input is fine (as in torch)
    h2.add_(1)
    z.sum().backward()
    assert_close(x.grad, (1 - np.tanh([0.5, -1.0]) ** 2).astype(np.float32))


def test_compiled_function_with_custom_ops_on_tensors_composes_with_backward():
    a = _arr((5,), 16)

    @sg.compile
    def f(v: Any) -> Any:
        return (softplus(v) * scaled_mul(v, v, 2.0) + my_tanh(v)).sum()

    t = torch.tensor(a, requires_grad=True)
    (torch.nn.functional.softplus(t) * t * t * 2.0 + MyTanh.apply(t)).sum().backward()
    for _ in range(2):
        x = sg.tensor(a, requires_grad=True)
        f(x).backward()
        assert_close(x.grad, t.grad)
