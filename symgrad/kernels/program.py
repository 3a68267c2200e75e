"""The one kernel pipeline: a derived graph -> simplified -> lowered -> generated numpy code (the first tier) ->
the fused numba kernel of the same IR once the program is hot.

Eager ``backward()`` (one program per graph structure), ``@sg.compile`` (one per signature) and the derivative
transforms (one per sweep batch) all build a ``Program``; they differ only in how they call it.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Sequence

import numpy as np

from codegen import emit_numpy, load_kernel

from ..core.graph import Node, toposort
from ..derive.simplify import simplify_graph
from ..ops import source as _src
from .loops import share_histories
from .lower import lower

log = logging.getLogger("symgrad")

#: "numba" (the fused kernels once hot) or "numpy" (the generated numpy code only); ``SYMGRAD_BACKEND``
BACKEND = os.environ.get("SYMGRAD_BACKEND", "numba")
#: calls of a compiled signature before its numba kernel takes over
HOT_CALLS = 2
#: backward() calls over one eager graph structure before it moves to a numba kernel (0: never)
EAGER_JIT_AFTER = int(os.environ.get("SYMGRAD_EAGER_JIT_AFTER", "50")) or 1 << 62


def set_backend(name: str) -> None:
    """Choose what runs hot programs: ``"numba"`` (default) or ``"numpy"`` (the generated numpy code only)."""
    global BACKEND
    if name not in ("numba", "numpy"):
        raise ValueError(f"backend must be 'numba' or 'numpy', not {name!r}")
    BACKEND = name


def get_backend() -> str:
    return BACKEND


class Program:
    """Generated code computing ``outs`` from the parameter nodes ``params``.

    ``params`` are ``(node, group, index)`` triples: the kernel reads ``arrays[group][index]``. With
    ``const_group``, the constant nodes the outputs read become further parameters of that group (their values
    in ``consts``), so the kernel text carries no data. ``fn`` is the numpy kernel (it takes one list per group);
    ``numba()`` the numba kernel of the same IR (compiled once, ``None`` if numba refuses the IR: the numpy kernel
    then stays in use, and ``numba_error`` says why).
    """

    def __init__(self, name: str, params: Sequence[tuple[Node, str, int]], outs: Sequence[Node], *, doc: str,
                 prefix: str, groups: tuple[str, ...] = ("v",), const_group: str | None = "v",
                 simplify: bool = True, hot_after: int | None = None) -> None:
        t0 = time.perf_counter()
        outs = simplify_graph(list(outs)) if simplify else list(outs)
        outs = share_histories(outs)
        params = list(params)
        self.consts: list[np.ndarray] = []
        if const_group is not None:
            pids = {p.id for p, _, _ in params}
            start = sum(1 for _, g, _ in params if g == const_group)
            consts = [n for n in toposort(outs, stop=lambda n: n.id in pids) if n.op is _src.const]
            params += [(c, const_group, start + k) for k, c in enumerate(consts)]
            self.consts = [np.asarray(c.value) for c in consts]
        self.outs = outs
        self.kernel, self.reads = lower(name, params, outs, doc=doc, groups=groups)
        self.source = emit_numpy(self.kernel)
        self.fn, self.path = load_kernel(self.source, self.kernel.name, prefix=prefix)
        self.specs = [(o.dtype, o.shape) for o in outs]
        self.hot_after = HOT_CALLS if hot_after is None else hot_after
        self.calls = 0
        self.jit: Callable | None = None
        self.jit_source = ""
        self.numba_error: str | None = None
        self.build_s = time.perf_counter() - t0

    # ------------------------------------------------------------------ tiers
    def hot(self) -> bool:
        """Count a call; whether it should run the numba kernel (hot, and the numba backend chosen)."""
        self.calls += 1
        return self.calls >= self.hot_after and BACKEND == "numba"

    def numba(self) -> Callable | None:
        """The numba kernel, compiled on first use; None where the numba emitter refuses this IR."""
        if self.jit is None and self.numba_error is None:
            from codegen.numba import emit_numba  # deferred: imports numba
            t0 = time.perf_counter()
            try:
                src = emit_numba(self.kernel)
                self.jit, path = load_kernel(src, self.kernel.name, prefix="numba")
                self.jit_source = src
                log.debug("numba kernel %s after %d calls: %s (%.1f ms)", self.kernel.name, self.calls, path,
                          1e3 * (time.perf_counter() - t0))
            except Exception as exc:  # noqa: BLE001 - the numpy kernel stays in use, loudly in the log
                self.numba_error = str(exc)
                self.jit_source = f"# numba backend unavailable: {exc}"
                log.debug("numba kernel for %s not available (%s); the numpy kernel stays in use",
                          self.kernel.name, exc)
        return self.jit

    def args(self, groups: dict[str, Sequence[Any]]) -> list[Any]:
        """The numba kernel's positional arguments, picked from the per-group lists."""
        return [groups[q.group][q.index] for q in self.kernel.params]

    def run(self, groups: dict[str, Sequence[Any]]) -> Any:
        """One call: the numpy kernel at first, the numba kernel once hot (raw kernel results)."""
        jit = self.numba() if self.hot() else None
        if jit is not None:
            return jit(*self.args(groups))
        return self.fn(*(groups[g] for g in self.kernel.groups))
