"""The order torch's CPU ``topk`` leaves tied values in: its kernel (ATen's ``topk_impl_loop``) runs libstdc++'s
``std::partial_sort`` (``k * 64 <= n``) or ``std::nth_element`` followed by ``std::sort`` of the first ``k - 1``
on ``(value, index)`` pairs compared by value alone, so which of equal values come out, and in what order, is
whatever those unstable algorithms do. This module re-runs them (GCC's introselect, introsort, heap select and
insertion sorts, step for step) on one slice; ``topk`` calls it only for slices where ties can matter."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

Comp = Callable[[Any, Any], bool]


def _comparator(largest: bool) -> Comp:
    """torch's: NaN counts as the largest value."""
    if largest:
        return lambda x, y: (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]
    return lambda x, y: (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]


def _lg(n: int) -> int:
    return n.bit_length() - 1


def _unguarded_linear_insert(q: list, last: int, comp: Comp) -> None:
    val, nxt = q[last], last - 1
    while comp(val, q[nxt]):
        q[last] = q[nxt]
        last, nxt = nxt, nxt - 1
    q[last] = val


def _insertion_sort(q: list, first: int, last: int, comp: Comp) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if comp(q[i], q[first]):
            val = q[i]
            q[first + 1:i + 1] = q[first:i]
            q[first] = val
        else:
            _unguarded_linear_insert(q, i, comp)


def _move_median_to_first(q: list, result: int, a: int, b: int, c: int, comp: Comp) -> None:
    if comp(q[a], q[b]):
        pick = b if comp(q[b], q[c]) else c if comp(q[a], q[c]) else a
    else:
        pick = a if comp(q[a], q[c]) else c if comp(q[b], q[c]) else b
    q[result], q[pick] = q[pick], q[result]


def _unguarded_partition(q: list, first: int, last: int, pivot: int, comp: Comp) -> int:
    while True:
        while comp(q[first], q[pivot]):
            first += 1
        last -= 1
        while comp(q[pivot], q[last]):
            last -= 1
        if not first < last:
            return first
        q[first], q[last] = q[last], q[first]
        first += 1


def _partition_pivot(q: list, first: int, last: int, comp: Comp) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(q, first, first + 1, mid, last - 1, comp)
    return _unguarded_partition(q, first + 1, last, first, comp)


def _push_heap(q: list, base: int, hole: int, top: int, value: Any, comp: Comp) -> None:
    parent = (hole - 1) // 2
    while hole > top and comp(q[base + parent], value):
        q[base + hole] = q[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[base + hole] = value


def _adjust_heap(q: list, base: int, hole: int, length: int, value: Any, comp: Comp) -> None:
    top = second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if comp(q[base + second], q[base + second - 1]):
            second -= 1
        q[base + hole] = q[base + second]
        hole = second
    if length % 2 == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        q[base + hole] = q[base + second - 1]
        hole = second - 1
    _push_heap(q, base, hole, top, value, comp)


def _make_heap(q: list, first: int, last: int, comp: Comp) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(q, first, parent, length, q[first + parent], comp)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(q: list, first: int, last: int, result: int, comp: Comp) -> None:
    value = q[result]
    q[result] = q[first]
    _adjust_heap(q, first, 0, last - first, value, comp)


def _heap_select(q: list, first: int, middle: int, last: int, comp: Comp) -> None:
    _make_heap(q, first, middle, comp)
    for i in range(middle, last):
        if comp(q[i], q[first]):
            _pop_heap(q, first, middle, i, comp)


def _partial_sort(q: list, first: int, middle: int, last: int, comp: Comp) -> None:
    _heap_select(q, first, middle, last, comp)
    while middle - first > 1:
        middle -= 1
        _pop_heap(q, first, middle, middle, comp)


def _nth_element(q: list, first: int, nth: int, last: int, comp: Comp) -> None:
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(q, first, nth + 1, last, comp)
            q[first], q[nth] = q[nth], q[first]
            return
        depth -= 1
        cut = _partition_pivot(q, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last, comp)


def _introsort_loop(q: list, first: int, last: int, depth: int, comp: Comp) -> None:
    while last - first > 16:
        if depth == 0:
            _partial_sort(q, first, last, last, comp)
            return
        depth -= 1
        cut = _partition_pivot(q, first, last, comp)
        _introsort_loop(q, cut, last, depth, comp)
        last = cut


def _sort(q: list, first: int, last: int, comp: Comp) -> None:
    if first == last:
        return
    _introsort_loop(q, first, last, 2 * _lg(last - first), comp)
    if last - first > 16:
        _insertion_sort(q, first, first + 16, comp)
        for i in range(first + 16, last):
            _unguarded_linear_insert(q, i, comp)
    else:
        _insertion_sort(q, first, last, comp)


def topk_indices(row: np.ndarray, k: int, largest: bool, sorted: bool) -> np.ndarray:  # noqa: A002
    """The ``k`` indices torch's CPU ``topk`` returns for the 1-d ``row``, in its order."""
    n = row.shape[0]
    if k == 0:
        return np.zeros(0, np.int64)
    comp = _comparator(largest)
    values = row.astype(np.float64) if row.dtype.kind == "f" else row.astype(np.int64)
    q = list(zip(values.tolist(), range(n)))
    if k * 64 <= n:
        _partial_sort(q, 0, k, n, comp)
    else:
        _nth_element(q, 0, k - 1, n, comp)
        if sorted:
            _sort(q, 0, k - 1, comp)
    return np.fromiter((j for _, j in q[:k]), np.int64, k)


def rows_with_ties(rows: np.ndarray) -> np.ndarray:
    """Which rows of the 2-d ``rows`` hold two elements that compare equal (two NaNs included): the order torch
    leaves those in is its algorithms' choice."""
    s = np.sort(rows, axis=1)
    tied = (s[:, 1:] == s[:, :-1]).any(axis=1)
    if s.dtype.kind == "f":
        tied |= np.isnan(s).sum(axis=1) > 1
    return tied


def topk_order(x: np.ndarray, dim: int, k: int, largest: bool, sorted: bool,  # noqa: A002
               order: np.ndarray) -> np.ndarray:
    """``order`` (a stable sort's first ``k`` indices along ``dim`` of ``x``) with torch's choice in the slices
    where it differs: those with ties, and every slice when ``sorted`` is false."""
    n = x.shape[dim]
    rows = np.moveaxis(x, dim, -1).reshape(-1, n)
    out = np.moveaxis(order, dim, -1).reshape(-1, k).copy()
    redo = np.ones(rows.shape[0], bool) if not sorted else rows_with_ties(rows)
    for r in np.flatnonzero(redo):
        out[r] = topk_indices(rows[r], k, largest, sorted)
    return np.moveaxis(out.reshape(np.moveaxis(x, dim, -1).shape[:-1] + (k,)), -1, dim)
