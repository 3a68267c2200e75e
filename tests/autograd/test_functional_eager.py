"""``sg.autograd.functional`` runs the function eagerly, as torch does: Python control flow on values works."""
from __future__ import annotations

import torch
from conftest import assert_close

import symgrad as sg


def doubling(lib):
    def f(x):
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        return y
    return f


def test_control_flow_program_through_the_functional_api():
    xs, xt = sg.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    F, T = sg.autograd.functional, torch.autograd.functional
    assert_close(F.jacobian(doubling(sg), xs), T.jacobian(doubling(torch), xt))
    for name in ("vjp", "jvp"):
        ours = getattr(F, name)(doubling(sg), xs, sg.ones(3))
        theirs = getattr(T, name)(doubling(torch), xt, torch.ones(3))
        for a, b in zip(ours, theirs):
            assert_close(a, b)

    def branchy(lib):
        def g(x):
            return (x ** 3).sum() if x.sum() > 0 else (-x).exp().sum()
        return g
    for sign in (1.0, -1.0):
        assert_close(F.hessian(branchy(sg), xs * sign), T.hessian(branchy(torch), xt * sign))
        assert_close(F.hvp(branchy(sg), xs * sign, sg.ones(3))[1], T.hvp(branchy(torch), xt * sign, torch.ones(3))[1])


def test_nesting_strict_and_grad_fns_like_torch():
    a, b = [0.1, 0.2], [0.5, -1.0]
    F, T = sg.autograd.functional, torch.autograd.functional
    ours = F.jacobian(lambda u, v: (u * v, u.sin()), (sg.tensor(a), sg.tensor(b)), create_graph=True)
    theirs = T.jacobian(lambda u, v: (u * v, u.sin()), (torch.tensor(a), torch.tensor(b)), create_graph=True)
    assert type(ours) is tuple and type(ours[0]) is tuple
    for ro, rt in zip(ours, theirs):
        for o, t in zip(ro, rt):
            assert_close(o, t)
            assert o.requires_grad == t.requires_grad
    fwd = F.jacobian(lambda u, v: (u * v, u.sin()), (sg.tensor(a), sg.tensor(b)), vectorize=True,
                     strategy="forward-mode")
    fwd_t = T.jacobian(lambda u, v: (u * v, u.sin()), (torch.tensor(a), torch.tensor(b)), vectorize=True,
                       strategy="forward-mode")
    assert type(fwd) is list and type(fwd[0]) is list
    assert str(fwd) == str(fwd_t)  # zeros' signs too
    out, jv = F.jvp(lambda u: u.exp(), sg.tensor(a), sg.ones(2), create_graph=True)
    out_t, jv_t = T.jvp(lambda u: u.exp(), torch.tensor(a), torch.ones(2), create_graph=True)
    assert type(jv.grad_fn).__name__ == type(jv_t.grad_fn).__name__
    w, wt = sg.tensor([1.5, -2.0], requires_grad=True), torch.tensor([1.5, -2.0], requires_grad=True)
    F.jacobian(lambda u: (u * w).sin(), sg.tensor(a), create_graph=True).sum().backward()
    T.jacobian(lambda u: (u * wt).sin(), torch.tensor(a), create_graph=True).sum().backward()
    assert_close(w.grad, wt.grad)
