"""``nn.AdaptiveLogSoftmaxWithLoss`` against torch 2.13: seeded parameters, repr, state_dict keys, ``(output,
loss)`` and gradients (within matmul rounding), ``log_prob``, ``predict``, unbatched input, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

X = np.random.default_rng(0).standard_normal((7, 8)).astype(np.float32)
TG = np.array([0, 3, 5, 9, 12, 14, 2])


def _run(lib, **kw):
    lib.manual_seed(0)
    m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [4, 10], **kw)
    inp = lib.tensor(X, requires_grad=True)
    out = m(inp, lib.tensor(TG))
    out.loss.backward()
    single = m(lib.tensor(X[0]), lib.tensor(TG[0]))
    return {"repr": repr(m), "keys": list(m.state_dict()), "weights": [p.detach().numpy() for p in m.parameters()],
            "output": out.output.detach().numpy(), "loss": out.loss.item(), "grad": inp.grad.numpy(),
            "head_grad": m.head.weight.grad.numpy(), "log_prob": m.log_prob(lib.tensor(X)).detach().numpy(),
            "predict": m.predict(lib.tensor(X)).tolist(), "fn": type(out.loss.grad_fn).__name__,
            "fields": out._fields, "single": (tuple(single.output.shape), single.loss.item())}


@pytest.mark.parametrize("kw", [dict(div_value=2.0), dict(head_bias=True, div_value=2.0)])
def test_against_torch(kw: dict) -> None:
    t, s = _run(torch, **kw), _run(sg, **kw)
    for key in ("repr", "keys", "predict", "fn", "fields"):
        assert t[key] == s[key], key
    for a, b in zip(t["weights"], s["weights"]):
        assert np.array_equal(a, b)
    for key in ("output", "grad", "head_grad", "log_prob"):
        np.testing.assert_allclose(s[key], t[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert abs(t["loss"] - s["loss"]) < 1e-5
    assert t["single"][0] == s["single"][0] == ()
    np.testing.assert_allclose(np.exp(s["log_prob"]).sum(1), 1.0, rtol=1e-5)


def test_errors() -> None:
    for lib in (torch, sg):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [])
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [10, 4])
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [4])
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 14\], but values in range "
                                               r"\[0, 20\] were found."):
            m(lib.tensor(X[:2]), lib.tensor([0, 20]))
        with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension."):
            m(lib.tensor(X[:2]), lib.tensor([0, 1, 2]))
