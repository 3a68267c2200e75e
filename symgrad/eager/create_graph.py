"""``create_graph=True``: the derivative DAG evaluated eagerly as recorded tensor ops, so it can be
differentiated again."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.graph import Node, toposort
from ..derive.reverse import backward_graph
from ..ops import source as _src
from .base import make_tensor
from .record import _apply

if TYPE_CHECKING:
    pass


def backward_create_graph(roots: Sequence[Node], seeds: Sequence[np.ndarray], wrt: Sequence[Node],
                          grad_tensors: Sequence[Any] | None = None, cut: frozenset[int] | set[int] = frozenset()
                          ) -> list:
    """The gradients of ``roots`` (cotangents ``seeds``) w.r.t. ``wrt`` as recorded tensors. A cotangent given
    as a tensor that requires grad (``grad_tensors``) enters the recorded graph itself, so the gradients
    depend on it differentiably (torch's double-backward trick)."""
    seed_nodes = [Node(_src.const, (), (), s.shape, dtypes.from_numpy_dtype(s.dtype), value=s) for s in seeds]
    grads, _ = backward_graph(roots, seed_nodes, wrt, cut=cut)  # nothing flows past ``cut`` (the engine's splits)
    forward = {n.id for n in toposort(roots, stop=lambda n: not n.requires_grad or n.id in cut)}
    known = {s.id: make_tensor(s.value) for s in seed_nodes}
    for s, g in zip(seed_nodes, grad_tensors or ()):
        if getattr(g, "requires_grad", False) and tuple(g.shape) == s.shape and g._data.dtype == s.value.dtype:
            known[s.id] = g
    todo = [g for g in grads if g is not None]

    def stop(n: Node) -> bool:
        return n.id in forward or n.id in known

    for n in toposort(todo, stop=stop):
        if n.id in known:
            continue
        if n.id in forward:
            # the forward value under its own version counter, so rules that save it check the right one
            known[n.id] = make_tensor(n.value, _node=n if n.requires_grad else None, _version=n.storage)
            continue
        if n.op is _src.scalar:
            known[n.id] = n.attr("value")
            continue
        args = [known[i.id] for i in n.inputs]
        known[n.id] = _apply(n.op, *args, **dict(n.attrs))
    out = []
    for w, g in zip(wrt, grads):
        if g is None:
            # zeros where the graph reaches ``w`` but its gradient is structurally zero, as in torch
            out.append(make_tensor(np.zeros(w.shape, dtype=w.dtype.np)) if w.id in forward else None)
            continue
        t = known[g.id]
        if t.dtype is not w.dtype:
            t = t.to(w.dtype)
        if not t.requires_grad and any(t is o for o in out):
            t = make_tensor(t._data.copy())  # two inputs with one adjoint: separate gradients
        out.append(t)
    return out
