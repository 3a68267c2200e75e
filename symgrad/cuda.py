"""``torch.cuda`` on a CPU-only build: nothing is available, and using a CUDA device raises torch's error."""
from __future__ import annotations

from typing import Any

from .eager.device import _NO_CUDA


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Seeding CUDA generators is a no-op without CUDA (as torch)."""


def manual_seed_all(seed: int) -> None:
    """Seeding CUDA generators is a no-op without CUDA (as torch)."""


def synchronize(device: Any = None) -> None:
    raise AssertionError(_NO_CUDA)


def current_device() -> int:
    raise AssertionError(_NO_CUDA)


def get_device_name(device: Any = None) -> str:
    raise AssertionError(_NO_CUDA)


def empty_cache() -> None:
    """Nothing is cached without CUDA."""
