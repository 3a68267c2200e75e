"""The LLVM backend for small-state loop programs: ``emit_llvm`` (``emit.py``) prints a ``Kernel`` as LLVM IR, and
``compile_kernel`` (``load.py``, which imports llvmlite) JIT-compiles it into a callable with ``emit_numba``'s calling
convention. IR outside its class raises ``ir.Unsupported`` (callers keep the numba kernel)."""
from __future__ import annotations

from typing import Callable, Sequence

from ..ir import Kernel, Unsupported
from .emit import Module, emit_llvm

__all__ = ["emit_llvm", "compile_kernel", "Module", "Unsupported"]


def compile_kernel(kernel: Kernel, out_params: Sequence[int] = ()) -> Callable:
    """``kernel`` as a compiled callable (``load.compile_kernel``); raises ``Unsupported``."""
    from . import load  # deferred: llvmlite, once a kernel is compiled
    return load.compile_kernel(kernel, tuple(out_params))[0]
