"""``torch.utils.hooks.RemovableHandle``: the handle ``register_*_hook`` returns (defined with the tensors' hooks)."""
from __future__ import annotations

from ..eager.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
