"""The op registry, one module per family; importing this package registers every op."""
from __future__ import annotations

from . import compiled, elementwise, index, join, linalg, loop, reduce, shape, softmax, source, update  # noqa: F401  (registration)
from . import decomp, special  # noqa: F401  (registration: linear algebra, special functions)
from .base import OUT, REGISTRY, A, OpDef, apply, broadcast_shapes, get, normalize_dims, register

__all__ = ["A", "OUT", "REGISTRY", "OpDef", "apply", "broadcast_shapes", "get", "normalize_dims", "register"]
