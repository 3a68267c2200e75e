"""``torch.return_types``: the named pairs ``max(dim)``, ``min(dim)``, ``sort``, ``topk`` (values, indices) and
``aminmax`` (min, max) return."""
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


class sort(_ValuesIndices):  # noqa: N801
    __slots__ = ()


class topk(_ValuesIndices):  # noqa: N801
    __slots__ = ()


class aminmax(tuple):  # noqa: N801
    """``torch.return_types.aminmax``: a tuple ``(min, max)`` with those two names."""

    __slots__ = ()
    n_fields = n_sequence_fields = 2
    n_unnamed_fields = 0

    def __new__(cls, min: Any, max: Any = None) -> aminmax:  # noqa: A002
        if max is None:
            min, max = min
        return super().__new__(cls, (min, max))

    @property
    def min(self) -> Any:
        return self[0]

    @property
    def max(self) -> Any:
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"

    def __reduce__(self) -> Any:
        return (type(self), (self[0], self[1]))


RETURN_TYPES = {"max": max, "min": min, "sort": sort, "topk": topk, "aminmax": aminmax}
