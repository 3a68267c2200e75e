"""More torch.nn modules: ``LocalResponseNorm``, ``AlphaDropout``, ``FeatureAlphaDropout``, ``ChannelShuffle``,
``TripletMarginWithDistanceLoss`` (the functions in ``nn/extra_ops.py``) and ``LazyBatchNorm1d/2d/3d`` (built like
``modules/lazy.py``'s lazy modules: uninitialized parameters and buffers until the first input gives
``num_features``, then the module becomes a ``BatchNorm*d``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core import dtypes
from ...eager import functional
from ...eager.tensor import Tensor
from .. import extra_ops as X
from ..parameter import UninitializedBuffer, UninitializedParameter
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm
from .distance import PairwiseDistance
from .dropout import _DropoutNd
from .lazy import LazyModuleMixin
from .loss import _Loss
from .module import Module

__all__ = ["LocalResponseNorm", "AlphaDropout", "FeatureAlphaDropout", "ChannelShuffle",
           "TripletMarginWithDistanceLoss", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"]


class LocalResponseNorm(Module):
    """Normalise each channel by the mean square of its ``size`` neighbouring channels (``F.local_response_norm``)."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return X.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks while training (``F.alpha_dropout``), the identity in eval mode."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return X.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels while training (``F.feature_alpha_dropout``)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return X.feature_alpha_dropout(input, self.p, self.training)


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (``F.channel_shuffle``)."""

    __constants__ = ["groups"]

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return X.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet margin loss with any distance (``PairwiseDistance()`` by default, then a submodule)."""

    __constants__ = ["margin", "swap", "reduction"]

    def __init__(self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return X.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class _LazyNormBase(LazyModuleMixin, _BatchNorm):
    """A BatchNorm whose ``num_features`` is the first input's dim 1."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = functional.tensor(0, dtype=dtypes.int64)

    def reset_parameters(self) -> None:
        """BatchNorm's reset, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002
        """``num_features = input.shape[1]``; materialise weight, bias and the running statistics."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase):
    """``BatchNorm1d`` with ``num_features`` inferred from the first (N, C) or (N, C, L) input."""

    cls_to_become = BatchNorm1d
    _dims = BatchNorm1d._dims
    _what = BatchNorm1d._what


class LazyBatchNorm2d(_LazyNormBase):
    """``BatchNorm2d`` with ``num_features`` inferred from the first (N, C, H, W) input."""

    cls_to_become = BatchNorm2d
    _dims = BatchNorm2d._dims
    _what = BatchNorm2d._what


class LazyBatchNorm3d(_LazyNormBase):
    """``BatchNorm3d`` with ``num_features`` inferred from the first (N, C, D, H, W) input."""

    cls_to_become = BatchNorm3d
    _dims = BatchNorm3d._dims
    _what = BatchNorm3d._what
