"""Indexing as registry ops: index specs (ints, slices with steps, None, ``...``, integer arrays), ``index``
(``a[spec]``) and its adjoint ``index_add`` (zeros with ``g`` added at ``spec``), and their display."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from codegen import ir

from ..core.graph import Node
from .base import OpDef, apply, register
from .display import Indexed, Scattered, describe


def normalize_index(index: Any, shape: tuple[int, ...]) -> tuple:
    """A hashable spec of a numpy index over ``shape`` (see ``codegen.ir.Index``); tensors in the index are
    numpy arrays by now (``eager.indexing.plain_index``)."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    consumed = sum(1 for e in index if e is not None and e is not Ellipsis and not _is_bool(e))
    dim = 0
    for e in index:
        if e is None:
            out.append(("n",))
        elif e is Ellipsis:
            out.append(("e",))
            dim += max(len(shape) - consumed, 0)
        elif isinstance(e, slice):
            if dim >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            start, stop, step = e.start, e.stop, e.step
            if step is not None and int(step) <= 0:
                raise ValueError("step must be greater than zero")
            out.append(("s", *(None if v is None else int(v) for v in (start, stop, step))))
            dim += 1
        elif isinstance(e, (int, np.integer)) or (isinstance(e, np.ndarray) and e.ndim == 0 and e.dtype.kind in "iu"):
            if dim >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            k = int(e)
            if not -shape[dim] <= k < shape[dim]:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {shape[dim]}")
            out.append(("i", k % shape[dim]))
            dim += 1
        else:
            arr = np.asarray(e)
            if arr.dtype.kind == "b":
                raise IndexError("boolean mask indexing is not differentiable here; use sg.where")
            if arr.dtype.kind not in "iu":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            n = shape[dim]
            if arr.size and (arr.max() >= n or arr.min() < -n):
                bad = int(arr.max() if arr.max() >= n else arr.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")
            arr = arr % n if n else arr
            out.append(("a", tuple(int(v) for v in arr.ravel()), arr.shape))
            dim += 1
    return _torch_placement(tuple(out), shape)


def _torch_placement(spec: tuple, shape: tuple[int, ...]) -> tuple:
    """``spec`` rewritten so that numpy places the array dims where torch does.

    torch applies integer indices first (a select), then the arrays: in ``x[0, :, [1, 2]]`` the arrays that
    are left are adjacent and their dims stay in place (``(3, 2)`` for a ``(2, 3, 4)`` tensor), where numpy
    counts the integer as an array too, finds the group split by the slice and puts its dims first
    (``(2, 3)``). Only that case is rewritten: every entry from the first integer or array to the last
    becomes an array (a slice its range, an integer one value), shaped so that they broadcast to torch's
    dims in torch's order; numpy keeps an adjacent group in place."""
    scalar = [k for k, e in enumerate(spec) if e[0] == "i" or (e[0] == "a" and e[2] == ())]
    arrays = [k for k, e in enumerate(spec) if e[0] == "a" and e[2] != ()]
    if not scalar or not arrays or any(e[0] == "n" for e in spec):
        return spec
    group = sorted(scalar + arrays)
    if group[-1] - group[0] + 1 == len(group):
        return spec  # numpy's group is adjacent: it stays in place, as torch's arrays do
    rest = [k for k in range(len(spec)) if k not in scalar]
    at = [rest.index(k) for k in arrays]
    if at[-1] - at[0] + 1 != len(at):
        return spec  # torch's arrays are split too: both put their dims first
    entries, dims, dim = [], [], 0
    for e in spec:  # ``...`` as the full slices it stands for
        if e[0] == "e":
            n = len(shape) - sum(1 for f in spec if f[0] != "e")
            entries += [("s", None, None, None)] * n
            dims += list(range(dim, dim + n))
            dim += n
        else:
            entries.append(e)
            dims.append(dim)
            dim += 1
    span = [k for k, e in enumerate(entries) if e[0] in "ia"]
    lo, hi = span[0], span[-1]
    bshape = np.broadcast_shapes(*(entries[k][2] for k in range(lo, hi + 1) if entries[k][0] == "a"))
    axes, pos, first = [], 0, None
    for k in range(lo, hi + 1):  # the output axis of each slice, and where the arrays' dims go
        kind = entries[k][0]
        if kind == "s":
            axes.append(pos)
            pos += 1
        else:
            axes.append(None)
            if kind == "a" and entries[k][2] != () and first is None:
                first, pos = pos, pos + len(bshape)
    rank = pos
    new = []
    for k, ax in zip(range(lo, hi + 1), axes):
        e = entries[k]
        if e[0] == "s":
            values = np.arange(shape[dims[k]])[slice(*e[1:])]
            form = tuple(values.size if a == ax else 1 for a in range(rank))
        elif e[0] == "i" or e[2] == ():
            values, form = np.asarray([e[1] if e[0] == "i" else e[1][0]]), (1,) * rank
        else:
            values = np.asarray(e[1], dtype=np.int64)
            form = (1,) * first + (1,) * (len(bshape) - len(e[2])) + tuple(e[2]) + (1,) * (rank - first - len(bshape))
        new.append(("a", tuple(int(v) for v in values.ravel()), form))
    return (*entries[:lo], *new, *entries[hi + 1:])


def _is_bool(e: Any) -> bool:
    return isinstance(e, (bool, np.bool_))


def to_numpy_index(spec: tuple) -> tuple:
    res = []
    for e in spec:
        if e[0] == "i":
            res.append(e[1])
        elif e[0] == "s":
            res.append(slice(*e[1:]))
        elif e[0] == "n":
            res.append(None)
        elif e[0] == "e":
            res.append(Ellipsis)
        else:
            res.append(np.array(e[1], dtype=np.int64).reshape(e[2]))
    return tuple(res)


def torch_grad_fn(spec: tuple, shape: tuple[int, ...], bare_slice: bool = False) -> str:
    """The grad_fn torch gives ``x[index]``: that of the last view op its indexing applies.

    Torch applies the entries left to right and skips a slice that keeps the whole dim
    (start 0, step 1, stop at or past the end), except for an index that is one bare slice
    (``x[:]``), which is always a ``SliceBackward0``; nothing applied leaves an alias.
    """
    if any(e[0] == "a" for e in spec):
        return "IndexBackward0"
    if bare_slice:
        return "SliceBackward0"
    consumed = sum(1 for e in spec if e[0] in "isa")
    dim, last = 0, "AliasBackward0"
    for e in spec:
        if e[0] == "i":
            last, dim = "SelectBackward0", dim + 1
        elif e[0] == "n":
            last = "UnsqueezeBackward0"
        elif e[0] == "e":
            dim += len(shape) - consumed
        elif e[0] == "s":
            start, stop, step = e[1:]
            whole = start in (None, 0) and step in (None, 1) and (stop is None or stop >= shape[dim])
            if not whole:
                last = "SliceBackward0"
            dim += 1
    return last


def _grad_fn(at: dict) -> str:
    if "fn" in at:
        return at["fn"]
    spec = at["index"]
    return "IndexBackward0" if any(e[0] == "a" for e in spec) else "SliceBackward0"


def _index_infer(op: OpDef, a: Node, index: tuple, fn: str = "") -> Any:
    shape = np.empty(a.shape, dtype=np.bool_)[to_numpy_index(index)].shape
    return shape, a.dtype


def _index_vjp(node: Node, g: Node) -> tuple:
    return (apply("index_add", g, index=node.attr("index"), shape=node.inputs[0].shape),)


def _index_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Index(target, args[0], node.attr("index"), node.shape, node.dtype.np.name)]


def _index_add_eval(g: np.ndarray, index: tuple, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, to_numpy_index(index), g)
    return out


def _index_add_infer(op: OpDef, g: Node, index: tuple, shape: tuple) -> Any:
    return tuple(shape), g.dtype


def _index_add_vjp(node: Node, g: Node) -> tuple:
    return (apply("index", g, index=node.attr("index")),)


def _index_add_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.IndexAdd(target, args[0], node.attr("index"), node.shape, node.dtype.np.name)]


def _index_eval(a: np.ndarray, index: tuple, fn: str = "") -> np.ndarray:
    idx = to_numpy_index(index)
    # a trailing ``...`` keeps an all-integer index a 0-d view, as torch's (numpy would return a scalar copy)
    out = a[idx if ("e",) in index else (*idx, Ellipsis)]
    if not out.flags.c_contiguous and a.flags.c_contiguous and any(e[0] == "a" for e in index):
        # numpy puts an array index's dims first in memory; torch's gather of a C-order tensor is C-order
        out = np.ascontiguousarray(out)
    return out


def show_index(node: Node, ins: list) -> sp.Expr:
    """``x[spec]``; a slice of a constant (the broadcast seed of a sum's gradient) is that constant."""
    return ins[0] if ins[0].is_Number else Indexed(ins[0], sp.Symbol(describe(node.attr("index"))))


def show_scatter(node: Node, ins: list) -> sp.Expr:
    return Scattered(ins[0], sp.Symbol(describe(node.attr("index"))))


index_op = register(OpDef("index", "shape", _grad_fn, _index_eval, _index_infer, display=show_index,
                          vjp=_index_vjp, lower=_index_lower,
                          view=lambda at: not any(e[0] == "a" for e in at["index"]),
                          doc="a[index] (basic and integer-array; only basic indexing makes a view)", linear=True))
index_add = register(OpDef("index_add", "shape", "IndexPutBackward0", _index_add_eval, _index_add_infer,
                           display=show_scatter,
                           vjp=_index_add_vjp, lower=_index_add_lower,
                           doc="zeros(shape) with g added at index: the adjoint of indexing",
                           linear=True, sparsity="scatter"))

