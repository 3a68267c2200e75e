"""More of torch.nn.functional, as compositions of symgrad's ops: ``local_response_norm``, ``alpha_dropout`` /
``feature_alpha_dropout`` (torch's ``bernoulli_(1 - p)`` draws from the generator, its float32 arithmetic),
``channel_shuffle``, ``triplet_margin_with_distance_loss``, ``gumbel_softmax`` (``exponential_`` draws) and
``pdist``."""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from ..core import rng
from ..eager import basic, functional
from ..eager import random as _random
from ..eager.composite import _named
from ..eager.tensor import Tensor
from .layers import pad
from .margin_losses import pairwise_distance
from .pooling_ops import avg_pool2d, avg_pool3d

__all__ = ["local_response_norm", "alpha_dropout", "feature_alpha_dropout", "channel_shuffle",
           "triplet_margin_with_distance_loss", "gumbel_softmax", "pdist"]

_SELU_ALPHA = 1.7580993408473766  # torch's alpha' = -lambda * alpha of SELU


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                        k: float = 1.0) -> Tensor:
    """``input / (k + alpha * mean of input**2 over size neighbouring channels) ** beta``: torch's padding and
    average pooling over the channel dim."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def _alpha_dropout(input: Tensor, p: float, train: bool, inplace: bool, feature: bool) -> Tensor:  # noqa: A002
    """torch's ``_dropout_impl`` with ``alpha_dropout``: ``input * a * noise + b``, ``noise`` Bernoulli(1 - p) per
    element (or per (sample, channel) for ``feature``), ``b = (noise - 1) * alpha * a + alpha * a * p``."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        zero = Tensor(np.zeros((), input.dtype.np))
        return input.mul_(zero) if inplace else input * zero
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    dt = input.dtype.np
    noise = rng.bernoulli(_random._engine(None), 1 - p, shape, dt)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = ((noise + dt.type(-1)) * dt.type(_SELU_ALPHA * a) + dt.type(_SELU_ALPHA * a * p)).astype(dt)
    noise = (noise * dt.type(a)).astype(dt)
    if inplace:
        return input.mul_(Tensor(noise)).add_(Tensor(b))
    return input * Tensor(noise) + Tensor(b)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:  # noqa: A002
    """Dropout that keeps a SELU network's mean and variance: dropped elements are set to SELU's negative
    saturation, then everything is scaled and shifted back."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels (one draw per (sample, channel))."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _alpha_dropout(input, p, training, inplace, feature=True)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """The channels of (N, C, *) split into ``groups`` and interleaved (``ChannelShuffleBackward0``)."""
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    out = input.reshape(input.shape[0], groups, c // groups, -1).transpose(1, 2).reshape(
        (input.shape[0], c) + rest)
    return _named(out, "ChannelShuffleBackward0")


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(margin + d(anchor, positive) - d(anchor, negative), 0)`` with any distance (``pairwise_distance`` by
    default); ``swap`` takes the smaller of ``d(a, n)`` and ``d(p, n)``."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = basic.minimum(dist_neg, dist(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """``softmax((logits + g) / tau)``, ``g = -log(Exponential(1))`` drawn from the generator as torch draws it;
    ``hard`` returns the one-hot argmax with the soft sample's gradient (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -functional.empty_like(logits).exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = functional.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The ``p``-norm distances between the rows of an (N, M) input, pairs ``i < j`` in row-major order
    (``N (N - 1) / 2`` values, ``PdistBackward0``)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if len(i) == 0:
        return _named(input.new_zeros(0) + 0 * input.sum(), "PdistBackward0")
    diff = input[Tensor(i)] - input[Tensor(j)]
    return _named(diff.norm(p, dim=1), "PdistBackward0")

