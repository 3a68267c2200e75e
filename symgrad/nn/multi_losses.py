"""``torch.nn.functional``'s multi-class and multi-label margin losses (``multi_margin_loss``,
``multilabel_margin_loss``, ``multilabel_soft_margin_loss``) as compositions of registry ops in the order of
torch's CPU kernels (the per-sample sum over classes, then ``/ dim``); the first two report torch's grad_fn
(``MultiMarginLossBackward0``, ``MultilabelMarginLossBackward0``), the third is torch's Python composite."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.tracing import Tracer
from ..core import dtypes
from ..eager import basic
from ..eager.composite import _named
from ..eager.edges import set_edges
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import REGISTRY
from .losses import _check_reduction, _legacy

__all__ = ["multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss"]


def _frames(input: Tensor, what: str) -> tuple[int, int]:  # noqa: A002
    nd = input.ndim
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    return (1 if nd <= 1 else input.shape[0]), (1 if nd == 0 else input.shape[nd - 1])


def _long(target: Tensor) -> None:
    if target.dtype is not dtypes.int64 and not (isinstance(target, Tracer) and target.is_floating_point()):
        raise RuntimeError(f"expected scalar type Long but found {dtypes.torch_type_name(target.dtype)}")


def _finish(per: Tensor, nframe: int, reduction: str, scalar: bool, fn: str) -> Tensor:
    if reduction == "none":
        out = per.reshape(()) if scalar else per
    else:
        out = per.sum()
        if reduction == "mean":
            out = out / nframe
    return _named(out, fn)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,  # noqa: A002
                      weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Tensor:
    """Per sample ``sum_{d != y} max(0, margin - x[y] + x[d]) ** p * weight[y] / C``, reduced."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nframe, dim = _frames(input, "multi_margin_loss")
    if target.dim() > 1 or target.numel() != nframe:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if weight is not None:
        if weight.numel() != dim:
            raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {dtypes.torch_type_name(input.dtype)} but found "
                               f"{dtypes.torch_type_name(weight.dtype)}")
    _long(target)
    if not isinstance(target, Tracer):
        v = target._data
        if ((v < 0) | (v >= dim)).any():
            raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    hit = target.reshape(nframe, 1) == Tensor(np.arange(dim).reshape(1, dim))
    xt = basic.where(hit, x, 0.0).sum(1, keepdim=True)
    z = (margin - xt) + x
    h = z if p == 1 else z * z
    if weight is not None:
        h = h * basic.where(hit, weight.detach().reshape(1, dim), 0.0).sum(1, keepdim=True)
    keep = (z > 0) & ~hit
    per = basic.where(keep, h, 0.0).sum(1) / dim
    return set_edges(_finish(per, nframe, reduction, target.dim() == 0, "MultiMarginLossBackward0"), input)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Per sample ``sum_{j, d} max(0, 1 - x[y_j] + x[d]) / C`` over the target classes ``y_j`` (up to the first
    -1) and the non-target classes ``d``, reduced."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    nframe, dim = _frames(input, "multilabel_margin_loss")
    if input.ndim <= 1:
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        ok = target.dim() == 2 and target.shape[0] == nframe and target.shape[1] == dim
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    _long(target)
    if not isinstance(target, Tracer):
        v = target._data
        if ((v < -1) | (v >= dim)).any():
            raise RuntimeError("argument #2 'target' is out of range")
    x = input.reshape(nframe, dim)
    t = target.reshape(nframe, dim)
    valid = (t >= 0).long().cumprod(1) > 0  # the targets before the first -1
    onehot = t.unsqueeze(2) == Tensor(np.arange(dim).reshape(1, 1, dim))  # (n, j, d)
    is_target = (onehot & valid.unsqueeze(2)).any(1)  # (n, d)
    xt = basic.where(onehot, x.unsqueeze(1), 0.0).sum(2, keepdim=True)  # x[n, t[n, j]]
    z = (1 - xt) + x.unsqueeze(1)
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1) & (z > 0)
    per = basic.where(keep, z, 0.0).sum((1, 2)) / dim
    return set_edges(_finish(per, nframe, reduction, target.dim() <= 1, "MultilabelMarginLossBackward0"), input)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` (times ``weight``), averaged over the classes, reduced."""
    reduction = _legacy(size_average, reduce, reduction)
    logsig = REGISTRY["logsigmoid"]
    loss = -(target * _apply(logsig, input) + (1 - target) * _apply(logsig, -input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    c = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / c
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")
