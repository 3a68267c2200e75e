"""``sg.special`` against torch.special 2.13: values, dtypes, grad_fn names and gradients (float64, float32),
integer inputs promoted to the default dtype, special values."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(11)
ANY = RNG.uniform(-2, 2, (2, 3))
UNIT = RNG.uniform(0.05, 0.95, (2, 3))

CASES = {
    "expit": ("expit", ANY), "logit": ("logit", UNIT), "erf": ("erf", ANY), "erfc": ("erfc", ANY),
    "erfinv": ("erfinv", UNIT * 2 - 1), "erfcx": ("erfcx", ANY), "log1p": ("log1p", UNIT), "expm1": ("expm1", ANY),
    "exp2": ("exp2", ANY), "gammaln": ("gammaln", UNIT * 4 + 0.2), "digamma": ("digamma", UNIT * 10 + 10),
    "psi": ("psi", UNIT * 10 + 10), "i0": ("i0", ANY), "i0e": ("i0e", ANY + 3), "i1": ("i1", ANY),
    "i1e": ("i1e", ANY - 3), "ndtr": ("ndtr", ANY), "ndtri": ("ndtri", UNIT), "log_ndtr": ("log_ndtr", ANY * 3),
    "sinc": ("sinc", ANY), "entr": ("entr", UNIT),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_unary_matches_torch(name, dtype):
    fn, x = CASES[name]
    t = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    s = sg.tensor(x, dtype=getattr(sg, dtype), requires_grad=True)
    rt, rs = getattr(torch.special, fn)(t), getattr(sg.special, fn)(s)
    rtol = 1e-10 if dtype == "float64" else 1e-5
    assert str(rs.dtype) == str(rt.dtype)
    np.testing.assert_allclose(rs.detach().numpy(), rt.detach().numpy(), rtol=rtol, atol=rtol)
    if rt.grad_fn is not None:
        assert type(rs.grad_fn).__name__ == type(rt.grad_fn).__name__
        w = np.random.default_rng(zlib.crc32(f"{name}-{dtype}".encode())).standard_normal(x.shape)  # order-free
        (rt * torch.tensor(w, dtype=rt.dtype)).sum().backward()
        (rs * sg.tensor(w, dtype=rs.dtype)).sum().backward()
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=rtol * 10,
                                   atol=rtol * 20 * np.abs(t.grad.numpy()).max())  # float32: cancellation


@pytest.mark.parametrize(("name", "args"), [
    ("xlogy", (UNIT, ANY ** 2)), ("xlog1py", (ANY, UNIT)), ("logsumexp", (ANY, 1)), ("softmax", (ANY, 0)),
    ("log_softmax", (ANY, -1)), ("polygamma", (2, UNIT + 10)), ("multigammaln", (UNIT + 3, 3)), ("logit", (UNIT, 0.2)),
])
def test_multi_argument_functions_match_torch(name, args):
    ts = [torch.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
    ss = [sg.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
    rt, rs = getattr(torch.special, name)(*ts), getattr(sg.special, name)(*ss)
    np.testing.assert_allclose(rs.detach().numpy(), rt.detach().numpy(), rtol=1e-10)
    assert type(rs.grad_fn).__name__ == type(rt.grad_fn).__name__
    rt.sum().backward()
    rs.sum().backward()
    for s, t in zip(ss, ts):
        if isinstance(t, torch.Tensor):
            np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_special_values_and_integer_inputs():
    pts = [0.0, -1.0, 1.0, np.nan, np.inf]
    for fn in ("erfinv", "digamma", "gammaln", "ndtri", "entr", "i0", "log_ndtr"):
        want = getattr(torch.special, fn)(torch.tensor(pts, dtype=torch.float64)).numpy()
        got = getattr(sg.special, fn)(sg.tensor(pts, dtype=sg.float64)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=fn)
    r = sg.special.erfinv(sg.tensor([0, 1]))
    assert r.dtype == sg.float32 == sg.get_default_dtype()
    assert sg.special.xlog1py(sg.tensor([0.0]), sg.tensor([np.inf])).item() == 0.0


def test_second_derivative_and_compiled():
    x = sg.tensor([0.3, 1.7, 2.5], dtype=sg.float64, requires_grad=True)
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    (gs,) = sg.autograd.grad(sg.special.gammaln(x).sum() + sg.erfinv(x / 3).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(torch.special.gammaln(t).sum() + torch.erfinv(t / 3).sum(), t, create_graph=True)
    (hs,) = sg.autograd.grad(gs.sum(), x)
    (ht,) = torch.autograd.grad(gt.sum(), t)
    np.testing.assert_allclose(hs.numpy(), ht.numpy(), rtol=1e-9)
    def f(a):
        return sg.special.i0(a).sum() + sg.special.ndtri(a / 4).sum()
    value, grad = sg.value_and_grad(f)(x.detach().numpy())
    tv = torch.special.i0(t).sum() + torch.special.ndtri(t / 4).sum()
    (tg,) = torch.autograd.grad(tv, t)
    np.testing.assert_allclose(grad, tg.numpy(), rtol=1e-10)
