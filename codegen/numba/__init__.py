"""The numba backend: a ``Kernel`` as fused loop nests in one ``numba.njit`` function (``emit.emit_numba``).

Importing it imports numba (``vmath`` jits its helpers); ``codegen`` itself defers it until
``codegen.emit_numba`` is first looked up.
"""
from __future__ import annotations

from .emit import emit_numba

__all__ = ["emit_numba"]
