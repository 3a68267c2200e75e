"""``sg.autograd.functional`` and ``sg.func`` against torch's, same calls, same nesting."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

X = np.random.default_rng(3).uniform(-1, 1, 4)
Y = np.random.default_rng(4).uniform(-1, 1, (2, 3))


def _same(a, b):
    if isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
        return
    assert isinstance(a, sg.Tensor)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def f_vec(lib, a):
    return lib.sin(a) * a.sum()


def f_two(lib, a, b):
    return lib.exp(a[:3]) * b + a[3]


def f_scalar(lib, a, b):
    return (a ** 3).sum() * b.tanh().sum() + (a[:3] * b[0]).sum()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian(create_graph, strategy):
    if create_graph and strategy == "forward-mode":
        for lib in (sg, torch):
            with pytest.raises(NotImplementedError, match="are not supported together"):
                lib.autograd.functional.jacobian(lambda a: a * 2, lib.tensor(X), create_graph=True,
                                                 strategy=strategy, vectorize=True)
        return
    for inputs in ((X,), (X, Y[0])):
        ours = sg.autograd.functional.jacobian(
            (lambda a: f_vec(sg, a)) if len(inputs) == 1 else (lambda a, b: f_two(sg, a, b)),
            tuple(sg.tensor(i) for i in inputs) if len(inputs) > 1 else sg.tensor(inputs[0]),
            create_graph=create_graph, strategy=strategy, vectorize=strategy == "forward-mode")
        theirs = torch.autograd.functional.jacobian(
            (lambda a: f_vec(torch, a)) if len(inputs) == 1 else (lambda a, b: f_two(torch, a, b)),
            tuple(torch.tensor(i) for i in inputs) if len(inputs) > 1 else torch.tensor(inputs[0]),
            create_graph=create_graph, strategy=strategy, vectorize=strategy == "forward-mode")
        _same(ours, theirs)


@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian_vjp_jvp_hvp_vhp(create_graph):
    ins_sg = (sg.tensor(X), sg.tensor(Y[0]))
    ins_t = (torch.tensor(X), torch.tensor(Y[0]))
    fs = lambda a, b: f_scalar(sg, a, b)
    ft = lambda a, b: f_scalar(torch, a, b)
    _same(sg.autograd.functional.hessian(fs, ins_sg, create_graph=create_graph),
          torch.autograd.functional.hessian(ft, ins_t, create_graph=create_graph))
    v_sg = (sg.tensor(Y[1][:1].repeat(4)), sg.tensor(Y[1]))
    v_t = (torch.tensor(Y[1][:1].repeat(4)), torch.tensor(Y[1]))
    for name in ("hvp", "vhp"):
        ours = getattr(sg.autograd.functional, name)(fs, ins_sg, v_sg, create_graph=create_graph)
        theirs = getattr(torch.autograd.functional, name)(ft, ins_t, v_t, create_graph=create_graph)
        _same(ours, theirs)
    _same(sg.autograd.functional.vjp(fs, ins_sg, create_graph=create_graph),
          torch.autograd.functional.vjp(ft, ins_t, create_graph=create_graph))
    u = np.arange(3.0)
    _same(sg.autograd.functional.vjp(lambda a, b: f_two(sg, a, b), ins_sg, sg.tensor(u)),
          torch.autograd.functional.vjp(lambda a, b: f_two(torch, a, b), ins_t, torch.tensor(u)))
    _same(sg.autograd.functional.jvp(lambda a, b: f_two(sg, a, b), ins_sg, v_sg),
          torch.autograd.functional.jvp(lambda a, b: f_two(torch, a, b), ins_t, v_t))


def test_create_graph_results_are_differentiable():
    x = sg.tensor(X, requires_grad=True)
    j = sg.autograd.functional.jacobian(lambda a: f_vec(sg, a), x, create_graph=True)
    j.sum().backward()
    xt = torch.tensor(X, requires_grad=True)
    torch.autograd.functional.jacobian(lambda a: f_vec(torch, a), xt, create_graph=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)


def test_errors_and_strict():
    with pytest.raises(RuntimeError, match="independent of input 1"):
        sg.autograd.functional.jacobian(lambda a, b: a * 2, (sg.tensor(X), sg.tensor(X)), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        torch.autograd.functional.jacobian(lambda a, b: a * 2, (torch.tensor(X), torch.tensor(X)), strict=True)
    with pytest.raises(RuntimeError, match="v can only be None"):
        sg.autograd.functional.vjp(lambda a: a * 2, sg.tensor(X))
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        sg.autograd.functional.jacobian(lambda a: a, [1.0, 2.0])
    for lib in (sg, torch):  # torch's text
        with pytest.raises(RuntimeError, match="function given to hessian should contain a single element"):
            lib.autograd.functional.hessian(lambda a: a * 2, lib.tensor(X))


def test_func_namespace_matches_torch_func():
    fs = lambda a: (sg.sin(a) ** 2).sum()
    ft = lambda a: (torch.sin(a) ** 2).sum()
    x, xt = sg.tensor(X), torch.tensor(X)
    _same(sg.func.grad(fs)(x), torch.func.grad(ft)(xt))
    _same(sg.func.grad_and_value(fs)(x), torch.func.grad_and_value(ft)(xt))
    _same(sg.func.hessian(fs)(x), torch.func.hessian(ft)(xt))
    _same(sg.func.jacrev(lambda a: f_vec(sg, a))(x), torch.func.jacrev(lambda a: f_vec(torch, a))(xt))
    _same(sg.func.jacfwd(lambda a: f_vec(sg, a))(x), torch.func.jacfwd(lambda a: f_vec(torch, a))(xt))
    _same(sg.func.jvp(lambda a: f_vec(sg, a), (x,), (x,)), torch.func.jvp(lambda a: f_vec(torch, a), (xt,), (xt,)))
    out, back = sg.func.vjp(lambda a: f_vec(sg, a), x)
    out_t, back_t = torch.func.vjp(lambda a: f_vec(torch, a), xt)
    _same(out, out_t)
    _same(back(x), back_t(xt))


def test_import_path_like_torch():
    from symgrad.autograd.functional import hessian
    assert hessian is sg.autograd.functional.hessian


def test_func_functional_call_matches_torch():
    """``torch.func.functional_call`` is ``sg.func.functional_call``: a module run on other parameters, and
    ``func.grad`` of a loss of that dict gives a dict of gradients, as torch's."""
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    sg.manual_seed(0)
    sm = sg.nn.Linear(3, 2)
    tp = {k: v.detach() * 2 for k, v in tm.named_parameters()}
    sp_ = {k: v.detach() * 2 for k, v in sm.named_parameters()}
    out_t = torch.func.functional_call(tm, tp, (torch.tensor(x, dtype=torch.float32),))
    out_s = sg.func.functional_call(sm, sp_, (sg.tensor(x, dtype=sg.float32),))
    np.testing.assert_array_equal(out_s.numpy(), out_t.detach().numpy())
    gt = torch.func.grad(lambda p: torch.func.functional_call(tm, p, (torch.tensor(x, dtype=torch.float32),))
                         .pow(2).sum())(tp)
    gs = sg.func.grad(lambda p: sg.func.functional_call(sm, p, (sg.tensor(x, dtype=sg.float32),))
                      .pow(2).sum())(sp_)
    assert list(gs) == list(gt)
    for k in gt:
        np.testing.assert_allclose(np.asarray(gs[k]), gt[k].numpy(), rtol=1e-6)
