"""The LLVM backend for small-state loop programs: ``emit_llvm`` (``emit.py``) prints a ``Kernel`` as LLVM IR, and
``compile_kernel`` JIT-compiles it with llvmlite (``load.py``) into a callable with ``emit_numba``'s calling
convention. IR outside its class raises ``ir.Unsupported`` (callers keep the numba kernel). llvmlite is imported on
the first compile."""
from __future__ import annotations

from typing import Callable, Sequence

from ..ir import Kernel, Unsupported
from .emit import Module, emit_llvm
from .load import compile_module

__all__ = ["emit_llvm", "compile_kernel", "Module", "Unsupported"]


def compile_kernel(kernel: Kernel, out_params: Sequence[int] = ()) -> Callable:
    """``kernel`` as a compiled callable (``load.compile_module`` of ``emit_llvm``); raises ``Unsupported``."""

    return compile_module(emit_llvm(kernel, tuple(out_params)))
