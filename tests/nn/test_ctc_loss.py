"""``F.ctc_loss`` / ``nn.CTCLoss`` against torch 2.13: losses bit for bit and gradients (through ``log_softmax``)
within float tolerance, for padded and concatenated targets, every reduction, ``zero_infinity``, repeated labels,
empty targets, a non-zero ``blank``, unbatched input, float64; grad_fn names; errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(0)
T, N, C = 12, 4, 5
X = RNG.standard_normal((T, N, C)).astype(np.float32)
TG = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 0], [0, 0, 0, 0]])
TL = np.array([4, 2, 3, 0])
IL = np.array([12, 9, 7, 5])


def _run(lib, reduction="mean", zero_infinity=False, x=X, tg=TG, tl=TL, il=IL, blank=0, dtype=np.float32):
    a = lib.tensor(x.astype(dtype), requires_grad=True)
    loss = lib.nn.functional.ctc_loss(a.log_softmax(-1), lib.tensor(tg), lib.tensor(il), lib.tensor(tl),
                                      blank=blank, reduction=reduction, zero_infinity=zero_infinity)
    (loss.sum() if reduction == "none" else loss).backward()
    return loss.detach().numpy(), a.grad.numpy(), type(loss.grad_fn).__name__


CASES = [dict(reduction=r, zero_infinity=z) for r in ("none", "mean", "sum") for z in (False, True)]
CASES += [dict(tg=np.array([1, 2, 2, 3, 4, 1, 3, 3, 3])), dict(dtype=np.float64, reduction="sum"),
          dict(blank=4, tg=np.array([[1, 2, 2, 3], [0, 1, 0, 0], [3, 3, 3, 0], [0, 0, 0, 0]])),
          dict(reduction="none", zero_infinity=True, il=np.array([12, 9, 2, 5]))]


@pytest.mark.parametrize("kw", CASES, ids=[",".join(f"{k}={v if not isinstance(v, np.ndarray) else 'x'}"
                                                      for k, v in c.items()) for c in CASES])
def test_against_torch(kw: dict) -> None:
    t, s = _run(torch, **kw), _run(sg, **kw)
    assert t[2] == s[2]
    np.testing.assert_array_equal(s[0], t[0])
    tol = 1e-12 if kw.get("dtype") == np.float64 else 2e-6
    np.testing.assert_allclose(s[1], t[1], rtol=tol, atol=tol)


def test_grad_fn_names() -> None:
    names = {(r, z): _run(sg, reduction=r, zero_infinity=z)[2] for r in ("none", "mean", "sum") for z in (0, 1)}
    assert names == {("none", 0): "CtcLossBackward0", ("none", 1): "WhereBackward0", ("mean", 0): "MeanBackward0",
                     ("mean", 1): "MeanBackward0", ("sum", 0): "SumBackward0", ("sum", 1): "SumBackward0"}


def test_infinite_loss() -> None:
    il = np.array([12, 9, 2, 5])  # sample 2 cannot emit its 3 labels in 2 steps
    t, s = _run(torch, "none", il=il), _run(sg, "none", il=il)
    assert np.isinf(t[0][2]) and np.isinf(s[0][2])
    np.testing.assert_array_equal(s[0], t[0])
    # torch's gradient of that sample is NaN; symgrad's is masked (0): the finite samples agree
    np.testing.assert_allclose(s[1][:, [0, 1, 3]], t[1][:, [0, 1, 3]], rtol=2e-6, atol=2e-6)
    z = _run(sg, "none", zero_infinity=True, il=il)
    assert z[0][2] == 0 and not z[1][:, 2].any()


def test_unbatched_and_module() -> None:
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    out = []
    for lib in (torch, sg):
        a = lib.tensor(x, requires_grad=True)
        crit = lib.nn.CTCLoss(blank=3, reduction="sum")
        loss = crit(a.log_softmax(-1), lib.tensor([1, 2, 1]), lib.tensor(6), lib.tensor(3))
        loss.backward()
        out.append((loss.item(), a.grad.numpy(), repr(crit), repr(lib.nn.CTCLoss(zero_infinity=True))))
    assert out[0][0] == out[1][0]
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=2e-6, atol=2e-6)
    assert out[0][2:] == out[1][2:] == ("CTCLoss()", "CTCLoss()")


def test_errors() -> None:
    lp = sg.tensor(X).log_softmax(-1)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 12, but got value 13"):
        sg.nn.functional.ctc_loss(lp, sg.tensor(TG), sg.tensor([13, 1, 1, 1]), sg.tensor(TL))
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        sg.nn.functional.ctc_loss(lp, sg.tensor(TG), sg.tensor(IL), sg.tensor(TL), blank=5)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size, but got 2 and 4"):
        sg.nn.functional.ctc_loss(lp, sg.tensor(TG), sg.tensor([1, 2]), sg.tensor(TL))
    tlp = torch.tensor(X).log_softmax(-1)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 12, but got value 13"):
        torch.nn.functional.ctc_loss(tlp, torch.tensor(TG), torch.tensor([13, 1, 1, 1]), torch.tensor(TL))
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        torch.nn.functional.ctc_loss(tlp, torch.tensor(TG), torch.tensor(IL), torch.tensor(TL), blank=5)
