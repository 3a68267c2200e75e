"""The numpy backend: a ``Kernel`` as plain numpy source, one line per IR statement (``emit``), printed
by ``printer.KernelPrinter``. Generated numpy kernels need numpy only (and scipy for erf/erfc)."""
from __future__ import annotations

from .emit import emit_numpy
from .printer import KernelPrinter

__all__ = ["KernelPrinter", "emit_numpy"]
