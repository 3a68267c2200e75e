"""The op registry, one module per family; importing this package registers every op."""
from __future__ import annotations

from . import (  # noqa: F401  (registration)
    compiled,
    decomp,
    elementwise,
    index,
    join,
    linalg,
    loop,
    reduce,
    shape,
    softmax,
    source,
    special,
    update,
)
from .base import OUT, REGISTRY, A, OpDef, apply, broadcast_shapes, get, normalize_dims, register

__all__ = ["A", "OUT", "REGISTRY", "OpDef", "apply", "broadcast_shapes", "get", "normalize_dims", "register"]
