"""``torch.nn.functional.kl_div``: the pointwise KL divergence ``target * (log(target) - input)`` of log-probabilities
``input`` (``log_target``: the target given as log-probabilities too), composed as torch composes it, so the
grad_fn names are torch's (``SubBackward0`` / ``MulBackward0``, ``MeanBackward0``, ``SumBackward0``,
``DivBackward0`` for ``batchmean``)."""
from __future__ import annotations

import warnings
from typing import Any

from ..eager import math_ops
from ..eager.tensor import Tensor
from .losses import _legacy

__all__ = ["kl_div"]


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``sum`` / ``mean`` / ``batchmean`` (the sum over the batch size) / ``none`` of the pointwise divergence."""
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce, reduction)
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                      stacklevel=2)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        out = target.exp() * (target - input)
    else:
        out = math_ops.xlogy(target, target) - target * input
    if reduction == "none":
        return out
    if reduction == "mean":
        return out.mean()
    out = out.sum()
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.size()[0]
    return out
