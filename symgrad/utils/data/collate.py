"""``default_collate`` / ``default_convert`` / ``collate``: samples to batches with torch's rules. Tensors are
stacked, numpy arrays stacked as tensors, Python floats become float64 tensors, ints int64 (bools bool), numpy
scalars keep their dtype, strings and bytes stay lists; mappings, namedtuples, tuples (as lists) and
sequences are collated field by field."""
from __future__ import annotations

import collections.abc
import copy
import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ...core import dtypes
from ...eager.basic import stack
from ...eager.functional import as_tensor, tensor
from ...eager.tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

_STR_OR_OBJECT = re.compile(r"[SaUO]")
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"

CollateMap = dict[type | tuple[type, ...], Callable]


def default_convert(data: Any) -> Any:
    """Numpy arrays and scalars inside ``data`` as tensors, every container rebuilt around them (what a
    ``DataLoader`` without batching applies to each sample)."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_"):
        if kind.__name__ == "ndarray" and _STR_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return kind({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return kind(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return kind([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Any:
    """Collate ``batch`` (a sequence of samples) by the type of its first element: an entry of
    ``collate_fn_map`` (exact type first, then the first key it is an instance of), else containers field by
    field."""
    elem = batch[0]
    kind = type(elem)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for key in collate_fn_map:
            if isinstance(elem, key):
                return collate_fn_map[key](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(fields)
                return clone
            return kind(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return kind(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch, strict=False)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch, strict=False)]
        if isinstance(elem, tuple):
            return columns
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, c in enumerate(columns):
                    clone[i] = c
                return clone
            return kind(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(kind))


def collate_tensor_fn(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Any:
    if _STR_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    # torch's dtype for a list of numpy scalars: their dtypes promoted as tensor dtypes (int64 with float32 is
    # float32, not numpy's float64)
    dt = functools.reduce(dtypes.promote_types, (dtypes.from_any(np.asarray(b).dtype) for b in batch))
    return as_tensor(np.array([np.asarray(b).astype(dt.np) for b in batch]), dtype=dt)


def collate_float_fn(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch, dtype=dtypes.float64)


def collate_int_fn(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch)


def collate_str_fn(batch: Any, *, collate_fn_map: CollateMap | None = None) -> Any:
    return batch


#: the per-type rules of ``default_collate``, in torch's order (extend it to collate your own types)
default_collate_fn_map: CollateMap = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Any) -> Any:
    """Samples to one batch: tensors stacked along a new first dim, numbers as tensors, containers collated
    field by field (``torch.utils.data.default_collate``)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
