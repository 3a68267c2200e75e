"""Eager loops: a scan node's value comes from a cached ``Program`` of that one node (numba once hot)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.graph import Node
from ..ops import source as _src
from ..ops.loop import EVALUATE, Body, scan
from .program import Program

_PROGRAMS: dict[tuple, Any] = {}


def evaluate(arrays: Sequence[Any], body: Body, length: int, reverse: bool, start: int) -> np.ndarray:
    """An eager scan node's value: one Program per (body, loop, argument shapes), hot after a few calls."""
    arrays = [np.asarray(a) for a in arrays]
    key = (id(body), length, reverse, start, tuple((a.shape, a.dtype.str) for a in arrays))
    prog = _PROGRAMS.get(key)
    if prog is None:
        leaves = [Node(_src.leaf, (), (), a.shape, dtypes.from_numpy_dtype(a.dtype)) for a in arrays]
        out = Node(scan, tuple(leaves), (("body", body), ("length", length), ("reverse", reverse),
                                         ("start", start)), *scan.infer(scan, *leaves, body=body, length=length,
                                                                        reverse=reverse, start=start))
        prog = Program("scan", [(lv, "v", i) for i, lv in enumerate(leaves)], [out], doc=f"loop of {body.label}",
                       prefix="loop", const_group=None)
        prog.body = body     # keeps the body (and so the key's id) alive as long as the program
        _PROGRAMS[key] = prog
    (value,) = prog.run({"v": arrays})
    return np.asarray(value)


EVALUATE[:] = [evaluate]
