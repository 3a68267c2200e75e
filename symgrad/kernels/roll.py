"""Rolling unrolled Python loops back into loops: a traced graph that is ``T`` copies of one step becomes one
``scan`` node over that step (``ops/loop.py``), so derivatives, kernels and formulas are the loop machinery's.

A Python ``for`` loop traced unrolled creates the same ops in the same order every iteration, so the graph's
nodes in creation order hold a periodic stretch ``B B ... B``. ``roll_loops`` finds it (the prefix function of
the op sequence from an anchor inside it gives the period) and proves it is a loop before rewriting anything:
every block has the same ops, attrs, shapes and dtypes slot by slot, and every input of a block's node is a node
of the same block at the same slot, a node of the previous block at a fixed slot (the carry), or a node from
before the loop (the same one every step: a closed-over value; one per step: a row of ``xs``). Nodes whose
attrs differ between blocks (``xs[t]``, a Python number that changes) are rows of ``xs`` when all their inputs
come from before the loop, otherwise nothing is rolled. Only the last block may be read after the loop.
The rewrite is exact: the step is the same ops on the same values; the carry and the rows are packed into flat
vectors of the carry's dtype (float64 unless everything is float32), which casts float parts exactly.
Everything is linear in the graph's size.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.graph import Node, toposort
from ..derive.loops import cast, leaf, piece, rebuild, reshape, scan_node, zeros
from ..ops import apply
from ..ops import source as _src
from ..ops.loop import Body, pack_dtype

__all__ = ["roll_loops", "ENABLED", "MIN_STEPS"]

#: ``SYMGRAD_ROLL=0`` keeps unrolled loops unrolled
ENABLED = os.environ.get("SYMGRAD_ROLL", "1") != "0"
#: fewest repeats worth a loop
MIN_STEPS = 4
#: fewest nodes in a graph worth looking for a loop in
MIN_NODES = 16


def roll_loops(roots: Sequence[Node]) -> list[Node]:
    """``roots`` with every proven repeat of a step rolled into a ``scan`` node (the same nodes when none)."""
    roots = list(roots)
    if not ENABLED:
        return roots
    for _ in range(8):          # one loop per pass (a later pass sees the earlier scan as one node)
        nodes = sorted(toposort(roots), key=lambda n: n.id)
        if len(nodes) < MIN_NODES:
            return roots
        new = _roll_one(roots, nodes)
        if new is None:
            return roots
        roots = new
    return roots


# --------------------------------------------------------------------------- finding the period

def _keys(nodes: list[Node]) -> list[int]:
    """One small integer per node: its op, shape, dtype and input count (attrs are compared later)."""
    ids: dict[tuple, int] = {}
    return [ids.setdefault((n.op.name, n.shape, n.dtype.name, len(n.inputs)), len(ids)) for n in nodes]


def _period(keys: list[int], a: int) -> int | None:
    """The period of the longest stretch of repeats starting at ``a`` (the prefix function of ``keys[a:]``)."""
    s = keys[a:]
    n = len(s)
    pi = [0] * n
    best, best_len, cur, cur_len = None, 0, None, 0
    for i in range(1, n):
        k = pi[i - 1]
        while k and s[i] != s[k]:
            k = pi[k - 1]
        if s[i] == s[k]:
            k += 1
        pi[i] = k
        p = i + 1 - k
        if 2 * p > i + 1:       # not repeated twice yet
            cur, cur_len = None, 0
            continue
        if p == cur:
            cur_len += 1
        else:
            cur, cur_len = p, 1
        if cur_len > best_len:
            best, best_len = cur, cur_len
    return best


def _region(keys: list[int], a: int, p: int) -> tuple[int, int]:
    """``(start, steps)``: the stretch around ``a`` where ``keys`` repeats with period ``p``."""
    n = len(keys)
    e = a
    while e + p < n and keys[e] == keys[e + p]:
        e += 1
    s = a
    while s > 0 and keys[s - 1] == keys[s - 1 + p]:
        s -= 1
    return s, (e + p - s) // p


# --------------------------------------------------------------------------- proving it repeats

def _same(a: Any, b: Any) -> bool:
    """Exact equality of attrs (types too: 1 is not 1.0; arrays by dtype, shape and bytes)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    try:
        r = a == b
    except Exception:  # noqa: BLE001 - incomparable: not the same
        return False
    return r if isinstance(r, bool) else False


def _same_node(m: Node, n: Node) -> bool:
    if m.op is not n.op or m.shape != n.shape or m.dtype is not n.dtype or not _same(m.attrs, n.attrs):
        return False
    if m.op is _src.const:
        return _same(np.asarray(m.value), np.asarray(n.value))
    return True


class _Loop:
    """A proven repeat: ``steps`` blocks of ``p`` nodes from ``start`` and how the step reads its inputs."""

    def __init__(self, start: int, p: int, steps: int) -> None:
        self.start, self.p, self.steps = start, p, steps
        self.wiring: list[list[tuple[str, Any]]] = []   # per slot, per input: ("i"|"c", slot) or ("e", node list)
        self.rows: set[int] = set()                     # slots that are rows of xs (their attrs change per step)
        self.init: dict[int, Node] = {}                 # carry slot -> the node block 0 reads for it
        self.outs: set[int] = set()                     # slots of the last block read after the loop


def _prove(nodes: list[Node], pos: dict[int, int], roots: list[Node], start: int, p: int, steps: int
           ) -> _Loop | None:
    lp = _Loop(start, p, steps)
    end = start + p * steps
    blocks = [nodes[start + k * p:start + (k + 1) * p] for k in range(steps)]
    for j in range(p):
        first = blocks[1][j]
        if first.op is _src.leaf:
            return None
        same = all(_same_node(first, blocks[k][j]) for k in range(steps) if k != 1)
        wires: list[tuple[str, Any]] = []
        for q in range(len(first.inputs)):
            kind, what = None, []
            for k in range(1, steps):
                x = blocks[k][j].inputs[q]
                at = pos[x.id] - start - k * p
                if 0 <= at < p:
                    w = ("i", at)
                elif -p <= at < 0:
                    w = ("c", at + p)
                elif pos[x.id] < start:
                    w = ("e", None)
                else:
                    return None         # an older step
                if kind is None:
                    kind = w
                elif w != kind:
                    return None
                what.append(x)
            x0 = blocks[0][j].inputs[q]
            at0 = pos[x0.id] - start
            if kind[0] == "i":
                if at0 != kind[1]:
                    return None
                wires.append(kind)
            elif at0 >= 0:
                return None             # block 0 reads within itself where later blocks read from outside them
            elif kind[0] == "c":
                if lp.init.setdefault(kind[1], x0) is not x0:
                    return None
                wires.append(kind)
            else:
                wires.append(("e", [x0] + what))
        if not same:
            if any(w[0] != "e" for w in wires):
                return None
            lp.rows.add(j)
        lp.wiring.append(wires)
    # reads after the loop: only of the last block
    last = start + (steps - 1) * p
    for n in nodes[end:]:
        for x in n.inputs:
            at = pos[x.id]
            if start <= at < end:
                if at < last:
                    return None
                lp.outs.add(at - last)
    for r in roots:
        at = pos[r.id]
        if start <= at < end:
            if at < last:
                return None
            lp.outs.add(at - last)
    if not lp.outs:
        return None
    return lp


# --------------------------------------------------------------------------- rewriting

def _parts(flat: Node, slots: list[Node], dt: dtypes.DType) -> list[Node]:
    """Each slot's value read back from a flat packed vector."""
    out, off = [], 0
    for s in slots:
        size = int(np.prod(s.shape, dtype=np.int64))
        out.append(reshape(cast(piece(flat, off, off + size), s.dtype), s.shape))
        off += size
    return out


def _flat(n: Node, dt: dtypes.DType) -> Node:
    return reshape(cast(n, dt), (int(np.prod(n.shape, dtype=np.int64)),))


def _pack(ns: list[Node], dt: dtypes.DType) -> Node:
    flat = [_flat(n, dt) for n in ns]
    return flat[0] if len(flat) == 1 else apply("cat", *flat, dim=0, out_dtype=dt.name)


def _rewrite(nodes: list[Node], roots: list[Node], lp: _Loop) -> list[Node] | None:
    start, p, steps = lp.start, lp.p, lp.steps
    blocks = [nodes[start + k * p:start + (k + 1) * p] for k in range(steps)]
    carried = sorted({w[1] for ws in lp.wiring for w in ws if w[0] == "c"} | lp.outs)
    tmpl = blocks[1]
    # per-step values from before the loop: one row part per distinct sequence of nodes
    consts: dict[int, Node] = {}            # outer node id -> the body's leaf
    row_seqs: list[list[Node]] = []
    row_of: dict[tuple[int, ...], int] = {}
    ext: dict[tuple[int, int], tuple[str, int]] = {}
    for j, ws in enumerate(lp.wiring):
        if j in lp.rows:
            continue
        for q, w in enumerate(ws):
            if w[0] != "e":
                continue
            seq = w[1]
            if all(x is seq[0] for x in seq):
                consts.setdefault(seq[0].id, seq[0])
                ext[(j, q)] = ("k", seq[0].id)
            else:
                key = tuple(x.id for x in seq)
                if key not in row_of:
                    row_of[key] = len(row_seqs)
                    row_seqs.append(seq)
                ext[(j, q)] = ("r", row_of[key])
    readers: dict[tuple[str, int], list[int]] = {}
    for j in sorted(lp.rows):
        readers[("slot", len(row_seqs))] = [i for i, ws in enumerate(lp.wiring) if ("i", j) in ws or ("c", j) in ws]
        row_of[("slot", j)] = len(row_seqs)
        row_seqs.append([b[j] for b in blocks])
    for j in range(p):                      # constants made inside the step: closed-over values of the body
        if j not in lp.rows and tmpl[j].op is _src.const:
            consts.setdefault(tmpl[j].id, tmpl[j])
    for c, x in lp.init.items():
        if x.shape != tmpl[c].shape or x.dtype is not tmpl[c].dtype:
            return None
    for seq in row_seqs:
        if any(x.shape != seq[0].shape or x.dtype is not seq[0].dtype for x in seq):
            return None
    shapes = [tmpl[c] for c in carried] + [seq[1] for seq in row_seqs]
    if not all(n.dtype.is_floating_point for n in shapes):
        return None
    dt = pack_dtype([n.dtype for n in shapes])
    wc = sum(int(np.prod(tmpl[c].shape, dtype=np.int64)) for c in carried)
    c_leaf = leaf((wc,), dt)
    c_parts = dict(zip(carried, _parts(c_leaf, [tmpl[c] for c in carried], dt)))
    x_leaf, x_parts = None, []
    if row_seqs:
        wx = sum(int(np.prod(seq[1].shape, dtype=np.int64)) for seq in row_seqs)
        x_leaf = leaf((wx,), dt)
        i_off = np.cumsum([0] + [int(np.prod(seq[1].shape, dtype=np.int64)) for seq in row_seqs]).tolist()
        x_parts = _parts(x_leaf, [seq[1] for seq in row_seqs], dt)
        for i, seq in enumerate(row_seqs):
            if seq[1].op is _src.scalar and seq[1].dtype is not dt:
                # a Python number that changes per step (weakly typed): its exact value, read as ``dt``
                if any(tmpl[j].dtype is not dt for j in readers.get(("slot", i), ())):
                    return None
                x_parts[i] = reshape(piece(x_leaf, i_off[i], i_off[i] + 1), ())
    k_leaves = {i: leaf(n.shape, n.dtype) for i, n in consts.items()}
    # the step: block 1's nodes over the body's leaves
    done: dict[int, Node] = {}
    for j, n in enumerate(tmpl):
        if j in lp.rows:
            done[j] = x_parts[row_of[("slot", j)]]
            continue
        if n.op is _src.const:
            done[j] = k_leaves[n.id]
            continue
        ins = []
        for q, w in enumerate(lp.wiring[j]):
            if w[0] == "i":
                ins.append(done[w[1]])
            elif w[0] == "c":
                ins.append(c_parts[w[1]])
            else:
                kind, i = ext[(j, q)]
                ins.append(k_leaves[i] if kind == "k" else x_parts[i])
        if not ins:
            done[j] = n
            continue
        diff = n.op.diff_args
        rg = any(x.requires_grad for i, x in enumerate(ins) if diff is None or i in diff)
        done[j] = Node(n.op, tuple(ins), n.attrs, n.shape, n.dtype, requires_grad=rg and n.dtype.is_floating_point)
    new_carry = _pack([done[c] for c in carried], dt)
    const_ids = list(consts)
    body = Body(c_leaf, x_leaf, None, tuple(k_leaves[i] for i in const_ids), new_carry, None,
                label=f"rolled step ({p} nodes)")
    inits = [lp.init.get(c) or zeros(tmpl[c].shape, tmpl[c].dtype) for c in carried]
    inputs = [_pack(inits, dt)]
    if row_seqs:
        rows = [reshape(_pack([seq[k] for seq in row_seqs], dt), (1, x_leaf.shape[0])) for k in range(steps)]
        inputs.append(apply("cat", *rows, dim=0, out_dtype=dt.name))
    inputs += [consts[i] for i in const_ids]
    loop = scan_node(inputs, body, steps, False, 0)
    finals = _parts(piece(loop, 0, wc), [tmpl[c] for c in carried], dt)
    last = blocks[-1]
    mapping = {last[c].id: f for c, f in zip(carried, finals) if c in lp.outs}
    return rebuild(roots, mapping)


def _roll_one(roots: list[Node], nodes: list[Node]) -> list[Node] | None:
    keys = _keys(nodes)
    pos = {n.id: i for i, n in enumerate(nodes)}
    n = len(nodes)
    tried: set[tuple[int, int]] = set()
    for a in (n // 2, n // 4, 3 * n // 4, n // 8, 7 * n // 8):
        p = _period(keys, a)
        if p is None:
            continue
        s, steps = _region(keys, a, p)
        for shift in range(2):          # the stretch may begin with nodes from before the loop: drop one block
            s2, t2 = s + shift * p, steps - shift
            if t2 < MIN_STEPS or (s2, p) in tried:
                continue
            tried.add((s2, p))
            lp = _prove(nodes, pos, roots, s2, p, t2)
            if lp is None:
                continue
            new = _rewrite(nodes, roots, lp)
            if new is not None:
                return new
    return None
