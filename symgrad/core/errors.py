"""Typed errors. Runtime errors that mirror torch keep torch's class (RuntimeError) and text."""
from __future__ import annotations

import linecache
import os
import sys


class SymgradError(Exception):
    """Base class of symgrad's own errors."""


class TracingError(SymgradError, TypeError):
    """A traced value was used where Python needs a concrete one (``if``, ``bool()``, ``float()``)."""


class CodegenError(SymgradError):
    """Generating or compiling a kernel failed; the message names the op."""


def broadcast_error(a: tuple[int, ...], b: tuple[int, ...]) -> RuntimeError:
    """torch's message for shapes that do not broadcast."""
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(
                f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) "
                f"at non-singleton dimension {i}"
            )
    return RuntimeError(f"shapes {list(a)} and {list(b)} are not broadcastable")


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the symgrad package


def user_frame() -> tuple[str, int, str]:
    """(file, line, source) of the innermost frame outside the symgrad package: the user's line."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG):
        f = f.f_back
    if f is None:
        return "<unknown>", 0, ""
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f.f_code.co_filename, f.f_lineno, line
