"""``torch.return_types``: the named (values, indices) pairs that ``max(dim)`` and ``min(dim)`` return."""
from __future__ import annotations

from typing import Any


class _ValuesIndices(tuple):
    """A tuple ``(values, indices)`` with those two names, printed as torch prints it."""

    __slots__ = ()
    n_fields = n_sequence_fields = 2
    n_unnamed_fields = 0

    def __new__(cls, values: Any, indices: Any = None) -> _ValuesIndices:
        if indices is None:  # torch.return_types.max((values, indices))
            values, indices = values
        return super().__new__(cls, (values, indices))

    @property
    def values(self) -> Any:  # type: ignore[override]
        return self[0]

    @property
    def indices(self) -> Any:
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.{type(self).__name__}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    def __reduce__(self) -> Any:
        return (type(self), (self[0], self[1]))


class max(_ValuesIndices):  # noqa: A001, N801
    __slots__ = ()


class min(_ValuesIndices):  # noqa: A001, N801
    __slots__ = ()


RETURN_TYPES = {"max": max, "min": min}
