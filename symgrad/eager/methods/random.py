"""``Tensor``'s methods: in-place sampling from torch's generator (``uniform_``, ``normal_``, ``random_``, ...)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import random as _random

if TYPE_CHECKING:
    from ..tensor import Tensor


class RandomMethods:
    """``Tensor``'s samplers: each fills the tensor in place with torch's draws (``generator=`` as torch)."""

    __slots__ = ()

    uniform_ = _random.uniform_
    normal_ = _random.normal_
    random_ = _random.random_
    bernoulli_ = _random.bernoulli_
    exponential_ = _random.exponential_
    geometric_ = _random.geometric_
    cauchy_ = _random.cauchy_
    log_normal_ = _random.log_normal_

    def bernoulli(self, p: Any = None, *, generator: Any = None) -> Tensor:
        """Draws with the probabilities in this tensor (or ``p`` everywhere)."""
        return _random.bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
        return _random.multinomial(self, num_samples, replacement, generator=generator)
