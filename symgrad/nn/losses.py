"""``torch.nn.functional``'s losses on symgrad tensors, as composites of registry ops.

Each loss is one fused elementwise expression (and a reduction) whose last node carries torch's
``grad_fn`` name (``MseLossBackward0``, ``NllLossBackward0``, ...), so losses record, differentiate
(twice), compile and print like any other op. Class-index targets (``nll_loss``, ``cross_entropy``)
pick their entries as a one-hot selection (``where(t == c, x, 0)`` summed over the classes), so a
target may be an argument of a compiled function; its values are checked only when concrete.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import sympy as sp

from ..compiler.tracing import Tracer
from ..core import dtypes
from ..eager import saved_attrs as _saved_attrs
from ..eager import saved_hooks as _saved_hooks
from ..eager.basic import _cast, tensor_like
from ..eager.composite import _fused, _named
from ..eager.edges import set_edges
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import REGISTRY, A

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "l1_loss",
           "mse_loss", "nll_loss", "smooth_l1_loss"]


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy(size_average: Any, reduce: Any, reduction: str) -> str:
    """torch's deprecated ``size_average`` / ``reduce`` arguments, as a ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _reduce(loss: Tensor, reduction: str, fn: str) -> Tensor:
    """``loss`` reduced; the reduction's node reports the loss's grad_fn name ``fn``."""
    if reduction == "none":
        return loss
    op = REGISTRY["mean" if reduction == "mean" else "sum"]
    return _apply(op, loss, dims=tuple(range(loss.ndim)), keepdim=False, full=True, fn=fn)


def _pair(input: Tensor, target: Any) -> tuple[Tensor, Tensor]:  # noqa: A002
    target = target if isinstance(target, Tensor) else tensor_like(target, input)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)
    return input, target


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str, fn: str, mean_by_weight: bool) -> Tensor:
    """``loss`` (elementwise, named ``fn``) times torch 2.13's elementwise ``weight``, reduced."""
    if weight is None:
        return _reduce(loss, reduction, fn)
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError("Weights and input must have the same size.")
    lw = _fused(A[0] * A[1], loss, weight, fn="MulBackward0")
    if reduction == "none":
        return lw
    if reduction == "sum":
        return lw.sum()
    if mean_by_weight:
        return _fused(A[0] / A[1], lw.sum(), weight.sum(), fn="DivBackward0")
    return lw.mean()


#: built once: SymPy arithmetic costs microseconds a call
@functools.cache
def _squared_error() -> Any:
    """``(A[0] - A[1])**2``, built on first use (SymPy's first ``Add`` imports ``sympy.tensor``: not at import)."""
    return (A[0] - A[1]) ** 2


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``(input - target) ** 2``, reduced (``weight``: the weighted mean ``sum(w * l) / sum(w)``)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _pair(input, target)
    if _saved_hooks.STACK and weight is None:
        return _mse_packed(input, target, reduction)
    loss = _fused(_squared_error(), input, target, fn="MseLossBackward0" if weight is None else "")
    out = _weighted(loss, weight, reduction, "MseLossBackward0", True)
    return out if weight is not None else set_edges(out, input, target)


def _mse_packed(input: Tensor, target: Tensor, reduction: str) -> Tensor:  # noqa: A002
    """``mse_loss`` under saved-tensor hooks: packs ``input`` and ``target`` as torch's one ``MseLossBackward0``
    node does, none of its inner nodes' tensors."""
    with _saved_hooks.suspended():
        loss = _fused(_squared_error(), input, target, fn="MseLossBackward0")
        out = _weighted(loss, None, reduction, "MseLossBackward0", True)
    if loss._node is not None and len(loss._node.inputs) == 2:
        x, y = loss._node.inputs
        _saved_hooks.pack_tensors(out._node, ((input, x, True), (target, y, True)))
    return set_edges(out, input, target)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``|input - target|``, reduced (torch's composite: ``AbsBackward0``, ``MeanBackward0``, ...)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _pair(input, target)
    loss = (input - target).abs()
    if weight is None:
        return loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()
    return _weighted(loss, weight, reduction, "", True)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input - target``)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    input, target = _pair(input, target)
    d = A[0] - A[1]
    expr = sp.Piecewise((sp.Rational(1, 2) * d ** 2 / beta, sp.Abs(d) < beta), (sp.Abs(d) - beta / 2, True))
    loss = _fused(expr, input, target, fn="SmoothL1LossBackward0")
    return set_edges(_reduce(loss, reduction, "SmoothL1LossBackward0"), input, target)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,  # noqa: A002
               weight: Tensor | None = None) -> Tensor:
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _pair(input, target)
    d = A[0] - A[1]
    expr = sp.Piecewise((sp.Rational(1, 2) * d ** 2, sp.Abs(d) < delta), (delta * (sp.Abs(d) - delta / 2), True))
    loss = _fused(expr, input, target, fn="HuberLossBackward0" if weight is None else "")
    out = _weighted(loss, weight, reduction, "HuberLossBackward0", False)
    return out if weight is not None else set_edges(out, input, target)


def _same_size(input: Tensor, target: Tensor, message: str) -> None:  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(message)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-w * (t * log(x) + (1 - t) * log(1 - x))``, the logs clamped at -100 as torch's."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = target if isinstance(target, Tensor) else tensor_like(target, input)
    _same_size(input, target, f"Using a target size ({target.shape}) that is different to the input size "
                              f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if not isinstance(input, Tracer) and input.numel() and (
            np.any(input._data < 0) or np.any(input._data > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not isinstance(target, Tracer) and target.numel() and (
            np.any(target._data < 0) or np.any(target._data > 1)):
        raise RuntimeError("all elements of target should be between 0 and 1")
    x, t = A[0], A[1]
    expr = -(t * sp.Max(sp.log(x), -100) + (1 - t) * sp.Max(sp.log(1 - x), -100))
    fn = "BinaryCrossEntropyBackward0"
    if weight is None:
        loss = _fused(expr, input, target, fn=fn)
    else:
        loss = _fused(expr * A[2], input, target, weight, fn=fn)
    return set_edges(_reduce(loss, reduction, fn), input, target)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``-w * (pw * t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x)))``, in torch's stable form."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = target if isinstance(target, Tensor) else tensor_like(target, input)
    _same_size(input, target, f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    x, t = A[0], A[1]
    softplus_neg = sp.log(1 + sp.exp(-sp.Abs(x))) + sp.Max(-x, 0)  # log(1 + exp(-x)), stable
    args: list[Any] = [input, target]
    scale = 1
    if pos_weight is not None:
        args.append(pos_weight)
        scale = 1 + (A[len(args) - 1] - 1) * t
    expr = (1 - t) * x + scale * softplus_neg
    if weight is not None:
        args.append(weight)
        expr = expr * A[len(args) - 1]
    fn = "BinaryCrossEntropyWithLogitsBackward0"
    return set_edges(_reduce(_fused(expr, *args, fn=fn), reduction, fn), input, target)


# --------------------------------------------------------------------------- class-index losses

def _class_targets(input: Tensor, target: Any, ignore_index: int) -> Tensor:  # noqa: A002
    """The target as a tensor of class indices, checked as torch checks it (values only when concrete:
    a traced target is an ordinary input of the compiled function)."""
    t = target if isinstance(target, Tensor) else tensor_like(target, input)
    if input.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    # torch's order: the batch size, the target's rank and shape, then its dtype
    if input.ndim <= 2 and t.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 1:
        if t.ndim == 1 and t.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.shape[0]}")
    elif tuple(t.shape[:1]) != tuple(input.shape[:1]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({t.shape[0] if t.ndim else 0}).")
    elif tuple(t.shape) != tuple(input.shape[:1] + input.shape[2:]):
        if input.ndim != 4:
            raise RuntimeError(f"Expected target size {list(input.shape[:1] + input.shape[2:])}, got {list(t.shape)}")
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(t.shape)})")
    # sg.compile passes integer arrays as float64 arguments: a traced float target holds class numbers
    if t.dtype not in (dtypes.int64, dtypes.uint8) and not (t.is_floating_point() and isinstance(t, Tracer)):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {dtypes.torch_type_name(t.dtype)}")
    if not isinstance(t, Tracer):
        n_classes = input.shape[0] if input.ndim == 1 else input.shape[1]
        v = t._data
        bad = v[(v != ignore_index) & ((v < 0) | (v >= n_classes))]
        if bad.size:
            raise IndexError(f"Target {int(bad.ravel()[0])} is out of bounds.")
    return t


def _by_class(input: Tensor, t: Tensor) -> tuple[Tensor, Tensor, int]:  # noqa: A002
    """(the target with a size-1 class dim, the class numbers along the class dim, the class dim)."""
    if input.ndim == 1:
        return t.reshape(()) if t.ndim else t, Tensor(np.arange(input.shape[0])), 0
    classes = np.arange(input.shape[1]).reshape((input.shape[1],) + (1,) * (input.ndim - 2))
    return t.unsqueeze(1), Tensor(classes), 1


def _sample_weights(input: Tensor, t: Tensor, weight: Tensor | None, ignore_index: int) -> Tensor:  # noqa: A002
    """``weight[t]`` per sample (1 without weights), 0 where ``t == ignore_index``; no gradient."""
    t1, classes, dim = _by_class(input, t)
    n_classes = input.shape[dim]
    if weight is not None and tuple(weight.shape) != (n_classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")
    w = 1.0 if weight is None else _cast(weight.detach(), input.dtype).reshape(
        (n_classes,) + (1,) * (input.ndim - dim - 1))
    pick = sp.Piecewise((0, sp.Eq(A[0], ignore_index)), (A[2], sp.Eq(A[0], A[1])), (0, True))
    out = _fused(pick, t1, classes, w)
    return (out if out.dtype is input.dtype else _cast(out, input.dtype)).sum(dim)


def _picked(input: Tensor, t: Tensor) -> Tensor:  # noqa: A002
    """``input[n, t[n], ...]`` (class dim 1; a 1-d input: dim 0), as a one-hot selection: traceable, and
    the gradient reaches only the picked entries (other classes add exact zeros)."""
    t1, classes, dim = _by_class(input, t)
    return _fused(sp.Piecewise((A[0], sp.Eq(A[1], A[2])), (0, True)), input, t1, classes).sum(dim)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-weight[t] * input[n, t]`` per sample; ``'mean'`` divides by the sum of the weights used."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    t = _class_targets(input, target, ignore_index)
    w = _sample_weights(input, t, weight, ignore_index)
    picked = _picked(input, t)
    # torch: nll_loss for up to 2 dims, nll_loss2d on 4 (other ranks are viewed as 4-d and back)
    fn = "NllLossBackward0" if input.ndim <= 2 else "NllLoss2DBackward0"
    if reduction == "none":
        if input.ndim in (3,) or input.ndim >= 5:
            loss = _fused(-A[0] * A[1], picked, w)
            return _apply(REGISTRY["reshape"], loss, shape=tuple(loss.shape), fn="ViewBackward0")
        return _nll_saved(set_edges(_fused(-A[0] * A[1], picked, w, fn=fn), input), input, target, weight, None,
                          ignore_index, reduction, picked)
    total = _fused(-A[0] * A[1], picked, w).sum()
    if reduction == "sum":
        return _nll_saved(set_edges(_named(total, fn), input), input, target, weight, w, ignore_index, reduction,
                          picked)
    return _nll_saved(set_edges(_fused(A[0] / A[1], total, w.sum(), fn=fn), input), input, target, weight, w,
                      ignore_index, reduction, picked)


def _nll_saved(out: Tensor, input: Tensor, target: Tensor, weight: Tensor | None, w: Tensor | None,  # noqa: A002
               ignore_index: int, reduction: str, picked: Tensor) -> Tensor:
    """Note what torch's ``NllLossBackward0`` saves (its ``_saved_*`` attributes): ``total_weight`` is the sum of
    the sample weights (0 for ``'none'``), computed when read."""
    if out._node is not None:
        _saved_attrs.refuse_inference(out, input, target, weight)
        total = (lambda: w.detach().sum()) if w is not None else (lambda: Tensor(np.zeros((), input._data.dtype)))
        _saved_attrs.note(out, self=input, target=target, weight=weight, total_weight=total,
                          ignore_index=ignore_index, reduction={"none": 0, "mean": 1, "sum": 2}[reduction],
                          watch=picked._node.inputs[0] if picked._node is not None else out._node)
    return out


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; for class probabilities (a float target
    shaped as ``input``) ``-sum(weight * target * log_softmax(input, 1), 1)``; ``label_smoothing`` as torch's."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    probabilities = isinstance(target, Tensor) and tuple(target.shape) == tuple(input.shape)
    if probabilities and not target.is_floating_point():  # torch: a target shaped as the input holds probabilities
        raise RuntimeError("Expected floating point type for target with class probabilities, got "
                           f"{dtypes.torch_type_name(target.dtype)}")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = input.log_softmax(class_dim)
    wshape = (n_classes,) + (1,) * (input.ndim - class_dim - 1)
    if probabilities:
        t = target
        if label_smoothing > 0:
            t = _fused(A[0] * (1 - label_smoothing) + label_smoothing / n_classes, target)
        prod = logp * t if weight is None else logp * t * weight.reshape(wshape)
        if reduction == "none":
            return -prod.sum(class_dim)
        if reduction == "sum":
            return -prod.sum()
        count = input.numel() / n_classes if n_classes else 0
        neg = -prod.sum()
        return set_edges(_fused(A[0] / A[1], neg, count, fn="DivBackward1"), neg)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    t = _class_targets(input, target, ignore_index)
    per = logp if weight is None else logp * weight.reshape(wshape)
    neg = -per.sum(class_dim)
    smooth = set_edges(_fused(sp.Piecewise((0, sp.Eq(A[1], ignore_index)), (A[0], True)), neg, t,
                              fn="MaskedFillBackward0"), neg)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = _fused(A[0] / A[1], smooth.sum(), _sample_weights(input, t, weight, ignore_index).sum(),
                     fn="DivBackward0")
    # torch: (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes), each product by a number (MulBackward1)
    a = _fused((1 - label_smoothing) * A[0], nll, fn="MulBackward1")
    b = _fused(A[0] * (label_smoothing / n_classes), ret, fn="MulBackward1")
    return a + b
