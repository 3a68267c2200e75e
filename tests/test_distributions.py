"""``sg.distributions`` against torch.distributions 2.13: seeded samples bit for bit, log_prob / entropy / moments
and their gradients, shapes, reprs, validate_args errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

LOC, SCALE = [0.5, -1.0, 2.0], [1.0, 0.5, 2.5]
PROBS = [[0.2, 0.3, 0.5], [0.7, 0.1, 0.2]]


def _make(lib, name, dtype):
    t = lambda v: lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True)  # noqa: E731
    d = lib.distributions
    if name == "normal":
        return d.Normal(t(LOC), t(SCALE))
    if name == "uniform":
        return d.Uniform(t(LOC), t([3.0, 0.0, 4.0]))
    if name == "bernoulli":
        return d.Bernoulli(t([0.2, 0.5, 0.9]))
    if name == "bernoulli logits":
        return d.Bernoulli(logits=t([-1.0, 0.0, 2.0]))
    if name == "categorical":
        return d.Categorical(t(PROBS))
    return d.Categorical(logits=t(PROBS))


VALUES = {"normal": [[0.1, 0.2, 3.0]], "uniform": [[1.0, -0.5, 3.9]], "bernoulli": [[0.0, 1.0, 1.0]],
          "bernoulli logits": [[1.0, 0.0, 1.0]], "categorical": [[2, 0], [1, 1]], "categorical logits": [[0, 2]]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(VALUES))
def test_samples_and_statistics_match_torch(name, dtype):
    ds, dt = _make(sg, name, dtype), _make(torch, name, dtype)
    assert tuple(ds.batch_shape) == tuple(dt.batch_shape) and tuple(ds.event_shape) == tuple(dt.event_shape)
    for shape in ((), (4,), (2, 3)):
        sg.manual_seed(5)
        torch.manual_seed(5)
        a, b = ds.sample(shape), dt.sample(shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert str(a.dtype) == str(b.dtype) and not a.requires_grad
    if dt.has_rsample:
        sg.manual_seed(9)
        torch.manual_seed(9)
        a, b = ds.rsample((3,)), dt.rsample((3,))
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    rtol = 1e-10 if dtype == "float64" else 1e-5
    v = VALUES[name]
    lt = dt.log_prob(torch.tensor(v, dtype=torch.int64 if "categorical" in name else getattr(torch, dtype)))
    ls = ds.log_prob(sg.tensor(v, dtype=sg.int64 if "categorical" in name else getattr(sg, dtype)))
    terms = [(ls, lt), (ds.entropy(), dt.entropy())]
    if "categorical" not in name:
        terms += [(ds.mean, dt.mean), (ds.variance, dt.variance), (ds.stddev, dt.stddev)]
    for s, t in terms:
        assert tuple(s.shape) == tuple(t.shape)
        np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=rtol)
    total_s = sum((s * (k + 1)).sum() for k, (s, _) in enumerate(terms[:2]))
    total_t = sum((t * (k + 1)).sum() for k, (_, t) in enumerate(terms[:2]))
    ps = [p for p in (getattr(ds, n, None) for n in ("loc", "scale", "low", "high")) if p is not None]
    pt = [p for p in (getattr(dt, n, None) for n in ("loc", "scale", "low", "high")) if p is not None]
    if not ps:
        ps, pt = [ds._param], [dt._param]
    gs = sg.autograd.grad(total_s, ps, allow_unused=True)
    gt = torch.autograd.grad(total_t, pt, allow_unused=True)
    for a, b in zip(gs, gt):
        if b is None:
            assert a is None or not np.any(a.numpy())
        else:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol * 10, atol=rtol)


def test_normal_cdf_icdf_and_reprs():
    ds, dt = sg.distributions.Normal(0.0, 1.0), torch.distributions.Normal(0.0, 1.0)
    assert repr(ds) == repr(dt) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(sg.distributions.Normal(sg.zeros(3), 1.0)) == repr(torch.distributions.Normal(torch.zeros(3), 1.0))
    assert repr(sg.distributions.Categorical(sg.tensor([0.2, 0.8]))) == "Categorical(probs: torch.Size([2]))"
    assert repr(sg.distributions.Bernoulli(0.3)) == repr(torch.distributions.Bernoulli(0.3))
    x = [-1.0, 0.25, 2.0]
    np.testing.assert_allclose(ds.cdf(sg.tensor(x)).numpy(), dt.cdf(torch.tensor(x)).numpy(), rtol=1e-6)
    p = [0.1, 0.5, 0.975]
    np.testing.assert_allclose(ds.icdf(sg.tensor(p)).numpy(), dt.icdf(torch.tensor(p)).numpy(), rtol=1e-5)
    assert ds.sample().shape == dt.sample().shape == ()


@pytest.mark.parametrize("call", [
    lambda L: L.distributions.Normal(L.tensor([0.0]), L.tensor([-1.0])),
    lambda L: L.distributions.Normal(L.tensor([0.0]), L.tensor([1.0])).log_prob(L.tensor([float("nan")])),
    lambda L: L.distributions.Uniform(0.0, 1.0).log_prob(L.tensor(2.0)),
    lambda L: L.distributions.Bernoulli(L.tensor([1.5])),
    lambda L: L.distributions.Bernoulli(0.5).log_prob(L.tensor(0.5)),
    lambda L: L.distributions.Categorical(L.tensor([0.5, 0.5])).log_prob(L.tensor(3)),
    lambda L: L.distributions.Bernoulli(),
])
def test_validation_errors_match_torch(call):
    with pytest.raises(ValueError) as et:
        call(torch)
    with pytest.raises(ValueError) as es:
        call(sg)
    assert str(es.value) == str(et.value)
    sg.distributions.Normal(sg.tensor([0.0]), sg.tensor([-1.0]), validate_args=False)
