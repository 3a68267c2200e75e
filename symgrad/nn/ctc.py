"""``F.ctc_loss``: the connectionist temporal classification loss, torch's CPU algorithm (``nn.CTCLoss``:
``modules/ctc.py``).

The forward (log-alpha) and backward (log-beta) recursions run in numpy in the log-probabilities' dtype, with
torch's formulas (``log(sum(exp(l - lmax))) + lmax``, ``lmax = 0`` when all are ``-inf``). The loss is a node whose
value is that negative log-likelihood and whose gradient is torch's ``ctc_loss_backward``:
``(exp(lp) - exp(log(sum alpha*beta over the label's positions) + nll - lp)) * grad``, zero past each input length
(the ``exp(lp)`` term makes it the gradient through a ``log_softmax`` before the loss, as torch's is).
The reductions are torch's: ``'mean'`` divides each loss by its target length (at least 1), then averages."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..eager import basic
from ..eager.composite import _named
from ..eager.tensor import Tensor

__all__ = ["ctc_loss"]


def _lse(*xs: np.ndarray) -> np.ndarray:
    """torch's three-term log-sum-exp of the CTC recursions (a max of ``-inf`` taken as 0)."""
    m = xs[0]
    for x in xs[1:]:
        m = np.maximum(m, x)
    m = np.where(m == -np.inf, m.dtype.type(0), m)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        total = np.exp(xs[0] - m)
        for x in xs[1:]:
            total = total + np.exp(x - m)
        return np.log(total) + m


def _one(lp: np.ndarray, tgt: np.ndarray, t_len: int, blank: int) -> tuple[float, np.ndarray]:
    """The negative log-likelihood of one sample (``lp``: (T, C)) and its gradient factor (T, C)."""
    ninf = lp.dtype.type(-np.inf)
    ext = np.full(2 * len(tgt) + 1, blank, np.int64)
    ext[1::2] = tgt
    S = len(ext)
    skip = np.zeros(S, bool)  # s may come from s - 2: a label that differs from the one two before
    skip[2:] = ext[2:] != ext[:-2]
    la = np.full((max(t_len, 1), S), ninf, lp.dtype)
    with np.errstate(invalid="ignore"):
        if t_len > 0:
            la[0, 0] = lp[0, blank]
            if S > 1:
                la[0, 1] = lp[0, ext[1]]
        for t in range(1, t_len):
            prev = la[t - 1]
            a2 = np.concatenate([[ninf], prev[:-1]])
            a3 = np.where(skip, np.concatenate([[ninf, ninf], prev])[:S], ninf)
            la[t] = _lse(prev, a2, a3) + lp[t, ext]
        last = la[t_len - 1] if t_len > 0 else np.full(S, ninf, lp.dtype)
        if S == 1:
            ll = -last[0]
        else:
            ll = -_lse(last[S - 1:S], last[S - 2:S - 1])[0]
    nll = lp.dtype.type(ll)
    grad = np.zeros_like(lp)
    if t_len == 0:
        return nll, grad
    lb = np.full((t_len, S), ninf, lp.dtype)
    lb[t_len - 1, S - 1] = lp[t_len - 1, blank]
    if S > 1:
        lb[t_len - 1, S - 2] = lp[t_len - 1, ext[S - 2]]
    skip_b = np.zeros(S, bool)  # s may go to s + 2
    skip_b[:-2] = ext[:-2] != ext[2:]
    with np.errstate(invalid="ignore"):
        for t in range(t_len - 2, -1, -1):
            nxt = lb[t + 1]
            b2 = np.concatenate([nxt[1:], [ninf]])
            b3 = np.where(skip_b, np.concatenate([nxt, [ninf, ninf]])[2:], ninf)
            lb[t] = _lse(nxt, b2, b3) + lp[t, ext]
        lab = la[:t_len] + lb
        lcab = np.full((t_len, lp.shape[1]), ninf, lp.dtype)
        for c in np.unique(ext):  # log-sum over the positions of each label
            cols = lab[:, ext == c][:, ::-1]  # torch goes down from the last position
            acc = cols[:, 0]
            for k in range(1, cols.shape[1]):
                acc = np.where(acc == ninf, cols[:, k], _lse(acc, cols[:, k]))
            lcab[:, c] = acc
        with np.errstate(over="ignore"):
            grad[:t_len] = np.exp(lp[:t_len]) - np.exp(lcab + nll - lp[:t_len])
    return nll, grad


def _lengths(x: Any, name: str) -> np.ndarray:
    return np.asarray(x._data if isinstance(x, Tensor) else x, dtype=np.int64).reshape(-1)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """torch.nn.functional.ctc_loss: ``log_probs`` (T, N, C) or (T, C), ``targets`` (N, S) padded or the targets
    concatenated (1-D); ``reduction`` ``'none'`` gives one loss per sample."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    lp_t = log_probs.unsqueeze(1) if unbatched else log_probs
    lp = np.asarray(lp_t._data)
    tg = np.asarray(targets._data).astype(np.int64)
    if unbatched and tg.ndim == 1:
        tg = tg[None]
    in_len, tg_len = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if len(in_len) != N:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(in_len)} and {N}")
    if len(tg_len) != N:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tg_len)} and {N}")
    starts = np.concatenate([[0], np.cumsum(tg_len)[:-1]])
    nll = np.zeros(N, lp.dtype)
    grad = np.zeros_like(lp)
    for b in range(N):
        if in_len[b] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {in_len[b]} "
                               f"(while checking arguments for ctc_loss_cpu)")
        if tg.ndim == 2:
            if tg_len[b] > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tg_len[b]} at dimension 1, but got "
                                   f"size {tg.shape[1]} for argument #2 'targets' (while checking arguments for "
                                   "ctc_loss_cpu)")
            tgt = tg[b, :tg_len[b]]
        else:
            tgt = tg[starts[b]:starts[b] + tg_len[b]]
        nll[b], grad[:, b] = _one(lp[:, b], tgt, int(in_len[b]), blank)
    finite = np.isfinite(nll)
    if zero_infinity:
        grad[:, nll == np.inf] = 0
    held = Tensor(nll)
    if lp_t.requires_grad:
        # a node of value ``nll`` whose VJP is ``g * grad``: the product's value is masked out (0) and so is the
        # gradient of a sample whose loss is infinite (torch's is NaN there unless zero_infinity)
        safe = np.where(finite[None, :, None], np.nan_to_num(grad), 0).astype(lp.dtype)
        lpz = basic.where(Tensor(np.isfinite(lp)), lp_t, 0.0)
        comp = (lpz * Tensor(safe)).sum((0, 2))
        held = _named(held + (comp - comp.detach()), "CtcLossBackward0")
    res = held
    if zero_infinity:
        res = basic.where(Tensor(nll == np.inf), Tensor(np.zeros((), lp.dtype)), res)
    if unbatched and reduction == "none":
        res = res.squeeze(0)
    if reduction == "mean":
        div = Tensor(np.maximum(tg_len, 1).astype(lp.dtype))
        return (res / div).mean()
    if reduction == "sum":
        return res.sum()
    return res

