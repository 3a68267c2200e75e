"""Anomaly mode's backward check: which function returned NaN.

The eager engine runs a whole backward as one generated program, so the check is a separate pass, run only
in anomaly mode with ``check_nan``: the adjoint of every node on the way to the differentiated inputs is
evaluated (``backward_create_graph`` under ``no_grad``, numpy only), and the first node in torch's execution
order (latest recorded first) whose own contribution to an input holds a NaN is reported as torch does:
``RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.``, after the warning with
the traceback of the forward call that recorded it.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from ..core.graph import Node, toposort
from ..ops import source as _src
from .anomaly import _MODE, warn_forward
from .create_graph import backward_create_graph
from .grad_mode import no_grad

log = logging.getLogger("symgrad")


def _has_nan(t: Any) -> bool:
    if t is None:
        return False
    data = np.asarray(t._data)
    return data.dtype.kind in "fc" and bool(np.isnan(data).any())


def _outputs(node: Node) -> list[int]:
    """Positions of the inputs the node's backward returns gradients for, in torch's output order
    (``next_functions``)."""
    diff = node.op.diff_args
    return [k for k in range(len(node.inputs)) if diff is None or k in diff]


def _local_vjp(node: Node, g: Any) -> list[Any]:
    """The node's own contributions to its inputs' gradients for the upstream gradient ``g``: the rule
    evaluated on a copy of the node whose inputs are leaves (nothing flows past them)."""
    cut_inputs = tuple(Node(_src.leaf, (), (), x.shape, x.dtype, value=x.value, requires_grad=True)
                       if x.requires_grad else x for x in node.inputs)
    cut = Node(node.op, cut_inputs, node.attrs, node.shape, node.dtype, value=node.value, requires_grad=True)
    seed = np.asarray(g._data, dtype=node.dtype.np)
    if seed.shape != node.shape:
        seed = np.broadcast_to(seed, node.shape).copy()
    wrt = [c for c in cut_inputs if c.requires_grad]
    got = dict(zip((c.id for c in wrt), backward_create_graph([cut], [seed], wrt)))
    return [got.get(c.id) for c in cut_inputs]


def _first_nan(roots: Sequence[Node], seeds: Sequence[np.ndarray], order: Sequence[Node],
               needed: set[int]) -> tuple[Node, int] | None:
    """The first node (torch's order) whose backward returns a NaN, and which output holds it."""
    nodes = [n for n in order if n.id in needed]
    with no_grad(), np.errstate(all="ignore"):
        totals = backward_create_graph(list(roots), list(seeds), nodes)
        adj = {n.id: t for n, t in zip(nodes, totals)}
        for n in sorted(nodes, key=lambda m: -m.id):  # torch runs the latest recorded node first
            if n.op.family == "source" or (n.op.name == "clone" and n.attr("saved")) or adj.get(n.id) is None:
                continue
            if not any(_has_nan(adj.get(x.id)) for x in n.inputs if x.id in needed):
                continue  # no NaN below: this rule returned none
            contribs = _local_vjp(n, adj[n.id])
            for k, pos in enumerate(_outputs(n)):
                if n.inputs[pos].id in needed and _has_nan(contribs[pos]):
                    return n, k
    return None


def check_backward(roots: Sequence[Node], seeds: Sequence[np.ndarray], wrt: Sequence[Node]) -> None:
    """In anomaly mode with ``check_nan``: raise torch's error if a backward function on the way from
    ``roots`` to ``wrt`` returns NaN. Does nothing otherwise (one flag test)."""
    if not (_MODE["enabled"] and _MODE["check_nan"]):
        return
    order = toposort(roots, stop=lambda n: not n.requires_grad)
    if any(n.freed for n in order):
        return  # the engine raises torch's error for a freed graph
    wrt_ids = {w.id for w in wrt}
    needed: set[int] = set()
    for n in order:  # inputs before users: a node runs when a differentiated input lies below it
        if n.id in wrt_ids or any(x.id in needed for x in n.inputs if x.requires_grad):
            needed.add(n.id)
    try:
        found = _first_nan(roots, seeds, order, needed)
    except Exception:  # noqa: BLE001 - a graph this pass can't evaluate (Python backward code): the engine decides
        log.debug("anomaly mode: the NaN check could not evaluate this graph", exc_info=True)
        return
    if found is not None:
        n, k = found
        name = n.fn.name() if n.fn is not None else n.op.grad_fn_name(dict(n.attrs))
        warn_forward(n, name)
        raise RuntimeError(f"Function '{name}' returned nan values in its {k}th output.")
