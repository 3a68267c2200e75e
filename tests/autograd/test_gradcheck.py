"""``sg.autograd.gradcheck`` / ``gradgradcheck`` / ``Variable`` against torch's: return values, the same
failures with the same messages (fast mode draws torch's vectors), warnings and input errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(5)
XA = RNG.standard_normal(3)
YA = RNG.standard_normal((2, 3))


def inputs(lib):
    return (lib.tensor(XA, requires_grad=True), lib.tensor(YA, requires_grad=True))


def assert_same_error(sg_fn, torch_fn):
    """Both raise, with the same class name and message (GradcheckError is each library's own class)."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(Exception) as se:
        sg_fn()
    assert type(se.value).__name__ == type(te.value).__name__
    assert str(se.value) == str(te.value)
    return se.value


def _bad(a):
    return a.detach() * 2 + a  # the gradient misses the detached term


@pytest.mark.parametrize("name, fn, kw", [
    ("slow", lambda a, b: (a * b).sin(), {}),
    ("fast, two outputs", lambda a, b: ((a * b).sum(), a.exp()), {"fast_mode": True}),
    ("forward AD", lambda a, b: a.tanh() * b, {"check_forward_ad": True}),
    ("forward AD, fast", lambda a, b: a.tanh() + b, {"check_forward_ad": True, "fast_mode": True}),
    ("batched grad", lambda a, b: (a * b).cos(), {"check_batched_grad": True}),
    ("non-tensor input", lambda a, b: a * b.sum(), {}),
])
def test_gradcheck_passes_like_torch(name, fn, kw):
    assert sg.autograd.gradcheck(fn, inputs(sg), **kw) is True
    assert torch.autograd.gradcheck(fn, inputs(torch), **kw) is True


def test_gradgradcheck_draws_torch_grad_outputs():
    sg.manual_seed(1)
    torch.manual_seed(1)
    f = lambda a, b: (a * b).exp()  # noqa: E731
    assert sg.autograd.gradgradcheck(f, inputs(sg)) and torch.autograd.gradgradcheck(f, inputs(torch))
    assert sg.autograd.gradgradcheck(f, inputs(sg), fast_mode=True)
    assert torch.autograd.gradgradcheck(f, inputs(torch), fast_mode=True)
    np.testing.assert_array_equal(sg.rand(3).numpy(), torch.rand(3).numpy())  # the same draws consumed
    go = lambda lib: (lib.ones(2, 3, dtype=lib.float64, requires_grad=True),)  # noqa: E731
    assert sg.autograd.gradgradcheck(lambda a, b: a * b ** 3, inputs(sg), grad_outputs=go(sg))


@pytest.mark.parametrize("kw", [{}, {"fast_mode": True}, {"check_forward_ad": True, "check_backward_ad": False}],
                         ids=["slow", "fast", "forward"])
def test_failure_messages_match_torch(kw):
    x = lambda lib: (lib.tensor(XA, requires_grad=True),)  # noqa: E731
    err = assert_same_error(lambda: sg.autograd.gradcheck(_bad, x(sg), **kw),
                            lambda: torch.autograd.gradcheck(_bad, x(torch), **kw))
    assert isinstance(err, sg.autograd.GradcheckError) and isinstance(err, RuntimeError)
    assert sg.autograd.gradcheck(_bad, x(sg), raise_exception=False, **kw) is False


def test_gradgradcheck_failure_and_input_errors():
    x = lambda lib: (lib.tensor(XA, requires_grad=True),)  # noqa: E731
    assert_same_error(lambda: sg.autograd.gradgradcheck(lambda a: (a.detach() * a).sum() * a, x(sg)),
                      lambda: torch.autograd.gradgradcheck(lambda a: (a.detach() * a).sum() * a, x(torch)))
    assert_same_error(lambda: sg.autograd.gradcheck(lambda a: a.detach() * 2, x(sg)),
                      lambda: torch.autograd.gradcheck(lambda a: a.detach() * 2, x(torch)))
    assert_same_error(lambda: sg.autograd.gradcheck(lambda a: a * 2, (sg.tensor(XA),)),
                      lambda: torch.autograd.gradcheck(lambda a: a * 2, (torch.tensor(XA),)))
    assert_same_error(lambda: sg.autograd.gradcheck(lambda a: a, sg.zeros(1, dtype=sg.float64).expand(3)
                                                    .requires_grad_()),
                      lambda: torch.autograd.gradcheck(lambda a: a, torch.zeros(1, dtype=torch.float64).expand(3)
                                                       .requires_grad_()))
    assert_same_error(lambda: sg.autograd.gradcheck(lambda a: a, x(sg), check_backward_ad=False),
                      lambda: torch.autograd.gradcheck(lambda a: a, x(torch), check_backward_ad=False))


def test_single_precision_warns_like_torch():
    msgs = []
    for lib in (sg, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(3, requires_grad=True),), eps=1e-3, atol=1e-2)
        msgs.append([str(m.message) for m in w if "double precision" in str(m.message)])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


def test_variable_is_torch_legacy_wrapper():
    from symgrad.autograd import Variable
    for lib, V in ((sg, Variable), (torch, torch.autograd.Variable)):
        x = lib.ones(2)
        v = V(x, requires_grad=True)
        assert v is not x and v.requires_grad and not x.requires_grad and v.is_leaf and isinstance(x, V)
        y = V(lib.ones(2, requires_grad=True) * 2)
        assert y.grad_fn is None and y.is_leaf and not y.requires_grad
        assert V().shape == (0,)
    assert_same_error(lambda: Variable([1.0]), lambda: torch.autograd.Variable([1.0]))
    assert_same_error(lambda: Variable(sg.ones(2, dtype=sg.long), requires_grad=True),
                      lambda: torch.autograd.Variable(torch.ones(2, dtype=torch.long), requires_grad=True))
