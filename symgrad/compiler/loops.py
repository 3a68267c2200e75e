"""Loop primitives with JAX's signatures: ``fori_loop``, ``scan``, ``while_loop``.

The step function is traced once on symbolic tensors (whatever the number of steps) into a ``Body``; the loop
is one ``scan`` node of the graph, eager or traced, so it composes with ``backward()``, ``@sg.compile`` and
every transform. The carry is any pytree (tuples, lists, dicts, namedtuples) of tensors, arrays or numbers;
inside the loop it is one flat vector (``ops/loop.py``).
"""
from __future__ import annotations

import inspect
import math
from typing import Any, Callable

import numpy as np

from ..core import dtypes
from ..core.errors import TracingError
from ..core.graph import Node, toposort
from ..core.pytree import TreeSpec, tree_flatten, tree_unflatten
from ..derive.loops import cast, leaf, piece, rebuild, reshape
from ..eager.base import _is_number
from ..eager.basic import cat as _tcat
from ..eager.dynamic_index import ROW_READS
from ..eager.functional import zeros as _zeros
from ..eager.grad_mode import enable_grad
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import source as _src
from ..ops.loop import Body, pack_dtype
from ..ops.loop import scan as _scan_op
from .tracing import TraceContext, Tracer

__all__ = ["fori_loop", "scan", "while_loop"]


class _Part:
    """One leaf of a carry / xs / y tree: its shape and dtype (per step for xs)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: dtypes.DType) -> None:
        self.shape, self.dtype = tuple(shape), dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Part) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __repr__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


def _as_tensor(x: Any, what: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if _is_number(x) and not isinstance(x, np.ndarray):
        dt = dtypes.bool if isinstance(x, (bool, np.bool_)) else (
            dtypes.int64 if isinstance(x, (int, np.integer)) else dtypes.float64)
        return Tensor(np.asarray(x, dtype=dt.np))
    try:
        arr = np.asarray(x)
    except ValueError:
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be tensors, arrays or numbers (in tuples, lists or dicts), not "
                        f"{type(x).__name__}")
    return Tensor(arr)


def _flat(tree: Any, what: str) -> tuple[list[Tensor], TreeSpec]:
    leaves, spec = tree_flatten(tree)
    return [_as_tensor(v, what) for v in leaves], spec


def _pack(ts: list[Tensor], dt: dtypes.DType) -> Tensor:
    """The leaves as one flat vector of ``dt`` (what the loop carries)."""
    flat = [t.reshape(-1).to(dt) if t.dtype is not dt else t.reshape(-1) for t in ts]
    if not flat:
        return Tensor(np.zeros(0, dt.np))
    return flat[0] if len(flat) == 1 else _tcat(flat, 0)


def _unpack(flat: Tensor, parts: list[_Part], offset: int = 0) -> list[Tensor]:
    out, off = [], offset
    for p in parts:
        t = flat if off == 0 and p.size == flat.shape[0] else flat[off:off + p.size]
        if tuple(t.shape) != p.shape:
            t = t.reshape(p.shape)
        out.append(t.to(p.dtype) if p.dtype is not flat.dtype else t)
        off += p.size
    return out


class _BodyContext(TraceContext):
    """Traces a step: concrete tensors the step reads (closures) become leaves of the body, recorded."""

    def __init__(self) -> None:
        self.lifted: dict[int, tuple[Tensor, Tracer]] = {}

    def record(self, op: Any, inputs: Any, attrs: dict, out_dtype: Any = None) -> Tensor:
        ins = [self._lift(x) if isinstance(x, Tensor) and not isinstance(x, Tracer) else x for x in inputs]
        return super().record(op, ins, attrs, out_dtype)

    def _lift(self, t: Tensor) -> Tracer:
        hit = self.lifted.get(id(t))
        if hit is None:
            lv = Tracer.wrap(leaf(tuple(t.shape), t.dtype))
            hit = self.lifted[id(t)] = (t, lv)
        return hit[1]


def _node_leaf(shape: tuple[int, ...], dt: dtypes.DType) -> Tracer:
    return Tracer.wrap(leaf(shape, dt))


def _out_parts(ts: list[Any], what: str) -> list[Tensor]:
    out = []
    for t in ts:
        if not isinstance(t, Tensor):
            t = _as_tensor(t, what)
        out.append(t)
    return out


class _RowReads:
    """``t[i, ...]`` in a ``fori_loop`` step, ``t`` from outside the step and ``i`` the step's counter, read as
    a row of an ``xs`` the loop scans (``t[lower:upper]``): O(1) a step where a traced index costs O(len(t))."""

    def __init__(self, i_leaf: Node, first: int, bounds: tuple[int, int], dt: dtypes.DType) -> None:
        self.i_leaf, self.first, self.bounds, self.dt = i_leaf, first, bounds, dt
        self.rows: dict[int, tuple[Tensor, Node]] = {}

    def __call__(self, t: Any, index: Any) -> Any:
        items = index if isinstance(index, tuple) else (index,)
        if not items or not isinstance(items[0], Tracer) or items[0]._node is not self.i_leaf:
            return None
        rest = items[1:]
        if any(e is not None and e is not Ellipsis and not isinstance(e, (int, np.integer, slice)) for e in rest):
            return None
        lo, hi = self.bounds
        if not isinstance(t, Tensor) or t.ndim == 0 or lo < 0:
            return None
        if hi > t.shape[0]:     # the last step reads past the end, as the unrolled loop would
            raise IndexError(f"index {hi - 1} is out of bounds for dimension 0 with size {t.shape[0]}")
        if isinstance(t, Tracer) and t._node.id >= self.first:
            return None         # computed in the step
        if t.dtype is not self.dt and self.dt is not dtypes.float64:
            return None         # its rows would be rounded into the packed xs
        hit = self.rows.get(id(t))
        if hit is None:
            hit = self.rows[id(t)] = (t, leaf(tuple(t.shape[1:]), t.dtype))
        row = Tracer.wrap(hit[1])
        return row[rest] if rest else row


def _trace_step(fn: Callable, ctx: _BodyContext, kind: str, c_leaf: Node, carry: list[_Part], cspec: TreeSpec,
                x_leaf: Node | None, xparts: list[_Part] | None, xspec: TreeSpec | None, i_leaf: Node | None,
                cond_fun: Callable | None, dt: dtypes.DType) -> tuple:
    """Run the step function on symbolic inputs; its packed outputs, checked against the carry's types."""
    x_in: list[Tensor] = []
    test = None
    with enable_grad(), ctx:
        c_in = _unpack(Tracer.wrap(c_leaf), carry)
        c_tree = tree_unflatten(c_in, cspec)
        if kind == "fori":
            result = fn(Tracer.wrap(i_leaf), c_tree)
            new, y = result, None
        elif kind == "scan":
            x_in = _unpack(Tracer.wrap(x_leaf), xparts) if xparts is not None else []
            x_tree = tree_unflatten(x_in, xspec) if xparts is not None else None
            result = fn(c_tree, x_tree)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError("scan: the step function must return a pair (carry, y)")
            new, y = result
        else:
            new, y = fn(c_tree), None
            test = cond_fun(c_tree)
            if not isinstance(test, Tensor):
                test = _as_tensor(test, "while_loop's cond_fun result")
            if test.shape != () or test.dtype is not dtypes.bool:
                raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got a {test.dtype.name} "
                                f"tensor of shape {list(test.shape)}")
        new_leaves, new_spec = tree_flatten(new)
        if new_spec != cspec:
            raise TypeError(f"{_NAMES[kind]} body function carry input and carry output must have the same pytree "
                            f"structure, but they differ: input {cspec}, output {new_spec}")
        new_t = _out_parts(new_leaves, "the carry")
        got = [_Part(tuple(t.shape), t.dtype) for t in new_t]
        if got != carry:
            raise TypeError(f"{_NAMES[kind]} body function carry input and carry output must have equal types "
                            f"(shapes and dtypes): input {carry}, output {got}")
        y_parts: list[_Part] = []
        y_spec = None
        y_t: list[Tensor] = []
        if y is not None:
            y_leaves, y_spec = tree_flatten(y)
            y_t = _out_parts(y_leaves, "the scan outputs")
            y_parts = [_Part(tuple(t.shape), t.dtype) for t in y_t]
        new_flat = _pack(new_t, dt)
        y_flat = _pack(y_t, dt) if y_t else None
    return new_flat, y_flat, test, c_in, x_in, new_t, y_t, y_parts, y_spec


def _trace_body(fn: Callable, carry: list[_Part], cspec: TreeSpec, xparts: list[_Part] | None,
                xspec: TreeSpec | None, dt: dtypes.DType, index: bool, kind: str, cond_fun: Callable | None = None,
                bounds: tuple[int, int] = (0, 0)) -> tuple:
    """Trace ``fn`` once; returns (body, y parts, y spec, the outer values the body reads, the outer tensors
    whose rows ``[lower:upper]`` a fori step reads as its ``xs``)."""
    first = leaf((0,), dt).id             # every node the step makes has a larger id
    wc = sum(p.size for p in carry)
    c_leaf = leaf((wc,), dt)
    x_leaf = leaf((sum(p.size for p in xparts),), dt) if xparts is not None else None
    i_leaf = Node(_src.leaf, (), (), (), dtypes.int64) if index else None
    ctx = _BodyContext()
    x_in: list[Tensor] = []
    reads = _RowReads(i_leaf, first, bounds, dt) if i_leaf is not None else None
    hook = reads if reads is not None else _no_rows    # an inner step never reads an outer loop's rows
    ROW_READS.append(hook)
    try:
        traced = _trace_step(fn, ctx, kind, c_leaf, carry, cspec, x_leaf, xparts, xspec, i_leaf, cond_fun, dt)
    finally:
        ROW_READS.pop()
    new_flat, y_flat, test, c_in, x_in, new_t, y_t, y_parts, y_spec = traced
    rows = list(reads.rows.values()) if reads is not None else []
    row_map: dict[int, Node] = {}
    if rows:
        x_leaf = leaf((sum(max(math.prod(lv.shape), 0) for _, lv in rows),), dt)
        off = 0
        for _, lv in rows:
            size = math.prod(lv.shape)
            row_map[lv.id] = cast(reshape(piece(x_leaf, off, off + size), lv.shape), lv.dtype)
            off += size
    nodes = [_node_of(new_flat)] + ([_node_of(y_flat)] if y_flat is not None else [])
    if kind == "while":
        nodes.append(_node_of(test))
    # values from outside the step (tensors a compiled function traced before, numpy constants): inputs
    lifted = [(t, lv._node) for t, lv in ctx.lifted.values()]
    body_leaves = {c_leaf.id} | {lv.id for _, lv in lifted}
    if x_leaf is not None:
        body_leaves.add(x_leaf.id)
    if i_leaf is not None:
        body_leaves.add(i_leaf.id)
    body_leaves |= set(row_map)
    outer: dict[int, tuple[Any, Node]] = {}

    def foreign(n: Node) -> bool:
        return n.id not in body_leaves and n.op.name != "scalar" and (n.id < first or n.op is _src.const)

    for n in toposort(nodes, stop=foreign):
        if foreign(n) and n.id not in outer:
            value = Tracer.wrap(n) if n.op is not _src.const else Tensor(np.asarray(n.value))
            outer[n.id] = (value, leaf(n.shape, n.dtype))
        elif n.op is _src.leaf and n.id not in body_leaves:
            raise TracingError(f"{_NAMES[kind]}: the step reads a traced value of another function")
    memo: dict[int, Node] = {}
    if outer or row_map:
        nodes = rebuild(nodes, {**{i: lv for i, (_, lv) in outer.items()}, **row_map}, memo)
    consts = [(t, lv) for t, lv in lifted] + [(v, lv) for v, lv in outer.values()]
    new_c = nodes[0]
    if new_c.shape != (wc,):
        new_c = reshape(new_c, (wc,))
    display = _display(fn, kind, cspec, c_in, i_leaf, x_in, new_t, y_t, consts, memo,
                       [(t, row_map[lv.id]) for t, lv in rows])
    cond = nodes.pop() if kind == "while" else None
    body = Body(c_leaf, x_leaf, i_leaf, tuple(lv for _, lv in consts), cast(new_c, dt),
                cast(nodes[1], dt) if len(nodes) > 1 else None, label=f"step of {getattr(fn, '__name__', 'f')}",
                display=display, cond=cond)
    return _intern(body), y_parts, y_spec, [v for v, _ in consts], [t for t, _ in rows]


#: traced steps by structure: a loop traced again with the same step (an eager training loop calling
#: ``fori_loop`` every iteration) gets the same ``Body``, so its eager programs and derived loops are reused
_BODIES: dict[tuple, Body] = {}
_MAX_BODIES = 512


def _intern(body: Body) -> Body:
    key = _body_key(body)
    if key is None:
        return body
    hit = _BODIES.get(key)
    if hit is not None:
        return hit
    if len(_BODIES) >= _MAX_BODIES:
        _BODIES.pop(next(iter(_BODIES)))
    _BODIES[key] = body
    return body


def _body_key(body: Body) -> tuple | None:
    """The step's graph as a hashable value (leaves by role; constants by value), its label and printed names;
    None where a constant is too big to key on."""
    leaves = {body.carry.id: ("c",)}
    if body.x is not None:
        leaves[body.x.id] = ("x",)
    if body.index is not None:
        leaves[body.index.id] = ("i",)
    for k, c in enumerate(body.consts):
        leaves[c.id] = ("k", k)
    roots = [n for n in (body.new_carry, body.y, body.cond) if n is not None]
    pos: dict[int, int] = {}
    items: list[tuple] = []
    for n in toposort(roots):
        if n.id in leaves:
            item: tuple = (leaves[n.id], n.shape, n.dtype.name)
        elif n.op is _src.const:
            v = np.asarray(n.value)
            if v.size > 4096:
                return None
            item = ("const", v.dtype.str, v.shape, v.tobytes(), n.dtype.name)
        else:
            try:
                hash(n.attrs)
            except TypeError:
                return None
            item = (n.op, n.attrs, tuple(pos[i.id] for i in n.inputs), n.shape, n.dtype.name, n.requires_grad)
        pos[n.id] = len(items)
        items.append(item)
    d = body.display or {}
    names = (d.get("carry"), tuple(name for _, name in d.get("ins", ())), tuple(name for name, _ in d.get("outs", ())),
             d.get("consts"))
    return (tuple(items), tuple(pos[r.id] for r in roots), body.cond is not None, body.label, names,
            tuple(body.consts[k].shape for k in range(len(body.consts))))


def _no_rows(t: Any, index: Any) -> None:
    return None


def _param_names(fn: Callable, kind: str) -> tuple[str, str]:
    """The names the step function gives its (carry, index or x) parameters."""
    try:
        names = [p for p in inspect.signature(fn).parameters]
    except (TypeError, ValueError):
        names = []
    if kind == "fori":
        i, c = (names + ["i", "s"])[:2] if len(names) >= 2 else ("i", "s")
        return c, i
    if kind == "scan":
        c, x = (names + ["c", "x"])[:2] if len(names) >= 2 else ("c", "x")
        return c, x
    return (names[0] if names else "s"), ""


def _leaf_names(base: str, spec: TreeSpec, n: int) -> list[str]:
    if n == 1 and spec.is_leaf:
        return [base]
    if spec.type is dict:
        return [str(k) for k in spec.context]
    return [f"{base}{j}" for j in range(n)]


def _display(fn: Callable, kind: str, cspec: TreeSpec, c_in: list[Tensor], i_leaf: Node | None, x_in: list[Tensor],
             new_t: list[Tensor], y_t: list[Tensor], consts: list, memo: dict[int, Node],
             rows: list[tuple[Tensor, Node]] = ()) -> dict:
    """How formulas print the step: the carry as ``s[k]`` -> ``s[k+1]``, the step's inputs by the user's names."""
    cname, other = _param_names(fn, kind)
    cnames = _leaf_names(cname, cspec, len(c_in))
    ins = [(t._node, f"{n}[k]") for t, n in zip(c_in, cnames)]
    if i_leaf is not None:
        ins.append((i_leaf, other))
    ins += [(t._node, f"{other}{j if len(x_in) > 1 else ''}[k]") for j, t in enumerate(x_in)]
    for j, (t, node) in enumerate(rows):
        name = (t._node.name if t._node is not None and t._node.name else None) or f"r{j}"
        ins.append((node, f"{name}[{other}]"))
    const_names = []
    for i, (value, lv) in enumerate(consts):
        node = value._node if isinstance(value, Tensor) and value._node is not None else None
        name = (node.name if node is not None and node.name else None) or f"c{i}"
        const_names.append((i, name))
        ins.append((lv, name))
    outs = [(f"{n}[k+1]", memo.get(_node_of(t).id, _node_of(t))) for n, t in zip(cnames, new_t)]
    outs += [(f"y{j if len(y_t) > 1 else ''}[k]", memo.get(_node_of(t).id, _node_of(t))) for j, t in enumerate(y_t)]
    return {"carry": cname, "ins": ins, "outs": outs, "consts": tuple(const_names), "note": "", "n_carry": len(new_t)}


def _node_of(t: Tensor) -> Node:
    if isinstance(t, Tracer):
        return t._node
    return Node(_src.const, (), (), tuple(t.shape), t.dtype, value=np.asarray(t._data))


_NAMES = {"fori": "fori_loop", "scan": "scan", "while": "while_loop"}


def _loop(kind: str, fn: Callable, init: Any, xs: Any, length: int | None, reverse: bool, start: int,
          cond_fun: Callable | None = None) -> tuple:
    c_ts, cspec = _flat(init, "the loop carry")
    carry = [_Part(tuple(t.shape), t.dtype) for t in c_ts]
    x_ts, xspec, xparts = [], None, None
    if xs is not None:
        x_ts, xspec = _flat(xs, "scan's xs")
        if x_ts:
            lengths = {t.shape[0] if t.ndim else None for t in x_ts}
            if None in lengths:
                raise ValueError("scan got value with no leading axis to scan over: every leaf of xs needs one")
            if len(lengths) > 1 or (length is not None and length not in lengths):
                shown = sorted(lengths) + ([length] if length is not None else [])
                raise ValueError(f"scan got values with different leading axis sizes: {', '.join(map(str, shown))}")
            length = lengths.pop()
            xparts = [_Part(tuple(t.shape[1:]), t.dtype) for t in x_ts]
        else:
            x_ts = []
    if length is None and kind != "while":
        raise ValueError("scan got no values to scan over and `length` not provided.")
    dt = pack_dtype([p.dtype for p in carry + (xparts or [])])
    bounds = (start, start + (length or 0))
    body, y_parts, y_spec, consts, row_of = _trace_body(fn, carry, cspec, xparts, xspec, dt, kind == "fori", kind,
                                                        cond_fun, bounds)
    if y_parts and dt is dtypes.float32 and any(p.dtype is not dtypes.float32 for p in y_parts):
        dt = dtypes.float64       # a float64 (or integer) output: carry everything in float64
        body, y_parts, y_spec, consts, row_of = _trace_body(fn, carry, cspec, xparts, xspec, dt, kind == "fori",
                                                            kind, None, bounds)
    if length == 0:
        # no step runs (JAX's zero-trip loop): the carry as it came in, empty ys; the body was still traced
        final = tree_unflatten(_unpack(_pack(c_ts, dt), carry), cspec)
        if kind != "scan":
            return final, None
        if not y_parts:
            return final, None if y_spec is None else tree_unflatten([], y_spec)
        return final, tree_unflatten([_zeros(0, *p.shape, dtype=p.dtype) for p in y_parts], y_spec)
    inputs: list[Any] = [_pack(c_ts, dt)]
    if xparts is not None:
        rows = [t.reshape(length, -1) for t in x_ts]
        rows = [r.to(dt) if r.dtype is not dt else r for r in rows]
        inputs.append(rows[0] if len(rows) == 1 else _tcat(rows, 1))
    elif row_of:
        lo, hi = bounds
        rows = [t[lo:hi].reshape(length, -1) for t in row_of]
        rows = [r.to(dt) if r.dtype is not dt else r for r in rows]
        inputs.append(rows[0] if len(rows) == 1 else _tcat(rows, 1))
    out = _apply(_scan_op, *inputs, *consts, body=body, length=None if length is None else int(length),
                 reverse=bool(reverse), start=int(start))
    wc = body.carry_width
    final = tree_unflatten(_unpack(out, carry), cspec)
    if kind != "scan":
        return final, None
    if not y_parts:
        return final, None if y_spec is None else tree_unflatten([], y_spec)
    wy = body.y_width
    ys = out[wc:wc + length * wy].reshape(length, wy)
    y_out, off = [], 0
    for p in y_parts:
        t = ys[:, off:off + p.size].reshape((length, *p.shape))
        y_out.append(t.to(p.dtype) if p.dtype is not dt else t)
        off += p.size
    return final, tree_unflatten(y_out, y_spec)


def _static_int(v: Any, what: str) -> int:
    if isinstance(v, Tracer):
        raise TracingError(f"fori_loop: {what} must be a Python int (the number of steps is fixed when the loop is "
                           "traced); a traced bound is not supported: use while_loop for a data-dependent count")
    try:
        return int(v)
    except (TypeError, ValueError):
        raise TypeError(f"fori_loop: {what} must be an int, not {type(v).__name__}") from None


def fori_loop(lower: int, upper: int, body_fun: Callable[[Any, Any], Any], init_val: Any, *,
              checkpoint_every: int | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``, as one loop node (JAX's ``lax.fori_loop``).

    ``i`` is a 0-d int64 tensor; ``init_val`` any pytree of tensors, arrays or numbers. The body is traced once;
    forward and reverse derivatives (and higher) are loops too. Reverse mode stores the carry of every step;
    with ``checkpoint_every=k`` it stores one carry per block of ``k`` steps and recomputes the block's steps
    while running back through it (a loop of blocks, each a loop of ``k`` steps: memory ``T/k + k`` carries).
    """
    lo, hi = _static_int(lower, "lower"), _static_int(upper, "upper")
    n = max(hi - lo, 0)
    k = _checkpoint_block(checkpoint_every, n)
    if k is None:
        final, _ = _loop("fori", body_fun, init_val, None, n, False, lo)
        return final
    blocks, rest = divmod(n, k)

    def block(b: Any, val: Any) -> Any:
        first = b * k + lo
        return fori_loop(0, k, lambda j, v: body_fun(first + j, v), val)

    val = fori_loop(0, blocks, block, init_val) if blocks else init_val
    return fori_loop(lo + blocks * k, hi, body_fun, val) if rest else val


def _checkpoint_block(every: int | None, n: int) -> int | None:
    if every is None:
        return None
    k = _static_int(every, "checkpoint_every")
    if k < 1:
        raise ValueError(f"checkpoint_every must be a positive number of steps, got {k}")
    return k if k < n else None


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, *, checkpoint_every: int | None = None) -> tuple[Any, Any]:
    """JAX's ``lax.scan``: ``carry, y = f(carry, x)`` over the leading axis of ``xs`` (or ``length`` steps with
    ``x = None``); returns the final carry and the ``y``s stacked (row ``k`` from ``xs[k]``, also with
    ``reverse=True``, which runs from the last row). ``checkpoint_every=k``: see ``fori_loop``."""
    if length is not None:
        length = int(length)
    if checkpoint_every is None:
        return _loop("scan", f, init, xs, length, reverse, 0)
    return _blocked_scan(f, init, xs, length, reverse, checkpoint_every)


def _blocked_scan(f: Callable, init: Any, xs: Any, length: int | None, reverse: bool, every: int) -> tuple:
    """A scan as a scan over blocks of ``every`` steps (each block a scan), then the steps left over."""
    x_leaves, x_spec = tree_flatten(xs) if xs is not None else ([], None)
    x_leaves = [_as_tensor(v, "scan's xs") for v in x_leaves]
    n = x_leaves[0].shape[0] if x_leaves else length
    if n is None:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    k = _checkpoint_block(every, n)
    if k is None:
        return _loop("scan", f, init, xs, length, reverse, 0)
    blocks, rest = divmod(n, k)
    blocked = [t[rest:] if reverse else t[:n - rest] for t in x_leaves]
    left = [t[:rest] if reverse else t[n - rest:] for t in x_leaves]

    def tree(ts: list[Tensor]) -> Any:
        return tree_unflatten(ts, x_spec) if x_spec is not None else None

    def block(c: Any, bx: Any) -> tuple[Any, Any]:
        return scan(f, c, bx, length=None if bx is not None else k, reverse=reverse)

    grouped = [t.reshape(blocks, k, *t.shape[1:]) for t in blocked]
    # the blocks run first in either direction (reverse: the last rows are the blocked ones)
    carry, ys = scan(block, init, tree(grouped) if grouped else None, length=None if grouped else blocks,
                     reverse=reverse)
    if ys is None:                  # the step has no per-step output
        if rest:
            carry, _ = scan(f, carry, tree(left), length=None if left else rest, reverse=reverse)
        return carry, None
    ys_flat, y_spec = tree_flatten(ys)
    ys_flat = [y.reshape(blocks * k, *y.shape[2:]) for y in ys_flat]
    if rest:
        carry, y_rest = scan(f, carry, tree(left), length=None if left else rest, reverse=reverse)
        rest_flat, _ = tree_flatten(y_rest)
        pair = (rest_flat, ys_flat) if reverse else (ys_flat, rest_flat)
        y_parts = [_tcat([a, b], 0) for a, b in zip(*pair)]
    else:
        y_parts = ys_flat
    return carry, tree_unflatten(y_parts, y_spec)


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """JAX's ``lax.while_loop``: ``while cond_fun(val): val = body_fun(val)``, as one loop node (eager or traced).

    ``cond_fun`` returns a boolean scalar tensor. The number of steps depends on the values, so only forward
    mode differentiates through it (``sg.jvp``, ``jacfwd``); reverse mode raises, as in JAX: use ``fori_loop``
    or ``scan`` with a fixed count for gradients.
    """
    final, _ = _loop("while", body_fun, init_val, None, None, False, 0, cond_fun)
    return final
