"""``autograd.Function`` against torch (values, gradients, grad_fn names and reprs, ctx semantics, error texts),
and its symbolic side: a backward written in sg ops prints as a formula, compiles and differentiates again.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import sympy as sp
import torch
from conftest import assert_close, assert_same_error, grad_fn_name
from conftest import compare_libs as compare

import symgrad as sg
from symgrad.core.errors import TracingError

LIBS = pytest.mark.parametrize("lib", [sg, torch], ids=["symgrad", "torch"])


def _plain(v: Any) -> Any:
    if isinstance(v, (sg.Tensor, torch.Tensor)):
        return (np.round(np.asarray(v.detach().numpy(), dtype=np.float64), 6).tolist(), grad_fn_name(v),
                v.requires_grad)
    if isinstance(v, (tuple, list)):
        return type(v)(_plain(e) for e in v)
    return v


def _masked(s: str) -> str:
    return re.sub("0x[0-9a-f]+", "0x", s)


def legendre(lib: Any) -> type:
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x ** 2 - 1)

    return LegendrePolynomial3


def my_exp(lib: Any) -> type:
    class MyExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    return MyExp


# ---------------------------------------------------------------------------- eager, against torch

def test_values_gradients_grad_fn_names_and_reprs():
    def f(lib):
        P3 = legendre(lib)
        x = lib.tensor([-1.0, -0.5, 0.0, 0.5, 1.0], dtype=lib.float64, requires_grad=True)
        y = P3.apply(x)
        fn = y.grad_fn
        y.sum().backward()
        nxt = [type(n).__name__ for n, _ in fn.next_functions]
        return (y, x.grad, type(fn).__name__, fn.name(), _masked(repr(fn)), _masked(str(y)), nxt, fn.metadata,
                _masked(repr(type(fn))))
    compare(f)


def test_ctx_attributes_non_tensor_arguments_and_needs_input_grad():
    def f(lib):
        log = []

        class ScaledAdd(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, alpha):
                ctx.alpha = alpha
                return a + alpha * b

            @staticmethod
            def backward(ctx, grad):
                log.append(ctx.needs_input_grad)
                return (grad if ctx.needs_input_grad[0] else None,
                        grad * ctx.alpha if ctx.needs_input_grad[1] else None, None)

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = lib.tensor([3.0, 4.0])
        out = ScaledAdd.apply(a, b, 0.5)
        out.sum().backward()
        out2 = ScaledAdd.apply(a, c, 2.0)
        (out2 * out2).sum().backward()
        nf = [None if n is None else type(n).__name__ for n, _ in out2.grad_fn.next_functions]
        return out, a.grad, b.grad, log, nf
    compare(f)


def test_saved_tensors_are_freed_by_backward():
    def second(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        o = legendre(lib).apply(x)
        o.sum().backward()
        o.sum().backward()
    assert_same_error(lambda: second(sg), lambda: second(torch))

    def read_after(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        o = legendre(lib).apply(x)
        fn = o.grad_fn
        before = fn.saved_tensors[0] is x
        o.sum().backward()
        return before, fn.saved_tensors
    assert_same_error(lambda: read_after(sg), lambda: read_after(torch))

    def retained(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        s = legendre(lib).apply(x).sum()
        s.backward(retain_graph=True)
        s.backward()
        return x.grad

    def unsaved(lib):  # a Function that saved nothing can run backward twice, as in torch
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        s = Twice.apply(x).sum()
        s.backward()
        s.backward()
        return x.grad
    compare(retained)
    compare(unsaved)


def test_saved_tensors_modified_in_place():
    def saved_input(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 1
        o = legendre(lib).apply(b)
        b.add_(1)
        o.sum().backward()
    assert_same_error(lambda: saved_input(sg), lambda: saved_input(torch))

    def saved_output(lib):
        x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        y = my_exp(lib).apply(x)
        y.mul_(2)
        y.sum().backward()
    assert_same_error(lambda: saved_output(sg), lambda: saved_output(torch))


def _bad(lib: Any, kind: str) -> None:
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, k, x, y):
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            return {"count": (g,), "extra": (None, g, g, g), "position": (g, g, g), "type": (None, 3.0, None),
                    "shape": (None, g, lib.ones(5)), "list": [None, g, g]}[kind]

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    MyFn.apply(2.0, x, x).sum().backward()


@pytest.mark.parametrize("kind", ["count", "extra", "position", "type", "shape", "list"])
def test_wrong_gradients_raise_torch_errors(kind: str):
    assert_same_error(lambda: _bad(sg, kind), lambda: _bad(torch, kind))


def test_trailing_nones_broadcast_and_dtype_of_gradients():
    def f(lib):
        class Loose(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, s):
                return x * 2 + s

            @staticmethod
            def backward(ctx, g):
                return g.expand(3, 2).double(), lib.ones(1), None, None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        s = lib.tensor(1.0, requires_grad=True)
        Loose.apply(x, s).sum().backward()
        return x.grad, s.grad
    compare(f)


def test_several_outputs_non_differentiable_and_materialized_grads():
    def f(lib):
        log = []

        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                i = x * 3
                ctx.mark_non_differentiable(i)
                return x * 2, x * x, i, 7

            @staticmethod
            def backward(ctx, ga, gb, gi, g7):
                log.append(_plain((ga, gb, gi, g7)))
                (x,) = ctx.saved_tensors
                return ga * 2 + gb * 2 * x

        class Lazy(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                log.append((g1 is None, g2 is None))
                return g1 if g2 is None else g2

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b, i, seven = Split.apply(x)
        (a.exp() + b).sum().backward()
        g1 = x.grad.clone()
        x.grad = None
        a, b, i, seven = Split.apply(x)
        b.sum().backward()
        p, q = Lazy.apply(x)
        p.sum().backward()
        return a, b, i, seven, g1, x.grad, log, a.grad_fn is b.grad_fn, i.grad_fn
    compare(f)


def test_mark_dirty_and_returning_inputs():
    def f(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class Ident(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        xx = lib.tensor([1.0, 2.0], requires_grad=True)
        w = xx.clone()
        r = Double.apply(w)
        same = r is w
        r.sum().backward()
        g = xx.grad.clone()
        o = Ident.apply(xx)
        o.sum().backward()
        return r, same, grad_fn_name(w), g, o, o is xx, xx.grad
    compare(f)

    def leaf(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        Double.apply(lib.tensor([1.0], requires_grad=True))
    assert_same_error(lambda: leaf(sg), lambda: leaf(torch))


def test_setup_context_style_kwargs_and_defaults():
    def f(lib):
        log = []

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                log.append((len(inputs), inputs[1], _plain(output)))
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None

        class Kw(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k=2.0):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g * 2, None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a = Scale.apply(x)
        b = Scale.apply(x, k=5.0)
        (a + b).sum().backward()
        c = Kw.apply(x, k=3.0)
        return a, b, c, x.grad, log
    compare(f)


def test_once_differentiable():
    def make(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x

        return Sq

    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        g, = lib.autograd.grad(make(lib).apply(x).sum(), x, create_graph=True)
        gw = lib.ones(2, requires_grad=True)
        h, = lib.autograd.grad(make(lib).apply(x), x, gw, create_graph=True)
        return g, h, h.grad_fn.name()
    compare(f)

    def twice(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h, = lib.autograd.grad(make(lib).apply(x), x, lib.ones(2, requires_grad=True), create_graph=True)
        h.sum().backward()
    assert_same_error(lambda: twice(sg), lambda: twice(torch))


def test_create_graph_differentiates_the_backward_again():
    def f(lib):
        x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        y = my_exp(lib).apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        g2, = lib.autograd.grad(g.sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        p = legendre(lib).apply(x)
        gp, = lib.autograd.grad(p.sum(), x, create_graph=True)
        gp2, = lib.autograd.grad(gp.sum(), x)
        return g, g2, g3, gp, gp2
    compare(f)


def test_no_grad_inputs_not_requiring_grad_and_direct_calls():
    def f(lib):
        log = []

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                log.append((ctx.needs_input_grad, lib.is_grad_enabled()))
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            a = F.apply(x)
        b = F.apply(x.detach())
        c = F.apply(x)
        direct = c.grad_fn.apply(lib.ones(2))
        return a, b, c, direct, log
    compare(f)


def test_instantiation_and_missing_methods():
    def call(lib):
        class Old(lib.autograd.Function):
            pass
        with pytest.warns(DeprecationWarning):
            obj = Old()
        obj(lib.ones(1))
    assert_same_error(lambda: call(sg), lambda: call(torch))
    assert_same_error(lambda: sg.autograd.Function.apply(sg.ones(1)), lambda: torch.autograd.Function.apply(
        torch.ones(1)))

    def no_backward(lib):
        class NoBack(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
        NoBack.apply(lib.ones(1, requires_grad=True)).sum().backward()
    assert_same_error(lambda: no_backward(sg), lambda: no_backward(torch))

    def save_number(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, k, x):
                ctx.save_for_backward(k)
                return x * k
        Bad.apply(2.0, lib.ones(1, requires_grad=True))
    assert_same_error(lambda: save_number(sg), lambda: save_number(torch))


def test_functions_train_like_torch():
    def f(lib):
        P3 = legendre(lib)
        xs = lib.linspace(-1, 1, 20, dtype=lib.float64)
        target = 0.3 + 0.8 * (0.5 * (5 * xs ** 3 - 3 * xs))
        a = lib.tensor(0.0, dtype=lib.float64, requires_grad=True)
        b = lib.tensor(0.1, dtype=lib.float64, requires_grad=True)
        for _ in range(20):
            loss = ((a + b * P3.apply(xs * b) - target) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                a -= 0.05 * a.grad
                b -= 0.05 * b.grad
                a.grad.zero_()
                b.grad.zero_()
        return a, b, loss
    compare(f)


# ---------------------------------------------------------------------------- symbolic

def test_grad_formula_of_a_function_and_of_the_accumulated_grad():
    P3 = legendre(sg)
    x = sg.tensor([0.3, -0.7], dtype=sg.float64, requires_grad=True)
    y = P3.apply(x)
    assert str(sg.formula(y)) == "LegendrePolynomial3(x)"
    assert sg.grad_formula(y.sum(), x).expr == sp.Rational(15, 2) * sg.grad_formula(y.sum(), x).symbols["x"] ** 2 \
        - sp.Rational(3, 2)
    y.sum().backward()
    assert str(sg.grad_formula(x)) == "15*x**2/2 - 3/2"


def test_compile_over_apply_value_gradient_formulas_and_hessian():
    P3 = legendre(sg)

    @sg.compile
    def f(x):
        return P3.apply(x).sum()

    xv = np.array([0.3, -0.7])
    assert f(xv) == pytest.approx(float((0.5 * (5 * xv ** 3 - 3 * xv)).sum()), rel=1e-14)
    np.testing.assert_allclose(sg.grad(f)(xv), 1.5 * (5 * xv ** 2 - 1), rtol=1e-14)
    np.testing.assert_allclose(sg.hessian(f)(xv), np.diag(15 * xv), rtol=1e-14, atol=1e-15)
    assert str(sg.grad(f).formulas(xv)) == "f(x) = sum(LegendrePolynomial3(x))\ndf/dx = 15*x**2/2 - 3/2"
    t = torch.tensor(xv, requires_grad=True)
    legendre(torch).apply(t).sum().backward()
    x = sg.tensor(xv, requires_grad=True)
    out = f(x)
    out.backward()
    assert grad_fn_name(out) == "CompiledFunctionBackward"
    assert_close(x.grad, t.grad)


def test_compiled_function_with_several_outputs_and_constants():
    class Lin(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, k):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * w * k, x + w

        @staticmethod
        def backward(ctx, ga, gb):
            x, w = ctx.saved_tensors
            return ga * w * ctx.k + gb, ga * x * ctx.k + gb, None

    @sg.compile
    def f(x, w):
        a, b = Lin.apply(x, w, 3.0)
        return (a * b).sum()

    xv, wv = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    gx, gw = sg.grad(f, argnums=(0, 1))(xv, wv)
    tx, tw = torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    ((tx * tw * 3) * (tx + tw)).sum().backward()
    assert_close(gx, tx.grad.numpy())
    assert_close(gw, tw.grad.numpy())


def test_a_numeric_backward_works_eagerly_and_refuses_tracing():
    class ViaNumpy(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return sg.tensor(2 * x.detach().numpy() * g.numpy())

    x = sg.tensor([1.0, 2.0], requires_grad=True)
    ViaNumpy.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    with pytest.raises(TracingError, match="backward of autograd.Function ViaNumpy cannot be traced: it runs eagerly "
                                           "as a numeric rule"):
        sg.grad_formula(ViaNumpy.apply(x).sum(), x)

    @sg.compile
    def f(x):
        return ViaNumpy.apply(x).sum()

    assert f(np.array([1.0, 2.0])) == 5.0  # the forward traces
    with pytest.raises(TracingError, match=r"numpy\(\) needs a concrete value"):
        sg.grad(f)(np.array([1.0, 2.0]))

    class Once(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @sg.autograd.function.once_differentiable
        def backward(ctx, g):
            return g * 2

    Once.apply(x).sum().backward()
    with pytest.raises(TracingError, match="marked @once_differentiable: it is a numeric rule"):
        sg.grad_formula(Once.apply(x).sum(), x)


def test_forward_mode_through_a_function():
    P3 = legendre(sg)
    xv = np.array([0.3, -0.7])
    val, tan = sg.jvp(lambda x: P3.apply(x), (xv,), (np.ones(2),))
    np.testing.assert_allclose(tan, 1.5 * (5 * xv ** 2 - 1), rtol=1e-14)


def test_inputs_that_depend_on_each_other_and_chained_functions():
    def f(lib):
        class Mix(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a

        x = lib.tensor([0.5, -1.0], requires_grad=True)
        m = x.exp()
        out = Mix.apply(m, m * 2)  # the second input lies above the first
        out2 = Mix.apply(my_exp(lib).apply(out), x)
        (out2 * out).sum().backward()
        g1 = x.grad.clone()
        x.grad = None
        Mix.apply(x, x).sum().backward()  # one tensor for both inputs
        return out, out2, g1, x.grad
    compare(f)
