"""Pytrees (``torch.utils._pytree``): nested tuples, lists, dicts and namedtuples flattened to leaves and back."""
from __future__ import annotations

from typing import Any, Sequence


class TreeSpec:
    """The structure of a nested tuple / list / dict: torch's ``TreeSpec`` (its repr is in vmap's errors)."""

    def __init__(self, kind: type | None, context: Any = None, children: Sequence[TreeSpec] = ()) -> None:
        self.type, self.context, self.children = kind, context, list(children)

    @property
    def is_leaf(self) -> bool:
        return self.type is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children == other.children)

    def __repr__(self, indent: int = 0) -> str:
        if self.is_leaf:
            return "*"
        text = ""
        if self.children:
            indent += 2
            text = self.children[0].__repr__(indent) + ("," if len(self.children) > 1 else "")
            text += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children[1:])
        return f"TreeSpec({self.type.__name__}, {self.context}, [{text}])"


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x: Any) -> tuple[list, Any] | None:
    """(children, context) of a container pytrees descend into; None for a leaf."""
    if _is_namedtuple(x):
        return list(x), type(x)
    if type(x) in (tuple, list):
        return list(x), None
    if isinstance(x, dict):
        return list(x.values()), list(x.keys())
    return None


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (left to right) and its structure."""
    node = _children(tree)
    if node is None:
        return [tree], TreeSpec(None)
    kids, context = node
    leaves: list = []
    specs = []
    for k in kids:
        sub, spec = tree_flatten(k)
        leaves += sub
        specs.append(spec)
    return leaves, TreeSpec(type(tree), context, specs)


def tree_unflatten(leaves: Sequence[Any], spec: TreeSpec) -> Any:
    """The tree of structure ``spec`` holding ``leaves``."""
    it = iter(leaves)

    def build(s: TreeSpec) -> Any:
        if s.is_leaf:
            return next(it)
        kids = [build(c) for c in s.children]
        if s.type is dict or (isinstance(s.type, type) and issubclass(s.type, dict)):
            return s.type(zip(s.context, kids))
        if s.type not in (tuple, list):  # a namedtuple
            return s.type(*kids)
        return s.type(kids)
    return build(spec)
