"""Emission of a ``Kernel`` as one fused, ``numba.njit``-ed Python function: the numba backend's entry point.

API
---
``emit_numba(kernel, *, parallel_threshold=1 << 17, vector_threshold=VECTOR_THRESHOLD,
out_params=()) -> str`` returns the source of a module that defines ``def {kernel.name}(p0, p1,
...)``: one positional argument per ``kernel.params`` entry, in order, named by the param names.
Arguments are numpy arrays (a 0-d param may also be a Python or numpy scalar). It returns a tuple
with one entry per ``kernel.outputs`` name, in order: a freshly allocated numpy array for an output
with one or more dims (a param returned as an output is returned as given, as ``emit_numpy`` does),
and **a Python scalar for a 0-d output** (``float``, ``int`` or ``bool``: numba boxes numpy scalars
so). Its value is one of the output dtype (a float32 result is rounded to float32 before boxing), so
``numpy.float32(v)`` recovers it exactly; a 0-d array would cost ~0.7 µs more per call. The function
is decorated with ``@numba.njit(cache=True, error_model="numpy"[, parallel=True])`` so that,
imported from a real file (``codegen.cache.load_kernel``), numba's on-disk cache serves later
processes. ``error_model="numpy"`` gives numpy's results for ``1/0`` (inf) and ``0/0`` (nan) instead
of ``ZeroDivisionError``.

With ``out_params`` (output positions) the function takes one more argument per position, the
caller's array for that output, and writes the outputs it allocates into them (``render``'s
``out=`` form; ``symgrad``'s ``out=`` gradients).

Parts
-----
* ``stencil``: 1-d stencils (step-1 slices ``x[a:-b]`` and their scatter-add adjoints) in one pass,
  scatters turned into guarded gathers; any other kernel goes to the general emitter below.
* ``plan``: the statements placed in a tree of loop nests (fusion rules), through the tables
  ``STATEMENTS`` and ``REDUCTIONS``; ``maps``: the index maps and extent classes it works with.
* ``render``: the tree printed (loops and threads, vectorised transcendentals by ``vmath``),
  through the table ``OPS``; ``printer``: one element's scalar code.
* ``folds``: max/min/prod reductions, ``ArgReduce``, ``CumSum``, ``Concat``, joined into the three
  tables here. A statement type no table takes raises ``ir.Unsupported``, as does IR the emitter
  refuses (batched matmul, a matrix product large enough for BLAS): callers keep the numpy kernel.

An extent no param determines (a dim that only ``Broadcast`` or a scatter target adds) reads the
first param dim of the same size, and the split side of a ``Reshape`` is the merged extent divided
by the rest: callers run a source only on arrays of the sizes it was emitted for (they key kernels
by exact shapes), where these are equal, and the text stays the same for every size. A ``Size``
statement (a count, ``mean``'s ``1/n``) is a 0-d value computed from extents before the loops.

Limits
------
An extent no param matches stays a literal. Integer indices are normalised by the IR (``x[-1]``
reads ``v0[9]``), and the serial / ``prange`` choice depends on the sizes, so those specialise
the source. A row read by a sibling inner loop is
still stored in a full array. Transcendental functions are libm calls (no SVML here) except in
the vectorised passes above; passes with inner loops (row reductions, matmul rows) keep them.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import ir
from . import blas, folds, loops, plan, render
from .render import VECTOR_THRESHOLD
from .stencil import emit_stencil

__all__ = ["emit_numba", "STATEMENTS", "REDUCTIONS", "OPS"]

#: How each IR statement type is planned (every type of ``ir.STATEMENTS``).
STATEMENTS = {**plan.STATEMENTS, **folds.STATEMENTS, ir.MatMul: blas.plan_matmul,
              ir.Scan: lambda em, st: loops.plan_scan(em, st, emit_numba)}

#: How each ``Reduce`` kind is placed.
REDUCTIONS = {**plan.REDUCTIONS, **folds.REDUCTIONS}

#: How each kind of planned op is printed.
OPS = {**render.OPS, **folds.OPS}


def emit_numba(kernel: ir.Kernel, *, parallel_threshold: int = 1 << 17,
               vector_threshold: int | None = VECTOR_THRESHOLD, out_params: Sequence[int] = (),
               nogil: bool = False) -> str:
    """Source of a module defining ``kernel`` as one fused ``numba.njit(cache=True)`` function.

    See the module docstring for the calling convention; ``vector_threshold`` is the size from which
    a pass may use ``vmath`` (``None``: never), ``out_params`` the output positions written into
    extra arguments (the ``out=`` form), ``nogil`` makes the entry release the GIL (kernels called from
    several threads: Dask's chunk kernels). The text is a pure function of the arguments. Raises
    ``ir.Unsupported`` for IR it does not take.
    """
    src = emit_stencil(kernel, parallel_threshold, out_params)
    if src is None:
        planner = plan.Planner(kernel, STATEMENTS, REDUCTIONS)
        planner.plan()
        src = render.Renderer(planner, parallel_threshold, vector_threshold, OPS, out_params).render()
    # the functions decorated with ``cache=True`` are the ones called from Python (chunk helpers run inside them)
    return src.replace("@numba.njit(cache=True, ", "@numba.njit(cache=True, nogil=True, ") if nogil else src
