"""Formulas: the seed's gradient, naming, constants, rendering, budgets."""
from __future__ import annotations

import sympy as sp

import symgrad as sg


def test_seed_gradient_formula_is_short_and_right():
    x = sg.ones(2, 2, requires_grad=True)
    out = (3 * (x + 2) ** 2).mean()
    f = sg.grad_formula(out, x)
    assert len(str(f)) <= len("3*x/2 + 3")
    xs = f.symbols["x"]
    assert sp.simplify(f.expr - (3 * xs / 2 + 3)) == 0
    assert f.expr.subs(xs, 1) == sp.Rational(9, 2)
    assert str(sg.formula(out)) == "mean(3*(x + 2)**2)"


def test_renderings():
    x = sg.ones(2, 2, requires_grad=True)
    out = (3 * (x + 2) ** 2).mean()
    f = sg.grad_formula(out, x)
    assert f.latex() == r"\frac{3 x}{2} + 3"
    assert "─" in f.pretty()
    assert r"\operatorname{mean}" in sg.formula(out).latex()


def test_names_explicit_variable_and_generated():
    a = sg.tensor([1.0, 2.0], requires_grad=True, name="alpha")
    b = sg.tensor([3.0, 4.0], requires_grad=True)
    assert str(sg.formula(a * b)) == "alpha*b"
    assert str(sg.formula(sg.tensor([1.0], requires_grad=True) * 2)) == "2*t0"


def test_grad_formula_after_backward_accumulates_and_zero_resets():
    x = sg.ones(2, 2, requires_grad=True)
    out = (3 * (x + 2) ** 2).mean()
    out.backward()
    assert str(sg.grad_formula(x)) == "3*x/2 + 3"
    x.sum().backward()
    assert str(sg.grad_formula(x)) == "3*x/2 + 4"
    x.grad.data.zero_()
    x.sum().backward()
    assert str(sg.grad_formula(x)) == "1"


def test_no_grad_values_are_marked_constants():
    x = sg.tensor(1.0, requires_grad=True)
    y1 = x ** 2
    with sg.no_grad():
        y2 = x ** 3
    y3 = y1 + y2
    assert str(sg.formula(y3)) == "const(y2) + x**2"
    assert r"\overline{y_{2}}" in sg.formula(y3).latex()
    assert str(sg.grad_formula(y3, x)) == "2*x"
    d = x.detach()
    assert str(sg.grad_formula((d * x).sum(), x)) == "const(x)"  # detach() shares x's storage: x held constant


def test_reductions_are_explicit_and_where_is_piecewise():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = sg.tensor([[1.0], [2.0]], requires_grad=True)
    s = (sg.sin(x) * sg.exp(-y ** 2)).sum()
    assert str(sg.grad_formula(s, x)) == "sum(exp(-y**2), dim=(0,))*cos(x)"
    w = sg.where(x > 0, sg.sqrt(x), 0.0).sum()
    assert "Piecewise" in str(sg.grad_formula(w, x))


def test_deep_graph_prints_fast_with_definitions():
    a = sg.tensor([0.5, 1.0], requires_grad=True)
    h = a
    for _ in range(200):
        h = sg.sin(h) * sg.cos(a) + h * 0.5
    f = sg.formula(h.sum())
    g = sg.grad_formula(h.sum(), a, simplify=True)
    assert len(f.definitions) > 10
    assert "a" in str(g)


def test_formula_equality_with_sympy():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    f = sg.grad_formula((x * sg.sin(x)).sum(), x)
    xs = f.symbols["x"]
    assert f == xs * sp.cos(xs) + sp.sin(xs)
