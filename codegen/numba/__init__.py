"""The numba backend: a ``Kernel`` as fused loop nests in one ``numba.njit`` function (``emit.emit_numba``).

Emitting needs no numba (``vmath_text`` reads the helpers ``vmath`` jits as text), so a warm process may run
cached kernels without importing it (``codegen.numba_object``); ``codegen`` defers this package until
``codegen.emit_numba`` is first looked up. ``emit_numba`` is itself looked up lazily here, so that a module that
needs one part (``codegen.llvm`` reads ``scalar``) does not import the whole emitter.
"""
from __future__ import annotations

from typing import Any

__all__ = ["emit_numba"]


def __getattr__(name: str) -> Any:
    if name == "emit_numba":
        from .emit import emit_numba  # deferred: the whole emitter (plan, render, folds, stencil), once needed
        return emit_numba
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
