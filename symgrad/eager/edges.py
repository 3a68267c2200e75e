"""The inputs torch shows for a composite's last node: a composite of symgrad's registry ops that stands for one
torch node (``linear``'s ``AddmmBackward0``, a loss, a norm) lists that node's inputs (``set_edges``) in
``grad_fn.next_functions`` and in its hooks' ``grad_inputs``; its inner nodes are not shown."""
from __future__ import annotations

import weakref
from typing import Any

from ..core.graph import Node

#: the last node of a composite that stands for one torch node -> that node's inputs (None: one torch lists that does
#: not come from a tensor of the graph); its inner nodes are not shown (``set_edges``)
_EDGES: weakref.WeakKeyDictionary[Node, tuple[Node | None, ...]] = weakref.WeakKeyDictionary()


def set_edges(out: Any, *inputs: Any) -> Any:
    """Show ``out``'s grad_fn with torch's inputs ``inputs`` (tensors, or None): ``next_functions`` and the
    ``grad_inputs`` of its hooks are theirs, the composite's inner nodes in between are not shown. Returns ``out``."""
    node = getattr(out, "_node", None)
    if node is not None:
        _EDGES[node] = tuple(None if t is None else getattr(t, "_node", None) for t in inputs)
    return out


def torch_inputs(node: Node) -> list[Node | None]:
    """The inputs torch's node lists for ``node`` (``next_functions`` order): those ``set_edges`` gave, else the
    inputs the op differentiates (not where's condition, not max(dim)'s indices)."""
    edges = _EDGES.get(node)
    if edges is not None:
        return list(edges)
    diff = node.op.diff_args
    return [x for k, x in enumerate(node.inputs) if diff is None or k in diff]
