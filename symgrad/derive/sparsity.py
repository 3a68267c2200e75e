"""Exact structural sparsity of Jacobians and Hessians, read off the expression DAG.

Each node gets a boolean dependency matrix ``D`` (its elements × the flattened differentiable
inputs): ``D[i, j]`` says element ``i`` structurally depends on input element ``j`` through
differentiable paths. Ops combine their inputs' matrices with the op's local structural Jacobian
(a 0/1 matrix, built per op family from shapes and attrs, never from values). The Jacobian's
pattern is ``D`` of the outputs; the Hessian's is the Jacobian pattern of the gradient, which is
itself a DAG of registry ops. "Structural" means a derivative that is not identically zero as a
formula: it is never missed, and it is only reported where some input values make it non-zero.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core.graph import Node, toposort
from ..ops import REGISTRY
from ..ops import source as _src
from ..ops.index import to_numpy_index
from ..ops.update import fit_shape

#: probing an op through its VJP may nest (a VJP built of ops probed the same way); beyond this, dense
_MAX_PROBE_DEPTH = 4


def _sparse() -> Any:
    try:
        import scipy.sparse as sps  # deferred: scipy
    except ImportError as exc:  # pragma: no cover - scipy is a dependency
        raise ImportError("sparsity patterns need scipy (pip install scipy)") from exc
    return sps


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _ids(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(_size(shape), dtype=np.int64).reshape(shape)


def _select(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> Any:
    """The 0/1 matrix with ones at (rows, cols)."""
    sps = _sparse()
    return sps.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=shape)


def _bool(m: Any) -> Any:
    m = m.tocsr()
    m.sum_duplicates()
    m.eliminate_zeros()
    m.data = np.ones_like(m.data, dtype=np.int32)
    return m


def _gather(d: Any, index: np.ndarray) -> Any:
    """Rows of ``d`` picked by ``index`` (each output element depends on one input element)."""
    return d[np.asarray(index, dtype=np.int64).ravel()]


def _broadcast_map(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> np.ndarray:
    ids = _ids(in_shape)
    return np.broadcast_to(ids.reshape((1,) * (len(out_shape) - len(in_shape)) + in_shape), out_shape)


def _reduce_axes(node: Node) -> tuple[int, ...]:
    a = node.inputs[0]
    if node.attr("full"):
        return tuple(range(a.ndim))
    dims = node.attr("dims")
    if dims is None:
        dim = node.attr("dim")
        dims = tuple(range(a.ndim)) if dim is None else (dim,)
    return tuple(d % max(a.ndim, 1) for d in dims) if a.ndim else ()


def _group_map(node: Node) -> np.ndarray:
    """For each element of input 0, the output element it is reduced into."""
    a = node.inputs[0]
    axes = _reduce_axes(node)
    keep = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    return np.broadcast_to(_ids(keep), a.shape).ravel()


def _rule_sum_to(node: Node, ds: list) -> Any:
    """``sum_to(shape)``: each input element is summed into the output element it broadcasts from."""
    if ds[0] is None:
        return None
    a = node.inputs[0]
    target = tuple(node.attr("shape"))
    keep = (1,) * (a.ndim - len(target)) + target
    return _reduce(ds[0], np.broadcast_to(_ids(keep), a.shape).ravel(), _size(node.shape))


def _reduce(d: Any, groups: np.ndarray, n_groups: int) -> Any:
    return _bool(_select(groups, np.arange(len(groups)), (n_groups, len(groups))) @ d)


def _rule_elementwise(node: Node, ds: list) -> Any:
    parts = node.op.local_partials(len(node.inputs), node.attrs)
    out = None
    for i, (x, p, d) in enumerate(zip(node.inputs, parts, ds)):
        if d is None or p == 0 or (node.op.diff_args is not None and i not in node.op.diff_args):
            continue
        g = _gather(d, _broadcast_map(x.shape, node.shape))
        out = g if out is None else out + g
    return None if out is None else _bool(out)


def _rule_reduce(node: Node, ds: list) -> Any:
    d = ds[0]
    if d is None:
        return None
    return _reduce(d, _group_map(node), _size(node.shape))


def _rule_softmax(node: Node, ds: list) -> Any:
    """Each output element depends on its whole group along the softmax dims."""
    d = ds[0]
    if d is None:
        return None
    a = node.inputs[0]
    axes = tuple(x % max(a.ndim, 1) for x in node.attr("dims")) if a.ndim else ()
    keep = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    groups = np.broadcast_to(_ids(keep), a.shape).ravel()
    return _gather(_reduce(d, groups, _size(keep)), groups)


def _rule_none(node: Node, ds: list) -> Any:
    """Piecewise-constant results (argmax): no dependency."""
    return None


def _rule_cumsum(node: Node, ds: list) -> Any:
    d = ds[0]
    if d is None:
        return None
    a = node.inputs[0]
    if a.ndim == 0:
        return d
    dim = node.attr("dim") % a.ndim
    ids = np.moveaxis(_ids(a.shape), dim, -1)
    length = ids.shape[-1]
    k, j = np.tril_indices(length)  # out position k reads inputs j <= k
    if node.attr("reverse"):
        k, j = length - 1 - k, length - 1 - j
    lines = ids.reshape(-1, length)
    rows = lines[:, k].ravel()
    cols = lines[:, j].ravel()
    return _bool(_select(rows, cols, (_size(a.shape), _size(a.shape))) @ d)


def _rule_scatter(node: Node, ds: list) -> Any:
    """``index_add``: each value element is added into the output element its index picks."""
    d = ds[0]
    if d is None:
        return None
    dest = np.asarray(REGISTRY["index"].eval(_ids(tuple(node.attr("shape"))), index=node.attr("index")))
    src = node.inputs[0]
    dest = np.broadcast_to(dest, src.shape).ravel()
    return _bool(_select(dest, np.arange(_size(src.shape)), (_size(node.shape), _size(src.shape))) @ d)


def _rule_gather(node: Node, ds: list) -> Any:
    """Data-movement ops (reshape, permute, expand, repeat, index, cat, stack): run the op's own
    numpy eval on arrays of element ids; each output element holds the id it was moved from."""
    offsets, arrays, off = [], [], 0
    for x in node.inputs:
        offsets.append(off)
        arrays.append(_ids(x.shape) + off)
        off += _size(x.shape)
    moved = np.asarray(node.op.eval(*arrays, **dict(node.attrs))).astype(np.int64).ravel()
    out = None
    for x, o, d in zip(node.inputs, offsets, ds):
        if d is None:
            continue
        rows = np.nonzero((moved >= o) & (moved < o + _size(x.shape)))[0]
        part = _select(rows, moved[rows] - o, (len(moved), _size(x.shape))) @ d
        out = part if out is None else out + part
    return None if out is None else _bool(out)


def _rule_put(node: Node, ds: list) -> Any:
    """``index_put``: written elements come from the values (plus the base when accumulating), the
    others from the base."""
    base, values = node.inputs
    spec, acc = node.attr("index"), node.attr("accumulate", False)
    n_out = _size(node.shape)
    out = None
    if acc:
        if ds[0] is not None:
            out = ds[0]
        if ds[1] is not None:
            region_ids = _ids(node.shape)[to_numpy_index(spec)]
            fitted = _ids(values.shape).reshape(fit_shape(values.shape, region_ids.shape))
            vals = np.broadcast_to(fitted, region_ids.shape)
            part = _select(region_ids.ravel(), vals.ravel(), (n_out, _size(values.shape))) @ ds[1]
            out = part if out is None else out + part
        return None if out is None else _bool(out)
    off = _size(base.shape)
    moved = np.asarray(node.op.eval(_ids(base.shape), _ids(values.shape) + off, **dict(node.attrs)))
    moved = moved.astype(np.int64).ravel()
    for lo, hi, d in ((0, off, ds[0]), (off, off + _size(values.shape), ds[1])):
        if d is None:
            continue
        rows = np.nonzero((moved >= lo) & (moved < hi))[0]
        part = _select(rows, moved[rows] - lo, (n_out, hi - lo)) @ d
        out = part if out is None else out + part
    return None if out is None else _bool(out)


def _rule_matmul(node: Node, ds: list) -> Any:
    a, b = node.inputs
    a2 = (1,) + a.shape if a.ndim == 1 else a.shape
    b2 = b.shape + (1,) if b.ndim == 1 else b.shape
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    m, k, n = a2[-2], a2[-1], b2[-1]
    full = batch + (m, n, k)
    ia = np.broadcast_to(_ids(a.shape).reshape(a2)[..., :, None, :], full)
    ib = np.broadcast_to(np.swapaxes(_ids(b.shape).reshape(b2), -1, -2)[..., None, :, :], full)
    io = np.broadcast_to(_ids(batch + (m, n))[..., None], full)
    out = None
    for idx, x, d in ((ia, a, ds[0]), (ib, b, ds[1])):
        if d is None:
            continue
        part = _select(io.ravel(), idx.ravel(), (_size(node.shape), _size(x.shape))) @ d
        out = part if out is None else out + part
    return None if out is None else _bool(out)


def _rule_dense(node: Node, ds: list) -> Any:
    """Unknown structure: every output element depends on everything any input depends on."""
    sps = _sparse()
    cols = set()
    for d in ds:
        if d is not None:
            cols.update(np.unique(d.indices).tolist())
    if not cols:
        return None
    c = np.array(sorted(cols), dtype=np.int64)
    n_out = _size(node.shape)
    width = ds[next(i for i, d in enumerate(ds) if d is not None)].shape[1]
    rows = np.repeat(np.arange(n_out), len(c))
    return _bool(sps.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, np.tile(c, n_out))),
                                shape=(n_out, width)))


def _rule_probe(node: Node, ds: list, depth: int) -> Any:
    """An op without a family rule: its local structure is that of its VJP (linear in the
    cotangent ``u``): input element j reads ``u[i]`` exactly where output i depends on input j."""
    if node.op.vjp is None or depth >= _MAX_PROBE_DEPTH:
        return _rule_dense(node, ds)
    u = Node(_src.leaf, (), (), node.shape, node.dtype, requires_grad=True)
    try:
        contribs = node.op.vjp(node, u)
    except Exception:  # noqa: BLE001 - a rule that can't be probed: be conservative
        return _rule_dense(node, ds)
    out = None
    for c, d in zip(contribs, ds):
        if d is None or c is None:
            continue
        local = dependency([c], [u], depth=depth + 1)  # (x elements × out elements) = S^T
        part = local.T.tocsr() @ d
        out = part if out is None else out + part
    return None if out is None else _bool(out)


#: the rules by name (``OpDef.sparsity``, else the op's family); any other op is probed through its VJP
_RULES: dict[str, Callable[[Node, list], Any]] = {
    "elementwise": _rule_elementwise,
    "reduce": _rule_reduce,
    "sum_to": _rule_sum_to,
    "cumsum": _rule_cumsum,
    "softmax": _rule_softmax,
    "none": _rule_none,
    "dense": _rule_dense,
    "shape": _rule_gather,
    "join": _rule_gather,
    "gather": _rule_gather,
    "scatter": _rule_scatter,
    "linalg": _rule_matmul,
    "matmul": _rule_matmul,
    "update": _rule_put,
    "put": _rule_put,
}


def dependency(outs: Sequence[Node], wrt: Sequence[Node], depth: int = 0) -> Any:
    """The structural Jacobian pattern of ``outs`` (rows: their elements, flattened and stacked)
    with respect to ``wrt`` (columns likewise), as a ``scipy.sparse.csr_matrix`` of 0/1 int32."""
    sps = _sparse()
    width = sum(_size(w.shape) for w in wrt)
    known: dict[int, Any] = {}
    off = 0
    for w in wrt:
        n = _size(w.shape)
        known[w.id] = _select(np.arange(n), np.arange(n) + off, (n, width))
        off += n
    memo: dict[int, Any] = {}
    for node in toposort(outs):
        if node.id in known:
            memo[node.id] = known[node.id]
            continue
        if node.op.family == "source":
            memo[node.id] = None
            continue
        ds = [memo.get(x.id) for x in node.inputs]
        if node.op.diff_args is not None:
            ds = [d if i in node.op.diff_args else None for i, d in enumerate(ds)]
        if all(d is None for d in ds):
            memo[node.id] = None
            continue
        rule = _RULES.get(node.op.sparsity or node.op.family)
        memo[node.id] = _rule_probe(node, ds, depth) if rule is None else rule(node, ds)
    blocks = []
    for o in outs:
        d = memo.get(o.id)
        blocks.append(sps.csr_matrix((_size(o.shape), width), dtype=np.int32) if d is None else d)
    return _bool(sps.vstack(blocks, format="csr")) if blocks else sps.csr_matrix((0, width), dtype=np.int32)


# --------------------------------------------------------------------------- colouring

def _greedy_colors(indptr: np.ndarray, indices: np.ndarray, n: int) -> np.ndarray:
    colors = np.full(n, -1, dtype=np.int64)
    mark = np.full(n + 1, -1, dtype=np.int64)
    for v in range(n):
        for p in range(indptr[v], indptr[v + 1]):
            c = colors[indices[p]]
            if c >= 0:
                mark[c] = v
        c = 0
        while mark[c] == v:
            c += 1
        colors[v] = c
    return colors


_greedy_jit: Any = None


def color_rows(pattern: Any) -> np.ndarray:
    """A colouring of the rows of ``pattern`` in which rows of one colour share no column (so one
    reverse sweep seeded with all of them recovers each row exactly); greedy, in row order."""
    global _greedy_jit
    conflict = (pattern @ pattern.T).tocsr()
    n = pattern.shape[0]
    if n > 2000:
        if _greedy_jit is None:
            try:
                import numba  # deferred: numba
                _greedy_jit = numba.njit(cache=True)(_greedy_colors)
            except Exception:  # noqa: BLE001 - numba unavailable: the Python loop is correct, only slower
                _greedy_jit = _greedy_colors
        return _greedy_jit(conflict.indptr.astype(np.int64), conflict.indices.astype(np.int64), n)
    return _greedy_colors(conflict.indptr, conflict.indices, n)
