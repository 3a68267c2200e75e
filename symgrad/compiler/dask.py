"""Compiled functions over Dask arrays, split over the chunks by the derived DAG itself.

A data argument given as a ``dask.array.Array`` (chunked along its leading, *row*, axis; parameters stay
numpy) is traced at its full shape, so ``X.shape[0]`` is the whole row count, and derived as usual. Every node
of the traced and derived graph is then classified:

* **row-wise**: it has a row axis, and its slice ``i`` along it depends only on row ``i`` of the data
  (elementwise maths, ``X @ w``, reductions over other axes, broadcasts of global values to the rows, ...);
* **global**: no row axis: parameters, constants, what is computed from them, and the **row reductions**: a
  sum (``mean`` is a sum over the row count), ``amax``/``amin`` (and the values of ``max``/``min``), ``prod``,
  ``logsumexp`` or ``sum_to`` over the row axis of a row-wise value, and ``A.T @ B`` contracting two row-wise
  values over their rows (``X.T @ r``).

Each row reduction becomes an associative chunk / combine / aggregate step: one generated kernel per chunk
computes the partial results of all the reductions of a pass from the chunk's rows (the row-wise part fused
into it, as any compiled kernel), partials meet in a tree of fan-in ``split_every`` (sums add, maxima take the
maximum, log-sum-exps combine as ``(max, Σexp)``), and one kernel over the combined values computes the global
results. A row-wise value that reads a row reduction (centring by a data mean, ``exp(z - logsumexp(z))`` in the
gradient of a log-sum-exp over rows, the mask of a maximum) runs in a later **pass** over the chunks: pass
``k`` reads the reductions of the passes before it, so two-pass programs (a variance, or the gradient of a
softmax over rows) need no special case. Anything else across rows (a cumsum or softmax along the rows, a
slice or gather of rows, a reshape merging rows with another axis, an outer product of rows) raises
``DaskSplitError`` naming the op and the user's line.

Chunk kernels are ordinary ``Program`` kernels over one chunk's shape (the derived graph rebuilt at the chunk's
row count): the generated numpy code on the first call of a signature, the numba kernel (serial,
``nogil=True``, so Dask's threads run chunks in parallel) from the second (``HOT_CALLS``). Tasks carry the
kernels' *source* (and the constants they read); each process loads it once through ``codegen.load_kernel``
(numba's on-disk cache next to it), so ``dask.distributed`` workers compile their own copy and nothing compiled
is pickled. ``dask.compute`` runs the graph: the threaded scheduler, or the ``dask.distributed`` client when
one is active (``dask_options(scheduler=...)`` picks another). Results are numpy, or Dask arrays with
``dask_options(compute=False)``.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import math
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import sympy as sp

from codegen import load_kernel
from codegen.names import identifier

from ..core import dtypes
from ..core.errors import SymgradError, user_frame
from ..core.graph import Node, toposort
from ..derive.forward import _zeros, jvp_graph
from ..eager.basic import stack
from ..eager.grad_mode import enable_grad
from ..eager.tensor import Tensor
from ..kernels import program as _program
from ..kernels.program import Program
from ..ops import REGISTRY, A
from ..ops import source as _src
from ..ops.reduce import sum_to_axes
from .function import ARGUMENT_HANDLERS, CompiledFunction, _flatten, _kind, _unflatten
from .tracing import TraceContext, Tracer, _as_node, leaf
from .transforms import DerivativeFunction

__all__ = ["DaskSplitError", "dask_options"]


class DaskSplitError(SymgradError, ValueError):
    """A compiled function over Dask arrays needs something across chunks that symgrad does not split."""


# ----------------------------------------------------------------------------- options

@dataclass(frozen=True)
class _Options:
    split_every: int = 8        # fan-in of the tree combining chunk partials
    compute: bool = True        # False: results are Dask arrays
    scheduler: Any = None       # passed to dask.compute (None: the active client, else threads)


_DEFAULT = _Options()
_OPTIONS: contextvars.ContextVar[_Options | None] = contextvars.ContextVar("symgrad_dask_options", default=None)


@contextlib.contextmanager
def dask_options(*, split_every: int | None = None, compute: bool | None = None,
                 scheduler: Any = None) -> Iterator[None]:
    """Options of compiled calls over Dask arrays inside the ``with`` block.

    ``split_every``: fan-in of the tree that combines chunk partials (default 8); ``compute=False``: return Dask
    arrays (0-d for scalars) instead of numpy, to compute later (all passes in one graph); ``scheduler``: what
    ``dask.compute`` gets (``"threads"``, ``"sync"``, a ``distributed.Client``; default: the active client, else
    the threaded scheduler).
    """
    cur = _OPTIONS.get() or _DEFAULT
    if split_every is not None and int(split_every) < 2:
        raise ValueError(f"split_every must be at least 2, not {split_every}")
    new = _Options(cur.split_every if split_every is None else int(split_every),
                   cur.compute if compute is None else bool(compute),
                   cur.scheduler if scheduler is None else scheduler)
    token = _OPTIONS.set(new)
    try:
        yield
    finally:
        _OPTIONS.reset(token)


# ----------------------------------------------------------------------------- the entry

def _dask_array_type() -> type | None:
    mod = sys.modules.get("dask.array")
    return getattr(mod, "Array", None)


def claims(args: Sequence[Any]) -> bool:
    """Whether a call has a Dask array argument (dask is never imported here: a user who made one has)."""
    cls = _dask_array_type()
    return cls is not None and any(isinstance(a, cls) for a in args)


def run(cf: CompiledFunction, args: Sequence[Any], out: Any = None) -> Any:
    """``cf(*args)`` with Dask array arguments: traced at their full shapes, split over their chunks."""
    import dask.array as da  # deferred: dask is optional (the ``dask`` extra)

    if any(isinstance(a, Tracer) for a in args):
        raise TypeError("a Dask array cannot be passed to a compiled function inside another traced function")
    if any(isinstance(a, Tensor) and a.requires_grad for a in args):
        raise NotImplementedError("sg.Tensor arguments that require grad together with Dask arrays: pass arrays")
    data, rows = _data_arguments(args, da)
    if isinstance(cf, DerivativeFunction) and cf.sparse:
        return _sparse(cf, args, data, rows[0])
    kinds = []
    for i, a in enumerate(args):
        if i in data:
            dt = a.dtype if a.dtype.kind == "f" else np.dtype(np.float64)
            kinds.append(("np", dtypes.from_numpy_dtype(dt).name, tuple(a.shape)))
        else:
            kinds.append(_kind(a))
    key = (tuple(kinds), tuple(sorted(data)))
    plans = cf.__dict__.setdefault("_dask_plans", {})
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = _Plan(cf, kinds, sorted(data))
    params = [np.asarray(a._data if isinstance(a, Tensor) else a, dtype=dtypes.from_any(k[1]).np)
              for i, (a, k) in enumerate(zip(args, kinds)) if i not in data]
    return plan.call(params, [data[i] for i in sorted(data)], rows, out)


def _sparse(cf: DerivativeFunction, args: Sequence[Any], data: dict[int, Any], first: int) -> Any:
    """``sg.hessian`` / ``sg.jacobian`` with ``sparse=True``: the dense result over the chunks, kept in the
    structural pattern. Every row has the same structure (nothing row-wise depends on the row's position), so the
    pattern is that of a trace with a few rows."""
    import scipy.sparse as sps  # deferred: scipy

    dense_fn = cf.__dict__.get("_dask_dense")
    if dense_fn is None:
        nums = cf.argnums[0] if cf._single else cf.argnums
        dense_fn = cf.__dict__["_dask_dense"] = DerivativeFunction(cf.fn, cf.mode, nums, reverse=cf.reverse)
    res = dense_fn(*args)
    sizes = [int(np.size(args[i])) for i in cf.argnums]
    if cf.mode == "hessian":
        grid = [[res]] if cf._single else [list(r) for r in res]
    else:
        outs = list(res) if (cf._single and isinstance(res, tuple)) or (
            not cf._single and isinstance(res[0], tuple)) else [res]
        grid = [[o] if cf._single else list(o) for o in outs]
    full = np.block([[np.asarray(b).reshape(-1, sizes[k]) for k, b in enumerate(row)] for row in grid])
    few = min(first, 7)
    small = [np.zeros((few,) + tuple(a.shape[1:]), dtype=a.dtype) if i in data else a for i, a in enumerate(args)]
    p = cf.sparsity(*small).tocsr()
    rows = np.repeat(np.arange(p.shape[0]), np.diff(p.indptr))
    return sps.csr_matrix((full[rows, p.indices], p.indices.copy(), p.indptr.copy()), shape=p.shape)


def _data_arguments(args: Sequence[Any], da: Any) -> tuple[dict[int, Any], tuple[int, ...]]:
    """The Dask arguments (by position), rechunked to one chunk along every axis but the rows and to the row
    chunks of the first; and those row chunks."""
    data: dict[int, Any] = {}
    rows: tuple[int, ...] | None = None
    for i, a in enumerate(args):
        if not isinstance(a, da.Array):
            continue
        if a.ndim == 0:
            raise TypeError(f"argument {i} is a 0-d Dask array: Dask arguments are data split along their rows "
                            "(axis 0); pass a 0-d value as a number or a numpy array")
        if any(math.isnan(c) for c in a.chunks[0]):
            raise ValueError(f"argument {i} is a Dask array with unknown chunk sizes: call .compute_chunk_sizes() "
                             "first")
        if a.dtype.kind not in "biuf":
            raise TypeError(f"argument {i} is a Dask array of dtype {a.dtype}: arrays of numbers only")
        if rows is None:
            rows = tuple(int(c) for c in a.chunks[0])
        elif a.shape[0] != sum(rows):
            raise ValueError(f"the Dask arguments have different row counts ({sum(rows)} and {a.shape[0]} in "
                             f"argument {i}): they are split along their rows together")
        want = {0: rows, **{d: -1 for d in range(1, a.ndim)}}
        if a.chunks[0] != rows or any(len(c) > 1 for c in a.chunks[1:]):
            a = a.rechunk(want)
        data[i] = a
    assert rows is not None
    return data, rows


# ----------------------------------------------------------------------------- tracing with source lines

class _LineTrace(TraceContext):
    """A trace that also notes the user's line for every node it records (for ``DaskSplitError``)."""

    def __init__(self) -> None:
        self.lines: dict[int, tuple[str, int, str]] = {}

    def record(self, op: Any, inputs: Sequence[Any], attrs: dict, out_dtype: Any = None) -> Tensor:
        t = super().record(op, inputs, attrs, out_dtype)
        self.lines[t._node.id] = user_frame()
        return t


@dataclass
class _Traced:
    leaves: list[Node]
    outs: list[Node]
    tree: Any                   # how the results nest (None: one result, or grad modes' plain layout)
    lines: dict[int, tuple[str, int, str]]


def _trace(cf: CompiledFunction, kinds: Sequence[tuple]) -> _Traced:
    """Trace and derive as ``CompiledFunction._build`` does, with source lines; ``hessian`` / ``jacobian``
    record their sweeps as DAG nodes (their traced form)."""
    mode = cf.mode
    diff = set(cf.argnums) if mode in ("grad", "value_and_grad", "jacobian") else set()
    leaves = [leaf(k[2], dtypes.from_any(k[1]), cf._name(i), i in diff) for i, k in enumerate(kinds)]
    ctx = _LineTrace()
    if mode == "jacobian" and not cf.reverse:
        with enable_grad(), ctx:
            res = _forward_jacobian(cf, leaves)
        outs, tree = _flatten(res, "sg.jacobian's result")
        return _Traced([lv._node for lv in leaves], outs, ("whole", tree), ctx.lines)
    if isinstance(cf, DerivativeFunction):
        with enable_grad(), ctx:
            try:
                res = cf._trace_symbolic(leaves)
            except ValueError as exc:
                raise DaskSplitError(f"sg.{mode} over Dask arrays takes one sweep per output element: {exc}. "
                                     "Differentiate a reduction over the rows instead") from None
        outs, tree = _flatten(res, f"sg.{mode}'s result")
        return _Traced([lv._node for lv in leaves], outs, ("whole", tree), ctx.lines)
    with enable_grad(), ctx:
        res = cf.fn(*leaves)
    res, aux = cf._split_aux(res)
    tree = None
    if mode == "fn" and isinstance(res, (tuple, list)):
        extra, tree = _flatten(res, "the compiled function's result")
        if not extra:
            raise TypeError("a compiled function must return a tensor or a number, not an empty sequence")
        out, extra = extra[0], extra[1:]
    else:
        out, extra = _as_node(res), []
        if cf.has_aux:
            extra, tree = _flatten(aux, "aux")
    outs = [out]
    if mode != "fn":
        outs += cf._derive(out, [leaves[i]._node for i in cf.argnums])
    return _Traced([lv._node for lv in leaves], outs + extra, tree, ctx.lines)


def _forward_jacobian(cf: DerivativeFunction, leaves: Sequence[Tracer]) -> Any:
    """``sg.jacobian`` as forward sweeps recorded in the trace, one per element of the arguments differentiated
    (with a constant basis tangent): a row-wise result (residuals) gives a row-wise Jacobian, ``(rows, ...)``
    followed by the argument's shape; nested as ``sg.jacobian`` nests its results."""
    res = cf.fn(*leaves)
    multi = isinstance(res, (tuple, list))
    outs = [_as_node(o) for o in (res if multi else (res,))]
    blocks: list[list[Any]] = [[] for _ in outs]
    for i in cf.argnums:
        w = leaves[i]._node
        size = math.prod(w.shape)
        if size > _MAX_SWEEPS:
            raise DaskSplitError(f"sg.jacobian over Dask arrays takes one forward sweep per element of argument {i} "
                                 f"({size} > {_MAX_SWEEPS})")
        cols: list[list[Tracer]] = [[] for _ in outs]
        for j in range(size):
            basis = np.zeros(size, dtype=w.dtype.np)
            basis[j] = 1
            seed = Node(_src.const, (), (), w.shape, w.dtype, value=basis.reshape(w.shape))
            for k, (o, t) in enumerate(zip(outs, jvp_graph(outs, [w], [seed]))):
                cols[k].append(Tracer.wrap(t if t is not None else _zeros(o)))
        for k, o in enumerate(outs):
            blocks[k].append(stack(cols[k], dim=o.ndim).reshape(tuple(o.shape) + tuple(w.shape)))
    per = [b[0] if cf._single else tuple(b) for b in blocks]
    return tuple(per) if multi else per[0]


#: the most forward sweeps (argument elements) of a Jacobian over Dask arrays
_MAX_SWEEPS = 1024


# ----------------------------------------------------------------------------- classification

#: row reductions by op: how their chunk partials combine
_COMBINE = {"sum": "sum", "sum_to": "sum", "matmul": "sum", "amax": "max", "amin": "min", "prod": "prod",
            "logsumexp": "lse"}
_SUPPORTED = ("sum, mean, prod, amax/amin, the values of max/min, logsumexp and sum_to over the rows, and "
              "A.T @ B contracting two row-wise values over their rows")

_FULL = ("s", None, None, None)


@dataclass
class _Info:
    axis: int | None            # the row axis (None: a global value)
    stage: int                  # row-wise: the pass computing it; global: the first pass that may read it
    combine: str | None = None  # a row reduction: how its partials combine
    attr_axis: int | None = None  # index_add: the row axis of its ``shape`` attr


class _Refused(Exception):
    """Raised by a rule; turned into ``DaskSplitError`` with the op, the argument names and the user's line."""


def _scalar_node(value: float, dtype: dtypes.DType) -> Node:
    v = float(value) if dtype.is_floating_point else int(value)
    return Node(_src.scalar, (), (("value", v),), (), dtype, value=v)


def _rebuilt(n: Node, ins: Sequence[Node]) -> Node:
    if all(a is b for a, b in zip(ins, n.inputs)):
        return n
    return Node(n.op, tuple(ins), n.attrs, n.shape, n.dtype, requires_grad=n.requires_grad)


def _index_out_axis(spec: tuple, ndim: int, a: int, rows: int) -> int:
    """Where input dim ``a`` (taken whole) lands in ``x[spec]``'s result (numpy's rules for advanced indices)."""
    consumed = sum(1 for e in spec if e[0] in "isa")
    entries: list[tuple[tuple, int | None]] = []
    dim = 0
    for e in spec:
        if e[0] == "e":
            for _ in range(max(ndim - consumed, 0)):
                entries.append((_FULL, dim))
                dim += 1
        elif e[0] == "n":
            entries.append((e, None))
        else:
            entries.append((e, dim))
            dim += 1
    while dim < ndim:
        entries.append((_FULL, dim))
        dim += 1
    pos = next(k for k, (_, d) in enumerate(entries) if d == a)
    e = entries[pos][0]
    whole = e[0] == "s" and e[1] in (None, 0) and e[3] in (None, 1) and (e[2] is None or e[2] >= rows)
    if not whole:
        raise _Refused("selects or slices along the rows")
    arrays = any(x[0] == "a" for x, _ in entries)
    adv = [k for k, (x, _) in enumerate(entries) if x[0] == "a" or (arrays and x[0] == "i")]
    before = sum(1 for x, _ in entries[:pos] if x[0] in "sn")
    if not adv:
        return before
    adv_ndim = len(np.broadcast_shapes(*[x[2] if x[0] == "a" else () for x, _ in entries
                                        if x[0] == "a" or x[0] == "i"]))
    if adv[-1] - adv[0] + 1 == len(adv):
        return before + (adv_ndim if adv[0] < pos else 0)
    return adv_ndim + before


def _matmul_axes(a: Node, b: Node, out: Node) -> tuple[int, int, Callable[[str, int], int]]:
    """(contracted dim of a, of b, where a non-contracted dim of a / b lands in the result)."""
    ca = a.ndim - 1
    cb = 0 if b.ndim == 1 else b.ndim - 2
    nb = out.ndim - (a.ndim >= 2) - (b.ndim >= 2)  # the result's batch dims

    def place(side: str, d: int) -> int:
        nd = a.ndim if side == "a" else b.ndim
        if side == "a" and d == nd - 2:
            return nb
        if side == "b" and d == nd - 1:
            return nb + (a.ndim >= 2)
        return nb - (nd - 2) + d

    return ca, cb, place


class _Analysis:
    """The derived graph rewritten for chunks (``numel`` counts as literals, ``mean`` over the rows as a sum
    over the row count, ``max``/``min`` values over the rows as ``amax``/``amin``) and classified."""

    def __init__(self, traced: _Traced, data: Sequence[int], names: Sequence[str], rows: int) -> None:
        self.rows = rows
        self.lines = traced.lines
        self.names = [names[i] for i in data]
        self.info: dict[int, _Info] = {}
        self.origin: dict[int, int] = {}
        refused: dict[int, tuple[Node, str]] = {}   # raised only if the split graph reaches the node
        data_ids = {traced.leaves[i].id for i in data}
        new: dict[int, Node] = {}
        for n in toposort(traced.outs):
            m = _rebuilt(n, [new[i.id] for i in n.inputs])
            if m.op.family == "source":
                info = _Info(0 if m.id in data_ids else None, 0)
            else:
                try:
                    m, info = self._classify(m)
                except _Refused as exc:   # (the indices of max(dim) over rows: their values need none)
                    refused[m.id] = (n, str(exc))
                    info = _Info(None, max((self.info[i.id].stage for i in m.inputs), default=0))
            self.origin.setdefault(m.id, n.id)
            self.info[m.id] = info
            new[n.id] = m
        self.outs = [new[o.id] for o in traced.outs]
        hit = [refused[m.id] for m in toposort(self.outs) if m.id in refused]
        if hit:   # the first the user wrote, else the first derived one
            n, why = next((h for h in hit if self.origin.get(h[0].id, h[0].id) in self.lines
                           or h[0].id in self.lines), hit[0])
            raise DaskSplitError(self._message(n, why))

    # -------------------------------------------------------------- messages
    def _line(self, n: Node) -> tuple[tuple[str, int, str] | None, bool]:
        """The user's line for ``n``, or for the nearest node below it that has one (derived nodes: then True)."""
        seen, todo = {n.id}, [n]
        while todo:
            x = todo.pop(0)
            where = self.lines.get(self.origin.get(x.id, x.id)) or self.lines.get(x.id)
            if where is not None:
                return where, x is not n
            for i in x.inputs:
                if i.id not in seen:
                    seen.add(i.id)
                    todo.append(i)
        return None, False

    def _message(self, n: Node, what: str) -> str:
        where, derived = self._line(n)
        args = ", ".join(f"`{x}`" for x in self.names)
        text = (f"symgrad cannot split `{n.op.name}` over the chunks of the Dask argument{'s' * (len(self.names) > 1)} "
                f"{args}: it {what}, which needs rows from other chunks")
        if where is not None:
            path, line, code = where
            text += f" ({'in the derivative of the op ' if derived else ''}at {path}:{line}: `{code}`)"
        return (f"{text}. Across rows symgrad computes {_SUPPORTED}; compute this part in memory "
                "(np.asarray of the Dask array) or restate it with those.")

    # -------------------------------------------------------------- rules
    def _classify(self, m: Node) -> tuple[Node, _Info]:
        ins = [self.info[i.id] for i in m.inputs]
        stage = max((i.stage for i in ins), default=0)
        row_ins = [(x, i) for x, i in zip(m.inputs, ins) if i.axis is not None]
        name, fam = m.op.name, m.op.family
        if name == "numel":  # a count read from a shape: a literal here (the shapes are the full ones)
            if row_ins:
                count = math.prod(m.inputs[0].shape[d] for d in m.attr("dims"))
                s = _scalar_node(count, m.dtype)
                return s, _Info(None, 0)
            return m, _Info(None, stage)
        if fam == "shape" and name == "expand":
            return m, self._expand(m, ins[0], stage)
        if not row_ins:
            return m, _Info(None, stage)
        if fam == "elementwise":
            return m, _Info(self._aligned(m, ins), stage)
        if name in ("sum", "mean", "prod", "amax", "amin", "max", "min", "logsumexp"):
            return self._reduce(m, ins[0], stage)
        if name == "sum_to":
            a = ins[0].axis
            axes, _ = sum_to_axes(m.inputs[0].shape, m.shape)
            if a in axes:
                return m, _Info(None, stage + 1, "sum")
            return m, self._checked(m, a - (m.inputs[0].ndim - m.ndim), stage)
        if name == "reshape":
            return m, self._checked(m, self._reshape_axis(m, ins[0].axis), stage)
        if name == "permute":
            return m, self._checked(m, list(m.attr("dims")).index(ins[0].axis), stage)
        if name == "index":
            return m, self._checked(m, _index_out_axis(m.attr("index"), m.inputs[0].ndim, ins[0].axis, self.rows),
                                    stage)
        if name == "index_add":
            return m, self._index_add(m, ins[0].axis, stage)
        if name == "matmul":
            return self._matmul(m, ins, stage)
        if name in ("softmax", "log_softmax", "cumsum"):
            a = ins[0].axis
            dims = (m.attr("dim"),) if name == "cumsum" else m.attr("dims")
            if a in tuple(d % max(m.ndim, 1) for d in dims):
                raise _Refused(f"runs along the rows ({'a running sum' if name == 'cumsum' else 'a normalisation'})")
            return m, self._checked(m, a, stage)
        if name in ("argmax", "argmin"):
            a, dim = ins[0].axis, m.attr("dim")
            if dim is None or dim % m.inputs[0].ndim == a:
                raise _Refused("finds a position along the rows (use amax/amin for the value)")
            return m, self._checked(m, a - (0 if m.attr("keepdim") or dim % m.inputs[0].ndim > a else 1), stage)
        if name in ("cat", "stack"):
            return m, self._join(m, ins, stage)
        if name == "repeat":
            a = ins[0].axis + len(m.attr("repeats")) - m.inputs[0].ndim
            if m.attr("repeats")[a] != 1:
                raise _Refused("tiles the rows")
            return m, self._checked(m, a, stage)
        raise _Refused(f"is a {fam} op symgrad does not split over rows")

    def _checked(self, m: Node, axis: int, stage: int) -> _Info:
        if not 0 <= axis < m.ndim or m.shape[axis] != self.rows:
            raise _Refused("changes the row axis")
        return _Info(axis, stage)

    def _aligned(self, m: Node, ins: Sequence[_Info]) -> int:
        axes = {i.axis + m.ndim - x.ndim for x, i in zip(m.inputs, ins) if i.axis is not None}
        if len(axes) > 1:
            raise _Refused("combines values whose row axes differ (an outer product of rows)")
        (axis,) = axes
        for x, i in zip(m.inputs, ins):
            k = axis - (m.ndim - x.ndim)
            if i.axis is None and k >= 0 and x.shape[k] != 1:
                raise _Refused(f"combines the rows with a value of extent {x.shape[k]} along them that is not "
                               "computed from the Dask arguments (pass it as a Dask array too)")
        return self._checked(m, axis, 0).axis  # type: ignore[return-value]

    def _expand(self, m: Node, i: _Info, stage: int) -> _Info:
        x = m.inputs[0]
        lead = m.ndim - x.ndim
        if i.axis is not None:
            return self._checked(m, i.axis + lead, stage)
        # a global value broadcast to the row count: row-wise (the gradient of a sum over rows is one)
        spread = [d for d in range(m.ndim) if m.shape[d] == self.rows and (d < lead or x.shape[d - lead] == 1)]
        return _Info(spread[0] if len(spread) == 1 else None, stage)

    def _reshape_axis(self, m: Node, a: int) -> int:
        x = m.inputs[0]
        before = math.prod(x.shape[:a])
        acc = 1
        for b, s in enumerate(m.shape):
            if acc == before and s == self.rows and math.prod(m.shape[b + 1:]) == math.prod(x.shape[a + 1:]):
                return b
            acc *= s
        raise _Refused("merges the rows with another axis (or splits them)")

    def _index_add(self, m: Node, b: int, stage: int) -> _Info:
        shape, spec = m.attr("shape"), m.attr("index")
        for d in range(len(shape)):
            if shape[d] != self.rows:
                continue
            try:
                if _index_out_axis(spec, len(shape), d, self.rows) == b:
                    return _Info(d, stage, attr_axis=d)
            except _Refused:
                continue
        raise _Refused("scatters along the rows")

    def _reduce(self, m: Node, i: _Info, stage: int) -> tuple[Node, _Info]:
        x = m.inputs[0]
        dims = m.attr("dims")
        keep = m.attr("keepdim")
        a = i.axis
        if a not in dims:
            return m, self._checked(m, a if keep else a - sum(1 for d in dims if d < a), stage)
        name = m.op.name
        if name == "mean":   # a sum over the row count (the count of the full shape)
            count = math.prod(x.shape[d] for d in dims)
            s = Node(REGISTRY["sum"], (x,), (("dims", dims), ("full", m.attr("full")), ("keepdim", keep)),
                     m.shape, m.dtype)
            self.info[s.id] = _Info(None, stage + 1, "sum")
            f = Node(REGISTRY["fused"], (s,), (("expr", A[0] / sp.Integer(count)),), m.shape, m.dtype)
            return f, _Info(None, stage + 1)
        if name in ("max", "min"):  # the values: the same as amax / amin's
            red = Node(REGISTRY["a" + name], (x,), (("dims", dims), ("full", False), ("keepdim", keep)),
                       m.shape, m.dtype)
            return red, _Info(None, stage + 1, "max" if name == "max" else "min")
        return m, _Info(None, stage + 1, _COMBINE[name])

    def _matmul(self, m: Node, ins: Sequence[_Info], stage: int) -> tuple[Node, _Info]:
        a, b = m.inputs
        ca, cb, place = _matmul_axes(a, b, m)
        ra, rb = ins[0].axis, ins[1].axis
        if ra == ca and rb == cb:
            return m, _Info(None, stage + 1, "sum")
        if ra == ca or rb == cb:
            raise _Refused("contracts the rows with a value that is not row-wise")
        axes = {place("a", ra) if ra is not None else None, place("b", rb) if rb is not None else None} - {None}
        if len(axes) > 1:
            raise _Refused("makes an outer product of rows (rows against rows)")
        return m, self._checked(m, axes.pop(), stage)

    def _join(self, m: Node, ins: Sequence[_Info], stage: int) -> _Info:
        axes = {i.axis for i in ins}
        if None in axes or len(axes) > 1:
            raise _Refused("joins row-wise values with others along a different axis")
        (a,) = axes
        dim = m.attr("dim")
        if m.op.name == "cat":
            if dim == a:
                raise _Refused("concatenates along the rows")
            return self._checked(m, a, stage)
        return self._checked(m, a + (1 if dim <= a else 0), stage)


# ----------------------------------------------------------------------------- chunk kernels as source

_LOADED: dict[tuple[str, str], Callable] = {}
_LOAD_LOCK = threading.Lock()


class _Kernel:
    """One chunk kernel as text: what a task carries to the process that runs it (never compiled code)."""

    def __init__(self, prog: Program, data_dtypes: Sequence[np.dtype] = ()) -> None:
        self.name = prog.kernel.name
        self.numpy_source = prog.source
        self.order = tuple(q.index for q in prog.kernel.params)   # the numba kernel's positional arguments
        self.consts = list(prog.consts)
        self.specs = [(dt.np.str, shape) for dt, shape in prog.specs]
        self.data_dtypes = list(data_dtypes)   # the chunk's data blocks come first, as these dtypes
        self.numba_source: str | None = None
        self.numba_error: str | None = None
        self._kernel = prog.kernel
        self.key = hashlib.sha256(self.numpy_source.encode()).hexdigest()[:24]

    def tier(self, hot: bool) -> str:
        """"numba" once hot (its source emitted here, once), else (or where numba refuses the IR) "numpy"."""
        if not hot:
            return "numpy"
        if self.numba_source is None and self.numba_error is None:
            from codegen.numba import emit_numba  # deferred: imports numba
            try:
                self.numba_source = emit_numba(self._kernel, parallel_threshold=1 << 62, nogil=True)
            except Exception as exc:  # noqa: BLE001 - the numpy kernel stays in use
                self.numba_error = str(exc)
        return "numba" if self.numba_source is not None else "numpy"

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_kernel"] = None
        return state

    def __dask_tokenize__(self) -> str:
        return self.key

    def load(self, tier: str) -> Callable:
        key = (self.key, tier)
        fn = _LOADED.get(key)
        if fn is None:
            with _LOAD_LOCK:
                fn = _LOADED.get(key)
                if fn is None:
                    src = self.numba_source if tier == "numba" else self.numpy_source
                    fn, _ = load_kernel(src, self.name, prefix="numba" if tier == "numba" else "dask")
                    _LOADED[key] = fn
        return fn

    def __call__(self, tier: str, arrays: list) -> tuple:
        """The kernel's results (shaped and typed as traced) for its declared arguments ``arrays``."""
        fn = self.load(tier)
        args = arrays + self.consts
        with np.errstate(all="ignore"):
            raw = fn(*[args[i] for i in self.order]) if tier == "numba" else fn(args)
        out = []
        for r, (dt, shape) in zip(raw, self.specs):
            r = np.asarray(r, dtype=dt)
            out.append(r if r.shape == shape else np.broadcast_to(r, shape))
        return tuple(out)


def _global_task(kernel: _Kernel, gvals: list) -> tuple:
    """A kernel over global values (parameter-sized: always the numpy tier)."""
    return kernel("numpy", list(gvals))


def _chunk_task(kernel: _Kernel, tier: str, *args: Any) -> tuple:
    """One chunk through its kernel: the data blocks (as the traced dtypes, C order), then the global values."""
    blocks, bnd = args[:-1], args[-1]
    arrays = [np.ascontiguousarray(b, dtype=dt) for b, dt in zip(blocks, kernel.data_dtypes)]
    return kernel(tier, arrays + list(bnd))


def _combine(kinds: tuple[str, ...], *parts: tuple) -> tuple:
    """Partials of several chunks (or subtrees) as one: per reduction, by its kind."""
    out = []
    for j, kind in enumerate(kinds):
        vals = [p[j] for p in parts]
        if kind == "sum":
            r = vals[0]
            for v in vals[1:]:
                r = r + v
        elif kind in ("max", "min", "prod"):
            f = {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[kind]
            r = vals[0]
            for v in vals[1:]:
                r = f(r, v)
        else:  # log-sum-exp of log-sum-exps: (max, Σexp) with torch's handling of infinite maxima
            s = np.stack(vals)
            with np.errstate(all="ignore"):
                mx = np.max(s, axis=0)
                c = np.where(np.isinf(mx), np.zeros((), s.dtype), mx)
                r = np.log(np.sum(np.exp(s - c), axis=0)) + c
        out.append(np.asarray(r, dtype=vals[0].dtype))
    return tuple(out)


def _take(parts: tuple, j: int) -> Any:
    return parts[j]


def _concat(axis: int, *blocks: np.ndarray) -> np.ndarray:
    return np.concatenate(blocks, axis=axis)


# ----------------------------------------------------------------------------- passes

@dataclass
class _Pass:
    reds: list[Node]                 # row reductions whose partials this pass computes
    rows: list[Node]                 # row-wise results computed in this pass
    boundary: list[Node] = field(default_factory=list)   # global values its chunk kernels read
    gprog: _Kernel | None = None     # the boundary from the parameters and earlier reductions
    kernels: dict[int, _Kernel] = field(default_factory=dict)   # by chunk row count


class _Plan:
    """One traced signature over Dask arguments: the classified graph, its passes and their kernels."""

    def __init__(self, cf: CompiledFunction, kinds: Sequence[tuple], data: Sequence[int]) -> None:
        self.cf = cf
        self.kinds = list(kinds)
        self.data = list(data)
        self.calls = 0
        self.rows = kinds[data[0]][2][0]
        self.label = identifier(getattr(cf.fn, "__name__", "f"), "f_").strip("_") or "f"
        traced = _trace(cf, kinds)
        self.tree = traced.tree
        self.an = an = _Analysis(traced, data, [cf._name(i) for i in range(len(kinds))], self.rows)
        info = an.info
        self.data_leaves = [traced.leaves[i] for i in data]
        self.param_leaves = [lv for i, lv in enumerate(traced.leaves) if i not in data]
        self.outs = an.outs
        # the row reductions and row-wise results the outputs need, by pass
        needed = toposort(self.outs)
        self.reds = [n for n in needed if info[n.id].combine is not None]
        row_outs = [o for o in self.outs if info[o.id].axis is not None]
        npass = 1 + max([self._red_stage(r) for r in self.reds] + [info[o.id].stage for o in row_outs], default=-1)
        self.passes = [_Pass([r for r in self.reds if self._red_stage(r) == k],
                             [o for o in dict.fromkeys(row_outs) if info[o.id].stage == k]) for k in range(npass)]
        self.red_index = {r.id: j for j, r in enumerate(self.reds)}
        base = [(lv, "v", i) for i, lv in enumerate(self.param_leaves)]
        self.gparams = base + [(r, "v", len(base) + j) for j, r in enumerate(self.reds)]
        for k, ps in enumerate(self.passes):
            ps.boundary = self._boundary(ps)
            if ps.boundary:
                ps.gprog = _Kernel(Program(f"dask_{self.label}_in{k}", self.gparams, ps.boundary,
                                           doc=f"the global values pass {k} over the chunks of {self.label} reads",
                                           prefix="dask", simplify=False))
        self.global_outs = [o for o in self.outs if info[o.id].axis is None]
        self.final = _Kernel(Program(f"dask_{self.label}_out", self.gparams, self.global_outs,
                                     doc=f"{cf.mode} of {self.label} from its reductions over the chunks",
                                     prefix="dask", simplify=False)) if self.global_outs else None

    def _red_stage(self, r: Node) -> int:
        info = self.an.info
        return max(info[x.id].stage for x in r.inputs if info[x.id].axis is not None)

    def _row_nodes(self, ps: _Pass) -> list[Node]:
        """The row-wise nodes a pass computes, and the global ones they read (stops of the walk)."""
        info = self.an.info
        roots = [x for r in ps.reds for x in r.inputs] + ps.rows
        return toposort(roots, stop=lambda n: info[n.id].axis is None)

    def _boundary(self, ps: _Pass) -> list[Node]:
        info = self.an.info
        out = []
        for n in self._row_nodes(ps):
            if info[n.id].axis is None and n.op.name not in ("scalar", "const"):
                out.append(n)
        return out

    # -------------------------------------------------------------- chunk kernels
    def kernel(self, k: int, rows: int) -> _Kernel:
        ps = self.passes[k]
        if rows not in ps.kernels:
            ps.kernels[rows] = self._chunk_kernel(k, ps, rows)
        return ps.kernels[rows]

    def _chunk_kernel(self, k: int, ps: _Pass, c: int) -> _Kernel:
        info = self.an.info
        memo: dict[int, Node] = {}
        chunk_leaves = []
        for lv in self.data_leaves:
            x = Node(_src.leaf, (), (), (c,) + tuple(lv.shape[1:]), lv.dtype, name=lv.name)
            memo[lv.id] = x
            chunk_leaves.append(x)
        for n in self._row_nodes(ps):
            if n.id in memo:
                continue
            if info[n.id].axis is None:
                memo[n.id] = n
                continue
            memo[n.id] = self._at_rows(n, [memo[i.id] for i in n.inputs], c)
        partials = [self._at_rows(r, [memo.get(i.id, i) for i in r.inputs], c) for r in ps.reds]
        rows = [memo[o.id] for o in ps.rows]
        params = [(x, "v", i) for i, x in enumerate(chunk_leaves)]
        params += [(b, "v", len(params) + j) for j, b in enumerate(ps.boundary)]
        prog = Program(f"dask_{self.label}_p{k}", params, partials + rows,
                       doc=f"pass {k} of {self.label} over one chunk: {len(partials)} partial reductions, "
                           f"{len(rows)} row-wise results", prefix="dask", simplify=False)
        return _Kernel(prog, [lv.dtype.np for lv in self.data_leaves])

    def _at_rows(self, n: Node, ins: list[Node], c: int) -> Node:
        """``n`` rebuilt on chunk-shaped inputs: its row axis ``c`` long (a reduction keeps its shape)."""
        inf = self.an.info[n.id]
        attrs = dict(n.attrs)
        want = list(n.shape)
        if inf.axis is not None:
            want[inf.axis] = c
            if n.op.name in ("expand", "reshape", "sum_to"):
                attrs["shape"] = tuple(want)
            elif n.op.name == "index_add":
                shape = list(attrs["shape"])
                shape[inf.attr_axis] = c
                attrs["shape"] = tuple(shape)
        try:
            shape, _ = n.op.infer(n.op, *ins, **attrs)
        except Exception as exc:  # noqa: BLE001 - the op does not take chunk-shaped inputs
            raise DaskSplitError(self.an._message(n, f"does not take a chunk of the rows ({exc})")) from None
        if tuple(shape) != tuple(want):
            raise DaskSplitError(self.an._message(n, f"gives shape {tuple(shape)} on a chunk, not {tuple(want)}"))
        return Node(n.op, tuple(ins), tuple(sorted(attrs.items())), tuple(shape), n.dtype)

    # -------------------------------------------------------------- running
    def call(self, params: list[np.ndarray], arrays: list[Any], rows: tuple[int, ...], out: Any) -> Any:
        import dask  # deferred: dask is optional

        opts = _OPTIONS.get() or _DEFAULT
        self.calls += 1
        hot = self.calls >= _program.HOT_CALLS and _program.BACKEND == "numba"
        blocks = [a.to_delayed(optimize_graph=False).ravel() for a in arrays]
        token = next(_TOKENS)
        values: list[Any] = [None] * len(self.reds)
        row_values: dict[int, Any] = {}
        lazy = not opts.compute
        compute_kw = {} if opts.scheduler is None else {"scheduler": opts.scheduler}
        delayed = dask.delayed
        for k, ps in enumerate(self.passes):
            gvals = list(params) + values
            if ps.gprog is None:
                bnd: Any = []
            elif lazy:
                bnd = delayed(_global_task, pure=False)(ps.gprog, gvals,
                                                        dask_key_name=f"symgrad-{self.label}-in{k}-{token}")
            else:
                bnd = delayed(list(_global_task(ps.gprog, gvals)), name=f"symgrad-{self.label}-in{k}-{token}")
            tasks = []
            for i, c in enumerate(rows):
                kern = self.kernel(k, c)
                tasks.append(delayed(_chunk_task, pure=False)(
                    kern, kern.tier(hot), *[b[i] for b in blocks], bnd,
                    dask_key_name=(f"symgrad-{self.label}-pass{k}-{token}", i)))
            kinds = tuple(self.an.info[r.id].combine for r in ps.reds)
            combined = self._tree(tasks, kinds, opts.split_every, f"symgrad-{self.label}-combine{k}-{token}") \
                if ps.reds else None
            nred = len(ps.reds)
            pieces = {o.id: [delayed(_take, pure=False)(t, nred + j) for t in tasks] for j, o in enumerate(ps.rows)}
            if lazy:
                got = combined
            else:
                got, pieces = dask.compute(combined, pieces, **compute_kw)
            for j, r in enumerate(ps.reds):
                values[self.red_index[r.id]] = (delayed(_take, pure=False)(got, j) if lazy else got[j])
            for o in ps.rows:
                row_values[o.id] = pieces[o.id]
        return self._results(params, values, row_values, rows, lazy, out)

    @staticmethod
    def _tree(tasks: list, kinds: tuple[str, ...], every: int, name: str) -> Any:
        import dask  # deferred: dask is optional

        level, parts = 0, tasks
        while len(parts) > 1 or level == 0:
            parts = [dask.delayed(_combine, pure=False)(kinds, *parts[j:j + every], dask_key_name=(name, level, j))
                     for j in range(0, len(parts), every)]
            level += 1
        return parts[0]

    def _results(self, params: list, values: list, row_values: dict[int, Any], rows: tuple[int, ...], lazy: bool,
                 out: Any) -> Any:
        import dask  # deferred: dask is optional
        import dask.array as da  # deferred: dask is optional

        info = self.an.info
        gvals = list(params) + values
        final: Any = None
        if self.final is not None:
            final = (dask.delayed(_global_task, pure=False)(self.final, gvals) if lazy
                     else _global_task(self.final, gvals))
        gpos = {o.id: j for j, o in enumerate(self.global_outs)}
        outs: list[Any] = []
        for o in self.outs:
            if info[o.id].axis is not None:
                axis = info[o.id].axis
                parts = row_values[o.id]
                if lazy:
                    shapes = [tuple(c if d == axis else s for d, s in enumerate(o.shape)) for c in rows]
                    outs.append(da.concatenate([da.from_delayed(p, s, dtype=o.dtype.np) for p, s in zip(parts, shapes)],
                                               axis=axis))
                else:
                    outs.append(np.concatenate(parts, axis=axis))
            elif lazy:
                outs.append(da.from_delayed(dask.delayed(_take, pure=False)(final, gpos[o.id]), o.shape,
                                            dtype=o.dtype.np))
            else:
                r = final[gpos[o.id]]
                if not r.flags.writeable or any(r is p for p in params):
                    r = np.array(r)
                outs.append(r[()] if r.ndim == 0 else r)
        return self._pack(outs, out)

    def _pack(self, outs: list[Any], out: Any) -> Any:
        cf = self.cf
        if isinstance(self.tree, tuple) and self.tree and self.tree[0] == "whole":
            return _unflatten(self.tree[1], iter(outs))
        if cf.mode == "fn":
            if out is not None:
                raise TypeError("out= takes gradient arrays: use it with sg.grad or sg.value_and_grad")
            return outs[0] if self.tree is None else _unflatten(self.tree, iter(outs))
        k = 1 + len(cf.argnums)
        grads = list(outs[1:k])
        if out is not None:
            bufs = (out,) if cf._single else tuple(out)
            if len(bufs) != len(grads):
                raise TypeError(f"out= must be a tuple of {len(grads)} arrays, one per entry of argnums={cf.argnums}")
            for buf, g in zip(bufs, grads):
                buf[...] = g
            grads = list(bufs)
        g = grads[0] if cf._single else tuple(grads)
        if cf.has_aux:
            aux = _unflatten(self.tree, iter(outs[k:]))
            return (g, aux) if cf.mode == "grad" else ((outs[0], aux), g)
        return g if cf.mode == "grad" else (outs[0], g)


#: task keys: this process's prefix and a count per call (keys stay unique on a shared scheduler)
_TOKENS = (f"{uuid.uuid4().hex[:8]}-{k}" for k in itertools.count())


ARGUMENT_HANDLERS.append((claims, run))
