"""Loops in kernels: a scan node lowers to ``ir.Scan`` with its step as a kernel of its own, and a loop and its
history scan over the same inputs share one run."""
from __future__ import annotations

import math
from typing import Sequence

from codegen import ir

from ..core.graph import Node, toposort
from ..derive import loops as _derive_loops
from ..derive.simplify import simplify_graph
from ..ops import apply
from ..ops.linalg import matmul
from ..ops.loop import Body, scan
from .lower import lower

#: the step kernel's argument lists (named so that no kernel temporary shares a param's name)
STEP_GROUPS = ("carry", "row", "step", "const")


def step_params(body: Body) -> list[tuple[Node, str, int]]:
    """The step kernel's parameters: the carry, the step's input row, the step index, the consts."""
    params = [(body.carry, "carry", 0)]
    if body.x is not None:
        params.append((body.x, "row", 0))
    if body.index is not None:
        params.append((body.index, "step", 0))
    return params + [(p, "const", i) for i, p in enumerate(body.consts)]


def step_kernel(body: Body, name: str, cond: bool = False) -> ir.Kernel:
    """The body as a kernel, or (``cond``) its while condition (cached per body and name)."""
    key = ("kernel", name, cond)
    if key not in body.memo:
        if cond:
            outs = [body.cond]
        elif body.accumulates is not None:
            outs = [body.accumulates[1], body.accumulates[2]] + ([body.y] if body.y is not None else [])
        else:
            outs = body.outputs()
        outs = share_histories(simplify_graph(outs))
        kernel, _ = lower(name, step_params(body), outs, doc=f"one {body.label}", groups=STEP_GROUPS)
        body.memo[key] = kernel
    return body.memo[key]


#: a closed-over matrix with more elements than this (the step is then an array kernel, not inlined scalar code),
#: read only as ``W @ v`` with ``v`` a vector, goes to the step transposed: ``W.T`` is copied once before the
#: loop and the step reads ``(W.T).T @ v``, which the numba planner iterates over ``W.T``'s rows (axpy updates of a
#: register-resident vector: vectorised without reassociation, no per-row horizontal sums)
TRANSPOSE_MIN = 64


def transposed_consts(body: Body) -> tuple[int, ...]:
    """The consts of ``body`` the step kernel reads transposed (``TRANSPOSE_MIN``)."""
    if "transposed" not in body.memo:
        found: tuple[int, ...] = ()
        if body.accumulates is None and body.cond is None:
            cands = {p.id: i for i, p in enumerate(body.consts)
                     if p.ndim == 2 and p.dtype.is_floating_point and math.prod(p.shape) > TRANSPOSE_MIN}
            bad: set[int] = set()
            seen: set[int] = set()
            for n in toposort(body.outputs()):
                for k, a in enumerate(n.inputs):
                    if a.id in cands:
                        seen.add(a.id)
                        if not (n.op is matmul and k == 0 and n.inputs[1].ndim == 1 and n.inputs[1] is not a):
                            bad.add(a.id)
            found = tuple(sorted(cands[c] for c in seen - bad))
        body.memo["transposed"] = found
    return body.memo["transposed"]


def _transposed_body(body: Body, which: tuple[int, ...]) -> Body:
    """``body`` reading the consts ``which`` as the transposes of new leaves of the transposed shapes."""
    key = ("transposed body", which)
    if key not in body.memo:
        consts = list(body.consts)
        mapping = {}
        for i in which:
            p = consts[i]
            leaf = _derive_loops.leaf(p.shape[::-1], p.dtype)
            consts[i] = leaf
            mapping[p.id] = apply("permute", leaf, dims=(1, 0))
        new_c, y = _derive_loops.rebuild([body.new_carry, body.y], mapping)
        body.memo[key] = Body(body.carry, body.x, body.index, tuple(consts), new_c, y, derived=body.derived,
                              names=body.names, label=body.label)
    return body.memo[key]


def lower_scan(node: Node, target: str, args: list[str]) -> list:
    body: Body = node.attr("body")
    xs = args[1] if body.x is not None else None
    consts = tuple(args[2:] if body.x is not None else args[1:])
    which = transposed_consts(body)
    pre: list = []
    if which:
        consts = list(consts)
        for i in which:
            p = body.consts[i]
            name = f"{target}_T{i}"
            pre.append(ir.Transpose(name, consts[i], (1, 0), p.shape[::-1], p.dtype.np.name,
                                    note=f"the loop's const {i}, transposed once"))
            consts[i] = name
        consts = tuple(consts)
        body = _transposed_body(body, which)
    kernel = step_kernel(body, f"{target}_step")
    cond = step_kernel(body, f"{target}_cond", cond=True) if body.cond is not None else None
    acc = body.carry_width - body.accumulates[0] if body.accumulates is not None else 0
    return pre + [ir.Scan(target, kernel, args[0], xs, consts, node.attr("length"), node.attr("reverse"),
                    node.attr("start"), body.carry_width, body.y_width, node.shape, node.dtype.np.name, cond=cond,
                    acc_width=acc)]


scan.lower = lower_scan


def _projection(hist: Node, node: Node) -> Node:
    """A scan's value read out of its history scan's (the outputs without the stored carries)."""
    body: Body = node.attr("body")
    wc, wy, n = body.carry_width, body.y_width, node.attr("length")
    carry = _derive_loops.piece(hist, 0, wc)
    if not wy:
        return carry
    hw = hist.attr("body").y_width
    rows = _derive_loops.reshape(_derive_loops.piece(hist, wc, wc + n * hw), (n, hw))
    ys = _derive_loops.reshape(_derive_loops.columns(rows, 0, wy), (n * wy,))
    return _derive_loops.cat([carry, ys], 0, node.dtype)


def _loop_key(n: Node, body: Body) -> tuple:
    return (id(body), tuple(i.id for i in n.inputs), n.attr("length"), n.attr("reverse"), n.attr("start"))


def share_histories(outs: Sequence[Node]) -> list[Node]:
    """``outs`` where a scan whose history scan (same inputs) is also computed reads its value from it."""
    order = toposort(outs)
    hists = {_loop_key(n, n.attr("body").derived[1]): n for n in order
             if n.op is scan and n.attr("body").derived and n.attr("body").derived[0] == "history"}
    if not hists:
        return list(outs)
    mapping = {}
    for n in order:
        if n.op is scan:
            h = hists.get(_loop_key(n, n.attr("body")))
            if h is not None:
                mapping[n.id] = _projection(h, n)
    return _derive_loops.rebuild(list(outs), mapping) if mapping else list(outs)
