"""``sg.nn``: torch.nn's functional API (``import symgrad.nn.functional as F``)."""
from __future__ import annotations

from . import functional  # noqa: F401
