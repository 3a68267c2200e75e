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
from typing import Any

import numpy as np
import sympy as sp

from codegen import ir

from . import _trace
from .grad_mode import is_grad_enabled
from .graph import Node
from .indexing import normalize_index, to_numpy_index, torch_grad_fn
from .ops.base import REGISTRY, OpDef, apply, register
from .ops.reduce import sum_to_node

COPY_SLICES = "torch::autograd::CopySlices"
COPY = "torch::autograd::CopyBackwards"
_LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation."
_OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
                "memory location. Please clone() the tensor before performing the operation.")
WHOLE = (("e",),)


# ====================================================================== the op

def region_shape(shape: tuple[int, ...], spec: tuple) -> tuple[int, ...]:
    """The shape of ``x[spec]`` for ``x`` of ``shape`` (without allocating ``x``)."""
    return np.broadcast_to(np.empty((), np.bool_), shape)[to_numpy_index(spec)].shape


def _fit(shape: tuple[int, ...], region: tuple[int, ...]) -> tuple[int, ...]:
    """A value's shape without the leading size-1 dims that the region does not have (torch drops them)."""
    shape = tuple(shape)
    while len(shape) > len(region) and shape[0] == 1:
        shape = shape[1:]
    return shape


def put_into(out: np.ndarray, spec: tuple, values: np.ndarray, accumulate: bool) -> None:
    """``out[spec] = values`` (``+=``, repeated indices adding up, with ``accumulate``), in place."""
    idx = to_numpy_index(spec)
    values = np.asarray(values)
    values = values.reshape(_fit(values.shape, region_shape(out.shape, spec)))
    if accumulate:
        np.add.at(out, idx, values.astype(out.dtype, copy=False))
    else:
        with np.errstate(invalid="ignore"):
            out[idx] = values


def _put_eval(base: np.ndarray, values: np.ndarray, index: tuple, accumulate: bool = False,
              fn: str = COPY_SLICES) -> np.ndarray:
    out = np.array(base, copy=True)
    put_into(out, index, values, accumulate)
    return out


def _put_infer(op: OpDef, base: Node, values: Node, index: tuple, accumulate: bool = False,
               fn: str = COPY_SLICES) -> Any:
    return tuple(base.shape), base.dtype


def covers(spec: tuple, shape: tuple[int, ...]) -> bool:
    """Whether ``x[spec]`` is all of ``x`` (``...`` and whole slices only)."""
    dim = 0
    consumed = sum(1 for e in spec if e[0] in "isa")
    for e in spec:
        if e[0] == "e":
            dim += len(shape) - consumed
        elif e[0] == "s":
            start, stop, step = e[1:]
            if not (start in (None, 0) and step in (None, 1) and (stop is None or stop >= shape[dim])):
                return False
            dim += 1
        else:
            return False
    return True


def _put_vjp(node: Node, g: Node) -> tuple:
    base, values = node.inputs
    spec, acc = node.attr("index"), node.attr("accumulate", False)
    gb = gv = None
    if base.requires_grad:
        if acc:
            gb = g
        elif not covers(spec, base.shape):
            gb = apply("index_put", g, apply("scalar", value=0), index=spec, accumulate=False, fn=COPY_SLICES)
    if values.requires_grad:
        region = region_shape(base.shape, spec)
        gv = g if covers(spec, base.shape) and region == tuple(g.shape) else apply("index", g, index=spec)
        fitted = _fit(values.shape, region)
        gv = sum_to_node(gv, fitted)
        if fitted != tuple(values.shape):
            gv = apply("reshape", gv, shape=tuple(values.shape))
        if gv.dtype != values.dtype:  # (``apply``'s own ``dtype`` argument would shadow ``to``'s attr)
            gv = Node(REGISTRY["to"], (gv,), (("dtype", values.dtype.name),), gv.shape, values.dtype,
                      requires_grad=gv.requires_grad)
    return gb, gv


def _sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


def _last_writes(spec: tuple, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """For a write whose integer arrays repeat a target: the region positions (flat, ascending) that
    write last to each target and those targets (flat); None when no target repeats."""
    if not any(e[0] == "a" for e in spec):
        return None
    targets = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[to_numpy_index(spec)].ravel()
    rev = targets[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    if len(first_in_rev) == len(targets):
        return None
    keep = np.sort(len(targets) - 1 - first_in_rev)
    return keep, targets[keep]


def _scatter(name: str, v: str, spec: tuple, shape: tuple[int, ...], region: tuple[int, ...], vdt: str, dt: str,
             last_wins: bool) -> list:
    """``name = zeros(shape); name[spec] = v`` as IR: repeated targets keep the last value written (as
    numpy's and the eager write's assignment do) when ``last_wins``, else add up (``IndexAdd``)."""
    last = _last_writes(spec, shape) if last_wins else None
    if last is None:
        return [ir.IndexAdd(name, v, spec, shape, dt)]
    keep, targets = last
    k, r = len(keep), int(np.prod(region))
    return [ir.Reshape(f"{name}_f", v, (r,), vdt),
            ir.Index(f"{name}_k", f"{name}_f", (("a", tuple(int(i) for i in keep), (k,)),), (k,), vdt),
            ir.IndexAdd(f"{name}_u", f"{name}_k", (("a", tuple(int(i) for i in targets), (k,)),),
                        (int(np.prod(shape)),), dt),
            ir.Reshape(name, f"{name}_u", shape, dt)]


def _put_lower(node: Node, target: str, args: list[str]) -> list:
    """Existing IR only, so both backends take it: the values scattered into zeros (``IndexAdd``), and
    ``where(mask, scattered, base)`` with the mask scattered likewise (``base + scattered`` when
    accumulating). The base's own values never enter the written region (no ``inf - inf``)."""
    base, values = node.inputs
    spec, acc = node.attr("index"), node.attr("accumulate", False)
    dt, vdt = node.dtype.np.name, values.dtype.np.name
    region = region_shape(base.shape, spec)
    stmts: list = []
    scalar = values.op.name == "scalar"
    v, vshape = args[1], tuple(values.shape)
    if _fit(vshape, region) != vshape:
        vshape = _fit(vshape, region)
        stmts.append(ir.Reshape(f"{target}_v", v, vshape, vdt))
        v = f"{target}_v"
    whole = covers(spec, base.shape) and region == tuple(base.shape)
    if scalar and not acc:
        written: sp.Expr = sp.sympify(values.attr("value"))
    else:
        if vshape != region:
            stmts.append(ir.Broadcast(f"{target}_vb", v, region, vdt))
            v = f"{target}_vb"
        if whole and not acc:
            stmts.append(ir.Elementwise(target, _sym(v), node.shape, dt))
            return stmts
        stmts.extend(_scatter(f"{target}_s", v, spec, tuple(base.shape), region, vdt, dt, last_wins=not acc))
        written = _sym(f"{target}_s")
    if acc:
        stmts.append(ir.Elementwise(target, _sym(args[0]) + written, node.shape, dt))
        return stmts
    if whole:
        stmts.append(ir.Elementwise(target, written, node.shape, dt))
        return stmts
    stmts.append(ir.Broadcast(f"{target}_one", "numpy.asarray(1)", region, "int64"))
    stmts.append(ir.IndexAdd(f"{target}_m", f"{target}_one", spec, tuple(base.shape), dt))
    stmts.append(ir.Elementwise(target, sp.Piecewise((written, _sym(f"{target}_m") > 0), (_sym(args[0]), True)),
                                node.shape, dt))
    return stmts


def _put_grad_fn(at: dict) -> str:
    return at.get("fn", COPY_SLICES)


index_put_op = register(OpDef(
    "index_put", "update", _put_grad_fn, _put_eval, _put_infer, vjp=_put_vjp, lower=_put_lower,
    doc="base with values written (accumulate: added) at index: __setitem__, copy_, index_put, index_add"))


# ====================================================================== writing into a tensor

def _torch_type(t: Any) -> str:
    from .tensor import _torch_type_name
    return f"torch.{_torch_type_name(t.dtype)}Tensor"


def _check_value(t: Any, value: Any) -> None:
    from .tensor import Tensor, _is_number
    if isinstance(value, Tensor):
        return
    if isinstance(value, complex) and t.dtype.is_floating_point:
        raise RuntimeError("value cannot be converted to type float without overflow")
    if not _is_number(value):
        kind = type(value)
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"can't assign a {name} to a {_torch_type(t)}")


def _check_overlap(t: Any, value: Any, spec: tuple) -> None:
    """torch's refusal to copy between partially overlapping memory (an exact alias of the region is fine)."""
    from .tensor import Tensor
    if not isinstance(value, Tensor) or not np.shares_memory(value._data, t._data):
        return
    if not any(e[0] == "a" for e in spec):
        region = t._data[to_numpy_index(spec)]
        a, b = region.__array_interface__, value._data.__array_interface__
        if a["data"] == b["data"] and region.shape == value._data.shape and region.strides == value._data.strides:
            return
    raise RuntimeError(_OVERLAP_MSG)


def _shape_list(s: tuple) -> str:
    return f"[{', '.join(map(str, s))}]"


def _check_broadcast(t: Any, value: Any, region: tuple[int, ...], advanced: bool) -> None:
    """torch's errors for a value that does not fit the region: ``expand``'s for basic indexing,
    index_put's "shape mismatch" for integer-array and mask indexing."""
    from .tensor import Tensor
    if not isinstance(value, Tensor):
        return
    shape = _fit(tuple(value.shape), region)
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
    from .tensor import MULTI_VIEWS, SAVED_INPUTS, Tensor, _input_node, _py
    from .trace import Tracer
    grad = is_grad_enabled()
    refresh(t)
    if _trace.active is not None and (isinstance(t, Tracer) or isinstance(value, Tracer)):
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
    varr = value._data if isinstance(value, Tensor) else np.asarray(_py(value))
    needs = grad and t.dtype.is_floating_point and (
        t._node is not None or (isinstance(value, Tensor) and value._node is not None))
    if needs:
        if t._node is None:  # the base as it was: a constant of its values before the write
            base = _input_node(Tensor(t._data.copy()))
        else:
            base = _input_node(t)
        ins = (base, _input_node(value))
        saved = ((t._version.v, weakref.ref(t)),
                 (value._version.v, weakref.ref(value)) if isinstance(value, Tensor) else None)
    put_into(t._data, spec, varr, accumulate)
    t._version.v += 1
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
    from .errors import TracingError
    from .ops import source as _src
    from .trace import Tracer, _user_frame
    if not isinstance(t, Tracer):
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
    from .tensor import _apply
    check_trace_target(t, leaf_msg)
    res = _apply(index_put_op, t, value, index=spec, accumulate=bool(accumulate), fn=fn)
    t._node = res._node
    t._version.v += 1
    t._version.recorded += 1
    if t._view is not None:
        propagate(t)
    return t


# ====================================================================== views: writes reach their base

class ViewOf:
    """How a view tensor was taken: its ``base`` (never itself a view), the view ops from the base to
    it (``chain``: (op, attrs) pairs), and the base's count of recorded writes when the view's node
    was last derived from the base's (``recorded``)."""

    __slots__ = ("base", "chain", "recorded")

    def __init__(self, base: Any, chain: tuple, recorded: int) -> None:
        self.base, self.chain, self.recorded = base, chain, recorded


def note_view(out: Any, src: Any, op: OpDef, attrs: dict, traced: bool = False) -> None:
    """Record that ``out`` is ``op(src, **attrs)``, a view of ``src`` (if it shares its storage, which
    tracers, without storage, are taken to do)."""
    if not traced and (out._data.base is None or not np.may_share_memory(out._data, src._data)):
        return
    step = ((op, attrs),)
    if src._view is not None:
        out._view = ViewOf(src._view.base, src._view.chain + step, out._version.recorded)
    else:
        out._view = ViewOf(src, step, out._version.recorded)


def _view_step(op: OpDef, attrs: tuple, parent: Node, value: Any, fn: str | None = None) -> Node:
    at = dict(attrs)
    if fn is not None and op.name != "expand":
        at["fn"] = fn
    node = apply(op, parent, **at)
    if value is not None:
        node.value = value
    return node


def _chain_values(data: Any, chain: tuple) -> list:
    """The base's array and each view of the chain applied to it (numpy views; None while tracing)."""
    out = [data]
    for op, attrs in chain:
        out.append(None if data is None else op.eval(out[-1], **dict(attrs)))
    return out


def refresh(t: Any) -> None:
    """Bring a view's node up to date after recorded writes to its storage: the view ops applied to
    the base's current node (torch regenerates such a view, as ``AsStridedBackward0``)."""
    from .tensor import VIEW_WRITES, _const_node
    from .trace import Tracer
    info = t._view
    if info is None or info.recorded == t._version.recorded:
        return
    base = info.base
    info.recorded = t._version.recorded
    if base._node is None:
        return
    tracing = isinstance(t, Tracer)
    values = _chain_values(None if tracing else base._data, info.chain)
    node = base._node if base._node is not None else _const_node(base)
    for k, (op, attrs) in enumerate(info.chain):
        last = k == len(info.chain) - 1
        node = _view_step(op, attrs, node, values[k + 1], "AsStridedBackward0" if last else None)
        if not tracing:
            node.storage, node.version = t._version, t._version.v
    t._node = node
    VIEW_WRITES[node] = t._version.recorded


def check_view_write(t: Any) -> None:
    """torch's errors for writing into a view: of a leaf that requires grad, of an expanded tensor; and
    symgrad's for a view it cannot trace back to its base."""
    from .ops import source as _src
    from .tensor import _refuse_inplace_on_view
    info = t._view
    if info is None:
        if t._node is not None and t._node.op.is_view(dict(t._node.attrs)):
            _refuse_inplace_on_view(t._node)
        return
    from .trace import Tracer
    base = info.base
    if base._node is not None and base._node.op is _src.leaf and base._node.requires_grad:
        raise RuntimeError(_VIEW_LEAF_MSG)
    # torch's internal-overlap check (an expanded view); a tracer's layout is that of a fresh base's view
    data = _chain_values(np.empty(base.shape, np.bool_), info.chain)[-1] if isinstance(t, Tracer) else t._data
    if any(st == 0 and n > 1 for st, n in zip(data.strides, data.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if not isinstance(t, Tracer) and not data.flags.writeable:
        raise RuntimeError("symgrad cannot write into an expand() result (its numpy view is read-only); write into "
                           "the tensor it expands, or into a clone()")


def _unview(op: OpDef, attrs: tuple, parent: Node, child: Node) -> Node:
    """``parent`` with its view ``op(parent, **attrs)`` replaced by ``child``."""
    at = dict(attrs)
    if op.name == "index":
        return apply(index_put_op, parent, child, index=at["index"], accumulate=False, fn=COPY_SLICES)
    if op.name == "reshape":
        return apply(op, child, shape=tuple(parent.shape))
    if op.name == "permute":
        inv = tuple(int(i) for i in np.argsort(at["dims"]))
        return apply(op, child, dims=inv)
    if op.name == "expand":  # only an expand that adds size-1 dims gets here (check_view_write)
        return apply(REGISTRY["reshape"], child, shape=tuple(parent.shape))
    raise NotImplementedError(f"symgrad cannot write through a view made by {op.name}")


def propagate(t: Any) -> None:
    """After ``t`` (a view) got a new node by an in-place write, rewrite its base's history as torch's
    ``CopySlices``: the base with the view's region replaced by the view's new value; then derive the
    view's node from the base's again."""
    from .tensor import VIEW_WRITES, _const_node
    from .tensor import Tensor as _Tensor
    from .trace import Tracer
    info = t._view
    base, chain = info.base, info.chain
    tracing = isinstance(t, Tracer)
    if base._node is not None:
        root = base._node
    else:  # a base without history: a constant of its values (outside the written region, unchanged)
        root = _const_node(_Tensor(base._data.copy()))
    values = _chain_values(None if tracing else base._data, chain)
    parents = [root]
    for op, attrs in chain[:-1]:
        parents.append(apply(op, parents[-1], **dict(attrs)))
    cur = t._node
    for k in range(len(chain) - 1, -1, -1):
        op, attrs = chain[k]
        cur = _unview(op, attrs, parents[k], cur)
        if values[k] is not None:
            cur.value = values[k]
    if cur.op is not index_put_op or cur.inputs[0] is not root:
        cur = apply(index_put_op, root, cur, index=WHOLE, accumulate=False, fn=COPY_SLICES)
        cur.value = values[0]
    if not tracing:
        cur.storage, cur.version = base._version, base._version.v
        base._grad_terms.reset(False)
    base._node = cur
    info.recorded = -1  # derive the view's node from the base's new one
    refresh(t)
    if t._node is not None:
        VIEW_WRITES[t._node] = t._version.recorded


# ====================================================================== the public forms

def _is_bool_index(e: Any) -> bool:
    from .tensor import Tensor
    if isinstance(e, Tensor):
        return e.dtype.name in ("bool", "uint8")
    if isinstance(e, np.ndarray):
        return e.dtype.kind == "b"
    if isinstance(e, (list, tuple)) and e and all(isinstance(x, (bool, np.bool_)) for x in e):
        return True
    return False


def _masks_to_arrays(index: Any, shape: tuple[int, ...]) -> tuple:
    """``index`` with boolean masks replaced by the integer arrays of their true positions (what
    indexing with a mask means), and Python ``True`` by ``None``; torch's error for a mask whose
    shape does not match the dims it indexes."""
    from .tensor import Tensor
    from .trace import Tracer
    items = list(index) if isinstance(index, tuple) else [index]
    if not any(_is_bool_index(e) or isinstance(e, (bool, np.bool_)) for e in items):
        return index if isinstance(index, tuple) else (index,)
    consumed = 0
    for e in items:
        if e is None or e is Ellipsis or isinstance(e, (bool, np.bool_)):
            continue
        consumed += np.ndim(e._data if isinstance(e, Tensor) else e) if _is_bool_index(e) else 1
    out: list = []
    dim = 0
    for e in items:
        if isinstance(e, (bool, np.bool_)):
            if not e:
                raise IndexError("symgrad does not support indexing with False")
            out.append(None)
        elif _is_bool_index(e):
            if isinstance(e, Tracer):
                e._concrete("indexing with a traced mask")
            m = np.asarray(e._data if isinstance(e, Tensor) else e).astype(bool)
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
    return tuple(out)


def setitem(t: Any, index: Any, value: Any) -> None:
    """``t[index] = value`` with torch's semantics, grad_fn names and errors."""
    from .tensor import Tensor
    _check_value(t, value)
    shape = tuple(t._data.shape)
    spec = normalize_index(_masks_to_arrays(index, shape), shape)
    advanced = any(e[0] == "a" for e in spec)
    region = region_shape(shape, spec)
    _check_broadcast(t, value, region, advanced)
    tensor_value = isinstance(value, Tensor) and value.ndim > 0
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
    from .ops.base import broadcast_shapes
    from .tensor import Tensor
    if not isinstance(src, Tensor):
        _check_value(t, src)
    shape = tuple(t._data.shape)
    if isinstance(src, Tensor):
        out = broadcast_shapes(shape, tuple(src.shape))
        if out != shape:
            raise RuntimeError(f"output with shape {_shape_list(shape)} doesn't match the broadcast shape "
                               f"{_shape_list(out)}")
    return write(t, WHOLE, src, fn=COPY)


def _index_tensors(t: Any, indices: Any, name: str) -> tuple:
    """index_put's ``indices`` (a tuple or list of integer or boolean tensors) as an index spec."""
    from .tensor import Tensor
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    items = []
    for k, e in enumerate(indices):
        if not isinstance(e, Tensor):
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
    from .tensor import Tensor, _apply, _scalar_type_name
    name = "index_put_" if inplace else "index_put"
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    spec = _index_tensors(t, indices, name)
    if values.dtype != t.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_scalar_type_name(t.dtype)} for the destination and {_scalar_type_name(values.dtype)} "
                           "for the source.")
    _check_broadcast(t, values, region_shape(tuple(t._data.shape), spec), True)
    if inplace:
        return write(t, spec, values, accumulate=bool(accumulate), fn="IndexPutBackward0")
    return _apply(index_put_op, t, values, index=spec, accumulate=bool(accumulate), fn="IndexPutBackward0")


def index_add(t: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1, inplace: bool = False) -> Any:
    """``t.index_add(dim, index, source, alpha=alpha)``: ``alpha * source`` added along ``dim`` at the
    positions ``index`` (repeats add up); ``index_add_`` with ``inplace``."""
    from .ops.base import normalize_dims
    from .tensor import Tensor, _apply, _py, _scalar_type_name
    if not isinstance(index, Tensor) or not isinstance(source, Tensor):
        bad = "index" if not isinstance(index, Tensor) else "source"
        pos = 2 if bad == "index" else 3
        raise TypeError(f"index_add(): argument '{bad}' (position {pos}) must be Tensor, not "
                        f"{type(index if bad == 'index' else source).__name__}")
    (d,) = normalize_dims(dim, t.ndim) if t.ndim else (normalize_dims(dim, 0) or (0,))
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{_scalar_type_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{_scalar_type_name(index.dtype)} and size: {list(index.shape)}")
    if source.dtype != t.dtype:
        raise RuntimeError(f"index_add_(): self ({_scalar_type_name(t.dtype)}) and source "
                           f"({_scalar_type_name(source.dtype)}) must have the same scalar type")
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
