"""Reading through an index: ``t[index]`` (ints, slices, None, ``...``, integer arrays, boolean masks)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..ops.index import index_op, normalize_index, torch_grad_fn
from . import saved_attrs as _saved_attrs
from .base import TensorBase, is_traced
from .record import _apply

if TYPE_CHECKING:
    pass


def _is_bool_index(e: Any) -> bool:
    if isinstance(e, TensorBase):
        return e.dtype.name in ("bool", "uint8")
    if isinstance(e, np.ndarray):
        return e.dtype.kind == "b"
    if isinstance(e, (list, tuple)) and e and all(isinstance(x, (bool, np.bool_)) for x in e):
        return True
    return False


def plain_index(index: tuple) -> tuple:
    """``index`` with its tensors replaced by their arrays (a traced one has no values to pick with)."""
    out = []
    for e in index:
        if isinstance(e, TensorBase):
            if is_traced(e):
                e._concrete("indexing with a traced tensor")  # raises TracingError
            e = e._data
        out.append(e)
    return tuple(out)


def _masks_to_arrays(index: Any, shape: tuple[int, ...]) -> tuple:
    """``index`` with boolean masks replaced by the integer arrays of their true positions (what
    indexing with a mask means), and Python ``True`` by ``None``; torch's error for a mask whose
    shape does not match the dims it indexes."""
    items = list(index) if isinstance(index, tuple) else [index]
    if not any(_is_bool_index(e) or isinstance(e, (bool, np.bool_)) for e in items):
        return plain_index(index if isinstance(index, tuple) else (index,))
    consumed = 0
    for e in items:
        if e is None or e is Ellipsis or isinstance(e, (bool, np.bool_)):
            continue
        consumed += np.ndim(e._data if isinstance(e, TensorBase) else e) if _is_bool_index(e) else 1
    out: list = []
    dim = 0
    for e in items:
        if isinstance(e, (bool, np.bool_)):
            if not e:
                raise IndexError("symgrad does not support indexing with False")
            out.append(None)
        elif _is_bool_index(e):
            if is_traced(e):
                e._concrete("indexing with a traced mask")
            m = np.asarray(e._data if isinstance(e, TensorBase) else e).astype(bool)
            if m.ndim == 0:
                if not m:
                    raise IndexError("symgrad does not support indexing with a false 0-d mask")
                out.append(None)
                continue
            for j, s in enumerate(m.shape):
                if dim + j >= len(shape) or shape[dim + j] != s:
                    raise IndexError(f"The shape of the mask {list(m.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(shape)} at index {dim + j}")
            out.extend(np.nonzero(m))
            dim += m.ndim
        else:
            out.append(e)
            if e is Ellipsis:
                dim += max(len(shape) - consumed, 0)
            elif e is not None:
                dim += 1
    return plain_index(tuple(out))



def getitem(t: Any, index: Any) -> Any:
    bare_slice = isinstance(index, slice)
    given = index
    # a boolean mask picks its true positions: integer arrays (a traced mask raises TracingError there)
    index = _masks_to_arrays(index, t._data.shape)
    spec = normalize_index(index, t._data.shape)
    fn = torch_grad_fn(spec, t._data.shape, bare_slice=bare_slice)
    out = _apply(index_op, t, index=spec, fn=fn)
    # torch's IndexBackward0 saves the index tensors
    if fn == "IndexBackward0" and out._node is not None:
        _saved_attrs.note_indices(_saved_attrs.refuse_inference(out, given), given)
    elif fn == "SelectBackward0" and out._node is not None:
        _saved_attrs.note_select(out, given)
    return out


