"""Gamma, Chi2, Beta, Dirichlet, StudentT, Poisson, Binomial, LogNormal, TransformedDistribution (+ transforms),
Independent, OneHotCategorical, MixtureSameFamily and their KL pairs (symgrad/distributions/extra.py) against
torch 2.13: seeded samples bit for bit (torch's rejection samplers on the shared stream), rsample gradients
(``_standard_gamma_grad`` / ``_dirichlet_grad``), log_prob / entropy / moments and their gradients, shapes,
``expand``, reprs, supports and validation errors; float32 and float64."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as td
import torch.distributions.transforms as tt

import symgrad as sg
import symgrad.distributions as sd
import symgrad.distributions.transforms as st
from symgrad.core import rng_dist
from symgrad.distributions import sampling

# float64 tolerance: symgrad's lgamma / digamma differ from glibc's / torch's in the last bit, which entropies
# and KLs (sums of large, cancelling terms) amplify to ~1e-10
DTYPES = [(np.float32, 2e-6), (np.float64, 1e-9)]


def _same(a, b, rtol=0.0):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if rtol == 0.0:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


# ------------------------------------------------------------------------------------------ the samplers


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 7, 123])
def test_samplers_draw_torchs_numbers_and_leave_the_stream_where_torch_does(dt, seed):
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 30.0] * 6, dt)
    lam = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 400.0] * 6, dt)
    cnt = np.array([0.0, 5.0, 20.0, 100.0, 1000.0, 7.0] * 6, dt)
    prob = np.array([0.3, 0.6, 0.2, 0.9, 0.5, 0.05] * 6, dt)
    torch.manual_seed(seed)
    expect = [torch._standard_gamma(torch.tensor(alpha)), torch.poisson(torch.tensor(lam)),
              torch.binomial(torch.tensor(cnt), torch.tensor(prob)),
              torch._sample_dirichlet(torch.tensor(alpha).reshape(-1, 3)), torch.rand(3, dtype=torch.float64)]
    sg.manual_seed(seed)
    g = sg.random.default_generator._engine     # the stream the tensor wrappers draw from
    got = [rng_dist.standard_gamma(g, alpha), rng_dist.poisson(g, lam), rng_dist.binomial(g, cnt, prob),
           sampling._sample_dirichlet(sg.tensor(alpha).reshape(-1, 3)), sg.rand(3, dtype=sg.float64)]
    for a, b in zip(got, expect):
        _same(a, b)


def test_top_level_samplers_are_torchs():
    """``torch.poisson`` / ``binomial`` / ``_standard_gamma`` / ``_sample_dirichlet`` and gradients at the top level."""
    lam, alpha = [0.5, 4.0, 30.0], [[0.3, 2.0], [5.0, 1.0]]
    torch.manual_seed(3)
    want = [torch.poisson(torch.tensor(lam)), torch.binomial(torch.tensor([10.0, 3.0]), torch.tensor([0.4, 0.9])),
            torch._standard_gamma(torch.tensor(alpha)), torch._sample_dirichlet(torch.tensor(alpha))]
    sg.manual_seed(3)
    got = [sg.poisson(sg.tensor(lam)), sg.binomial(sg.tensor([10.0, 3.0]), sg.tensor([0.4, 0.9])),
           sg._standard_gamma(sg.tensor(alpha)), sg._sample_dirichlet(sg.tensor(alpha))]
    for a, b in zip(got, want):
        _same(a, b)
    x = torch.tensor([0.7, 2.2])
    _same(sg._standard_gamma_grad(sg.tensor([0.5, 3.0]), sg.tensor(x.numpy())),
          torch._standard_gamma_grad(torch.tensor([0.5, 3.0]), x))
    assert "poisson" in sg.__all__ and "binomial" in sg.__all__


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_reparameterisation_gradients_match_torchs_kernels(dt):
    torch.manual_seed(0)
    alpha = torch.tensor([0.05, 0.3, 1.0, 2.5, 7.0, 9.0, 30.0, 200.0] * 4, dtype=torch.float64).to(dt_t(dt))
    x = torch._standard_gamma(alpha)
    _same(rng_dist.standard_gamma_grad(alpha.numpy(), x.numpy()), torch._standard_gamma_grad(alpha, x))
    c = torch.tensor([[0.3, 1.0, 2.5], [0.05, 7.0, 30.0], [8.0, 9.0, 10.0]] * 4, dtype=dt_t(dt))
    xs = torch._sample_dirichlet(c)
    tot = c.sum(-1, True).expand_as(c)
    _same(rng_dist.dirichlet_grad(xs.numpy(), c.numpy(), tot.numpy()), torch._dirichlet_grad(xs, c, tot))
    # concentrations from 1e-3 to 1e3: every branch, including the ones that give NaN (0/0) in torch
    torch.manual_seed(1)
    c = ((torch.rand(300, 3, dtype=torch.float64) * 14 - 7).exp()).to(dt_t(dt))
    xs = torch._sample_dirichlet(c)
    tot = c.sum(-1, True).expand_as(c)
    _same(rng_dist.dirichlet_grad(xs.numpy(), c.numpy(), tot.numpy()), torch._dirichlet_grad(xs, c, tot))
    al = c.reshape(-1)
    x = torch._standard_gamma(al)
    _same(rng_dist.standard_gamma_grad(al.numpy(), x.numpy()), torch._standard_gamma_grad(al, x))


def dt_t(dt):
    return torch.float32 if dt == np.float32 else torch.float64


# ------------------------------------------------------------------------------------------ the distributions


# parameters are made positive with abs and + (exact in both libraries; exp may differ in the last bit in float32)
def _both(arrays, requires_grad=True):
    s = [sg.tensor(a, requires_grad=requires_grad) for a in arrays]
    t = [torch.tensor(a, requires_grad=requires_grad) for a in arrays]
    return s, t


CASES = {
    "Gamma": (lambda m, a, b: m.Gamma(a.abs() + 0.3, b.abs() + 0.3), [(2, 3), (3,)], True),
    "Chi2": (lambda m, a: m.Chi2(a.abs() + 0.3), [(4,)], True),
    "Beta": (lambda m, a, b: m.Beta(a.abs() + 0.3, b.abs() + 0.3), [(2, 3), (2, 3)], True),
    "Dirichlet": (lambda m, a: m.Dirichlet(a.abs() + 0.3), [(2, 4)], True),
    "StudentT": (lambda m, a, b, c: m.StudentT(a.abs() + 2.5, b, c.abs() + 0.3), [(3,), (2, 3), (3,)], True),
    "LogNormal": (lambda m, a, b: m.LogNormal(a, b.abs() + 0.3), [(2, 3), (3,)], True),
    "Poisson": (lambda m, a: m.Poisson(a.abs() * 8 + 0.1), [(2, 5)], False),
    "Binomial": (lambda m, a: m.Binomial(30, logits=a), [(2, 5)], False),
    "Independent": (lambda m, a, b: m.Independent(m.Normal(a, b.abs() + 0.3), 1), [(2, 3), (2, 3)], True),
    "OneHotCategorical": (lambda m, a: m.OneHotCategorical(logits=a), [(2, 4)], False),
    "Mixture": (lambda m, a, b, c: m.MixtureSameFamily(m.Categorical(logits=a), m.Normal(b, c.abs() + 0.3)),
                [(2, 3), (2, 3), (2, 3)], False),
    "Sigmoid": (lambda m, a, b: m.TransformedDistribution(
        m.Normal(a, b.abs() + 0.3), [_tr(m).AffineTransform(0.5, 2.0), _tr(m).SigmoidTransform()]), [(3,), (3,)], True),
    "Tanh": (lambda m, a, b: m.TransformedDistribution(
        m.Normal(a, b.abs() + 0.3), _tr(m).ComposeTransform([_tr(m).TanhTransform()])), [(3,), (3,)], True),
}


TRANSFORMED = ("LogNormal", "Sigmoid", "Tanh")


def _tr(m):
    return st if m is sd else tt


@pytest.mark.parametrize("dt,tol", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_distribution_matches_torch(name, dt, tol):
    make, shapes, reparam = CASES[name]
    arrays = [np.random.default_rng(len(name)).uniform(-1, 1, s).astype(dt) for s in shapes]
    ps, pt = _both(arrays)
    ds, dtt = make(sd, *ps), make(td, *pt)
    assert repr(ds) == repr(dtt)
    assert ds.batch_shape == dtt.batch_shape and ds.event_shape == dtt.event_shape
    assert repr(ds.support) == repr(dtt.support)
    sg.manual_seed(5)
    torch.manual_seed(5)
    xs, xt = ds.sample((3,)), dtt.sample((3,))
    exact = 0.0 if name not in TRANSFORMED else tol   # exp / tanh of float64 may differ in the last bit
    _same(xs, xt, exact)
    total_s, total_t = ds.log_prob(xs).sum(), dtt.log_prob(xt).sum()
    _same(ds.log_prob(xs), dtt.log_prob(xt), tol)
    if reparam:
        rs, rt = ds.rsample((2,)), dtt.rsample((2,))
        _same(rs, rt, tol)
        total_s, total_t = total_s + (rs * rs).sum(), total_t + (rt * rt).sum()
    assert ds.has_rsample == dtt.has_rsample
    for prop in ("mean", "variance", "stddev", "mode"):
        try:
            expect = getattr(dtt, prop)
        except NotImplementedError:
            continue
        _same(getattr(ds, prop), expect, tol)
    try:
        ent_t = dtt.entropy()
    except NotImplementedError:
        ent_t = None
    if ent_t is not None:
        ent_s = ds.entropy()
        _same(ent_s, ent_t, tol)
        total_s, total_t = total_s + ent_s.sum(), total_t + ent_t.sum()
    total_s.backward()
    total_t.backward()
    for a, b in zip(ps, pt):
        _same(a.grad, b.grad, tol * 50)
    big = (4, *dtt.batch_shape)
    es, et = ds.expand(big), dtt.expand(big)
    assert es.batch_shape == et.batch_shape and es.event_shape == et.event_shape
    sg.manual_seed(2)
    torch.manual_seed(2)
    _same(es.sample(), et.sample(), exact)


def test_gamma_and_beta_scalars_reprs_and_validation():
    assert repr(sd.Gamma(1.0, 2.0)) == repr(td.Gamma(1.0, 2.0))
    assert repr(sd.Beta(1.0, 2.0)) == repr(td.Beta(1.0, 2.0))
    assert repr(sd.Poisson(2.0)) == repr(td.Poisson(2.0))
    assert repr(sd.Binomial(10, sg.tensor(0.3))) == repr(td.Binomial(10, torch.tensor(0.3)))
    assert repr(sd.Binomial(10, sg.tensor(0.3)).support) == repr(td.Binomial(10, torch.tensor(0.3)).support)
    assert repr(sd.StudentT(3.0)) == repr(td.StudentT(3.0))
    for make in (lambda m, t: m.Gamma(t([1.0, -1.0]), 1.0), lambda m, t: m.Dirichlet(t([1.0, 0.0])),
                 lambda m, t: m.Poisson(t([-1.0]))):
        with pytest.raises(ValueError) as es:
            make(sd, sg.tensor)
        with pytest.raises(ValueError) as et:
            make(td, torch.tensor)
        assert str(es.value) == str(et.value)
    with pytest.raises(ValueError) as es:
        sd.Gamma(sg.tensor([1.0]), 1.0).log_prob(sg.tensor([-1.0]))
    with pytest.raises(ValueError) as et:
        td.Gamma(torch.tensor([1.0]), 1.0).log_prob(torch.tensor([-1.0]))
    assert str(es.value) == str(et.value)
    with pytest.raises(ValueError, match="at least one-dimensional"):
        sd.Dirichlet(sg.tensor(1.0))


def test_transform_reprs_inverses_and_jacobians():
    assert repr(st.ComposeTransform([st.ExpTransform(), st.AffineTransform(1.0, 2.0)])) == \
        repr(tt.ComposeTransform([tt.ExpTransform(), tt.AffineTransform(1.0, 2.0)]))
    assert repr(st.ExpTransform().inv) == repr(tt.ExpTransform().inv)
    x = np.linspace(-2, 2, 7)
    for ms, mt in ((st.ExpTransform(), tt.ExpTransform()), (st.SigmoidTransform(), tt.SigmoidTransform()),
                   (st.TanhTransform(), tt.TanhTransform()),
                   (st.AffineTransform(sg.tensor(1.0), sg.tensor(-3.0)),
                    tt.AffineTransform(torch.tensor(1.0), torch.tensor(-3.0)))):
        xs, xt = sg.tensor(x), torch.tensor(x)
        ys, yt = ms(xs), mt(xt)
        _same(ys, yt, 1e-14)
        _same(ms.inv(ys), mt.inv(yt), 1e-12)
        _same(ms.log_abs_det_jacobian(xs, ys), mt.log_abs_det_jacobian(xt, yt), 1e-12)
        assert repr(ms.codomain) == repr(mt.codomain) and repr(ms.domain) == repr(mt.domain)
        assert ms.bijective == mt.bijective
    assert st.ExpTransform() == st.ExpTransform() and st.ExpTransform() != st.TanhTransform()


KL_PAIRS = [
    (lambda m, a, b: (m.Gamma(a, b), m.Gamma(b, a))),
    (lambda m, a, b: (m.Beta(a, b), m.Beta(b, a))),
    (lambda m, a, b: (m.Dirichlet(a), m.Dirichlet(b))),
    (lambda m, a, b: (m.Poisson(a), m.Poisson(b))),
    (lambda m, a, b: (m.Binomial(10, a / 4), m.Binomial(10, b / 4))),
    (lambda m, a, b: (m.OneHotCategorical(a), m.OneHotCategorical(b))),
    (lambda m, a, b: (m.Independent(m.Normal(a, b), 1), m.Independent(m.Normal(b, a), 1))),
    (lambda m, a, b: (m.LogNormal(a, b), m.LogNormal(b, a))),
    (lambda m, a, b: (m.Exponential(a), m.Gamma(a, b))),
    (lambda m, a, b: (m.Gamma(a, b), m.Exponential(b))),
    (lambda m, a, b: (m.Beta(a, b), m.Gamma(b, a))),
    (lambda m, a, b: (m.Beta(a, b), m.Exponential(b))),
    (lambda m, a, b: (m.Beta(a, b), m.Normal(b, a))),
    (lambda m, a, b: (m.Gamma(a, b), m.Normal(b, a))),
]


@pytest.mark.parametrize("dt,tol", DTYPES)
@pytest.mark.parametrize("i", range(len(KL_PAIRS)))
def test_kl_divergence_matches_torch(i, dt, tol):
    arrays = [np.random.default_rng(i).uniform(0.3, 2.0, (2, 3)).astype(dt) for _ in range(2)]
    ps, pt = _both(arrays)
    ks = sd.kl_divergence(*KL_PAIRS[i](sd, *ps))
    kt = td.kl_divergence(*KL_PAIRS[i](td, *pt))
    _same(ks, kt, tol)
    ks.sum().backward()
    kt.sum().backward()
    for a, b in zip(ps, pt):
        _same(a.grad, b.grad, tol * 50)


def test_variational_gamma_fit_gradients_match_torch():
    # a reparameterised ELBO step: gradients flow through _standard_gamma's implicit reparameterisation
    for lib, dist in ((sg, sd), (torch, td)):
        lib.manual_seed(11)
        log_a = lib.tensor([0.2, -0.4, 1.1], requires_grad=True)
        log_b = lib.tensor([0.0, 0.3, -0.2], requires_grad=True)
        q = dist.Gamma(log_a.exp(), log_b.exp())
        z = q.rsample((4,))
        elbo = dist.Poisson(z).log_prob(lib.tensor([1.0, 3.0, 0.0])).sum() - dist.kl_divergence(
            q, dist.Gamma(lib.tensor(2.0), lib.tensor(1.0))).sum()
        elbo.backward()
        if lib is sg:
            got = (z, elbo, log_a.grad, log_b.grad)
        else:
            want = (z, elbo, log_a.grad, log_b.grad)
    for a, b in zip(got, want):
        _same(a, b, 2e-6)
