"""The numba backend: a ``Kernel`` as fused loop nests in one ``numba.njit`` function (``emit.emit_numba``).

Emitting needs no numba (``vmath_text`` reads the helpers ``vmath`` jits as text), so a warm process may run
cached kernels without importing it (``codegen.numba_object``); ``codegen`` defers this package until
``codegen.emit_numba`` is first looked up.
"""
from __future__ import annotations

from .emit import emit_numba

__all__ = ["emit_numba"]
