"""torch's statistics among its remaining top-level functions (``toplevel_ops`` gathers them): ``bincount isin
unique_consecutive trapezoid cumulative_trapezoid cov corrcoef quantile nanquantile renorm``, compositions of
symgrad's ops whose last node reports torch's grad_fn name."""
from __future__ import annotations

import builtins
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import dtypes
from ..ops import A
from .base import TensorBase, is_traced
from .basic import _cast, where
from .composite import _fused, _gather, _named, _order
from .toplevel_core import _data, _dim, _plain, _t

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["bincount", "isin", "unique_consecutive", "trapezoid", "cumulative_trapezoid", "cov", "corrcoef", "quantile",
           "nanquantile", "renorm"]


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """The count of each non-negative integer in a 1-d tensor (the sum of ``weights`` there)."""
    t = _t(input)
    x = _data(t)
    if x.dtype.kind not in "iu":
        name = dtypes.torch_type_name(t.dtype)
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{name}'")
    if t.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.size and x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _plain(np.bincount(x, minlength=minlength).astype(np.int64))
    w = _t(weights)
    if tuple(w.shape) != tuple(t.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    wd = _data(w)
    out_dt = np.float32 if wd.dtype == np.float32 else np.float64
    return _plain(np.bincount(x, weights=wd.astype(np.float64), minlength=minlength).astype(out_dt))


def isin(elements: Any, test_elements: Any, *, assume_unique: builtins.bool = False,
         invert: builtins.bool = False) -> Tensor:
    """Whether each of ``elements`` is in ``test_elements`` (either may be a number)."""
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        raise TypeError("isin() received an invalid combination of arguments")
    e = _data(elements)
    out = np.isin(e, _data(test_elements), invert=invert)
    return _plain(np.asarray(out, np.bool_))


def unique_consecutive(input: Tensor, return_inverse: builtins.bool = False,  # noqa: A002
                       return_counts: builtins.bool = False, dim: int | None = None) -> Any:
    """``input`` with each run of equal consecutive elements (slices along ``dim``) kept once."""
    t = _t(input)
    x = _data(t)
    if dim is None:
        flat = x.ravel()
        start = np.ones(flat.size, np.bool_)
        start[1:] = flat[1:] != flat[:-1]
        vals = flat[start]
        inv_shape = x.shape
    else:
        d = _dim(t, dim)
        xm = np.moveaxis(x, d, 0).reshape(x.shape[d] if x.ndim else 1, -1)
        start = np.ones(xm.shape[0], np.bool_)
        start[1:] = (xm[1:] != xm[:-1]).any(axis=1)
        vals = np.take(x, np.nonzero(start)[0], axis=d)
        inv_shape = (xm.shape[0],)
    run = np.cumsum(start) - 1
    out = [_plain(vals)]
    if return_inverse:
        out.append(_plain(run.reshape(inv_shape).astype(np.int64)))
    if return_counts:
        out.append(_plain(np.diff(np.append(np.nonzero(start)[0], start.size)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoid rule's integral of ``y`` along ``dim`` (sample spacing ``dx``, or points ``x``)."""
    y = _t(y)
    d = _dim(y, dim)
    n = y.shape[d]
    if isinstance(x, TensorBase):
        if x.ndim == 1 and y.ndim > 1:
            shape = [1] * y.ndim
            shape[d] = x.shape[0]
            x = x.reshape(*shape)
        spacing = x.narrow(x.ndim - y.ndim + d if x.ndim != y.ndim else d, 1, n - 1) - \
            x.narrow(x.ndim - y.ndim + d if x.ndim != y.ndim else d, 0, n - 1)
        return _fused(A[0] / 2.0, (spacing * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d),
                      fn="DivBackward1")
    step = 1 if dx is None and x is None else (dx if dx is not None else x)
    if n == 0:
        return y.sum(d) * 0
    if not y.is_floating_point():
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * step
    return _fused(A[0] * step, y.sum(d) - _fused(A[0] * 0.5, y.select(d, 0) + y.select(d, -1), fn="MulBackward1"),
                  fn="MulBackward1")


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoid-rule integral of ``y`` along ``dim`` (one element shorter)."""
    y = _t(y)
    d = _dim(y, dim)
    n = y.shape[d]
    left, right = y.narrow(d, 0, builtins.max(n - 1, 0)), y.narrow(d, builtins.min(1, n), builtins.max(n - 1, 0))
    if isinstance(x, TensorBase):
        if x.ndim == 1 and y.ndim > 1:
            shape = [1] * y.ndim
            shape[d] = x.shape[0]
            x = x.reshape(*shape)
        spacing = x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1)
        return _fused(A[0] / 2.0, (spacing * (left + right)).cumsum(d), fn="DivBackward1")
    step = 1 if dx is None and x is None else (dx if dx is not None else x)
    return (step / 2.0 * (left + right)).cumsum(d)


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,  # noqa: A002
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in its columns)."""
    t = _t(input)
    if t.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{t.ndim} dimensions")
    x = t if t.ndim == 2 else t.reshape(1, -1)
    if not x.is_floating_point():
        x = _cast(x, dtypes.get_default_dtype())
    nobs = x.shape[1]
    w = None
    if fweights is not None:
        w = _t(fweights)
    if aweights is not None:
        w = _t(aweights) if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm = nobs - correction
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * _t(aweights)).sum() / w_sum
    if not isinstance(norm, TensorBase) and norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = 0
    xc = x - avg.unsqueeze(1)
    c = xc @ (xc if w is None else xc * w).t()
    return (c / norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    """The Pearson correlation coefficients of the variables in ``input``'s rows."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    s = c.diagonal().sqrt()
    c = c / s.unsqueeze(1)
    c = c / s.unsqueeze(0)
    return c.clamp(-1, 1)


_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Any, dim: Any, keepdim: builtins.bool, interpolation: str,
              ignore_nan: builtins.bool) -> Tensor:
    who = "nanquantile" if ignore_nan else "quantile"
    t = _t(input)
    if t.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{who}() input tensor must be either float or double dtype")
    qt = q if isinstance(q, TensorBase) else None
    qv = _data(q, who).astype(t.dtype.np) if qt is not None else np.asarray(q, np.float64)
    if qt is not None and qt.dtype != t.dtype:
        raise RuntimeError(f"{who}() q tensor must be same dtype as the input tensor")
    if qv.ndim > 1:
        raise RuntimeError(f"{who}() q must be a scalar or 1D tensor")
    if ((qv < 0) | (qv > 1)).any():
        raise RuntimeError(f"{who}() q values must be in the range [0, 1]" if qt is not None else
                           f"{who}() q must be in the range [0, 1] but got {builtins.float(qv)}")
    if interpolation not in _INTERP:
        raise RuntimeError(f"{who}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if dim is None:
        x, d = t.reshape(-1), 0
    else:
        x = t if t.ndim else t.reshape(1)
        d = _dim(x, dim)
    x = x.movedim(d, -1)
    n = x.shape[-1]
    if n == 0:
        raise RuntimeError(f"{who}() input tensor must be non-empty")
    order = _order(x, x.ndim - 1, False) if not is_traced(x) else _data(x, who)
    srt = _gather(x, x.ndim - 1, _plain(order), "")
    sd = np.take_along_axis(_data(x, who), order, -1)
    nan = np.isnan(sd)
    cnt = (~nan).sum(-1, keepdims=True) if ignore_nan else np.full(sd.shape[:-1] + (1,), n)
    qs = qv.reshape(-1)
    ranks = qs.reshape((1,) * (sd.ndim - 1) + (-1,)) * (builtins.float(n) - 1 if not ignore_nan else cnt - 1)
    ranks = np.asarray(ranks, np.float64)
    if not ignore_nan:
        ranks = np.where(nan.any(-1, keepdims=True), n - 1, ranks)
    else:
        ranks = np.where(cnt == 0, n - 1, ranks)
    ranks = np.broadcast_to(ranks, sd.shape[:-1] + (qs.size,))
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    lo = np.floor(ranks).astype(np.int64)
    hi = np.ceil(ranks).astype(np.int64)
    vlo = _gather(srt, srt.ndim - 1, _plain(lo), "")
    if interpolation in ("lower", "higher", "nearest"):
        out = vlo
    else:
        vhi = _gather(srt, srt.ndim - 1, _plain(hi), "")
        w = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - lo
        out = vlo.lerp(vhi, _plain(w.astype(t.dtype.np)))
    out = out.movedim(-1, 0)
    if dim is None:
        if keepdim:
            out = out.reshape(qs.size, *([1] * t.ndim))
        else:
            out = out.reshape(qs.size)
    elif keepdim:
        out = out.unsqueeze(d + 1) if t.ndim else out
    if qv.ndim == 0:
        out = out.squeeze(0)
    return _named(out, "SqueezeBackward4")  # torch's last step: an in-place squeeze_


def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: builtins.bool = False, *,  # noqa: A002
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles along ``dim`` (all elements for None); a slice holding NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: builtins.bool = False, *,  # noqa: A002
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (NaN only for a slice of NaN alone)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002
    """Each slice along ``dim`` rescaled to ``p``-norm at most ``maxnorm``."""
    t = _t(input)
    if t.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {t.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = _dim(t, dim)
    others = [k for k in builtins.range(t.ndim) if k != d]
    norm = t.norm(p, dim=others, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return _named(t * factor, "RenormBackward0")
