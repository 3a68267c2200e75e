"""``torch.utils``: ``data`` (datasets, samplers, ``DataLoader``), ``checkpoint`` and ``hooks``."""
from __future__ import annotations

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
