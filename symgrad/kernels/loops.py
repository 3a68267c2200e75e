"""Loops in kernels: a scan node lowers to ``ir.Scan`` with its step as a kernel of its own, and a loop and its
history scan over the same inputs share one run."""
from __future__ import annotations

from typing import Sequence

from codegen import ir

from ..core.graph import Node, toposort
from ..derive import loops as _derive_loops
from ..derive.simplify import simplify_graph
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


def lower_scan(node: Node, target: str, args: list[str]) -> list:
    body: Body = node.attr("body")
    kernel = step_kernel(body, f"{target}_step")
    xs = args[1] if body.x is not None else None
    consts = tuple(args[2:] if body.x is not None else args[1:])
    cond = step_kernel(body, f"{target}_cond", cond=True) if body.cond is not None else None
    acc = body.carry_width - body.accumulates[0] if body.accumulates is not None else 0
    return [ir.Scan(target, kernel, args[0], xs, consts, node.attr("length"), node.attr("reverse"),
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
    rows = _derive_loops.reshape(_derive_loops.piece(hist, wc, wc + n * (wy + wc)), (n, wy + wc))
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
