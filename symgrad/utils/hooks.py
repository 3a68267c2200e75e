"""``torch.utils.hooks``: ``RemovableHandle``, what every ``register_*_hook`` (tensors, modules, optimizers)
returns, and ``unserializable_hook``."""
from __future__ import annotations

from typing import Callable, TypeVar

from ..eager.hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]

F = TypeVar("F", bound=Callable)


def unserializable_hook(f: F) -> F:
    """Mark ``f`` as a hook that is not serialized with its tensor (torch then does not warn about it)."""
    f.__torch_unserializable__ = True  # type: ignore[attr-defined]
    return f
