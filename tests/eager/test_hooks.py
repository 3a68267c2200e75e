"""Tensor hooks, post-accumulate hooks and nn.Module backward hooks, each run in symgrad and in torch and compared.

A hook on a non-leaf tensor splits the eager backward there (the hook's result seeds the rest); graphs without
hooks keep the one-program path. Also: ``create_graph`` gradients that are constant keep torch's grad_fn.
"""
from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_same_error, grad_fn_name
from conftest import compare_libs as compare

import symgrad as sg
from symgrad.eager import autograd as engine

LIBS = pytest.mark.parametrize("lib", [sg, torch], ids=["symgrad", "torch"])


def _plain(v: Any) -> Any:
    """Tensors as (values, grad_fn name) so logs of both libraries compare with ==."""
    if isinstance(v, (sg.Tensor, torch.Tensor)):
        return (np.round(np.asarray(v.detach().numpy(), dtype=np.float64), 5).tolist(), grad_fn_name(v))
    if isinstance(v, (tuple, list)):
        return type(v)(_plain(e) for e in v)
    return v


# ---------------------------------------------------------------------------- tensor hooks

def test_hooks_on_leaf_and_non_leaf_replace_the_gradient():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 2
        h.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: g + 1)
        (h ** 2).sum().backward()
        return x.grad
    compare(f)


@pytest.mark.parametrize("retain_first", [True, False])
def test_retain_grad_sees_the_hooked_value_in_either_order(retain_first: bool):
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        if retain_first:
            h.retain_grad()
        h.register_hook(lambda g: g * 10)
        if not retain_first:
            h.retain_grad()
        (h * h).sum().backward()
        b = x.exp()
        b.retain_grad()
        b.register_hook(lambda g: g.clamp(min=0))
        (b * lib.tensor([1.0, -1.0])).sum().backward()
        return h.grad, b.grad, x.grad
    compare(f)


def test_hook_on_the_root_and_on_a_tensor_used_several_times():
    def f(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()
        y.register_hook(lambda g: g * 2)
        y.backward()
        first = x.grad.clone()
        x.grad = None
        h = x * 2
        h.register_hook(lambda g: log.append(_plain(g)))
        (h * h + h.exp()).sum().backward()
        x.register_hook(lambda g: log.append(_plain(g)))
        (x * x + x.exp()).sum().backward()
        return first, x.grad, log
    compare(f)


def test_hooks_run_in_registration_order_each_on_the_previous_result():
    def f(lib):
        log = []
        w = lib.tensor(2.0, requires_grad=True)
        w.register_hook(lambda g: log.append(("first", g.item())))
        w.register_hook(lambda g: g * 3)
        w.register_hook(lambda g: log.append(("third", g.item())))
        (w ** 3).backward()
        h = w * 2
        h.register_hook(lambda g: g * 2)
        h.register_hook(lambda g: log.append(("h", g.item())))
        h.backward()
        return log, w.grad
    compare(f)


def test_hook_order_across_the_graph_matches_torch():
    def f(lib):
        log = []

        def tag(name):
            return lambda g: log.append((name, _plain(g)))

        w = lib.tensor([2.0, 3.0], requires_grad=True)
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        w.register_hook(tag("w"))
        x.register_hook(tag("x"))
        h = x.exp()
        h.register_hook(tag("h"))
        k = h * 2
        k.register_hook(tag("k"))
        (k * w).sum().backward()
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([0.5, 0.5], requires_grad=True)
        a.register_hook(tag("a"))
        b.register_hook(tag("b"))
        m = a * b
        m.register_hook(tag("m"))
        n = m.sin() + a
        n.register_hook(tag("n"))
        (n * b).sum().backward()
        return log, x.grad, w.grad, a.grad, b.grad
    compare(f)


def test_remove_handle_and_its_repr():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        hd = x.register_hook(lambda g: g * 100)
        hd.remove()
        hd.remove()
        h = x * 2
        hh = h.register_hook(lambda g: g * 10)
        hh.remove()
        with x.register_hook(lambda g: g * 7):
            pass
        (h * x).sum().backward()
        return x.grad, re.sub("0x[0-9a-f]+", "0x", repr(hd))
    compare(f)


@pytest.mark.parametrize("bad", ["size", "dtype", "float", "named"])
def test_hook_results_are_checked_as_torch_checks_them(bad: str):
    def run(lib):
        def named(g):
            return lib.ones(3)
        hook = {"size": lambda g: lib.ones(3), "dtype": lambda g: g.double(), "float": lambda g: 3.0,
                "named": named}[bad]
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        h.register_hook(hook)
        h.sum().backward()
    assert_same_error(lambda: run(sg), lambda: run(torch))

    def run_leaf(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: lib.ones(3))
        x.sum().backward()
    assert_same_error(lambda: run_leaf(sg), lambda: run_leaf(torch))


def test_registering_hooks_where_torch_refuses():
    assert_same_error(lambda: sg.tensor([1.0]).register_hook(lambda g: g),
                      lambda: torch.tensor([1.0]).register_hook(lambda g: g))
    assert_same_error(lambda: sg.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None),
                      lambda: torch.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None))
    assert_same_error(lambda: (sg.ones(1, requires_grad=True) * 2).register_post_accumulate_grad_hook(print),
                      lambda: (torch.ones(1, requires_grad=True) * 2).register_post_accumulate_grad_hook(print))


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    def f(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda t: log.append((_plain(t.grad), t is x)))
        x.register_hook(lambda g: g * 2)
        (x * 3).sum().backward()
        (x * 3).sum().backward()
        h = x * 2
        h.register_hook(lambda g: g + 1)
        (h * h).sum().backward(inputs=[x])
        return log, x.grad
    compare(f)


def test_autograd_grad_runs_the_hooks_of_the_differentiated_tensors():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 10)
        h = x * 2
        h.register_hook(lambda g: g + 1)
        gx = lib.autograd.grad((h * h).sum(), x, retain_graph=True)
        gh = lib.autograd.grad((h * h).sum(), h)
        k = x * 3
        k.register_hook(lambda g: g + 1)
        k.retain_grad()
        gk = lib.autograd.grad((k * k).sum(), x)
        return gx, gh, gk, k.grad, x.grad
    compare(f)


def test_backward_inputs_with_a_hooked_non_leaf():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        h.register_hook(lambda g: g * 5)
        h.retain_grad()
        (h * h).sum().backward(inputs=[h])
        return h.grad, x.grad
    compare(f)


def test_hook_results_under_create_graph_stay_differentiable():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        h = x * x
        modes = []
        h.register_hook(lambda g: (modes.append(lib.is_grad_enabled()), g * w)[1])
        g, = lib.autograd.grad(h.sum(), x, create_graph=True)
        g.sum().backward()
        k = x * 2
        k.register_hook(lambda g: modes.append(lib.is_grad_enabled()))
        k.sum().backward()
        v = lib.tensor([1.0, 2.0], requires_grad=True)
        v.register_hook(lambda g: (modes.append(lib.is_grad_enabled()), g * w)[1])
        (v * 2).sum().backward()
        return g, w.grad, x.grad, modes, v.grad
    compare(f)


def test_function_outputs_with_hooks():
    def f(lib):
        log = []

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                log.append("F backward")
                return g * 2, g * 3

        p = lib.tensor([1.0], requires_grad=True)
        q = lib.tensor([2.0], requires_grad=True)
        p.register_hook(lambda g: log.append(("p", g.item())))
        q.register_hook(lambda g: log.append(("q", g.item())))
        r = F.apply(p, q)
        r.register_hook(lambda g: (log.append(("r", g.item())), g * 10)[1])
        s = r * q
        s.register_hook(lambda g: log.append(("s", g.item())))
        s.sum().backward()
        return log, p.grad, q.grad
    compare(f)


def test_second_backward_through_a_split_graph_is_refused():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x.exp()
        h.register_hook(lambda g: g * 2)
        out = (h * x).sum()
        out.backward()
        out.backward()
    assert_same_error(lambda: run(sg), lambda: run(torch))

    def retained(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x.exp()
        h.register_hook(lambda g: g * 2)
        out = (h * x).sum()
        out.backward(retain_graph=True)
        out.backward()
        return x.grad
    compare(retained)


def test_graphs_without_hooks_keep_one_program_and_split_ones_are_cached(monkeypatch):
    calls = []
    real = engine.run_graph
    monkeypatch.setattr(engine, "run_graph", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    (x.exp() * x).sum().backward()
    assert len(calls) == 1
    derived = engine.STATS["derived"]
    for _ in range(3):
        calls.clear()
        h = x.exp()
        h.register_hook(lambda g: g * 2)
        (h * x).sum().backward()
        assert len(calls) == 2  # roots -> h, then h -> x
    assert engine.STATS["derived"] - derived <= 2  # both programs derived once, then reused


# ---------------------------------------------------------------------------- nn.Module backward hooks

def _model(lib):
    lin = lib.nn.Linear(2, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, 2.0], [-1.0, 0.5]]))
        lin.bias.copy_(lib.tensor([0.0, 1.0]))
    return lin, lib.nn.Tanh()


def test_module_full_backward_hooks_see_grad_input_and_grad_output():
    def f(lib):
        log = []
        lin, act = _model(lib)
        model = lib.nn.Sequential(lin, act)

        def report(module, grad_input, grad_output):
            log.append((type(module).__name__, _plain(grad_input), _plain(grad_output)))

        h1 = lin.register_full_backward_hook(report)
        h2 = act.register_full_backward_hook(report)
        lin.register_full_backward_pre_hook(lambda m, go: log.append(("pre", _plain(go))))
        x = lib.tensor([[0.5, -0.25]], requires_grad=True)
        out = model(x)
        out.sum().backward()
        first = (x.grad.clone(), lin.weight.grad.clone(), out)
        h1.remove()
        h2.remove()
        act.register_full_backward_hook(lambda m, gi, go: tuple(g / 2 for g in gi))
        lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        x.grad = None
        lin.weight.grad = None
        model(x).sum().backward()
        return log, first, x.grad, lin.weight.grad
    compare(f)


def test_module_hooks_with_several_inputs_outputs_and_repeated_use():
    def f(lib):
        log = []

        class Two(lib.nn.Module):
            def forward(self, a, b, k=1.0):
                return a * b * k, a - b

        def report(module, gi, go):
            log.append((type(module).__name__, _plain(gi), _plain(go)))

        t = Two()
        t.register_full_backward_hook(report)
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])
        p, q = t(a, b)
        (p.sum() + 0 * q.sum()).backward()
        p, q = t(a, b, 2.0)
        p.sum().backward()
        act = lib.nn.Tanh()
        act.register_full_backward_hook(report)
        act(act(a)).sum().backward()
        return log, a.grad, grad_fn_name(p)
    compare(f)


def test_module_hook_errors_and_the_no_input_requires_grad_case():
    def count(lib, pre):
        lin = lib.nn.Linear(2, 2)
        if pre:
            lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        else:
            lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        lin(lib.ones(1, 2, requires_grad=True)).sum().backward()
    for pre in (True, False):
        assert_same_error(lambda pre=pre: count(sg, pre), lambda pre=pre: count(torch, pre))

    def mixed(lib):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda *a: None)
        lin.register_backward_hook(lambda *a: None)
    assert_same_error(lambda: mixed(sg), lambda: mixed(torch))

    def no_input_grad(lib):
        log = []
        lin, _ = _model(lib)
        lin.register_full_backward_hook(lambda m, gi, go: log.append((_plain(gi), _plain(go))))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lin(lib.tensor([[0.5, -0.25]])).sum().backward()
        return log, [str(m.message) for m in w]
    compare(no_input_grad)


def test_global_module_backward_hooks():
    def f(lib):
        log = []
        h = lib.nn.modules.module.register_module_full_backward_hook(lambda m, gi, go: log.append(type(m).__name__))
        try:
            x = lib.tensor([1.0], requires_grad=True)
            lib.nn.Sequential(lib.nn.Tanh(), lib.nn.Sigmoid())(x).sum().backward()
        finally:
            h.remove()
        lib.nn.Tanh()(x).sum().backward()
        return log
    compare(f)


# ---------------------------------------------------------------------------- create_graph: constant gradients

@LIBS
def test_constant_create_graph_gradients_keep_torch_grad_fn(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    g1, = lib.autograd.grad((x ** 1).sum(), x, create_graph=True)
    g, = lib.autograd.grad((x ** 2).sum(), x, create_graph=True)
    g2, = lib.autograd.grad(g.sum(), x, create_graph=True)
    g3, = lib.autograd.grad((x * 2).sum(), x, create_graph=True)
    z, = lib.autograd.grad(g1.sum(), x)
    assert [grad_fn_name(t) for t in (g1, g2, g3)] == ["MulBackward0", "MulBackward0", None]
    assert g1.tolist() == [1.0, 1.0] and g2.tolist() == [2.0, 2.0] and z.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------- hooks on grad_fn nodes

def test_grad_fn_hooks_and_prehooks():
    def f(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        y = h * 3
        y.grad_fn.register_hook(lambda gi, go: log.append(("post", _plain(gi), _plain(go))))
        y.grad_fn.register_prehook(lambda go: log.append(("pre", _plain(go))))
        y.register_hook(lambda g: log.append(("tensor", _plain(g))))
        y.sum().backward()
        first = x.grad.clone()
        x.grad = None
        y = (x * 2) * x  # two gradients for x, reported separately
        y.grad_fn.register_hook(lambda gi, go: (log.append(_plain(gi)), (gi[0] * 0 + 1, None))[1])
        y.sum().backward()
        second = x.grad.clone()
        x.grad = None
        y = x * 2 * x
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        removed = (x * 5).grad_fn.register_hook(lambda gi, go: (gi[0] * 100,))
        removed.remove()
        y.sum().backward()
        return log, first, second, x.grad
    compare(f)


def test_accumulate_grad_hooks_run_around_the_accumulation():
    def f(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        acc = (x * 2).grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append(("acc pre", _plain(go))))
        acc.register_hook(lambda gi, go: log.append(("acc post", _plain(gi), _plain(go))))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post acc", _plain(t.grad))))
        x.register_hook(lambda g: log.append(("tensor", _plain(g))))
        (x * 2).sum().backward()
        g = lib.autograd.grad((x * 2).sum(), x)  # autograd.grad runs no AccumulateGrad node
        return log, g, x.grad
    compare(f)


@pytest.mark.parametrize("bad", ["count_post", "count_pre", "not_tuple", "size", "none"])
def test_grad_fn_hook_results_are_checked(bad: str):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        if bad == "count_post":
            y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
        elif bad == "count_pre":
            y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        elif bad == "not_tuple":
            y.grad_fn.register_prehook(lambda go: go[0])
        elif bad == "size":
            y.grad_fn.register_hook(lambda gi, go: (lib.ones(3), None))
        else:
            y.grad_fn.register_hook(lambda gi, go: (gi[0], lib.ones(1)))
        y.sum().backward()
    assert_same_error(lambda: run(sg), lambda: run(torch))


def test_programs_are_keyed_by_where_the_backward_starts():
    def f(lib):
        out = []
        for k in range(2):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            a = x * 2
            b = a * 2
            lib.autograd.backward([b * 2, (a, b)[k]], [lib.ones(2), lib.ones(2)])
            out.append(x.grad)
        return out
    compare(f)
