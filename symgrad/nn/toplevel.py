"""torch's top-level spellings of ``torch.nn.functional`` ops (``torch.conv2d``, ``torch.max_pool2d``, ...)."""
from __future__ import annotations

from typing import Any

from . import functional as F
from .functional import (
    adaptive_avg_pool1d,
    avg_pool1d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_similarity,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    pixel_shuffle,
    pixel_unshuffle,
)

__all__ = ["adaptive_avg_pool1d", "avg_pool1d", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "cosine_similarity", "dropout", "layer_norm", "max_pool1d", "max_pool2d", "max_pool3d",
           "pixel_shuffle", "pixel_unshuffle"]


def dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``torch.dropout(input, p, train)``: ``F.dropout`` with its arguments required."""
    return F.dropout(input, p, training=train)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5,  # noqa: A002
               cudnn_enable: bool = True) -> Any:
    """``torch.layer_norm``: ``F.layer_norm`` (``cudnn_enable`` has no effect on the CPU)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)
