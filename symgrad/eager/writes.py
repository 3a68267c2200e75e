"""In-place writes with gradients: ``t[idx] = v``, ``copy_``, ``index_put(_)`` and ``index_add(_)``.

All of them are one functional op, ``index_put(base, values, index, accumulate)``: ``base`` with
``values`` (broadcast to the indexed region, converted to ``base``'s dtype) written at ``index``, or
added there (``accumulate``: repeated integer indices add up). An eager write updates the tensor's
buffer in place and, when a gradient is needed, rebinds the tensor's node to the update; while
tracing it only rebinds the node, so ``@sg.compile`` sees the same DAG op. Its VJP sends ``g`` with
the written region zeroed to ``base`` (``g`` itself when accumulating) and ``g[index]``, summed to
its shape, to ``values``.

Writes through an integer array with repeated indices (without ``accumulate``) keep the last value
written, numpy's rule and what torch does on CPU (torch calls it unspecified), eager and compiled.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import context as _trace
from ..core import dtypes
from ..core.errors import TracingError
from ..core.errors import user_frame as _user_frame
from ..core.graph import Node
from ..ops import source as _src
from ..ops.base import broadcast_shapes, normalize_dims
from ..ops.index import normalize_index, to_numpy_index, torch_grad_fn
from ..ops.update import COPY, COPY_SLICES, WHOLE, fit_shape, index_put_op, put_into, region_shape
from .base import TensorBase, _is_number, _py, check_inference_write, is_traced, make_tensor
from .grad_mode import is_grad_enabled
from .indexing import _is_bool_index, _masks_to_arrays
from .record import _VIEW_LEAF_MSG, MULTI_VIEWS, SAVED_INPUTS, _apply, _input_node, check_view_write, propagate, refresh

if TYPE_CHECKING:
    pass

_LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."
_OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
                "memory location. Please clone() the tensor before performing the operation.")


def _torch_type(t: Any) -> str:
    return f"torch.{dtypes.torch_type_name(t.dtype)}Tensor"


def _check_value(t: Any, value: Any) -> None:
    if isinstance(value, TensorBase):
        return
    if isinstance(value, complex) and t.dtype.is_floating_point:
        raise RuntimeError("value cannot be converted to type float without overflow")
    if not _is_number(value):
        kind = type(value)
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"can't assign a {name} to a {_torch_type(t)}")


def _check_overlap(t: Any, value: Any, spec: tuple) -> None:
    """torch's refusal to copy between partially overlapping memory (an exact alias of the region is fine)."""
    if not isinstance(value, TensorBase) or not np.shares_memory(value._data, t._data):
        return
    if not any(e[0] == "a" for e in spec):
        index = to_numpy_index(spec)
        region = t._data[index if any(e is Ellipsis for e in index) else index + (Ellipsis,)]  # a view, even 0-d
        a, b = region.__array_interface__, value._data.__array_interface__
        if a["data"] == b["data"] and region.shape == value._data.shape and region.strides == value._data.strides:
            return
    raise RuntimeError(_OVERLAP_MSG)


def _shape_list(s: tuple) -> str:
    return f"[{', '.join(map(str, s))}]"


def _check_broadcast(t: Any, value: Any, region: tuple[int, ...], advanced: bool) -> None:
    """torch's errors for a value that does not fit the region: ``expand``'s for basic indexing,
    index_put's "shape mismatch" for integer-array and mask indexing."""
    if not isinstance(value, TensorBase):
        return
    shape = fit_shape(tuple(value.shape), region)
    ok = len(shape) <= len(region) and all(s in (1, r) for s, r in zip(shape[::-1], region[::-1]))
    if ok:
        return
    if advanced:
        raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_list(tuple(value.shape))} cannot be "
                           f"broadcast to indexing result of shape {_shape_list(region)}")
    if len(shape) > len(region):
        raise RuntimeError(
            f"expand({_torch_type(value)}{{{_shape_list(shape)}}}, size={_shape_list(region)}): the number of sizes "
            f"provided ({len(region)}) must be greater or equal to the number of dimensions in the tensor "
            f"({len(shape)})")
    lead = len(region) - len(shape)
    for i, r in enumerate(region):
        s = shape[i - lead] if i >= lead else 1
        if s != 1 and s != r:
            raise RuntimeError(
                f"The expanded size of the tensor ({r}) must match the existing size ({s}) at non-singleton "
                f"dimension {i}.  Target sizes: {_shape_list(region)}.  Tensor sizes: {_shape_list(shape)}")


def write(t: Any, spec: tuple, value: Any, *, accumulate: bool = False, fn: str = COPY_SLICES,
          leaf_msg: str = _LEAF_MSG, view: str | None = None) -> Any:
    """Write ``value`` into ``t`` at ``spec`` in place, recording an ``index_put`` node when a
    gradient is needed (``t`` requires grad, or the value does); returns ``t``. ``view``: the torch
    name of the view the write goes through (``Select``), for torch's error on multi-view outputs."""
    grad = is_grad_enabled()
    refresh(t)
    if _trace.active is not None and (is_traced(t) or is_traced(value)):
        return _trace_write(t, spec, value, accumulate, fn, leaf_msg)
    if grad and t.is_leaf and t.requires_grad:
        raise RuntimeError(leaf_msg)
    if grad and t._node is not None and t._node in MULTI_VIEWS:
        name, k = MULTI_VIEWS[t._node]
        if view is not None:
            name, k = view, 0
        raise RuntimeError(
            f"Output {k} of {name} is a view and is being modified inplace. This view is the output of a function "
            "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
            "You should replace the inplace operation by an out-of-place one.")
    if grad:
        check_view_write(t)
    _check_overlap(t, value, spec)
    varr = value._data if isinstance(value, TensorBase) else np.asarray(_py(value))
    needs = grad and t.dtype.is_floating_point and (
        t._node is not None or (isinstance(value, TensorBase) and value._node is not None))
    if needs:
        if t._node is None:  # the base as it was: a constant of its values before the write
            base = _input_node(make_tensor(t._data.copy()))
        else:
            base = _input_node(t)
        ins = (base, _input_node(value))
        saved = ((t._version.v, weakref.ref(t)),
                 (value._version.v, weakref.ref(value)) if isinstance(value, TensorBase) else None)
    put_into(t._data, spec, varr, accumulate)
    t._version.v += 1
    check_inference_write(t)  # as torch: after the write, when the version is bumped
    t._grad_terms.reset(False)
    if needs:
        attrs = (("accumulate", bool(accumulate)), ("fn", fn), ("index", spec))
        node = Node(index_put_op, ins, attrs, t._data.shape, t.dtype, value=t._data, requires_grad=True)
        node.storage = t._version
        node.version = t._version.v
        SAVED_INPUTS[node] = saved
        t._node = node
        t._version.recorded += 1
        if t._view is not None:
            propagate(t)
    return t


def check_trace_target(t: Any, leaf_msg: str = _LEAF_MSG) -> None:
    """Refuse in-place writes that tracing cannot turn into a functional update: into a tensor that is
    not traced, into an argument, into a view."""
    if not is_traced(t):
        path, line, code = _user_frame()
        raise TracingError(
            f"an in-place write of a traced value into a tensor that is not traced (a constant captured by the "
            f"compiled function, at {path}:{line}: `{code}`): write into a traced tensor, e.g. a clone() of it")
    refresh(t)
    node = (t._view.base if t._view is not None else t)._node
    if is_grad_enabled() and node.op is _src.leaf and node.requires_grad:
        raise RuntimeError(leaf_msg if t._view is None else _VIEW_LEAF_MSG)
    if node.op.family == "source":
        path, line, code = _user_frame()
        raise TracingError(
            f"an in-place write into an argument of a compiled function (at {path}:{line}: `{code}`): compiled "
            "functions do not modify their inputs; write into a copy (x = x.clone())")
    check_view_write(t)


def _trace_write(t: Any, spec: tuple, value: Any, accumulate: bool, fn: str, leaf_msg: str) -> Any:
    """A write while tracing: the tensor's tracer is rebound to the functional update."""
    check_trace_target(t, leaf_msg)
    res = _apply(index_put_op, t, value, index=spec, accumulate=bool(accumulate), fn=fn)
    t._node = res._node
    t._version.v += 1
    t._version.recorded += 1
    if t._view is not None:
        propagate(t)
    return t


# ====================================================================== the public forms

def setitem(t: Any, index: Any, value: Any) -> None:
    """``t[index] = value`` with torch's semantics, grad_fn names and errors."""
    _check_value(t, value)
    shape = tuple(t._data.shape)
    spec = normalize_index(_masks_to_arrays(index, shape), shape)
    # a 0-d integer tensor indexes as the integer it holds (torch selects with it: t[i, j] += 1 writes a view)
    spec = tuple(("i", e[1][0]) if e[0] == "a" and e[2] == () else e for e in spec)
    advanced = any(e[0] == "a" for e in spec)
    region = region_shape(shape, spec)
    _check_broadcast(t, value, region, advanced)
    tensor_value = isinstance(value, TensorBase) and value.ndim > 0
    # torch applies the basic part of the index first (a view, unless it keeps everything), then
    # index_put_ (integer arrays) or copy_/fill_ into that view, or into t itself
    basic = torch_grad_fn(tuple(("s", None, None, None) if e[0] == "a" else e for e in spec), shape)
    view = None
    if basic != "AliasBackward0":
        fn, msg = COPY_SLICES, _VIEW_LEAF_MSG
        view = basic.removesuffix("Backward0")
    elif advanced:
        fn, msg = "IndexPutBackward0", _LEAF_MSG
    else:
        fn, msg = (COPY if tensor_value or not spec else "FillBackward3"), _LEAF_MSG
    write(t, spec, value, fn=fn, leaf_msg=msg, view=view)


def copy_(t: Any, src: Any) -> Any:
    """``t.copy_(src)``: ``src`` broadcast to ``t``'s shape, converted to its dtype (``CopyBackwards``)."""
    if not isinstance(src, TensorBase):
        _check_value(t, src)
    shape = tuple(t._data.shape)
    if isinstance(src, TensorBase):
        out = broadcast_shapes(shape, tuple(src.shape))
        if out != shape:
            raise RuntimeError(f"output with shape {_shape_list(shape)} doesn't match the broadcast shape "
                               f"{_shape_list(out)}")
    return write(t, WHOLE, src, fn=COPY)


def _index_tensors(t: Any, indices: Any, name: str) -> tuple:
    """index_put's ``indices`` (a tuple or list of integer or boolean tensors) as an index spec."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    items = []
    for k, e in enumerate(indices):
        if not isinstance(e, TensorBase):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type(e).__name__}")
        if e.dtype.name not in ("int64", "int32", "int16", "int8", "uint8", "bool"):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        items.append(e)
    used = sum(e.ndim if _is_bool_index(e) else 1 for e in items)
    if used > t.ndim:
        raise IndexError(f"too many indices for tensor of dimension {t.ndim} (got {used})")
    shape = tuple(t._data.shape)
    return normalize_index(_masks_to_arrays(tuple(items), shape), shape)


def index_put(t: Any, indices: Any, values: Any, accumulate: bool = False, *, inplace: bool = False) -> Any:
    """``t.index_put(indices, values, accumulate)`` (``index_put_`` with ``inplace``)."""
    name = "index_put_" if inplace else "index_put"
    if not isinstance(values, TensorBase):
        raise TypeError(f"{name}(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    spec = _index_tensors(t, indices, name)
    if values.dtype != t.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{dtypes.torch_type_name(t.dtype)} for the destination and "
                           f"{dtypes.torch_type_name(values.dtype)} "
                           "for the source.")
    _check_broadcast(t, values, region_shape(tuple(t._data.shape), spec), True)
    if inplace:
        return write(t, spec, values, accumulate=bool(accumulate), fn="IndexPutBackward0")
    return _apply(index_put_op, t, values, index=spec, accumulate=bool(accumulate), fn="IndexPutBackward0")


def scatter(t: Any, dim: int, index: Any, src: Any = None, *, value: Any = None, add: bool = False,
            inplace: bool = False) -> Any:
    """``t.scatter(dim, index, src)``: ``out[i][index[i][j]] = src[i][j]`` along ``dim`` (``value``: a number
    written instead; ``add``: ``scatter_add``, repeated indices add up; ``inplace``: the ``_`` forms)."""
    name = "scatter_add" if add else "scatter"
    if src is None and value is None:
        raise TypeError(f"{name}() missing required argument 'src'")
    if add and not isinstance(src, TensorBase):
        raise TypeError(f"scatter_add(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
    if not isinstance(index, TensorBase):
        raise TypeError(f"{name}(): argument 'index' (position 2) must be Tensor, not {type(index).__name__}")
    if src is not None and not isinstance(src, TensorBase):
        src, value = None, src
    idx = np.asarray(index._data)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if isinstance(src, TensorBase) and src.dtype != t.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    shape = tuple(t._data.shape)
    nd = max(len(shape), 1)
    if idx.ndim != len(shape) and not (len(shape) <= 1 and idx.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    (d,) = normalize_dims(dim, len(shape)) if shape else (normalize_dims(dim, 0) or (0,))
    full = shape or (1,)
    idx = idx.reshape(idx.shape or (1,)).astype(np.int64)
    if src is not None:
        sshape = tuple(src.shape) or (1,)
        if len(sshape) != nd and idx.size:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if idx.size and (any(idx.shape[k] > full[k] for k in range(nd) if k != d)
                         or any(idx.shape[k] > sshape[k] for k in range(nd))):
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} apart from "
                               f"dimension {d} and to be no larger size than src {list(src.shape)}")
    elif idx.size and any(idx.shape[k] > full[k] for k in range(nd) if k != d):
        raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} apart from "
                           f"dimension {d}")
    n = full[d]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    if src is not None:
        values = src.reshape(sshape) if not src.shape else src
        if tuple(values.shape) != idx.shape:
            values = values[tuple(slice(0, k) for k in idx.shape)]
        fn = "ScatterAddBackward0" if add else "ScatterBackward0"
    else:
        _check_value(t, value)
        values = make_tensor(np.full(idx.shape, _py(value), dtype=t._data.dtype))
        fn = "ScatterBackward1"
    grids = np.indices(idx.shape)
    spec = tuple(("a", tuple(int(v) for v in (idx % n if k == d else grids[k]).ravel()), idx.shape)
                 for k in range(nd))
    if not shape:  # a 0-d tensor: the one element
        values = values.reshape(()) if idx.size else values
        spec = WHOLE if idx.size else spec
        if not idx.size:
            return t if inplace else t.clone()
    if inplace:
        return write(t, spec, values, accumulate=add, fn=fn)
    return _apply(index_put_op, t, values, index=spec, accumulate=add, fn=fn)


def masked_scatter(t: Any, mask: Any, source: Any, *, inplace: bool = False) -> Any:
    """``t.masked_scatter(mask, source)``: the first ``mask.sum()`` elements of ``source`` (row-major) written
    where ``mask`` is true (``masked_scatter_`` with ``inplace``; out of place, ``t`` and ``mask`` broadcast)."""
    if not isinstance(mask, TensorBase) or mask.dtype is not dtypes.bool:
        dt = mask.dtype if isinstance(mask, TensorBase) else dtypes.result_type(mask)
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{dtypes.torch_type_name(dt)}")
    if not isinstance(source, TensorBase):
        raise TypeError(f"masked_scatter(): argument 'source' (position 2) must be Tensor, not "
                        f"{type(source).__name__}")
    if source.dtype != t.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{dtypes.torch_type_name(t.dtype)} and {dtypes.torch_type_name(source.dtype)}")
    shape = tuple(t._data.shape)
    if not inplace:
        shape = broadcast_shapes(shape, tuple(mask.shape))
        if shape != tuple(t._data.shape):
            t = t.expand(*shape)
    elif len(mask.shape) > len(shape) or broadcast_shapes(shape, tuple(mask.shape)) != shape:
        raise RuntimeError(f"masked_scatter_: the mask of shape {_shape_list(tuple(mask.shape))} does not "
                           f"broadcast to the tensor's shape {_shape_list(shape)}")
    if tuple(mask.shape) != shape:
        mask = make_tensor(np.broadcast_to(mask._data, shape))
    n = int(np.count_nonzero(mask._data))
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    spec = normalize_index(_masks_to_arrays((mask,), shape), shape)
    values = source.reshape(-1)[:n]
    if inplace:
        return write(t, spec, values, fn="MaskedScatterBackward0")
    return _apply(index_put_op, t, values, index=spec, accumulate=False, fn="MaskedScatterBackward0")


def index_add(t: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1, inplace: bool = False) -> Any:
    """``t.index_add(dim, index, source, alpha=alpha)``: ``alpha * source`` added along ``dim`` at the
    positions ``index`` (repeats add up); ``index_add_`` with ``inplace``."""
    if not isinstance(index, TensorBase) or not isinstance(source, TensorBase):
        bad = "index" if not isinstance(index, TensorBase) else "source"
        pos = 2 if bad == "index" else 3
        raise TypeError(f"index_add(): argument '{bad}' (position {pos}) must be Tensor, not "
                        f"{type(index if bad == 'index' else source).__name__}")
    (d,) = normalize_dims(dim, t.ndim) if t.ndim else (normalize_dims(dim, 0) or (0,))
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{dtypes.torch_type_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{dtypes.torch_type_name(index.dtype)} and size: {list(index.shape)}")
    if source.dtype != t.dtype:
        raise RuntimeError(f"index_add_(): self ({dtypes.torch_type_name(t.dtype)}) and source "
                           f"({dtypes.torch_type_name(source.dtype)}) must have the same scalar type")
    idx = np.asarray(index._data).reshape(-1).astype(np.int64)
    sshape, shape = tuple(source.shape), tuple(t.shape)
    n = sshape[d] if d < len(sshape) else 1
    if len(sshape) != len(shape) or any(a != b for k, (a, b) in enumerate(zip(sshape, shape)) if k != d):
        if t.ndim or source.ndim:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(shape)} source.shape = {list(sshape)}")
    if idx.size != n:
        raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to source.size(dim): ({n}), "
                           f"for dim: {d}")
    size = shape[d] if shape else 1
    bad = idx[(idx >= size) | (idx < -size)]
    if bad.size:
        raise RuntimeError(f"index {int(bad[0])} is out of bounds for dimension {d} with size {size}")
    if not shape:
        spec = WHOLE
        source = source.reshape(()) if source.ndim else source
    else:
        spec = (("s", None, None, None),) * d + (("a", tuple(int(v) % size for v in idx), (idx.size,)),)
    if alpha != 1:
        source = source * _py(alpha)
    if inplace:
        return write(t, spec, source, accumulate=True, fn="IndexAddBackward0")
    return _apply(index_put_op, t, source, index=spec, accumulate=True, fn="IndexAddBackward0")
