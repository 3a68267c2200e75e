"""Exponential, Laplace, MultivariateNormal and kl_divergence (symgrad/distributions/more.py) against torch 2.13:
seeded samples, log_prob / entropy / cdf values and gradients, reprs, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as td

import symgrad as sg
import symgrad.distributions as sd

RNG = np.random.default_rng(4)
A = RNG.standard_normal((2, 3, 3))
COV = A @ np.swapaxes(A, -1, -2) + np.eye(3)
LOC = RNG.standard_normal((2, 3))


def _close(a, b, rtol=1e-10):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-12)


def _params(*arrays):
    return [sg.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays]


def _run(make_s, make_t, arrays, value, methods=("log_prob", "entropy")):
    ps, pt = _params(*arrays)
    ds, dt = make_s(*ps), make_t(*pt)
    assert repr(ds) == repr(dt)
    assert ds.batch_shape == dt.batch_shape and ds.event_shape == dt.event_shape
    sg.manual_seed(3)
    torch.manual_seed(3)
    _close(ds.sample((2,)), dt.sample((2,)))
    rs, rt = ds.rsample(), dt.rsample()
    _close(rs, rt)
    total_s, total_t = rs.sum(), rt.sum()
    for m in methods:
        args = () if m == "entropy" else (value,)
        out_s = getattr(ds, m)(*(sg.tensor(a) for a in args))
        out_t = getattr(dt, m)(*(torch.tensor(a) for a in args))
        _close(out_s, out_t)
        total_s, total_t = total_s + out_s.sum(), total_t + out_t.sum()
    for name in ("mean", "variance", "stddev"):
        _close(getattr(ds, name), getattr(dt, name))
    total_s.backward()
    total_t.backward()
    for a, b in zip(ps, pt):
        _close(a.grad, b.grad, 1e-9)


def test_exponential():
    rate = RNG.random((2, 3)) + 0.5
    _run(sd.Exponential, td.Exponential, (rate,), RNG.random((2, 3)), ("log_prob", "entropy", "cdf", "icdf"))


def test_laplace():
    _run(sd.Laplace, td.Laplace, (LOC, RNG.random((2, 3)) + 0.5), RNG.random((2, 3)),
         ("log_prob", "entropy", "cdf", "icdf"))


@pytest.mark.parametrize("kind", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_multivariate_normal(kind):
    mat = {"covariance_matrix": COV, "scale_tril": np.linalg.cholesky(COV),
           "precision_matrix": np.linalg.inv(COV)}[kind]
    _run(lambda loc, m: sd.MultivariateNormal(loc, **{kind: m}),
         lambda loc, m: td.MultivariateNormal(loc, **{kind: m}), (LOC, mat), RNG.standard_normal((4, 2, 3)))
    ds = sd.MultivariateNormal(sg.tensor(LOC[0]), **{kind: sg.tensor(mat)})
    dt = td.MultivariateNormal(torch.tensor(LOC[0]), **{kind: torch.tensor(mat)})
    for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
        _close(getattr(ds, name), getattr(dt, name), 1e-9)


def test_kl_divergence():
    pairs = [
        (lambda m: m.Normal(m.tensor([0.3, -1.0]), m.tensor([1.5, 0.4])),
         lambda m: m.Normal(m.tensor([0.0, 0.5]), m.tensor([0.7, 2.0]))),
        (lambda m: m.Bernoulli(probs=m.tensor([0.3, 0.0, 1.0])),
         lambda m: m.Bernoulli(probs=m.tensor([0.6, 0.2, 0.0]))),
        (lambda m: m.Categorical(probs=m.tensor([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]])),
         lambda m: m.Categorical(logits=m.tensor([[0.1, -0.3, 2.0], [0.0, 1.0, -1.0]]))),
        (lambda m: m.Uniform(m.tensor([0.0, -1.0]), m.tensor([1.0, 2.0])),
         lambda m: m.Uniform(m.tensor([-0.5, 0.0]), m.tensor([2.0, 3.0]))),
        (lambda m: m.Exponential(m.tensor([0.5, 2.0])), lambda m: m.Exponential(m.tensor([1.5, 0.2]))),
        (lambda m: m.Laplace(m.tensor([0.3, -1.0]), m.tensor([1.5, 0.4])),
         lambda m: m.Laplace(m.tensor([0.0, 0.5]), m.tensor([0.7, 2.0]))),
    ]

    class _NS:
        def __init__(self, lib, dist):
            self.lib, self.dist = lib, dist

        def __getattr__(self, name):
            return getattr(self.dist, name) if hasattr(self.dist, name) else getattr(self.lib, name)

    s_ns, t_ns = _NS(sg, sd), _NS(torch, td)
    for mp, mq in pairs:
        _close(sd.kl_divergence(mp(s_ns), mq(s_ns)), td.kl_divergence(mp(t_ns), mq(t_ns)), 1e-6)
    (ls, lt), (cs, ct) = _params(LOC), _params(COV)
    ks = sd.kl_divergence(sd.MultivariateNormal(ls[0], cs[0]), sd.MultivariateNormal(ls[0] * 0.5, cs[0][0]))
    kt = td.kl_divergence(td.MultivariateNormal(lt[0], ct[0]), td.MultivariateNormal(lt[0] * 0.5, ct[0][0]))
    _close(ks, kt, 1e-9)
    ks.sum().backward()
    kt.sum().backward()
    _close(cs[0].grad, ct[0].grad, 1e-8)
    with pytest.raises(NotImplementedError):
        sd.kl_divergence(sd.Normal(0.0, 1.0), sd.Exponential(1.0))


def test_errors():
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        sd.MultivariateNormal(sg.zeros(2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        sd.MultivariateNormal(sg.tensor(0.0), sg.eye(1))
    with pytest.raises(ValueError, match="Expected parameter rate"):
        sd.Exponential(sg.tensor([-1.0]))
