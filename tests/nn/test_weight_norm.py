"""``nn.utils.weight_norm`` / ``remove_weight_norm`` against torch 2.13: ``weight_g`` / ``weight_v`` for each
``dim`` (first, last, middle, None), grad_fn names, gradients, a few SGD steps, state dict keys, the FutureWarning,
removal and errors."""
from __future__ import annotations

import warnings

import pytest
import torch
from conftest import assert_close

import symgrad as sg


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_linear_weight_norm_matches_torch(dim):
    out = {}
    for lib in (torch, sg):
        lib.manual_seed(2)
        m = _quiet(lib.nn.utils.weight_norm, lib.nn.Linear(3, 4), dim=dim)
        x = lib.randn(5, 3)
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = m(x).tanh().pow(2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[lib] = (m.weight_g.detach().numpy(), m.weight_v.detach().numpy(), m.weight.detach().numpy(),
                    m.weight_g.grad.numpy(), losses, m.weight.grad_fn.name(), list(m.state_dict()),
                    type(m.weight).__name__, tuple(m.weight_g.shape))
    for a, b in zip(out[sg][:4], out[torch][:4]):
        assert_close(a, b)
    assert out[sg][4] == pytest.approx(out[torch][4], rel=1e-6)
    assert out[sg][5:] == out[torch][5:]


def test_conv_middle_dim_and_remove():
    out = {}
    for lib in (torch, sg):
        lib.manual_seed(5)
        c = _quiet(lib.nn.utils.weight_norm, lib.nn.Conv2d(2, 3, 2), dim=2)
        y = c(lib.randn(1, 2, 3, 3))
        y.sum().backward()
        res = [c.weight_g.grad, c.weight_v.grad, y.detach()]
        names = (c.weight.grad_fn.name(), tuple(c.weight_g.shape), repr(c))
        lib.nn.utils.remove_weight_norm(c)
        names += (list(c.state_dict()), type(c.weight).__name__, len(c._forward_pre_hooks))
        res.append(c.weight.detach())
        out[lib] = (res, names)
    for a, b in zip(out[sg][0], out[torch][0]):
        assert_close(a, b)
    assert out[sg][1] == out[torch][1]


def test_warning_and_errors_match_torch():
    msgs = {}
    for lib in (torch, sg):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = lib.nn.utils.weight_norm(lib.nn.Linear(3, 2))
        got = [(x.category, str(x.message)) for x in w]
        errs = []
        u = lib.nn.utils
        for fn, args in ((u.weight_norm, (m,)), (u.remove_weight_norm, (m, "bias")),
                         (u.weight_norm, (lib.nn.LazyLinear(2),))):
            with pytest.raises(Exception) as e:
                _quiet(fn, *args)
            errs.append((type(e.value), str(e.value)))
        msgs[lib] = (got, errs)
    assert msgs[sg] == msgs[torch]
