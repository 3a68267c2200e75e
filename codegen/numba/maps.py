"""Index maps and extent classes: how the numba planner relates the elements and the extents of values.

Index maps
----------
A view (``Broadcast``, ``Transpose``, ``Index``, a size-1 ``Reshape`` or reduction) maps each index of
its base to an expression of the view's own index, one component per base dim:

* ``("d", j)``: the view's dim j;
* ``("c", k)``: the constant k;
* ``("a", inner, start, step)``: ``start + step * inner``; ``start`` an int or ``("neg", cls, k)``,
  ``max(n + k, 0)`` for the run-time extent n of class ``cls``;
* ``("g", name, comps)``: ``name[comps...]``, a module-level constant integer array (integer-array indexing).

Maps compose (``compose``), so a chain of views becomes one read of the array at its root.

Extent classes
--------------
``Classes`` is a union-find over dims that an operation proves equal at run time, each class with the
ways to compute its extent from the arguments (a param dim, a slice or a product of other classes...).
"""
from __future__ import annotations

from typing import Any


def subst(c: tuple, sub: list[tuple]) -> tuple:
    """``c`` (over a view's dims) with each ("d", j) replaced by ``sub[j]``."""
    k = c[0]
    if k == "d":
        return sub[c[1]]
    if k == "c":
        return c
    if k == "a":
        inner = subst(c[1], sub)
        if inner[0] == "c" and isinstance(c[2], int):
            return ("c", c[2] + c[3] * inner[1])
        return ("a", inner, c[2], c[3])
    return ("g", c[1], tuple(subst(x, sub) for x in c[2]))


def compose(outer: tuple, inner: tuple) -> tuple:
    """Map of base(view(x)) when ``outer`` maps the base from the view and ``inner`` the view from x."""
    return tuple(subst(c, list(inner)) for c in outer)


def dims_of(c: tuple) -> set[int]:
    k = c[0]
    if k == "d":
        return {c[1]}
    if k == "c":
        return set()
    if k == "a":
        return dims_of(c[1])
    out: set[int] = set()
    for x in c[2]:
        out |= dims_of(x)
    return out


def identity(ndim: int) -> tuple:
    """The map of a value read at its own element."""
    return tuple(("d", j) for j in range(ndim))


def align(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple:
    """The broadcasting map: reading a value of shape ``src`` at an element of shape ``dst``."""
    lead = len(dst) - len(src)
    if lead < 0:
        raise ValueError(f"cannot broadcast shape {src} to {dst}")
    return tuple(("c", 0) if s == 1 else ("d", d + lead) for d, s in enumerate(src))


# =========================================================================== extent classes


class Classes:
    """Union-find over dims known to have equal run-time extents, each with ways to compute it."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[int] = []
        self.sources: list[list[tuple]] = []

    def new(self, size: int, source: tuple | None = None) -> int:
        self.parent.append(len(self.parent))
        self.size.append(int(size))
        self.sources.append([source] if source else [])
        return len(self.parent) - 1

    def find(self, c: int) -> int:
        while self.parent[c] != c:
            self.parent[c] = self.parent[self.parent[c]]
            c = self.parent[c]
        return c

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.sources[ra].extend(self.sources[rb])
        self.sources[rb] = []
        return ra

    def close(self) -> None:
        """Unify classes derived alike from equal classes (the same slice of the same extent)."""
        while self._close_once():
            pass

    def _close_once(self) -> bool:
        seen: dict = {}
        for c in range(len(self.parent)):
            if self.find(c) != c:
                continue
            for s in self.sources[c]:
                if s[0] == "slice":
                    key = ("slice", self.find(s[1]), *s[2:])
                elif s[0] == "prod":
                    key = ("prod", *(self.find(x) for x in s[1]))
                else:
                    continue
                if key in seen and self.find(seen[key]) != c:
                    self.union(seen[key], c)
                    return True
                seen.setdefault(key, c)
        return False


def slice_start(start: int | None, cls: int) -> Any:
    """The start component of a slice of an extent of class ``cls``: an int, or ``("neg", cls, start)``."""
    if start is None or start >= 0:
        return int(start or 0)
    return ("neg", cls, int(start))

