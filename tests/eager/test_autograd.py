"""Autograd semantics of the seed tutorial, each run in symgrad and in torch and compared.

backward() on a scalar and backward(v) on a non-scalar, accumulation into .grad and zeroing it
with x.grad.data.zero_(), detach, no_grad / enable_grad / set_grad_enabled (context managers and
decorators), x.data edits outside the graph, retain_grad, retain_graph and the second-backward
error, sg.autograd.grad (grad_outputs, allow_unused, several inputs and outputs) and create_graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_same_error, grad_fn_name

import symgrad as sg

LIBS = pytest.mark.parametrize("lib", [sg, torch], ids=["symgrad", "torch"])


def run_both(fn: Any) -> tuple[Any, Any]:
    return fn(sg), fn(torch)


def compare(fn: Any, **kw: Any) -> None:
    """``fn(lib)`` returns a tensor, a tuple of tensors / None / plain values; both libraries agree."""
    a, b = run_both(fn)
    _compare(a, b, **kw)


def _compare(a: Any, b: Any, **kw: Any) -> None:
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _compare(x, y, **kw)
    elif isinstance(b, torch.Tensor) or b is None:
        assert_close(a, b, **kw)
    else:
        assert a == b, (a, b)


# ---------------------------------------------------------------------------- the seed, step by step

def test_seed_mean_of_3_y_squared():
    def f(lib):
        x = lib.ones(2, 2, requires_grad=True)
        y = x + 2
        z = y * y * 3
        out = z.mean()
        out.backward()
        return x.grad, out, z, y.grad_fn is not None, x.grad_fn is None, x.is_leaf, y.is_leaf
    compare(f)
    x = sg.ones(2, 2, requires_grad=True)
    (3 * (x + 2) ** 2).mean().backward()
    assert x.grad.tolist() == [[4.5, 4.5], [4.5, 4.5]]


def test_seed_accumulation_and_zeroing():
    def f(lib):
        x = lib.ones(2, 2, requires_grad=True)
        out = (3 * (x + 2) ** 2).mean()
        out.backward()
        first = x.grad.clone()
        out2 = x.sum()
        out2.backward()
        second = x.grad.clone()
        out3 = x.sum()
        x.grad.data.zero_()
        out3.backward()
        return first, second, x.grad
    compare(f)
    x = sg.ones(2, 2, requires_grad=True)
    (3 * (x + 2) ** 2).mean().backward()
    x.sum().backward()
    assert x.grad.tolist() == [[5.5, 5.5], [5.5, 5.5]]


def test_seed_backward_with_weights():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = 2 * x
        z = y.view(2, 2)
        v = lib.tensor([[1.0, 0.1], [0.01, 0.001]], dtype=lib.float)
        z.backward(v)
        return x.grad, z, grad_fn_name(z)
    compare(f)


def test_seed_no_grad_block():
    def f(lib):
        x = lib.tensor(1.0, requires_grad=True)
        y1 = x ** 2
        with lib.no_grad():
            y2 = x ** 3
        y3 = y1 + y2
        y3.backward()
        return (x.requires_grad, y1.requires_grad, y2.requires_grad, y3.requires_grad, grad_fn_name(y1),
                grad_fn_name(y2), grad_fn_name(y3), x.grad, y3)
    compare(f)


def test_seed_data_edit_is_not_recorded():
    def f(lib):
        x = lib.ones(1, requires_grad=True)
        d = x.data
        flags = (d.requires_grad, d.is_leaf, d.grad_fn is None)
        y = 2 * x
        x.data *= 100
        y.backward()
        return flags, x, x.grad, y
    compare(f)


def test_seed_requires_grad_in_place():
    def f(lib):
        a = lib.tensor([[0.3, -1.2], [2.0, 0.5]])
        a = (a * 3) / (a - 1)
        before = a.requires_grad
        a.requires_grad_(True)
        b = (a * a).sum()
        b.backward()
        return before, a.requires_grad, grad_fn_name(b), a.grad, a.is_leaf
    compare(f)


# ---------------------------------------------------------------------------- backward details

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backward_of_a_scalar_equals_explicit_one(dtype: str):
    def f(lib):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=getattr(lib, dtype), requires_grad=True)
        y = (x.sin() * x).sum()
        y.backward(lib.tensor(1.0, dtype=getattr(lib, dtype)))
        g1 = x.grad.clone()
        x.grad = None
        (x.sin() * x).sum().backward()
        return g1, x.grad
    compare(f)


def test_backward_of_a_one_element_tensor_without_gradient():
    def f(lib):
        x = lib.tensor([2.0], requires_grad=True)
        (x * x).backward()
        return x.grad
    compare(f)


def test_backward_of_a_leaf_itself():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.backward(lib.tensor([3.0, 4.0]))
        return x.grad
    compare(f)


def test_gradient_argument_as_list_and_number_like_values():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        lib.autograd.backward([y], [lib.tensor([1.0, -1.0])])
        return x.grad
    compare(f)


def test_shared_subexpressions_and_leaf_used_several_times():
    def f(lib):
        x = lib.tensor([[0.5, 1.5], [-0.5, 2.0]], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        h = (x * w).tanh()
        out = (h * h + h.exp() * x - w.sum() * h.mean(0)).sum()
        out.backward()
        return x.grad, w.grad, out
    compare(f)


def test_gradients_flow_to_all_leaves_in_order_of_use():
    def f(lib):
        a = lib.tensor(2.0, requires_grad=True)
        b = lib.tensor(3.0, requires_grad=True)
        c = lib.tensor(4.0)
        (a * b + b * c + a ** 3).backward()
        return a.grad, b.grad, c.grad
    compare(f)


def test_leaf_not_in_graph_keeps_no_grad():
    def f(lib):
        a = lib.tensor(2.0, requires_grad=True)
        b = lib.tensor(3.0, requires_grad=True)
        (a * 2).backward()
        return a.grad, b.grad
    compare(f)


def test_zero_gradient_is_a_zero_tensor_not_none():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * 0).sum().backward()
        y = lib.tensor([1.0, 2.0], requires_grad=True)
        (y ** 0).sum().backward()
        return x.grad, y.grad
    compare(f)


def test_grad_dtype_and_shape_follow_the_leaf_through_broadcasting():
    def f(lib):
        x = lib.tensor([[1.0], [2.0]], requires_grad=True)
        y = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        (x * y).sum().backward()
        return x.grad, y.grad
    compare(f)


def test_accumulation_over_several_graphs_and_grad_none_reset():
    def f(lib):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        for k in range(3):
            (x * (k + 1)).pow(2).sum().backward()
        acc = x.grad.clone()
        x.grad = None
        (x * 2).sum().backward()
        return acc, x.grad
    compare(f)


def test_grad_zero_method_and_data_zero():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.sum().backward()
        x.grad.zero_()
        after_zero = x.grad.clone()
        (x * 5).sum().backward()
        return after_zero, x.grad
    compare(f)


# ---------------------------------------------------------------------------- detach and constants

def test_detach_is_a_constant_sharing_storage():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach()
        y = x * d
        y.sum().backward()
        return d.requires_grad, d.is_leaf, grad_fn_name(d), x.grad
    compare(f)
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    x.detach().mul_(10)
    assert x.tolist() == [10.0, 20.0]


def test_detach_in_place():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.detach_()
        return y.requires_grad, y.is_leaf, grad_fn_name(y)
    compare(f)


def test_mixing_detached_and_tracked_paths():
    def f(lib):
        x = lib.tensor([0.3, 0.7], dtype=lib.float64, requires_grad=True)
        y = x.exp()
        z = y * y.detach() + x.detach() * x
        z.sum().backward()
        return x.grad
    compare(f)


# ---------------------------------------------------------------------------- grad mode

def test_no_grad_as_decorator_and_nested_enable_grad():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        @lib.no_grad()
        def g(t):
            return t * 2

        a = g(x)
        with lib.no_grad():
            b = x * 3
            with lib.enable_grad():
                c = x * 4
            d = x * 5
        return (a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad, grad_fn_name(c),
                lib.is_grad_enabled())
    compare(f)


def test_enable_grad_as_decorator_inside_no_grad():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        @lib.enable_grad()
        def g(t):
            return t * 2

        with lib.no_grad():
            y = g(x)
            inside = lib.is_grad_enabled()
        return y.requires_grad, inside, lib.is_grad_enabled()
    compare(f)


def test_set_grad_enabled_function_and_context_manager():
    def f(lib):
        x = lib.tensor([1.0], requires_grad=True)
        with lib.set_grad_enabled(False):
            a = x * 2
            inside = lib.is_grad_enabled()
        after = lib.is_grad_enabled()
        lib.set_grad_enabled(False)
        b = x * 2
        off = lib.is_grad_enabled()
        lib.set_grad_enabled(True)
        c = x * 2
        return a.requires_grad, inside, after, b.requires_grad, off, c.requires_grad
    compare(f)


def test_set_grad_enabled_as_decorator():
    def f(lib):
        x = lib.tensor([1.0], requires_grad=True)

        @lib.set_grad_enabled(False)
        def g(t):
            return t * 2

        y = g(x)
        return y.requires_grad, lib.is_grad_enabled()
    compare(f)


def test_no_grad_restores_mode_after_an_exception():
    for lib in (sg, torch):
        with pytest.raises(ValueError):
            with lib.no_grad():
                raise ValueError("boom")
        assert lib.is_grad_enabled()


def test_in_place_on_leaf_is_allowed_under_no_grad():
    def f(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        (w * w).sum().backward()
        with lib.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
        (w * w).sum().backward()
        return w, w.grad, w.is_leaf, w.requires_grad
    compare(f)


def test_sgd_loop_matches_torch():
    def f(lib):
        w = lib.tensor([0.5, -0.3, 0.8], dtype=lib.float64, requires_grad=True)
        xs = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=lib.float64)
        ys = lib.tensor([1.0, -1.0], dtype=lib.float64)
        losses = []
        for _ in range(5):
            loss = (((xs * w).sum(1) - ys) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.05 * w.grad
            w.grad.zero_()
            losses.append(loss.item())
        return w, losses
    a, b = run_both(f)
    assert_close(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1], rtol=1e-10)


# ---------------------------------------------------------------------------- retain_grad and retain_graph

def test_retain_grad_on_intermediates():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.retain_grad()
        z = y.exp()
        z.retain_grad()
        z.sum().backward()
        return x.grad, y.grad, z.grad, y.retains_grad, x.retains_grad
    compare(f)


def test_retain_grad_accumulates_across_backwards():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.retain_grad()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        z.backward()
        return x.grad, y.grad
    compare(f)


def test_non_leaf_grad_is_none_with_a_warning():
    for lib in (sg, torch):
        x = lib.tensor([1.0], requires_grad=True)
        y = x * 2
        y.sum().backward()
        with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
            assert y.grad is None


def test_retain_graph_allows_a_second_backward():
    def f(lib):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    compare(f)


def test_second_backward_without_retain_graph_raises():
    def f(lib):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward()
        y.backward()
    assert_same_error(lambda: f(sg), lambda: f(torch))


def _write_row(lib, x):
    y = x * 1
    y[0] = 5.0
    return y.sum()


#: a second backward without retain_graph: torch raises exactly where its node saved a tensor
SECOND_BACKWARD = {
    "matmul": lambda lib, x: (x @ x).sum(),
    "max": lambda lib, x: x.max(),
    "amax dim": lambda lib, x: x.amax(0).sum(),
    "max dim": lambda lib, x: x.max(0).values.sum(),
    "prod": lambda lib, x: x.prod(),
    "softmax": lambda lib, x: lib.softmax(x, 0)[0, 0],
    "log_softmax": lambda lib, x: lib.log_softmax(x, 1)[1, 0],
    "logsumexp": lambda lib, x: x.logsumexp(0).sum(),
    "where": lambda lib, x: lib.where(x > 2, x, x * 2).sum(),
    "integer-array index": lambda lib, x: x[[0, 1]].sum(),
    "index_put": lambda lib, x: (x * 1).index_put((lib.tensor([0, 1]),), lib.tensor([1.0, 2.0], dtype=x.dtype)).sum(),
    "index_add": lambda lib, x: (x * 1).index_add(0, lib.tensor([1, 1]), x * 1).sum(),
    "setitem": _write_row,
    "maximum": lambda lib, x: lib.maximum(x, x.detach() * 0.5).sum(),
    "cumsum": lambda lib, x: x.cumsum(0).sum(),
    "cat": lambda lib, x: lib.cat([x, x]).sum(),
    "stack": lambda lib, x: lib.stack([x, x]).sum(),
    "slice": lambda lib, x: x[0, 1:].sum(),
    "expand": lambda lib, x: x[0].expand(3, 2).sum(),
    "permute": lambda lib, x: x.permute(1, 0).sum(),
    "sum dim": lambda lib, x: x.sum(0).sum(),
    "mean": lambda lib, x: x.mean(),
    "to": lambda lib, x: x.to(lib.float32).sum(),
}


@pytest.mark.parametrize("case", sorted(SECOND_BACKWARD))
def test_second_backward_raises_where_torch_saved_a_tensor(case):
    outcome = []
    for lib in (sg, torch):
        x = lib.tensor(np.arange(1.0, 5.0).reshape(2, 2), requires_grad=True)
        y = SECOND_BACKWARD[case](lib, x)
        y.backward()
        try:
            y.backward()
            outcome.append(("ok", x.grad.numpy().tolist()))
        except RuntimeError as e:
            outcome.append(("raised", str(e)))
    assert outcome[0] == outcome[1]


def test_second_backward_through_a_compiled_function_raises():
    f = sg.compile(lambda x: (x.sin() * 2).sum())
    x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = f(x)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    x.grad = None
    y = f(x)
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, 4 * np.cos(np.array([1.0, 2.0, 3.0], dtype=np.float32)))


def test_second_backward_through_rules_that_save_nothing_is_fine():
    def f(lib):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        y = (x + 1 - x.view(2, 1)).mean()
        y.backward()
        y.backward()
        return x.grad
    compare(f)


@pytest.mark.parametrize("expr", ["x * 2", "x / 4", "2 * x.sum()", "x.exp()", "x ** 2"])
def test_second_backward_through_a_rule_that_saved_a_value_raises(expr: str):
    """torch also counts a Python number a rule reads (``x * 2``) as saved."""
    def f(lib):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        y = eval(expr, {"x": x}).sum()
        y.backward()
        y.backward()
    assert_same_error(lambda: f(sg), lambda: f(torch))


# ---------------------------------------------------------------------------- autograd.grad

def test_autograd_grad_returns_without_accumulating():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor(3.0, requires_grad=True)
        out = (x * y).sum() + y ** 2
        gx, gy = lib.autograd.grad(out, (x, y))
        return gx, gy, x.grad, y.grad
    compare(f)


def test_autograd_grad_with_grad_outputs_and_several_outputs():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        a = x.sin()
        b = (x * x).sum()
        return lib.autograd.grad([a, b], [x], grad_outputs=[lib.tensor([1.0, 0.5, -1.0], dtype=lib.float64),
                                                              lib.tensor(2.0, dtype=lib.float64)])
    compare(f)


def test_autograd_grad_single_tensor_input_returns_a_tuple():
    def f(lib):
        x = lib.tensor(2.0, requires_grad=True)
        r = lib.autograd.grad(x ** 3, x)
        return type(r).__name__, len(r), r[0]
    compare(f)


def test_autograd_grad_allow_unused():
    def f(lib):
        x = lib.tensor(2.0, requires_grad=True)
        unused = lib.tensor(1.0, requires_grad=True)
        return lib.autograd.grad(x * 3, [x, unused], allow_unused=True)
    compare(f)


def test_autograd_grad_unused_input_raises_without_allow_unused():
    def f(lib):
        x = lib.tensor(2.0, requires_grad=True)
        unused = lib.tensor(1.0, requires_grad=True)
        return lib.autograd.grad(x * 3, [x, unused])
    assert_same_error(lambda: f(sg), lambda: f(torch))


def test_autograd_grad_with_respect_to_an_intermediate():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        z = (y.log() * 2).sum()
        return lib.autograd.grad(z, [y, x])
    compare(f)


def test_autograd_grad_retain_graph():
    def f(lib):
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        y = (x.sqrt() * x).sum()
        g1 = lib.autograd.grad(y, x, retain_graph=True)
        g2 = lib.autograd.grad(y, x)
        return g1, g2
    compare(f)


# ---------------------------------------------------------------------------- create_graph: higher order

@pytest.mark.parametrize("expr", ["x ** 3", "x.sin() * x", "(x * x).exp()", "x.tanh()", "x.sigmoid() * x ** 2",
                                  "x.log() / x", "(1 + x * x).sqrt()"])
def test_second_derivative_matches_torch(expr: str):
    def f(lib):
        x = lib.tensor([0.5, 1.2, 2.0], dtype=lib.float64, requires_grad=True)
        y = eval(expr, {"x": x}).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return g, h, g.requires_grad
    compare(f)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_backward_with_create_graph_then_differentiate_the_grad():
    def f(lib):
        x = lib.tensor([0.3, 0.9], dtype=lib.float64, requires_grad=True)
        y = (x ** 3 * x.cos()).sum()
        y.backward(create_graph=True)
        g = x.grad
        first = g.detach().clone()
        x.grad = None
        g.sum().backward()
        return first, x.grad
    compare(f)


def test_third_derivative():
    def f(lib):
        x = lib.tensor(0.7, dtype=lib.float64, requires_grad=True)
        y = x.exp() * x ** 4
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1, x, create_graph=True)
        (g3,) = lib.autograd.grad(g2, x)
        return g1, g2, g3
    compare(f)


def test_mixed_second_derivative_of_two_inputs():
    def f(lib):
        x = lib.tensor([0.4, 1.1], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([2.0, -0.5], dtype=lib.float64, requires_grad=True)
        y = ((x * w).sin() * w).sum()
        (gx,) = lib.autograd.grad(y, x, create_graph=True)
        return lib.autograd.grad(gx.sum(), [x, w])
    compare(f)


def test_hessian_vector_product_through_reductions_and_broadcasting():
    def f(lib):
        x = lib.tensor([[0.2, 0.4, 0.6], [1.0, 1.2, 1.4]], dtype=lib.float64, requires_grad=True)
        y = (x.exp().sum(0, keepdim=True) * x).mean()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        v = lib.tensor([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]], dtype=lib.float64)
        (hv,) = lib.autograd.grad((g * v).sum(), x)
        return g, hv
    compare(f)


# ---------------------------------------------------------------------------- views and in-place ops in graphs

def test_in_place_on_a_non_leaf_records_the_op():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.add_(1)
        y.mul_(x)
        y += 3
        y.sub_(x, alpha=2)
        y /= 2
        y.sum().backward()
        return y, grad_fn_name(y), x.grad
    compare(f)


def test_in_place_on_a_tensor_without_grad_with_a_tracked_operand():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        z = lib.ones(2)
        z.mul_(x)
        z.add_(x * x)
        z.sum().backward()
        return z, z.requires_grad, grad_fn_name(z), x.grad
    compare(f)


def test_in_place_pow_and_clamp_on_non_leaves():
    def f(lib):
        x = lib.tensor([0.5, 1.5, -0.7], dtype=lib.float64, requires_grad=True)
        y = x * 1.0
        y.pow_(2)
        y.clamp_(0.3, 1.0)
        y.sum().backward()
        return y, grad_fn_name(y), x.grad
    compare(f)


def test_gradient_through_views_and_indexing():
    def f(lib):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = x.T.reshape(3, 2)[1:, :] * x[0, :2] + x[..., None][1, 2]
        y.sum().backward()
        return y, x.grad
    compare(f)


def test_next_functions_of_a_small_graph():
    def names(fn):
        if fn is None:
            return None
        return (type(fn).__name__, tuple(names(n) for n, _ in fn.next_functions))

    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([3.0, 4.0])
        y = ((x * c + 2).exp().sum() / 3, (x.view(2, 1) - x).mean())
        return names(y[0].grad_fn), names(y[1].grad_fn)
    compare(f)


def test_accumulate_grad_variable_is_the_leaf():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc.variable is x
    assert acc.next_functions == ()


def test_register_hook_on_intermediate_and_leaf():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        y = x * 3
        y.register_hook(lambda g: seen.append(g.clone()))
        x.register_hook(lambda g: g * 10)
        (y * y).sum().backward()
        return seen[0], x.grad
    compare(f)


def test_hot_eager_structure_moves_to_numba_with_same_gradients(monkeypatch):
    from symgrad.eager import autograd
    monkeypatch.setattr(autograd, "EAGER_JIT_AFTER", 3)
    rng = np.random.default_rng(5)
    x = sg.tensor(rng.standard_normal(64), requires_grad=True)
    y = sg.tensor(rng.standard_normal(64), requires_grad=True)
    grads = []
    for _ in range(4):
        x.grad = y.grad = None
        out = (sg.sin(x) * sg.exp(-y ** 2) + sg.log1p(x ** 2) * sg.tanh(y)).sum() * 0.5
        out.backward()
        grads.append((x.grad.numpy().copy(), y.grad.numpy().copy()))
    prog = list(autograd._PROGRAMS.values())[-1]
    assert prog.jit is not None
    for gx, gy in grads[1:]:
        np.testing.assert_allclose(gx, grads[0][0], rtol=1e-12)
        np.testing.assert_allclose(gy, grads[0][1], rtol=1e-12)


@pytest.mark.parametrize("build", [
    lambda lib, x: lib.where(x > 0.0, lib.sin(lib.exp(lib.exp(x))), x),
    lambda lib, x: lib.where(x > 0, (lib.sigmoid(lib.exp(x)) + 0.25) ** x, x),
    lambda lib, x: lib.where(x > 0, lib.where(x < 1, lib.log(lib.exp(x) + x) ** x, x), -x),
], ids=["exp_chain", "tensor_exponent", "nested"])
def test_where_over_elementwise_chains(build):
    """Regression: lowering rebuilt the Piecewise pairs with their conditions folded (SymPy's logic
    rejected the isinf predicate of the masked adjoint); torch gives a number."""
    def run(lib):
        x = lib.tensor(0.5478, dtype=lib.float64, requires_grad=True)
        build(lib, x).sum().backward()
        return x.grad
    compare(run)


_ZERO_GRAD_OPS = [
    ("relu", lambda t, x: t.relu(x)),
    ("F.relu", lambda t, x: t.nn.functional.relu(x)),
    ("hardtanh", lambda t, x: t.nn.functional.hardtanh(x * 3)),
    ("relu6", lambda t, x: t.nn.functional.relu6(x * 8)),
    ("clamp", lambda t, x: x.clamp(-0.5, 0.5)),
    ("clamp_min", lambda t, x: x.clamp(min=0.0)),
    ("where", lambda t, x: t.where(x > 0, x, t.zeros(())) + t.where(x > 0, t.zeros(()), x * 2)),
    ("maximum", lambda t, x: t.maximum(x, t.zeros(()))),
    ("minimum", lambda t, x: t.minimum(x, t.zeros(()))),
    ("threshold", lambda t, x: t.nn.functional.threshold(x, 0.1, 2.0)),
    ("softshrink", lambda t, x: t.nn.functional.softshrink(x)),
    ("hardshrink", lambda t, x: t.nn.functional.hardshrink(x)),
    ("hardsigmoid", lambda t, x: t.nn.functional.hardsigmoid(x * 4)),
    ("hardswish", lambda t, x: t.nn.functional.hardswish(x * 4)),
    ("abs", lambda t, x: x.abs() * 0 + (x * 0).abs()),  # grad * sgn(x): -0.0 under a negative gradient
    ("linear relu layer", lambda t, x: t.relu(x.reshape(2, 3) @ t.ones(3, 2) - 1.0)),
]


@pytest.mark.parametrize("name,fn", _ZERO_GRAD_OPS, ids=[n for n, _ in _ZERO_GRAD_OPS])
def test_zero_gradients_keep_torchs_sign(name, fn):
    """Where torch's backward writes a literal 0 (relu's threshold_backward, clamp, where, max/min, the shrinks),
    the gradient is +0.0 whatever the sign of the incoming gradient; ``grad * sgn(x)`` (abs) keeps -0.0."""
    vals = np.array([-1.5, -0.2, 0.0, 0.3, 2.0, -4.0], np.float32)
    up = -1.0  # a negative incoming gradient: g * 0 would be -0.0
    x, t = sg.tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
    (fn(sg, x) * up).sum().backward()
    (fn(torch, t) * up).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    np.testing.assert_array_equal(np.signbit(x.grad.numpy()), np.signbit(t.grad.numpy()), err_msg=name)


def _frees_only_what_it_ran(lib) -> list:
    seen = []
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = lib.tensor([0.5, -0.5], requires_grad=True)
    for make in (lambda: a * 2, lambda: a.exp(), lambda: a * a, lambda: (a * b).sin()):
        z = make()
        w = a.exp()
        u = w * b.sum()  # b's path and a's path: differentiating b alone leaves a's exp unrun (and unfreed)
        calls = [(z, b, False), (z, [a, b], True), (z, [a, b], True), (u, b, False), (u, a, False)]
        for out, wrt, unused in calls:
            try:
                got = lib.autograd.grad(out.sum(), wrt, allow_unused=unused)
                seen.append([None if g is None else np.round(g.numpy(), 4).tolist() for g in got])
            except RuntimeError as err:
                seen.append(str(err)[:60])
    return seen


def test_grad_checks_and_frees_only_the_nodes_it_runs():
    assert _frees_only_what_it_ran(sg) == _frees_only_what_it_ran(torch)


def _multi_view_edges(lib) -> list:
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    q, u, c = a.split(1, dim=1), a.unbind(1), a.chunk(2, dim=0)
    seen = [q[0].grad_fn is q[1].grad_fn, u[0].grad_fn is u[1].grad_fn, c[0].grad_fn is c[1].grad_fn,
            type(c[1].grad_fn).__name__]
    for out in (q[0] + q[1], u[1] * u[0], lib.cat([c[1], c[0]]), (q[1] * 2).exp()):
        edges = out.grad_fn.next_functions
        seen.append([(type(f).__name__, k) for f, k in edges])
        seen.append(edges[0][0] is edges[-1][0])
    return seen


def test_views_of_one_split_share_their_grad_fn_and_number_their_edges():
    assert _multi_view_edges(sg) == _multi_view_edges(torch)
