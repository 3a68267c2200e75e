"""The active trace context (None in eager mode); ``symgrad.trace`` installs one while tracing."""
from __future__ import annotations

from typing import Any

active: Any = None
