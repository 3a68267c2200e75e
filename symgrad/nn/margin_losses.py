"""``torch.nn.functional``'s margin, embedding and likelihood losses (``margin_ranking_loss``,
``hinge_embedding_loss``, ``soft_margin_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss``,
``gaussian_nll_loss``, ``poisson_nll_loss``) and ``pairwise_distance``, composed of registry ops in the order of
torch's ATen composites, so values, gradients and grad_fn names are torch's."""
from __future__ import annotations

import math
from typing import Any

from ..eager import basic, functional
from ..eager.composite import _named
from ..eager.edges import set_edges
from ..eager.grad_mode import no_grad
from ..eager.tensor import Tensor
from .losses import _check_reduction, _legacy, _reduce

__all__ = ["cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "pairwise_distance", "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss"]


def _reduced(loss: Tensor, reduction: str) -> Tensor:
    """torch's ``apply_loss_reduction``: ``loss.mean()`` / ``loss.sum()`` / ``loss``."""
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced."""
    reduction = _legacy(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduced((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None,  # noqa: A002
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``, reduced."""
    reduction = _legacy(size_average, reduce, reduction)
    zeros = functional.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    output_margin = basic.where(target != 1, margin_clamp, zeros)
    output_self = basic.where(target != -1, input, zeros)
    return _reduced(output_margin + output_self, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, reduced (torch records ``SoftMarginLossBackward0``)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = (-input * target).exp().log1p()
    if reduction == "none":
        return set_edges(_named(loss, "SoftMarginLossBackward0"), input)
    return set_edges(_reduce(loss, reduction, "SoftMarginLossBackward0"), input)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``."""
    reduction = _legacy(size_average, reduce, reduction)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if targ_dim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + eps
    mag_square2 = (input2 * input2).sum(targ_dim) + eps
    denom = (mag_square1 * mag_square2).sqrt()
    cos = prod_sum / denom
    zeros = functional.zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    output_pos = basic.where(target == 1, pos, zeros)
    output_neg = basic.where(target == -1, neg, zeros)
    return _reduced(output_pos + output_neg, reduction)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim (dim 0 of 1-d inputs)."""
    x1_dim, x2_dim = x1.dim(), x2.dim()
    output_dim = max(x1_dim, x2_dim)
    inner = 0 if output_dim == 1 else output_dim - 1
    d = x1 - x2
    shifted = set_edges(_named(d + eps, "AddBackward1"), d)      # torch adds the Python number in C++: AddBackward1
    return set_edges(_named(shifted.norm(p, inner, keepdim=keepdim), "NormBackward1"), shifted)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))``, ``d`` the pairwise distance."""
    reduction = _legacy(size_average, reduce, reduction)
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_swap = pairwise_distance(positive, negative, p, eps)
        dist_neg = basic.minimum(dist_neg, dist_swap)
    return _reduced((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,  # noqa: A002
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ ``0.5 log(2 pi)`` when
    ``full``), reduced."""
    if not isinstance(var, Tensor):
        var = functional.full(tuple(input.shape), float(var), dtype=input.dtype)
    if var.size() != input.size():
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduced(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,  # noqa: A002
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``, plus the
    Stirling term where ``target > 1`` when ``full``, reduced."""
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduced(loss, reduction)
