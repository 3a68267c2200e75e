"""``local_response_norm``, ``alpha_dropout`` / ``feature_alpha_dropout`` (torch's draws), ``channel_shuffle``,
``triplet_margin_with_distance_loss``, ``gumbel_softmax`` (torch's exponential draws), ``pdist`` and their modules,
and ``LazyBatchNorm1d/2d/3d``, against torch 2.13: values, gradients, grad_fn names, reprs, state_dict keys,
errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 6, 3, 2)).astype(np.float32)
X3 = RNG.standard_normal((2, 6, 5)).astype(np.float32)
X5 = RNG.standard_normal((2, 4, 2, 2, 3)).astype(np.float32)


def _both(fn):
    out = []
    for lib in (torch, sg):
        lib.manual_seed(7)
        out.append(fn(lib))
    return out


def _check(t, s, exact_value: bool = True, tol: float = 1e-6) -> None:
    for a, b in zip(t, s):
        if isinstance(a, np.ndarray):
            if exact_value:
                np.testing.assert_array_equal(b, a)
            else:
                np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
        else:
            assert a == b
        exact_value = False  # only the first item (the value) is compared bit for bit


def _grad_run(lib, f, x, seed_grad=None):
    a = lib.tensor(x, requires_grad=True)
    o = f(lib, a)
    g = lib.tensor(np.linspace(-1, 1, o.numel(), dtype=np.float32).reshape(tuple(o.shape)))
    o.backward(g)
    return o.detach().numpy(), a.grad.numpy(), type(o.grad_fn).__name__


@pytest.mark.parametrize("x,kw,exact", [(X4, dict(size=3), True), (X3, dict(size=2, alpha=0.1, beta=0.5, k=2.0), False),
                                        (X5, dict(size=4), False)], ids=["4d", "3d", "5d"])
def test_local_response_norm(x, kw, exact) -> None:
    t, s = _both(lambda lib: _grad_run(lib, lambda L, a: L.nn.functional.local_response_norm(a, **kw), x))
    _check(t, s, exact_value=exact)
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2 dimensions\)"):
        sg.nn.functional.local_response_norm(sg.ones(2, 3), 2)


@pytest.mark.parametrize("name,p,x", [("alpha_dropout", 0.3, X4), ("feature_alpha_dropout", 0.4, X4),
                                      ("alpha_dropout", 1.0, X3), ("feature_alpha_dropout", 0.5, X5)])
def test_alpha_dropouts_draw_torchs_masks(name, p, x) -> None:
    def run(lib):
        a = lib.tensor(x, requires_grad=True)
        o = getattr(lib.nn.functional, name)(a, p, training=True)
        o.backward(lib.ones_like(o))
        return o.detach().numpy(), a.grad.numpy(), type(o.grad_fn).__name__, lib.rand(1).item()
    t, s = _both(run)
    assert np.array_equal(t[0], s[0]) and np.array_equal(t[1], s[1]) and t[2:] == s[2:]


def test_alpha_dropout_modules() -> None:
    for lib in (torch, sg):
        m = lib.nn.AlphaDropout(0.2)
        assert repr(m) == "AlphaDropout(p=0.2, inplace=False)"
        assert repr(lib.nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"
        m.eval()
        x = lib.tensor(X3)
        assert m(x) is x
        assert lib.nn.functional.alpha_dropout(x, 0.5) is x  # training defaults to False
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            lib.nn.functional.alpha_dropout(x, 1.5, True)
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
            lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True)
    t, s = _both(lambda lib: lib.nn.FeatureAlphaDropout(0.3)(lib.tensor(X4)).numpy())
    assert np.array_equal(t, s)


def test_channel_shuffle() -> None:
    t, s = _both(lambda lib: _grad_run(lib, lambda L, a: L.nn.functional.channel_shuffle(a, 3), X4))
    _check(t, s, tol=0)
    t, s = _both(lambda lib: (lib.nn.ChannelShuffle(2)(lib.tensor(X3)).numpy(), repr(lib.nn.ChannelShuffle(2))))
    _check(t, s)
    for lib in (torch, sg):
        with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 6 channels "
                                               "and 4 groups."):
            lib.nn.functional.channel_shuffle(lib.tensor(X4), 4)
        with pytest.raises(RuntimeError, match="Number of groups to divide channels in must be positive. Value of "
                                               "groups:0"):
            lib.nn.functional.channel_shuffle(lib.tensor(X4), 0)


@pytest.mark.parametrize("kw", [dict(), dict(swap=True, margin=2.0, reduction="none"), dict(reduction="sum", cos=1)])
def test_triplet_margin_with_distance_loss(kw) -> None:
    kw = dict(kw)
    cos = kw.pop("cos", 0)

    def run(lib):
        a, p, n = (lib.tensor(X3[0, i:i + 3], requires_grad=True) for i in (0, 1, 2))
        extra = {"distance_function": lambda x, y: 1.0 - lib.nn.functional.cosine_similarity(x, y)} if cos else {}
        o = lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, **kw, **extra)
        o.sum().backward()
        m = lib.nn.TripletMarginWithDistanceLoss(**kw, **extra)
        return o.detach().numpy(), a.grad.numpy(), p.grad.numpy(), n.grad.numpy(), type(o.grad_fn).__name__, \
            m(a, p, n).detach().numpy(), repr(m)
    t, s = _both(run)
    _check(t, s)
    for lib in (torch, sg):
        with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0 instead"):
            lib.nn.TripletMarginWithDistanceLoss(margin=0)
        with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs"):
            lib.nn.functional.triplet_margin_with_distance_loss(lib.ones(2, 3), lib.ones(3), lib.ones(2, 3))


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_draws(hard) -> None:
    def run(lib):
        a = lib.tensor(X3[0], requires_grad=True)
        o = lib.nn.functional.gumbel_softmax(a, tau=0.5, hard=hard)
        (o * lib.tensor(X3[1])).sum().backward()
        return o.detach().numpy(), a.grad.numpy(), type(o.grad_fn).__name__, lib.rand(1).item()
    t, s = _both(run)
    # the same exponential draws; log and softmax round like torch's to within an ulp or two
    np.testing.assert_allclose(s[0], t[0], rtol=1e-6, atol=1e-6)
    if hard:
        assert np.array_equal(s[0], t[0])
    np.testing.assert_allclose(s[1], t[1], rtol=1e-5, atol=1e-6)
    assert t[2:] == s[2:]


@pytest.mark.parametrize("p", [2, 1, 3, 0, float("inf")])
def test_pdist(p) -> None:
    x = X3[0].copy()
    x[3] = x[1]  # a zero distance: torch's gradient there is 0

    def run(lib):
        a = lib.tensor(x, requires_grad=True)
        o = lib.nn.functional.pdist(a, p)
        o.sum().backward()
        return o.detach().numpy(), a.grad.numpy(), type(o.grad_fn).__name__, tuple(o.shape)
    t, s = _both(run)
    np.testing.assert_allclose(s[0], t[0], rtol=1e-6)
    np.testing.assert_allclose(s[1], t[1], rtol=1e-5, atol=1e-6)
    assert t[2:] == s[2:] == ("PdistBackward0", (15,))


def test_pdist_errors_and_single_row() -> None:
    for lib in (torch, sg):
        with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
            lib.nn.functional.pdist(lib.ones(3))
        assert tuple(lib.nn.functional.pdist(lib.ones(1, 3)).shape) == (0,)


@pytest.mark.parametrize("cls,x", [("LazyBatchNorm1d", X3), ("LazyBatchNorm2d", X4), ("LazyBatchNorm3d", X5)])
def test_lazy_batchnorm(cls, x) -> None:
    def run(lib):
        m = getattr(lib.nn, cls)(momentum=0.2)
        before = (repr(m), list(m.state_dict()))
        y = m(lib.tensor(x))
        after = (repr(m), type(m).__name__, list(m.state_dict()), m.weight.shape, int(m.num_batches_tracked))
        return y.detach().numpy(), m.running_mean.numpy(), before, after, type(y.grad_fn).__name__
    t, s = _both(run)
    np.testing.assert_allclose(s[0], t[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s[1], t[1], rtol=1e-5, atol=1e-6)
    assert t[2:] == s[2:]


def test_lazy_batchnorm_options_and_load() -> None:
    for lib in (torch, sg):
        m = lib.nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
        assert repr(m) == ("LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                           "track_running_stats=False)")
        m(lib.tensor(X4))
        # nothing to materialise: torch leaves num_features at 0
        assert repr(m) == "BatchNorm2d(0, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
        src = lib.nn.BatchNorm1d(6)
        lazy = lib.nn.LazyBatchNorm1d()
        lazy.load_state_dict(src.state_dict())
        assert tuple(lazy.weight.shape) == (6,)
        with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
            lib.nn.LazyBatchNorm1d()(lib.tensor(X4))
