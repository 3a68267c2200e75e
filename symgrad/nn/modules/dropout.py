"""``Dropout``: ``F.dropout`` while training, the identity in eval mode."""
from __future__ import annotations

from ...eager.tensor import Tensor
from .. import feature_dropout as _fd
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` while training (the
    mask comes from ``sg.manual_seed``'s generator)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) / (C, L) inputs with probability ``p`` while training (``F.dropout1d``)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _fd.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p`` while training (``F.dropout2d``)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _fd.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) inputs with probability ``p`` while training (``F.dropout3d``)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _fd.dropout3d(input, self.p, self.training, self.inplace)
