"""What ``sort``, ``argsort`` and ``topk`` (in ``composite``) order by: torch's stable order with NaN largest
(``_order``), and for traced values the rank selection by comparisons (``_ranked``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import sympy as sp

from codegen.functions import IsNan

from ..core import dtypes
from ..ops import A
from .basic import _cast
from .composite_base import _const, _fused, _named

if TYPE_CHECKING:
    from .tensor import Tensor

__all__: list[str] = []


# --------------------------------------------------------------------------- sorting

def _order(t: Tensor, dim: int, descending: bool) -> np.ndarray:
    """Stable sort order along ``dim``, NaN as the largest value (as torch)."""
    x = t._data
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if descending:
        key = np.where(np.isnan(x), -np.inf, -x) if x.dtype.kind == "f" else -x.astype(np.int64)
        order = np.argsort(key, axis=dim, kind="stable")
        if x.dtype.kind == "f":  # NaNs first (a stable pass moves them ahead of any +inf)
            nan_first = np.argsort(~np.isnan(np.take_along_axis(x, order, dim)), axis=dim, kind="stable")
            order = np.take_along_axis(order, nan_first, dim)
        return order.astype(np.int64)
    if x.dtype == np.bool_:
        x = x.astype(np.int8)
    return np.argsort(x, axis=dim, kind="stable").astype(np.int64)


def _ranked(t: Tensor, dim: int, descending: bool, k: int, fn: str) -> tuple[Tensor, Tensor]:
    """The first ``k`` of the sorted values and their indices, from values known only symbolically (traced):
    each element's rank is the number of elements before it (comparisons, ties by position, NaN largest),
    and output ``r`` selects the element of rank ``r``, so ``O(n²)`` work per slice. The gradient of a
    value goes to the element it was taken from."""
    n, shape, nd = t.shape[dim], tuple(t.shape), t.ndim
    pairs = (*shape[:dim], n, n, *shape[dim + 1:])
    x = t.detach()
    xj, xi = x.unsqueeze(dim + 1).expand(*pairs), x.unsqueeze(dim).expand(*pairs)
    earlier = np.triu(np.ones((n, n), dtype=np.bool_), 1).reshape((n, n) + (1,) * (nd - dim - 1))
    a, b = A[0], A[1]
    if descending:
        strict = sp.Piecewise((0, IsNan(b)), (1, IsNan(a)), (1, a > b), (0, True))
    else:
        strict = sp.Piecewise((0, IsNan(a)), (1, IsNan(b)), (1, a < b), (0, True))
    tie = sp.Piecewise((sp.Piecewise((1, IsNan(b)), (0, True)), IsNan(a)), (1, sp.Eq(a, b)), (0, True))
    rank = _fused(strict + tie * A[2], xj, xi, _const(earlier)).sum(dim).unsqueeze(dim)
    ranks = _const(np.arange(k).reshape((k, 1) + (1,) * (nd - dim - 1)))
    pick = sp.Piecewise((A[0], sp.Eq(A[1], A[2])), (0, True))
    values = _named(_fused(pick, t.unsqueeze(dim), rank, ranks).sum(dim + 1), fn)
    positions = _const(np.arange(n).reshape((n,) + (1,) * (nd - dim - 1)))
    indices = _fused(pick, positions, rank, ranks).sum(dim + 1)
    return values, _cast(indices, dtypes.int64)
