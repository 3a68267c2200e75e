"""The numba emitter's folds and scans: max/min/prod reductions, ``ArgReduce``, ``CumSum``, ``Concat``.

Planned through ``plan.Planner``'s interface and printed through ``render.Renderer``'s; ``emit``
joins this module's tables with theirs: ``STATEMENTS`` (the statement types planned here),
``REDUCTIONS`` (the ``Reduce`` kinds placed here) and ``OPS`` (the op kinds printed here).

* ``plan_fold`` places a max/min/prod ``Reduce`` like a sum: a register accumulator when the reduced
  dims are the innermost loops (so a row max, the ``exp(x - max)`` after it and the row sum share
  the row's outer iteration: softmax, log_softmax, logsumexp), else an array of accumulators filled
  with the identity. max/min propagate NaN (the first NaN stays), ints compare exactly, prod
  multiplies in order in the result dtype. An empty reduced extent gives the identity (-inf for
  max, as softmax's ``initial=-inf``; torch refuses amax over an empty dim before any kernel runs).
* ``arg_reduce`` (``ArgReduce``): a value and an int64 index accumulator, updated on a strictly
  better value or the first NaN (numpy's and torch's first occurrence); over a dim that is not the
  innermost, the argument is read through a transposed view that makes it so.
* ``cum_sum`` and ``concat``: a loop nest of their own between passes, reading the argument arrays
  and writing the result array (a scan adds the previous element along the axis in storage order,
  backwards for ``reverse``, so each element is numpy's sequential sum); the outer loop is a
  ``prange`` above the parallel threshold when it is not the scanned axis.
* ``OPS`` prints the ops above; ``fold_identity`` is an accumulator's initial value.

A pass holding a fold over its outer loop (a full max, a column max) stays serial: the fold's
partials would need their own combination after the ``prange``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from .. import ir
from .maps import identity
from .plan import Loop, Op, Planner, Val, chain_of
from .printer import np_dtype
from .render import Renderer, heading


def fold_identity(kind: str, dtype: str) -> str:
    """The code of ``kind``'s initial accumulator value in ``dtype`` (argmax/argmin: of the value)."""
    top = kind in ("max", "argmax")
    if kind == "prod":
        return f"{np_dtype(dtype)}(1)" if dtype not in ("bool", "bool_") else "True"
    if dtype in ("bool", "bool_"):
        return "False" if top else "True"
    if dtype.startswith("float"):
        return f"{np_dtype(dtype)}({'-' if top else ''}numpy.inf)"
    info = np.iinfo(dtype)
    # the most negative int64 literal does not type as int64 in numba: write it as a difference
    return f"{np_dtype(dtype)}({int(info.min) + 1} - 1)" if top else f"{np_dtype(dtype)}({int(info.max)})"


def _better(kind: str, dtype: str, x: str, acc: str) -> str:
    """Condition for ``x`` to replace ``acc``: strictly better, or the first NaN."""
    op = ">" if kind in ("max", "argmax") else "<"
    if dtype.startswith("float"):
        return f"{x} {op} {acc} or ({x} != {x} and {acc} == {acc})"
    return f"{x} {op} {acc}"


def _combine(kind: str, dtype: str, acc: str, x: str) -> str:
    """``acc``'s next value after ``x`` (max/min keep the first NaN, prod multiplies)."""
    if kind == "prod":
        return f"{acc} * {x}"
    op = ">=" if kind == "max" else "<="
    if dtype.startswith("float"):
        return f"({acc} if ({acc} {op} {x} or {acc} != {acc}) else {x})"
    return f"({acc} if {acc} {op} {x} else {x})"


# =========================================================================== planning


def plan_fold(em: Planner, st: ir.Reduce, v: Val, a: Val, axes: list[int], rmap: list) -> None:
    """Place ``st`` (max/min/prod) as a fold over ``a``: the counterpart of ``Planner.plan_sum``."""
    nd = a.nondims
    red = [nd.index(d) for d in axes if a.shape[d] != 1]
    note = st.note or f"{v.name} = {st.kind}"
    op = Op("fold", note, a.shape, v, data={"cls": a.cls, "kind": st.kind, "adt": a.dtype})
    op.reads = [em.read_of(a, identity(len(a.shape)))]
    if v.kind == "scalar":
        _scalar_fold(em, op, v, red[0], note, len(nd))
        return
    v.arr = em.fresh(f"{v.name}_arr")
    v.alloc = "empty"
    op.data.update(arr=v.arr, rmap=rmap)
    em.place(op, min_depth=len(nd))
    root_item = chain_of(op)[0]
    if not isinstance(root_item, Loop):  # pragma: no cover - a reduction has a loop
        raise AssertionError("an array fold outside a loop")
    if 0 in red:
        root_item.unsafe = True           # iterations of the outer loop update the same elements
    fill = Op("fold_fill", "", (), v, data={"arr": v.arr, "kind": st.kind})
    em.root.insert(em.root.pos(root_item), fill)
    v.arr_ready = root_item


def _scalar_fold(em: Planner, op: Op, v: Val, k: int, note: str, depth: int, index: Any = None) -> None:
    """``op`` as a register fold whose loops from level ``k`` in are the reduced ones."""
    acc = em.accumulator()
    op.data["facc"] = acc
    result = acc
    if index is not None:
        result = em.fresh(f"{acc}_at")
        op.data.update(iacc=result, index=index)
    em.place(op, min_depth=depth)
    chain = chain_of(op)
    loop = chain[k]
    parent = chain[k - 1] if k else None
    block = em.root if parent is None else parent.items
    init = Op("fold_init", "", (), v, data={"facc": acc, "iacc": op.data.get("iacc"), "kind": op.data["kind"],
                                             "adt": op.data["adt"]})
    init.parent = parent
    block.insert(block.pos(loop), init)
    done = Op("complete", note, (), v, data={"acc": result, "kind": op.data["kind"], "count": []})
    done.parent = parent
    v.var = v.name
    v.pending = (done, loop)
    if k == 0:
        chain[0].unsafe = True            # a fold over the outer loop: the pass stays serial


def arg_reduce(em: Planner, st: ir.ArgReduce) -> None:
    """``argmax``/``argmin`` as an index fold; a dim other than the innermost is moved there by a view."""
    a = em.lookup(st.arg)
    nd = len(a.shape)
    shape = tuple(st.shape)
    axis = None if st.axis is None else int(st.axis) % nd
    reduced = [d for d in (range(nd) if axis is None else [axis]) if a.shape[d] != 1]
    if not reduced:                        # one candidate per result element: index 0
        em.elementwise(ir.Elementwise(st.target, sp.Integer(0), shape, "int64", st.note))
        return
    if axis is not None and a.nondims[-1] != axis:
        perm = tuple(d for d in range(nd) if d != axis) + (axis,)
        moved = em.fresh(f"{st.target}_moved")
        em.transpose(ir.Transpose(moved, st.arg, perm, tuple(a.shape[d] for d in perm), a.dtype, st.note))
        flat = em.fresh(f"{st.target}_flat") if st.keepdims else st.target
        kept = tuple(a.shape[d] for d in perm[:-1])
        arg_reduce(em, ir.ArgReduce(flat, st.kind, moved, nd - 1, False, kept, "int64", st.note))
        if st.keepdims:
            em.reshape(ir.Reshape(st.target, flat, shape, "int64", st.note))
        return
    kept_cls = [a.cls[d] for d in range(nd) if d != axis] if axis is not None else []
    if st.keepdims and axis is not None:
        kept_cls.insert(axis, None)
    cls = tuple(None if s == 1 else c for s, c in zip(shape, kept_cls or [None] * len(shape)))
    v = Val(st.target, shape, "int64", "scalar", cls, frozenset(d for d, s in enumerate(shape) if s != 1))
    em.define(st.target, v)
    nds = a.nondims
    k = nds.index(reduced[0])
    note = st.note or f"{v.name} = {st.kind}"

    def place() -> None:
        op = Op("fold", note, a.shape, v, data={"cls": a.cls, "kind": st.kind, "adt": a.dtype})
        op.reads = [em.read_of(a, identity(nd))]
        _scalar_fold(em, op, v, k, note, len(nds), index=(axis, tuple(reduced)))
    em.defer(place)


def standalone(em: Planner, st: Any, cls: tuple, args: list[str], render: Callable[..., None], **extra: Any) -> None:
    """An array value made by a loop nest of its own (``render``), after the passes writing ``args``."""
    shape = tuple(st.shape)
    v = Val(st.target, shape, st.dtype, "array", cls, frozenset(d for d, s in enumerate(shape) if s != 1))
    vals = [em.lookup(x) for x in args]
    em.define(st.target, v)
    v.arr = em.fresh(f"{v.name}_arr")
    v.alloc = "empty"

    def place() -> None:
        srcs = [em.array_of(x) for x in vals]
        op = Op("custom", st.note or f"{v.name} = {type(st).__name__.lower()}", (), v,
                 data={"cls": (), "srcs": srcs, "render": render, **extra,
                       "after": [s.arr_ready for s in srcs if s.kind != "param"]})
        for s in srcs:
            s.used = True
        em.place(op)
        v.arr_ready = op
    em.defer(place)


def cum_sum(em: Planner, st: ir.CumSum) -> None:
    a = em.lookup(st.arg)
    cls = em.fresh_cls(tuple(st.shape), list(a.cls))
    standalone(em, st, cls, [st.arg], _render_cumsum, axis=int(st.axis) % len(st.shape), reverse=st.reverse)


def concat(em: Planner, st: ir.Concat) -> None:
    shape = tuple(st.shape)
    cls: list = [None] * len(shape)
    for name in st.args:
        a = em.lookup(name)
        full = list(a.shape)
        if st.stack:
            full.insert(st.axis, 1)
        acls = list(a.cls)
        if st.stack:
            acls.insert(st.axis, None)
        for d, c in enumerate(acls):
            if d != st.axis and c is not None and full[d] == shape[d]:
                em.unify_into(cls, d, c)
    standalone(em, st, em.fresh_cls(shape, cls), list(st.args), _render_concat, axis=int(st.axis) % len(shape),
                stack=st.stack)


# =========================================================================== rendering


def _render_fold_init(em: Renderer, op: Op, out: list[str], ind: int, partials: dict | None) -> None:
    pad = "    " * ind
    out.append(f"{pad}{op.data['facc']} = {fold_identity(op.data['kind'], _acc_dtype(op, op.val))}")
    if op.data.get("iacc"):
        out.append(f"{pad}{op.data['iacc']} = numpy.int64(0)")


def _render_fold_fill(em: Renderer, op: Op, out: list[str], ind: int, partials: dict | None) -> None:
    out.append(f"{'    ' * ind}{op.data['arr']}[...] = {fold_identity(op.data['kind'], op.val.dtype)}")


def _render_custom(em: Renderer, op: Op, out: list[str], ind: int, partials: dict | None) -> None:
    heading(out, "    " * ind, op.note)
    op.data["render"](em, op, out, ind)


def _acc_dtype(op: Op, v: Val) -> str:
    return op.data["adt"] if op.data["kind"] in ("argmax", "argmin") else v.dtype


def _render_fold(em: Renderer, op: Op, out: list[str], ind: int, partials: dict | None) -> None:
    pad, v, kind = "    " * ind, op.val, op.data["kind"]
    heading(out, pad, op.note)
    src = em.read_code(op, op.reads[0])
    x = em.fresh("fx")
    if kind in ("argmax", "argmin"):
        acc, at = op.data["facc"], op.data["iacc"]
        codes = em.codes_for(op.shape)
        axis, reduced = op.data["index"]
        idx = codes[reduced[0]]
        for d in reduced[1:]:              # the flat index over the reduced dims (axis None)
            idx = f"({idx}) * {em.ext(op.data['cls'][d])} + {codes[d]}"
        out.append(f"{pad}{x} = {src}")
        out.append(f"{pad}if {_better(kind, op.data['adt'], x, acc)}:")
        out.append(f"{pad}    {acc} = {x}")
        out.append(f"{pad}    {at} = numpy.int64({idx})")
        return
    if op.data["adt"] != v.dtype:
        src = f"{np_dtype(v.dtype)}({src})"
    out.append(f"{pad}{x} = {src}")
    if "facc" in op.data:
        acc = op.data["facc"]
        out.append(f"{pad}{acc} = {_combine(kind, v.dtype, acc, x)}")
        return
    codes = em.codes_for(op.shape)
    idx = ", ".join(codes[d] if d is not None and op.shape[d] != 1 else "0" for d in op.data["rmap"])
    cur = em.fresh("fa")
    out.append(f"{pad}{cur} = {op.data['arr']}[{idx}]")
    out.append(f"{pad}{op.data['arr']}[{idx}] = {_combine(kind, v.dtype, cur, x)}")


def src_name(s: Val) -> str:
    return s.name if s.kind == "param" else s.arr


def _nest(em: Renderer, shape: tuple, cls: tuple, out: list[str], ind: int, first_parallel: bool,
          reverse_dim: int | None = None) -> tuple[list[str], str]:
    """Open loops over the non-1 dims of ``shape``: (index code per dim, the inner padding)."""
    codes, pad = [], "    " * ind
    total = math.prod(shape)
    opened = 0
    for d, s in enumerate(shape):
        if s == 1:
            codes.append("0")
            continue
        iv = em.fresh(f"q{d}")
        n = em.ext(cls[d])
        if d == reverse_dim:
            rng = f"range({n} - 1, -1, -1)"
        elif opened == 0 and first_parallel and total >= em.threshold:
            em.mark_parallel()
            rng = f"numba.prange({n})"
        else:
            rng = f"range({n})"
        out.append(f"{pad}for {iv} in {rng}:")
        pad += "    "
        codes.append(iv)
        opened += 1
    return codes, pad


def _render_cumsum(em: Renderer, op: Op, out: list[str], ind: int) -> None:
    v = op.val
    st_axis, reverse = op.data["axis"], op.data["reverse"]
    (src,) = op.data["srcs"]
    shape = v.shape
    outer = next((d for d, s in enumerate(shape) if s != 1), None)
    codes, pad = _nest(em, shape, v.cls, out, ind, outer != st_axis, st_axis if reverse else None)
    read = f"{src_name(src)}[{', '.join(codes)}]" if shape else f"{src_name(src)}[()]"
    x = f"{np_dtype(v.dtype)}({read})"
    if shape[st_axis] == 1:
        out.append(f"{pad}{v.arr}[{', '.join(codes)}] = {x}")
        return
    t = codes[st_axis]
    first = f"{em.ext(v.cls[st_axis])} - 1" if reverse else "0"
    prev = list(codes)
    prev[st_axis] = f"{t} + 1" if reverse else f"{t} - 1"
    out.append(f"{pad}if {t} == {first}:")
    out.append(f"{pad}    {v.arr}[{', '.join(codes)}] = {x}")
    out.append(f"{pad}else:")
    out.append(f"{pad}    {v.arr}[{', '.join(codes)}] = {v.arr}[{', '.join(prev)}] + {x}")


def _render_concat(em: Renderer, op: Op, out: list[str], ind: int) -> None:
    v, axis, stack = op.val, op.data["axis"], op.data["stack"]
    offset = "0"
    for s in op.data["srcs"]:
        shape = list(s.shape)
        cls = list(s.cls)
        if stack:
            shape.insert(axis, 1)
            cls.insert(axis, None)
        codes, pad = _nest(em, tuple(shape), tuple(cls), out, ind, True)
        rd = [c for d, c in enumerate(codes) if not (stack and d == axis)]
        if s.kind == "param" and not s.shape:
            read = s.var
        else:
            read = f"{src_name(s)}[{', '.join(rd) if rd else '()'}]"
        wr = list(codes)
        step = "1" if stack else em.ext(cls[axis])
        if stack or shape[axis] == 1:
            wr[axis] = offset
        else:
            wr[axis] = codes[axis] if offset == "0" else f"{offset} + {codes[axis]}"
        out.append(f"{pad}{v.arr}[{', '.join(wr)}] = {np_dtype(v.dtype)}({read})")
        offset = step if offset == "0" else f"{offset} + {step}"


#: The statement types planned here.
STATEMENTS: dict[type, Callable[[Planner, Any], None]] = {
    ir.ArgReduce: arg_reduce, ir.CumSum: cum_sum, ir.Concat: concat,
}

#: The ``Reduce`` kinds placed here (sum and mean are the planner's own).
REDUCTIONS: dict[str, Callable[..., None]] = {"max": plan_fold, "min": plan_fold, "prod": plan_fold}

#: How the op kinds placed here are printed.
OPS: dict[str, Callable[..., None]] = {
    "fold": _render_fold, "fold_init": _render_fold_init, "fold_fill": _render_fold_fill, "custom": _render_custom,
}
