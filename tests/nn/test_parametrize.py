"""``nn.utils.parametrize`` and ``nn.utils.parametrizations`` (``weight_norm``, ``spectral_norm``) and the
hook-based ``nn.utils.spectral_norm`` against torch 2.13: class names, reprs, state dict keys and metadata,
parameter names, values and gradients, ``cached()``, ``right_inverse`` on assignment, removal, the power
iteration's RNG draws and its train / eval behaviour, loading old ``weight_g`` / ``weight_v`` keys, errors.
Each scenario runs once per library and its printed lines must be the same."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import assert_close

import symgrad as sg


def _parametrize_scenario(torch):
    out = []

    def p(*args):
        out.append(" ".join(str(a) for a in args))

    P = torch.nn.utils.parametrize
    nn = torch.nn

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(0, 1)
        def right_inverse(self, A):
            return A.triu()

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(torch.tensor(2.0))
        def forward(self, X):
            return X * self.s
        def right_inverse(self, X):
            return X / self.s

    torch.manual_seed(0)
    m = nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    p(type(m).__name__, P.is_parametrized(m), P.is_parametrized(m, "bias"))
    p(m)
    p(list(m.state_dict()))
    p([n for n, _ in m.named_parameters()])
    p(m.weight)
    P.register_parametrization(m, "weight", Scale())
    p(m)
    p([n for n, _ in m.named_parameters()])
    y = m(torch.ones(2, 3)).sum()
    y.backward()
    p(m.parametrizations.weight.original.grad, m.parametrizations.weight[1].s.grad)
    with P.cached():
        a = m.weight
        b = m.weight
        p(a is b)
    p(m.weight is m.weight)
    m.weight = torch.eye(3)
    p(m.parametrizations.weight.original)
    P.remove_parametrizations(m, "weight")
    p(type(m).__name__, list(m.state_dict()), type(m.weight).__name__)
    p(m.weight)
    m2 = nn.Linear(2, 2)
    P.register_parametrization(m2, "weight", Scale())
    P.remove_parametrizations(m2, "weight", leave_parametrized=False)
    p(m2.weight)
    try:
        P.remove_parametrizations(m2, "weight")
    except ValueError as e:
        p(e)
    try:
        P.register_parametrization(m2, "nope", Scale())
    except ValueError as e:
        p(e)
    class Bad(nn.Module):
        def forward(self, X):
            return X[0]
    try:
        P.register_parametrization(m2, "weight", Bad())
    except ValueError as e:
        p(e)
    P.register_parametrization(m2, "weight", Bad(), unsafe=True)
    p(m2.weight.shape, P.type_before_parametrizations(m2).__name__)
    return out


def _norms_scenario(torch):
    out = []

    def p(*args):
        out.append(" ".join(str(a) for a in args))

    nn = torch.nn
    from_p = torch.nn.utils.parametrizations
    torch.manual_seed(0)
    m = from_p.weight_norm(nn.Linear(3, 4))
    p(m)
    p(list(m.state_dict()), [tuple(v.shape) for v in m.state_dict().values()])
    p(m.weight.grad_fn.name(), m.weight)
    x = torch.randn(5, 3)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        p(round(loss.item(), 6))
    p(m.parametrizations.weight.original0.grad)
    c = from_p.weight_norm(nn.Conv1d(2, 3, 2), dim=None)
    p(list(c.state_dict()), c.parametrizations.weight.original0)
    s = from_p.spectral_norm(nn.Linear(4, 3))
    p(s)
    p(list(s.state_dict()), s.parametrizations.weight[0]._u, s.parametrizations.weight[0]._v)
    p(s.weight, torch.linalg.matrix_norm(s.weight.detach(), 2))
    opt = torch.optim.Adam(s.parameters(), lr=0.05)
    x = torch.randn(6, 4)
    for _ in range(3):
        opt.zero_grad()
        loss = s(x).sum().abs()
        loss.backward()
        opt.step()
        p(round(loss.item(), 5))
    s.eval()
    u0 = s.parametrizations.weight[0]._u.clone()
    w1 = s.weight
    w2 = s.weight
    p(torch.equal(u0, s.parametrizations.weight[0]._u), torch.equal(w1, w2))
    s.train()
    _ = s.weight
    p(torch.equal(u0, s.parametrizations.weight[0]._u))
    ct = from_p.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    p(ct.parametrizations.weight[0].dim, ct.parametrizations.weight[0]._u.shape, ct.parametrizations.weight[0]._v.shape)
    b = from_p.spectral_norm(nn.Linear(3, 2), name="bias")
    p(b.bias, list(b.state_dict()))
    try:
        from_p.spectral_norm(nn.Linear(3, 2), n_power_iterations=0)
    except ValueError as e:
        p(e)
    try:
        from_p.spectral_norm(nn.Linear(3, 2), dim=3)
    except IndexError as e:
        p(e)
    # old style
    o = nn.utils.spectral_norm(nn.Linear(3, 2))
    p(o, list(o.state_dict()), sorted(n for n, _ in o.named_parameters()))
    p(o.weight_u, o.weight_v)
    y = o(torch.ones(1, 3))
    y.sum().backward()
    p(y, o.weight_orig.grad, o.weight.grad_fn.name())
    p(o.state_dict()._metadata)
    o.eval()
    p(o(torch.ones(1, 3)))
    sd = o.state_dict()
    o2 = nn.utils.spectral_norm(nn.Linear(3, 2))
    p(o2.load_state_dict(sd))
    p(o2.weight_u)
    nn.utils.remove_spectral_norm(o)
    p(list(o.state_dict()), type(o.weight).__name__, o.weight)
    try:
        nn.utils.remove_spectral_norm(o)
    except ValueError as e:
        p(e)
    # old weight_norm keys load into the parametrized one
    old = nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = nn.utils.weight_norm(old)
    new = from_p.weight_norm(nn.Linear(3, 2))
    p(new.load_state_dict(old.state_dict()), torch.equal(new.weight, old.weight))
    torch.nn.utils.parametrize.remove_parametrizations(new, "weight")
    p(new, list(new.state_dict()))
    return out


def test_parametrize_matches_torch():
    assert _parametrize_scenario(sg) == _parametrize_scenario(torch)


def test_weight_norm_and_spectral_norm_match_torch():
    assert _norms_scenario(sg) == _norms_scenario(torch)


def _orthogonal_run(lib, shape, omap, trivial=True):
    lib.manual_seed(3)
    lin = lib.nn.Linear(shape[1], shape[0], bias=False)
    lib.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=omap, use_trivialization=trivial)
    meta = (lin.parametrizations.weight[0].orthogonal_map.name, list(lin.state_dict()), lin.weight.grad_fn.name())
    values = [lin.weight.detach().numpy().copy()]
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    x = lib.randn(2, shape[1])
    for _ in range(2):
        opt.zero_grad()
        loss = lin(x).pow(3).sum()
        loss.backward()
        opt.step()
        values.append(loss.item())
    w = lin.weight.detach().numpy()
    values.append(w)
    gram = w @ w.T if shape[0] <= shape[1] else w.T @ w
    return meta, values, gram


@pytest.mark.parametrize("shape,omap,trivial", [((4, 4), None, True), ((3, 5), None, True), ((5, 3), None, True),
                                                ((4, 4), "cayley", True), ((5, 3), "matrix_exp", True),
                                                ((3, 3), "householder", False)])
def test_orthogonal_matches_torch(shape, omap, trivial):
    (meta_s, vals_s, gram), (meta_t, vals_t, _) = (_orthogonal_run(lib, shape, omap, trivial) for lib in (sg, torch))
    assert meta_s == meta_t
    for a, b in zip(vals_s, vals_t):
        assert_close(a, b, atol=1e-4)
    if trivial:  # stays orthogonal while training
        assert_close(gram, np.eye(min(shape), dtype=np.float32), atol=1e-5)


def test_orthogonal_errors_match_torch():
    msgs = {}
    for lib in (sg, torch):
        got = []
        for kwargs in ({"orthogonal_map": "qr"}, {"name": "bias"}):
            with pytest.raises(ValueError) as e:
                lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), **kwargs)
            got.append(str(e.value))
        msgs[lib] = got
    assert msgs[sg] == msgs[torch]
