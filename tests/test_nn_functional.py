"""``sg.nn.functional`` against ``torch.nn.functional``: values, grad_fn names, gradients and double
backward in float32 and float64, torch's errors, ``inplace=True``, and the import forms.

Every activation is also a row of the registry matrix (``tests/test_ops_registry.py``: finite
differences, generated code, compiled kernels); here the namespace itself is checked.
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import FLOAT_DTYPES, assert_close, assert_same_error, grad_fn_name

import symgrad as sg
import symgrad.nn.functional as F

#: (name, keyword arguments): every function of the namespace, several settings
CALLS: list[tuple[str, dict]] = [
    ("relu", {}), ("sigmoid", {}), ("tanh", {}), ("softmax", {"dim": 1}), ("log_softmax", {"dim": -1}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 1.0}), ("silu", {}), ("gelu", {}),
    ("gelu", {"approximate": "tanh"}), ("elu", {}), ("elu", {"alpha": 0.3}), ("leaky_relu", {}),
    ("leaky_relu", {"negative_slope": 0.2}), ("logsigmoid", {}), ("hardtanh", {}),
    ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}), ("mish", {}), ("selu", {}), ("celu", {}),
    ("celu", {"alpha": 0.5}), ("hardsigmoid", {}), ("hardswish", {}), ("softshrink", {}),
    ("softshrink", {"lambd": 1.0}), ("hardshrink", {}), ("hardshrink", {"lambd": 2.5}),
    ("threshold", {"threshold": 0.5, "value": -2.0}), ("softsign", {}), ("tanhshrink", {}), ("softmin", {"dim": 1}),
    ("glu", {}), ("glu", {"dim": 0}),
]

#: values on both sides of every kink, large ones (overflow of exp), and exact kinks
VALUES = np.array([[-30.0, -7.0, -2.5, -1.0, -0.5, -0.1, 0.0, 0.1, 0.5, 1.0],
                   [2.5, 3.0, 5.9, 6.0, 6.5, 19.0, 25.0, 40.0, -0.73, 0.61]])


def _ids(calls: list) -> list[str]:
    return [f"{n}({','.join(f'{k}={v}' for k, v in kw.items())})" for n, kw in calls]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(("name", "kw"), CALLS, ids=_ids(CALLS))
def test_matches_torch_with_double_backward(name: str, kw: dict, dtype: str):
    arr = VALUES.astype(dtype)
    x, t = sg.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    y, ty = getattr(F, name)(x, **kw), getattr(TF, name)(t, **kw)
    assert_close(y, ty, what="value")
    assert grad_fn_name(y) == grad_fn_name(ty)
    w = np.linspace(-1.0, 1.0, ty.numel()).reshape(tuple(ty.shape)).astype(dtype)
    (g,) = sg.autograd.grad((y * sg.tensor(w)).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((ty * torch.tensor(w)).sum(), t, create_graph=True)
    assert_close(g, tg, what="gradient")
    if tg.grad_fn is None or dtype == "float32":  # piecewise linear: torch's gradient is a constant
        return
    if name == "hardsigmoid":  # torch: "derivative for aten::hardsigmoid_backward is not implemented"
        return
    (gg,) = sg.autograd.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), t)
    assert_close(gg, tgg, what="second derivative")


def test_import_forms():
    assert sg.nn.functional is F
    assert importlib.import_module("symgrad.nn.functional") is F
    from symgrad.nn import functional
    assert functional is F
    assert {n for n, _ in CALLS} <= set(F.__all__)


@pytest.mark.parametrize(("name", "kw"), [("relu", {}), ("elu", {"alpha": 0.5}), ("leaky_relu", {}),
                                          ("hardtanh", {}), ("relu6", {}), ("silu", {}), ("mish", {}),
                                          ("selu", {}), ("celu", {"alpha": 2.0}), ("hardswish", {}),
                                          ("hardsigmoid", {}), ("threshold", {"threshold": 1.0, "value": 0.5})])
def test_inplace(name: str, kw: dict):
    arr = VALUES[0].copy()
    x, t = sg.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    y, ty = x * 2, t * 2
    out, tout = getattr(F, name)(y, inplace=True, **kw), getattr(TF, name)(ty, inplace=True, **kw)
    assert out is y and tout is ty
    assert_close(y, ty)
    y.sum().backward()
    ty.sum().backward()
    assert_close(x.grad, t.grad)


def test_errors_match_torch():
    i = np.array([3, -2])
    for name in ("softplus", "silu", "gelu", "elu", "leaky_relu", "logsigmoid", "mish"):
        assert_same_error(lambda n=name: getattr(F, n)(sg.tensor(i)), lambda n=name: getattr(TF, n)(torch.tensor(i)))
    x = np.array([0.5, -1.0], np.float32)
    assert_same_error(lambda: F.gelu(sg.tensor(x), approximate="foo"),
                      lambda: TF.gelu(torch.tensor(x), approximate="foo"))
    assert_same_error(lambda: F.hardtanh(sg.tensor(x), 2.0, 1.0), lambda: TF.hardtanh(torch.tensor(x), 2.0, 1.0))
    assert_same_error(lambda: F.elu(sg.tensor(x, requires_grad=True), inplace=True),
                      lambda: TF.elu(torch.tensor(x, requires_grad=True), inplace=True))


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "relu"])
def test_integer_inputs_stay_integer(name: str):
    i = np.array([[3, -2, 7], [0, 1, -1]])
    assert_close(getattr(F, name)(sg.tensor(i)), getattr(TF, name)(torch.tensor(i)))


def test_softmax_implicit_dim_warns_as_torch():
    arr = VALUES[:, :4].astype(np.float32)
    for name in ("softmax", "log_softmax"):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            y = getattr(F, name)(sg.tensor(arr))
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            ty = getattr(TF, name)(torch.tensor(arr))
        assert_close(y, ty)


def _net(lib: Any, F_: Any, x: Any, w: Any) -> Any:
    h = F_.gelu(x @ w) + F_.silu(x @ w) * F_.softplus(x @ w, beta=2.0)
    return (F_.log_softmax(F_.mish(h) - F_.logsigmoid(h) + F_.elu(h, 0.5), dim=1) * F_.leaky_relu(h, 0.1)).sum()


def test_compiled_network_matches_torch():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tv = _net(torch, TF, tx, tw)
    tg = torch.autograd.grad(tv, [tx, tw])
    vg = sg.value_and_grad(lambda a, b: _net(sg, F, a, b), argnums=(0, 1))
    for _ in range(2):  # the traced numpy kernel, then the same kernel reused
        value, grads = vg(x, w)
        assert value == pytest.approx(tv.item(), rel=1e-12)
        for g, t in zip(grads, tg):
            np.testing.assert_allclose(g, t.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape,n", [((2, 10), 1), ((2, 10), 10), ((3, 2, 5), 2), ((10,), 1)])
def test_prelu_matches_torch(shape, n, dtype):
    """``prelu`` (one weight, or one per channel of dim 1): value, grad_fn, gradients of input and weight."""
    arr = np.resize(VALUES, shape).astype(dtype)
    wv = np.linspace(0.1, 0.4, n).astype(dtype)
    x, t = sg.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    w, tw = sg.tensor(wv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    y, ty = F.prelu(x, w), TF.prelu(t, tw)
    assert_close(y, ty, what="value")
    assert grad_fn_name(y) == grad_fn_name(ty)
    up = np.linspace(-1.0, 1.0, arr.size).reshape(shape).astype(dtype)
    (y * sg.tensor(up)).sum().backward()
    (ty * torch.tensor(up)).sum().backward()
    assert_close(x.grad, t.grad, what="input grad")
    assert_close(w.grad, tw.grad, what="weight grad")


def test_new_activation_errors_match_torch():
    x = np.ones((2, 3))
    assert_same_error(lambda: F.glu(sg.tensor(x)), lambda: TF.glu(torch.tensor(x)))
    assert_same_error(lambda: F.glu(sg.tensor(1.0)), lambda: TF.glu(torch.tensor(1.0)))
    assert_same_error(lambda: F.prelu(sg.tensor(x), sg.ones(2, dtype=sg.float64)),
                      lambda: TF.prelu(torch.tensor(x), torch.ones(2, dtype=torch.float64)))
    assert_same_error(lambda: F.prelu(sg.tensor(x), sg.ones(3)), lambda: TF.prelu(torch.tensor(x), torch.ones(3)))
    assert_same_error(lambda: F.softshrink(sg.tensor(x), -1.0), lambda: TF.softshrink(torch.tensor(x), -1.0))
    for i in (np.array([3, -2]), np.array([True, False])):
        for name in ("selu", "celu", "hardswish", "hardsigmoid", "softshrink", "hardshrink", "glu"):
            assert_same_error(lambda n=name, i=i: getattr(F, n)(sg.tensor(i)),
                              lambda n=name, i=i: getattr(TF, n)(torch.tensor(i)))
    assert_same_error(lambda: F.threshold(sg.tensor([True]), 1, 0), lambda: TF.threshold(torch.tensor([True]), 1, 0))
    assert_close(F.threshold(sg.tensor([3, -2]), 1, 0), TF.threshold(torch.tensor([3, -2]), 1, 0))
