"""Kernel code generation from a neutral IR. Never imports symgrad: it only sees ``codegen.ir``.

Entry points: ``emit_numpy`` and ``emit_numba`` print a ``Kernel`` as source, ``load_kernel`` keeps a
source in the on-disk cache and loads its function, ``jit_stats`` counts a numba kernel's compiles
and cache loads. ``emit_numba`` is looked up lazily: importing it imports numba, which
``import codegen`` (hence ``import symgrad``) must not.
"""
from __future__ import annotations

from typing import Any

from . import ir
from .cache import load_kernel
from .numba_cache import jit_stats
from .numpy import emit_numpy

__all__ = ["emit_numba", "emit_numpy", "ir", "jit_stats", "load_kernel"]


def __getattr__(name: str) -> Any:
    if name == "emit_numba":
        from .numba import emit_numba  # deferred: the numba backend imports numba, a heavy import
        return emit_numba
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
