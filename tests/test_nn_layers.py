"""``symgrad/nn/layers.py`` (``linear dropout normalize cosine_similarity pad one_hot``) and the fused
arithmetic ``addcmul addcdiv lerp`` against torch: values, grad_fn names, gradients, errors."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import FLOAT_DTYPES, assert_close, grad_fn_name

import symgrad as sg
import symgrad.nn.functional as F

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 4))
W = RNG.standard_normal((2, 4))
B = RNG.standard_normal(2)

CASES: list[tuple[str, Callable[[Any, Any, Any, Any], Any]]] = [
    ("linear", lambda nf, x, w, b: nf.linear(x, w, b)),
    ("linear no bias", lambda nf, x, w, b: nf.linear(x, w)),
    ("linear 1-d", lambda nf, x, w, b: nf.linear(x[0], w, b)),
    ("linear 3-d", lambda nf, x, w, b: nf.linear(x[None].repeat(2, 1, 1), w, b)),
    ("linear 1-d no bias", lambda nf, x, w, b: nf.linear(x[0], w)),
    ("normalize", lambda nf, x, w, b: nf.normalize(x)),
    ("normalize p1 dim0", lambda nf, x, w, b: nf.normalize(x, p=1.0, dim=0)),
    ("cosine_similarity", lambda nf, x, w, b: nf.cosine_similarity(x, x * 2 + 1)),
    ("cosine_similarity broadcast", lambda nf, x, w, b: nf.cosine_similarity(x, w[:1], dim=-1)),
    ("pad last", lambda nf, x, w, b: nf.pad(x, (1, 2))),
    ("pad two dims value", lambda nf, x, w, b: nf.pad(x, (0, 1, 2, 0), value=-1.5)),
    ("pad crop", lambda nf, x, w, b: nf.pad(x, (-1, 1))),
    ("dropout eval", lambda nf, x, w, b: nf.dropout(x, 0.3, training=False)),
    ("dropout p0", lambda nf, x, w, b: nf.dropout(x, 0.0)),
    ("addcmul", lambda nf, x, w, b: x.addcmul(x, x * 2, value=0.5)),
    ("addcdiv", lambda nf, x, w, b: x.addcdiv(x, x * x + 1, value=-2)),
    ("lerp scalar", lambda nf, x, w, b: x.lerp(x * 3, 0.25)),
    ("lerp tensor", lambda nf, x, w, b: x.lerp(x * 3, x.sigmoid())),
]


def _lib(nf: Any) -> Any:
    return sg if nf is F else torch


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,fn", CASES, ids=[n for n, _ in CASES])
def test_matches_torch(name, fn, dtype):
    res = []
    for nf, lib in ((F, sg), (TF, torch)):
        x, w, b = (lib.tensor(a.astype(dtype), requires_grad=True) for a in (X, W, B))
        out = fn(nf, x, w, b)
        res.append((out, grad_fn_name(out), x, w, b))
        (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(dtype))).sum().backward()
    (o, n, *g), (to, tn, *tg) = res
    assert_close(o, to)
    assert n == tn
    for a, t in zip(g, tg):
        assert_close(a.grad, t.grad, what=name)


def test_dropout_masks_and_scales():
    sg.manual_seed(0)
    x = sg.ones(1000, requires_grad=True)
    y = F.dropout(x, 0.25)
    kept = y.detach().numpy() != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.75, 0.0))
    assert (F.dropout(x, 1.0).detach().numpy() == 0).all()
    sg.manual_seed(0)
    assert (F.dropout(sg.ones(1000), 0.25).numpy() == y.detach().numpy()).all()   # the seed fixes the mask
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(x, 1.5)


def test_one_hot_and_errors():
    for lib, nf in ((sg, F), (torch, TF)):
        assert nf.one_hot(lib.tensor([0, 2, 1]), 4).tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
        assert nf.one_hot(lib.tensor([[1], [0]])).tolist() == [[[0, 1]], [[1, 0]]]
        assert nf.one_hot(lib.tensor([1])).dtype == lib.int64
        with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
            nf.one_hot(lib.tensor([3]), 2)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(sg.ones(2), (1,))
    x = np.arange(6.0).reshape(2, 3)  # non-constant modes: symgrad/nn/padding.py (tests/nn/test_pooling.py)
    expected = TF.pad(torch.tensor(x), (1, 2), mode="reflect").tolist()
    assert F.pad(sg.tensor(x), (1, 2), mode="reflect").tolist() == expected


def test_layers_compile():
    def loss(x, w, b):
        h = F.linear(x, w, b)
        return F.cosine_similarity(F.normalize(h), F.pad(h, (0, 0)) + 1).sum()
    vg = sg.value_and_grad(loss, argnums=(0, 1, 2))
    ts = [torch.tensor(a, requires_grad=True) for a in (X, W, B)]
    tv = TF.cosine_similarity(TF.normalize(TF.linear(*ts)), TF.pad(TF.linear(*ts), (0, 0)) + 1).sum()
    tv.backward()
    for _ in range(3):
        v, gs = vg(X, W, B)
        assert v == pytest.approx(tv.item(), rel=1e-12)
        for g, t in zip(gs, ts):
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)
