"""``nn.EmbeddingBag`` / ``F.embedding_bag`` against torch 2.13: forward values bit for bit (sum / mean / max,
offsets, 2-D bags, ``per_sample_weights``, ``padding_idx``, ``include_last_offset``, empty bags), gradients of the
weight and the per-sample weights (``scale_grad_by_freq`` with torch's count lookup), seeded init, reprs,
state_dict keys, ``from_pretrained``, error texts."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import symgrad as sg
import symgrad.nn.functional as SF

RNG = np.random.default_rng(0)
W = RNG.standard_normal((10, 5)).astype(np.float32)
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0, 7, 1], np.int64)
OFF = np.array([0, 4, 4, 9], np.int64)
PSW = RNG.standard_normal(12).astype(np.float32)
G = RNG.standard_normal((4, 5)).astype(np.float32)


def _run(lib, F, idx=IDX, off=OFF, psw=False, w=W, **kw):
    weight = lib.tensor(w, requires_grad=True)
    extra = {"per_sample_weights": lib.tensor(PSW[:idx.size].reshape(idx.shape), requires_grad=True)} if psw else {}
    out = F.embedding_bag(lib.tensor(idx), weight, None if off is None else lib.tensor(off), **kw, **extra)
    out.backward(lib.tensor(G[:out.shape[0], :out.shape[1]]))
    res = {"out": out.detach().numpy(), "grad_fn": type(out.grad_fn).__name__, "wgrad": weight.grad.numpy()}
    if psw:
        res["pgrad"] = extra["per_sample_weights"].grad.numpy()
    return res


CASES = [dict(mode="sum"), dict(mode="mean"), dict(mode="max"), dict(mode="sum", psw=True),
         dict(mode="mean", padding_idx=4), dict(mode="sum", padding_idx=-1), dict(mode="max", padding_idx=0),
         dict(mode="sum", include_last_offset=True),
         dict(mode="mean", include_last_offset=True, off=np.array([0, 4, 4, 9, 12])),
         dict(mode="mean", scale_grad_by_freq=True), dict(mode="sum", scale_grad_by_freq=True, psw=True),
         dict(mode="max", off=np.array([0, 0, 12])),
         dict(mode="mean", idx=IDX.reshape(3, 4), off=None), dict(mode="sum", idx=IDX.reshape(4, 3), off=None,
                                                                   psw=True)]


@pytest.mark.parametrize("kw", CASES, ids=[",".join(f"{k}={v if k not in ('idx', 'off') else 'x'}"
                                                      for k, v in c.items()) for c in CASES])
def test_against_torch(kw: dict) -> None:
    t, s = _run(torch, TF, **kw), _run(sg, SF, **kw)
    assert np.array_equal(t["out"], s["out"])
    assert t["grad_fn"] == s["grad_fn"] == "EmbeddingBagBackward0"
    # torch leaves rows outside every bag with whatever include_last_offset's kernel wrote (~1e-44): atol
    np.testing.assert_allclose(s["wgrad"], t["wgrad"], rtol=1e-6, atol=1e-6)
    if "pgrad" in t:
        np.testing.assert_allclose(s["pgrad"], t["pgrad"], rtol=1e-5, atol=1e-6)


def test_float64_and_max_norm() -> None:
    w = W.astype(np.float64)
    for kw in (dict(mode="sum"), dict(mode="mean", max_norm=1.0)):
        t, s = _run(torch, TF, w=w, **kw), _run(sg, SF, w=w, **kw)
        np.testing.assert_array_equal(t["out"], s["out"])
        np.testing.assert_allclose(s["wgrad"], t["wgrad"], rtol=1e-12)


def test_module_init_repr_state_dict() -> None:
    torch.manual_seed(3)
    sg.manual_seed(3)
    t = torch.nn.EmbeddingBag(7, 3, mode="sum", padding_idx=2, max_norm=2.0)
    s = sg.nn.EmbeddingBag(7, 3, mode="sum", padding_idx=2, max_norm=2.0)
    assert repr(t) == repr(s) == "EmbeddingBag(7, 3, max_norm=2.0, mode='sum', padding_idx=2)"
    assert repr(sg.nn.EmbeddingBag(4, 2)) == "EmbeddingBag(4, 2, mode='mean')"
    assert np.array_equal(t.weight.detach().numpy(), s.weight.detach().numpy())
    assert list(t.state_dict()) == list(s.state_dict()) == ["weight"]
    i, o = np.array([0, 2, 6, 1, 1]), np.array([0, 2])
    assert np.array_equal(t(torch.tensor(i), torch.tensor(o)).detach().numpy(),
                          s(sg.tensor(i), sg.tensor(o)).detach().numpy())
    assert np.array_equal(t.weight.detach().numpy(), s.weight.detach().numpy())  # renormalised alike


def test_from_pretrained() -> None:
    s = sg.nn.EmbeddingBag.from_pretrained(sg.tensor(W), mode="max")
    t = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="max")
    assert not s.weight.requires_grad
    assert repr(s) == repr(t)
    out = s(sg.tensor(IDX.reshape(2, 6)))
    assert np.array_equal(out.numpy(), t(torch.tensor(IDX.reshape(2, 6))).numpy())
    assert sg.nn.EmbeddingBag.from_pretrained(sg.tensor(W), freeze=False).weight.requires_grad


@pytest.mark.parametrize("call,exc,msg", [
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W)), ValueError,
     "offsets has to be a 1D Tensor but got None"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX.reshape(3, 4)), lib.tensor(W), lib.tensor(OFF)), ValueError,
     "if input is 2D, then offsets has to be None"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF), mode="min"), ValueError,
     "mode has to be one of sum, mean or max"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF), mode="max",
                                    scale_grad_by_freq=True), ValueError,
     "max mode does not support scaling the gradient by the frequency"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF),
                                    per_sample_weights=lib.tensor(PSW)), NotImplementedError,
     r"per_sample_weights is only supported for mode='sum' \(got mode='mean'\)"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF), mode="sum",
                                    per_sample_weights=lib.tensor(PSW[:3])), ValueError,
     r"embedding_bag: If per_sample_weights \(torch.Size\(\[3\]\)\) is not None"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W[0]), lib.tensor(OFF)), ValueError,
     "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
    (lambda F, lib: F.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(np.array([1, 3]))), RuntimeError,
     "offsets\\[0\\] has to be 0"),
])
def test_errors(call, exc, msg) -> None:
    with pytest.raises(exc, match=msg):
        call(TF, torch)
    with pytest.raises(exc, match=msg):
        call(SF, sg)


def test_padding_idx_module_assertion() -> None:
    for lib in (torch, sg):
        with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
            lib.nn.EmbeddingBag(3, 2, padding_idx=3)
