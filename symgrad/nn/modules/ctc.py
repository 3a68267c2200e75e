"""``nn.CTCLoss``: the module of ``F.ctc_loss`` (``symgrad/nn/ctc.py``)."""
from __future__ import annotations

from ...eager.tensor import Tensor
from ..ctc import ctc_loss
from .loss import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (``F.ctc_loss``)."""

    __constants__ = ["blank", "reduction"]

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor) -> Tensor:
        """``F.ctc_loss`` with this module's ``blank``, ``reduction`` and ``zero_infinity``."""
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                        self.zero_infinity)

