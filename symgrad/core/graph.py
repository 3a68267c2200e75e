"""The expression DAG: immutable nodes (op, inputs, attrs, shape, dtype) and iterative traversal."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from ..ops.base import OpDef
    from .dtypes import DType

_ids = itertools.count()


class Node:
    """One SSA value of the DAG.

    ``value`` is the numpy value recorded in eager mode (None while tracing); ``version`` is the
    storage version of that value when it was recorded, checked again at backward time.
    """

    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "value", "version", "name", "id",
                 "requires_grad", "storage", "fn", "freed", "saved", "__weakref__")

    def __init__(self, op: OpDef, inputs: tuple[Node, ...], attrs: tuple[tuple[str, Any], ...],
                 shape: tuple[int, ...], dtype: DType, *, value: Any = None,
                 requires_grad: bool = False, name: str | None = None) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.version = 0
        self.storage = None
        self.name = name
        self.requires_grad = requires_grad
        self.fn = None
        self.freed = False
        self.saved = None  # eager: per input, what torch's SavedVariable keeps (``eager.record.SAVED_INPUTS``)
        self.id = next(_ids)

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        ins = ", ".join(f"%{i.id}" for i in self.inputs)
        at = "".join(f", {k}={v}" for k, v in self.attrs)
        return f"%{self.id} = {self.op.name}({ins}{at}) : {self.dtype.name}{list(self.shape)}"


def toposort(roots: Iterable[Node], stop: Any = None) -> list[Node]:
    """Nodes reachable from ``roots`` with inputs before users, in a deterministic order.

    ``stop(node)`` true means: include the node but do not descend into its inputs.
    """
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if root.id in seen:
            continue
        seen.add(root.id)
        # (node, iterator over the inputs left to visit): ``stop`` runs once per node
        stack = [(root, iter(() if stop is not None and stop(root) else root.inputs))]
        while stack:
            node, rest = stack[-1]
            for child in rest:
                if child.id not in seen:
                    seen.add(child.id)
                    stack.append((child, iter(() if stop is not None and stop(child) else child.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def substitute(root: Node, mapping: dict[int, Node], forbidden: frozenset[int] | set[int] = frozenset(),
               what: str = "") -> Node:
    """``root`` with the nodes of ``mapping`` (by id) replaced: a rebuilt copy of what depends on them.

    With ``forbidden``, the whole graph below ``root`` is walked and reaching one of those ids raises
    ``ValueError(what)``; without, the walk stops at the replaced nodes.
    """
    done: dict[int, Node] = {}
    stop = None if forbidden else (lambda m: m.id in mapping)
    for n in toposort([root], stop=stop):
        if n.id in forbidden:
            raise ValueError(what)
        if n.id in mapping:
            done[n.id] = mapping[n.id]
            continue
        ins = tuple(done[i.id] for i in n.inputs)
        if all(a is b for a, b in zip(ins, n.inputs)):
            done[n.id] = n
            continue
        diff = n.op.diff_args
        rg = any(x.requires_grad for i, x in enumerate(ins) if diff is None or i in diff)
        done[n.id] = Node(n.op, ins, n.attrs, n.shape, n.dtype, requires_grad=rg)
    return done[root.id]
