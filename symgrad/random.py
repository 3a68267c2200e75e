"""``torch.random``: the global generator's seeding and state, ``fork_rng``."""
from __future__ import annotations

from .eager.random import (
    default_generator,
    fork_rng,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]
