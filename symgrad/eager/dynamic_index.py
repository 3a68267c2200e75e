"""Reading through traced integer tensors: ``t[idx]`` inside ``sg.compile`` (and loop bodies, ``t[i]``).

A traced index has no values when the program is traced, so it cannot become a static spec. torch's rules
are kept: ints, slices, ``None`` and ``...`` index first (basic indexing); the integer tensors (traced or not)
then pick entries along the dims they index, broadcast together, their dims in place of the indexed ones
when those are adjacent and first otherwise. The picked dims are flattened into one and read with
``index_select`` at the linear index; negative indices count from the end (an index out of range wraps
around: a traced program cannot raise on a value, JAX clamps instead).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .base import TensorBase, is_traced
from .composite import _const, index_select
from .indexing import _is_bool_index, getitem

#: hooks that may read ``t[index]`` another way (``None``: not theirs); the innermost ``fori_loop`` being traced
#: reads ``t[i]`` of an outer tensor ``t`` at its own counter ``i`` as a row of ``xs`` (``compiler/loops.py``)
ROW_READS: list[Callable[[Any, Any], Any]] = []


def has_traced_index(index: Any) -> bool:
    """Whether ``index`` holds a traced tensor."""
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(e, TensorBase) and is_traced(e) for e in items)


def _advanced(e: Any) -> bool:
    if isinstance(e, TensorBase):
        return True
    if isinstance(e, np.ndarray):
        return True
    return isinstance(e, (list, tuple))


def _static_masks(items: list) -> list:
    """Static boolean masks as the integer arrays of their true positions; a traced mask raises."""
    out: list = []
    for e in items:
        if _is_bool_index(e):
            if isinstance(e, TensorBase) and is_traced(e):
                e._concrete("indexing with a traced mask")  # raises TracingError
            m = np.asarray(e._data if isinstance(e, TensorBase) else e).astype(bool)
            out.extend(np.nonzero(m) if m.ndim else [None])
        else:
            out.append(e)
    return out


def traced_getitem(t: Any, index: Any) -> Any:
    """``t[index]`` where ``index`` holds traced integer tensors (see the module docstring)."""
    if ROW_READS:
        row = ROW_READS[-1](t, index)
        if row is not None:
            return row
    items = _static_masks(list(index) if isinstance(index, tuple) else [index])
    consumed = sum(1 for e in items if e is not None and e is not Ellipsis)
    if consumed > t.ndim:
        raise IndexError(f"too many indices for tensor of dimension {t.ndim}")
    basic: list = []
    picks: list[tuple[int, Any]] = []  # (dim of the basic-indexed result, index)
    out_dim = 0
    for e in items:
        if e is None or isinstance(e, slice):
            basic.append(e)
            out_dim += 1
        elif e is Ellipsis:
            basic.append(e)
            out_dim += t.ndim - consumed
        elif _advanced(e):
            if isinstance(e, TensorBase) and e.dtype.is_floating_point or (
                    not isinstance(e, TensorBase) and np.asarray(e).dtype.kind not in "iu"):
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            basic.append(slice(None))
            picks.append((out_dim, e))
            out_dim += 1
        else:
            basic.append(e)
    u = getitem(t, tuple(basic))
    dims = [d for d, _ in picks]
    sizes = [u.shape[d] for d in dims]
    linear = None
    stride = 1
    for (_, e), n in zip(reversed(picks), reversed(sizes)):
        at = e if isinstance(e, TensorBase) else _const(np.asarray(e, dtype=np.int64))
        if n:
            at = at % n
        term = at * stride if stride != 1 else at
        linear = term if linear is None else linear + term
        stride *= n
    shape = tuple(np.broadcast_shapes(*(tuple(e.shape) if isinstance(e, TensorBase) else np.shape(e)
                                        for _, e in picks)))
    if tuple(linear.shape) != shape:
        linear = linear.expand(*shape)
    others = [k for k in range(u.ndim) if k not in dims]
    flat = u.permute(*dims, *others).reshape(stride, *(u.shape[k] for k in others))
    got = index_select(flat, 0, linear.reshape(-1)).reshape(*shape, *(u.shape[k] for k in others))
    first, nb = dims[0], len(shape)
    if dims == list(range(first, first + len(dims))) and first:
        order = [nb + j for j in range(first)] + list(range(nb)) + [nb + j for j in range(first, len(others))]
        got = got.permute(*order)
    return got
