"""``Tensor``'s methods: indexing and selection."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import basic as _basic
from .. import composite as _composite
from ..dynamic_index import has_traced_index, traced_getitem
from ..indexing import getitem

if TYPE_CHECKING:
    from ..tensor import Tensor


class SelectionMethods:
    """``Tensor``'s indexing and selection."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Tensor:
        if has_traced_index(index):
            return traced_getitem(self, index)
        return getitem(self, index)

    # composites of registry ops (``eager/composite.py``), as methods
    gather = _composite.gather
    take_along_dim = _composite.take_along_dim
    index_select = _composite.index_select
    select = _composite.select
    narrow = _composite.narrow
    masked_fill = _composite.masked_fill
    masked_select = _composite.masked_select
    sort = _composite.sort
    argsort = _composite.argsort
    topk = _composite.topk
    isclose = _composite.isclose
    nonzero = _basic.nonzero
