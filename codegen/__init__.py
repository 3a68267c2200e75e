"""Kernel code generation from a neutral IR. Never imports symgrad: it only sees ``codegen.ir``."""
from __future__ import annotations

from .cache import load_kernel
from .emit import emit_numpy
from .ir import Broadcast, Elementwise, Kernel, Param, Reduce, Reshape, Transpose

__all__ = ["Broadcast", "Elementwise", "Kernel", "Param", "Reduce", "Reshape", "Transpose", "emit_numpy",
           "load_kernel"]
