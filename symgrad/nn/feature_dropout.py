"""Channel-wise dropout, ``F.dropout1d`` / ``dropout2d`` / ``dropout3d``: torch's ``feature_dropout``, one
``bernoulli_(1 - p) / (1 - p)`` draw per (sample, channel) from the generator (the same draws as torch's), the
input multiplied by it broadcast over the spatial dims."""
from __future__ import annotations

import warnings

from ..eager import random as _random
from ..eager.tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d", "feature_dropout"]


def feature_dropout(input: Tensor, p: float, train: bool, inplace: bool = False) -> Tensor:  # noqa: A002
    """Zero whole channels ``input[n, c]`` with probability ``p`` and scale the rest by ``1/(1-p)``."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not train or input.numel() == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    mask = Tensor(_random.dropout_mask(shape, input.dtype.np, p))
    return input.mul_(mask) if inplace else input * mask


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _unbatched(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:  # noqa: A002
    """torch's ``unsqueeze(0)``, ``feature_dropout``, ``squeeze(0)``: one draw per channel."""
    if not inplace:
        return feature_dropout(input.unsqueeze(0), p, training).squeeze(0)
    if p == 0 or not training or input.numel() == 0:
        return input
    mask = _random.dropout_mask((1, input.shape[0]) + (1,) * (input.ndim - 1), input.dtype.np, p)
    return input.mul_(Tensor(mask[0]))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """Channel-wise dropout of (N, C, L) or (C, L) inputs."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return _unbatched(input, p, training, inplace)
    return feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """Channel-wise dropout of (N, C, H, W) inputs (a 3-d input is taken as (N, C, L), with torch's warning)."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    return feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    if input.ndim == 4:
        return _unbatched(input, p, training, inplace)
    return feature_dropout(input, p, training, inplace)
