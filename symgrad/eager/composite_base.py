"""The helpers every composite builds on: a fused elementwise node (``_fused``), a node under torch's grad_fn name
(``_named``), a constant (``_const``), dims normalised (``_dims``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from ..ops import REGISTRY, A, normalize_dims
from .base import _ALL_DIMS, make_tensor
from .record import _apply

if TYPE_CHECKING:
    from .tensor import Tensor


# --------------------------------------------------------------------------- helpers

def _fused(expr: sp.Expr, *xs: Any, fn: str = "") -> Tensor:
    """The elementwise ``expr`` of ``a0, a1, ...`` over ``xs``; ``fn``: the grad_fn name it reports."""
    return _apply(REGISTRY["fused"], *xs, expr=sp.sympify(expr), **({"fn": fn} if fn else {}))


def _named(t: Tensor, fn: str) -> Tensor:
    """``t`` as a node reporting torch's ``fn`` (an identity; integer results stay as they are)."""
    return _fused(A[0], t, fn=fn) if t.is_floating_point() else t


def _const(arr: np.ndarray) -> Tensor:
    return make_tensor(np.ascontiguousarray(arr))


def _dims(t: Tensor, dim: Any) -> tuple[int, ...]:
    """``dim`` (None, an int or a sequence) as sorted non-negative dims (all for None)."""
    return normalize_dims(None if dim is _ALL_DIMS else dim, t.ndim)
