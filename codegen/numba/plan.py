"""The numba emitter's planner: a kernel's statements placed in a tree of loop nests.

The planner reads the IR (``Planner.build``), gives every value an index map and extent classes
(``maps``), and places each computation as an item (``Op``) of a block: the function body (``root``)
or a loop (``Loop``), whose items are those of its body in order. ``render`` prints the tree.

Fusion rules
------------
Statements are placed in a tree of loop nests (the function body is the root block):

* Every loop iterates one *extent class*: dims that an operation proves equal at run time
  (elementwise operands, reduction kept dims, views) are unified, and the extent is read from a
  param at run time (``n0 = v0.shape[0]``), so one source serves every size with the same ranks
  and broadcast pattern. Size-1 dims never get a loop (they read index 0). The prelude checks that
  the arguments agree with each other and with the broadcast pattern (``ValueError`` otherwise).
  An extent that no param determines (e.g. a dim that only a scatter creates) is a literal.
* Views cost nothing: ``Broadcast``, ``Transpose``, ``Reshape`` that only adds or drops size-1 dims,
  ``Index`` (ints, slices with offsets and steps, ``None``, ``...``, integer arrays) and reductions
  over size-1 dims only become index maps, composed down to an array read such as
  ``v0[1 + i0]`` or ``v3[gather0[i0], i1]`` (a module-level constant), or to a register value.
* An ``Elementwise`` statement is one scalar assignment per element, placed at the innermost loop
  it varies in (a value constant along inner dims is hoisted out of them; a 0-d value is computed
  once, before the loops). It reads an operand computed in the same nest from its register when
  the operand is computed at the same point (same loops, pure index map); otherwise it reads it
  from an array, which forces the operand to be stored and the reader to run in a later pass.
* ``Reduce`` (sum, mean) accumulates in the nest that computes its argument. When the reduced dims
  are the innermost loops, the accumulator is a scalar (``acc``) initialised just before the first
  reduced loop and complete just after it, so a row reduction and its broadcast use (softmax) share
  the outer loop, with a second inner loop after the reduction; a full reduction is complete after
  its pass. Other reductions accumulate into a zeroed array indexed by the kept dims.
* A statement that needs a reduction's result goes after the loop that completes it, and a
  statement that reads an array goes after the pass that writes it (or, when it reads the row an
  earlier inner loop of the same outer iteration wrote, just after that inner loop); apart from
  that, a statement
  joins the latest loop of its extent class, so independent elementwise work and reductions over
  the same iteration space (a value-and-gradient kernel) share one pass.
* ``IndexAdd`` scatters (``out[map(i)] += g``) from the nest that computes ``g``; a ``Reshape``
  that splits or merges dims is ``numpy.reshape`` of a contiguous copy, between passes.
* Arrays are allocated only for outputs, values read across passes (or through a non-pure index
  map), accumulators of non-innermost reductions, scatter targets and reshape inputs.

* ``MatMul`` (1-d and 2-d operands; batched ones raise ``ir.Unsupported``) is a product over
  the contraction's iteration space and a sum, a transposed operand iterated in its storage order,
  so ``X @ w`` is a row reduction and ``X.T @ r`` a sum over X's rows into an array: both fuse with
  the elementwise work around them into one pass over the rows (no BLAS call).
* max/min/prod reductions, ``ArgReduce``, ``CumSum`` and ``Concat`` are planned by ``folds`` through
  this planner's interface (the tables ``emit`` gives it); 1-d stencils never get here (``stencil``).
"""
from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from .. import ir
from ..names import fresh
from .maps import Classes, align, compose, dims_of, identity, slice_start
from .printer import np_dtype

#: Module-level names of the generated source (``render.HEADER``, ``render.RADD``, ``vmath.PRELUDE``).
RESERVED = ("math", "numba", "numpy", "_radd", "_types", "_intrinsic", "_vm_bits", "_vm_float", "_VM_SHIFT", "_VM_NAN")

#: a 2-d @ 2-d product with at least this many multiply-adds keeps the numpy kernel (BLAS)
BLAS_MATMUL_FLOPS = 1 << 16


@dataclass(eq=False)
class Val:
    """A value of the kernel: a param, a register (``scalar``), an array, or a view of another value."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str                      # "param" | "scalar" | "array" | "view"
    cls: tuple = ()                # extent class per dim (None for size-1 dims)
    varying: frozenset = frozenset()
    base: str | None = None        # views: the value viewed and the map of its index
    vmap: tuple = ()
    var: str | None = None         # register name (scalars), or the scalar read of a 0-d param
    chain: list | None = None      # scalars: enclosing loops + the item that defines ``var``
    pending: Any = None            # scalar reductions: (completion item, accumulation loop)
    arr: str | None = None         # array holding the value, and the root item after which it is complete
    arr_ready: Any = None
    alloc: str | None = None       # "empty" | "zeros" | None (allocated by its own statement)
    used: bool = False
    copy: Val | None = None        # views: an array copy, made once when an array is needed
    arr_item: Any = None           # the store that writes ``arr`` element by element, if one does
    rescaled: bool = False         # ``arr`` is divided in place after its pass (an array mean)

    @property
    def nondims(self) -> list[int]:
        return [d for d, s in enumerate(self.shape) if s != 1]


@dataclass(eq=False)
class Loop:
    """A loop over extent class ``cls`` at nesting ``level`` (0: a pass over the function body)."""

    cls: int
    level: int
    parent: Loop | None
    items: Items = field(default_factory=lambda: Items())
    parallel: bool = False
    unsafe: bool = False           # iterations write shared array elements: never prange
    reductions: list = field(default_factory=list)   # (accumulator, dtype) of full reductions over it
    array_reductions: list = field(default_factory=list)   # values summed into arrays over this loop's dim
    vector: bool = False           # transcendentals by ``vmath``, with a scalar rerun on NaN


@dataclass(eq=False)
class Op:
    """One computation placed in a block; ``render`` prints it by its ``kind`` (``folds`` adds kinds)."""

    kind: str                      # "stmt" | "store" | "init" | "update" | "complete" | "scatter" | "numpy"
    note: str
    shape: tuple[int, ...] = ()    # the iteration shape whose non-1 dims are the enclosing loops
    val: Val | None = None
    reads: list = field(default_factory=list)   # [[root value, map, mode]]: "scalar" | "array" | "array_root"
    data: dict = field(default_factory=dict)
    parent: Loop | None = None


@dataclass(eq=False)
class _Dep:
    chain: list
    enter: bool
    val: Val | None = None
    read: list | None = None


def chain_of(item: Any) -> list:
    """The loops enclosing ``item``, outermost first, then ``item``."""
    out = [item]
    p = item.parent
    while p is not None:
        out.append(p)
        p = p.parent
    out.reverse()
    return out


def _same_prefix(a: list, b: list, n: int) -> bool:
    return len(a) >= n and len(b) >= n and all(x is y for x, y in zip(a[:n], b[:n]))


class Items(list):
    """A block's items, with positions looked up in a dict rebuilt after each insertion."""

    def __init__(self) -> None:
        super().__init__()
        self._pos: dict | None = None
        self.loops = 0

    def insert(self, i: int, x: Any) -> None:
        if i >= len(self) and self._pos is not None:
            self._pos[id(x)] = len(self)        # appending keeps the other positions
        else:
            self._pos = None
        super().insert(i, x)
        self.loops += isinstance(x, Loop)

    def append(self, x: Any) -> None:
        self.insert(len(self), x)

    def pos(self, x: Any) -> int:
        if self._pos is None:
            self._pos = {id(y): k for k, y in enumerate(self)}
        return self._pos[id(x)]




class Planner:
    """Places a kernel's statements in a tree of loop nests (``root``): the planning half of ``emit_numba``.

    ``statements`` maps each IR statement type to the function that plans it (``handler(planner, st)``),
    ``reductions`` each ``Reduce`` kind to the one that places it once extent classes are final
    (``handler(planner, st, value, arg, axes, rmap)``); ``emit`` gives the core tables below joined
    with those of ``folds``. A statement type or reduction kind that has no entry raises
    ``ir.Unsupported``. ``plan()`` runs it all; ``outs`` then describes the results.

    The interface other modules use: ``fresh``, ``accumulator``, ``lookup``, ``define``, ``view``,
    ``unify_into``, ``fresh_cls``, the statement planners (``elementwise``, ``reshape``, ``transpose``...),
    ``defer`` (runs a placement once extent classes are final), ``read_of``, ``place``, ``array_of``,
    and the attributes ``kernel``, ``root``, ``vals``, ``cl`` (the extent classes) and ``consts``.
    """

    def __init__(self, kernel: ir.Kernel, statements: Mapping[type, Callable[..., None]],
                 reductions: Mapping[str, Callable[..., None]]) -> None:
        self.kernel = kernel
        self.statements = statements
        self.reductions = reductions
        self.taken: set[str] = {kernel.name} | {p.name for p in kernel.params}
        for st in kernel.body:
            self.taken.add(st.target)
            if isinstance(st, ir.Elementwise):
                self.taken |= {s.name for s in st.expr.free_symbols}
        self.taken |= set(RESERVED)
        self.vals: dict[str, Val] = {}
        self.cur: dict[str, str] = {}          # IR name -> current SSA name
        self.cl = Classes()
        self.root = Items()
        self.consts: dict[str, str] = {}       # module-level constant arrays: code -> name
        self.n_acc = 0
        self.todo: list[Callable[[], None]] = []
        self.transposed: dict[str, str] = {}    # IR target of a 2-d Transpose -> its argument
        self.outs: list[tuple] = []

    # ------------------------------------------------------------------ names
    def fresh(self, want: str) -> str:
        return fresh(want, self.taken)

    def accumulator(self) -> str:
        """A fresh name for a reduction's accumulator (``acc0``, ``acc1``...)."""
        acc = self.fresh(f"acc{self.n_acc}")
        self.n_acc += 1
        return acc

    def lookup(self, name: str) -> Val:
        ssa = self.cur.get(name)
        if ssa is None:
            return self.literal(name)
        return self.vals[ssa]

    def literal(self, text: str) -> Val:
        """A non-name argument that ``lower`` passes for Python numbers: ``numpy.asarray(2.0)``."""
        lit = ir.literal(text)
        if lit is None:
            raise KeyError(f"emit_numba: no value named {text!r}")
        dtype = "bool" if lit in ("True", "False") else "float64" if re.search(r"[.eE]", lit) else "int64"
        v = Val(self.fresh("lit"), (), dtype, "scalar")
        op = Op("stmt", f"literal {lit}", (), v, data={"code": f"{np_dtype(dtype)}({lit})"})
        v.var = v.name
        self.root.insert(0, op)
        v.chain = [op]
        self.vals[v.name] = v
        self.cur[text] = v.name
        return v

    def define(self, target: str, v: Val) -> Val:
        ssa = target if target not in self.vals and target not in self.cur else self.fresh(f"{target}_1")
        v.name = ssa
        self.vals[ssa] = v
        self.cur[target] = ssa
        return v

    def defer(self, place: Callable[[], None]) -> None:
        """Run ``place`` once every statement is analysed (extent classes are final only then)."""
        self.todo.append(place)

    # ------------------------------------------------------------------ analysis of the body
    def build(self) -> None:
        for name in [self.kernel.name] + [p.name for p in self.kernel.params]:
            if not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED:
                raise ValueError(f"emit_numba: {name!r} cannot name a function or an argument")
        for p in self.kernel.params:
            cls = tuple(None if s == 1 else self.cl.new(s, ("param", p.name, d)) for d, s in enumerate(p.shape))
            v = Val(p.name, tuple(p.shape), p.dtype, "param", cls, frozenset(d for d, s in enumerate(p.shape)
                                                                                   if s != 1))
            if not p.shape:
                v.var = self.fresh(f"{p.name}_v")
            self.vals[p.name] = v
            self.cur[p.name] = p.name
        for st in self.kernel.body:
            handler = self.statements.get(type(st))
            if handler is None:
                raise ir.Unsupported(f"emit_numba: no emission for IR statement {type(st).__name__}")
            handler(self, st)
        # extent classes are final only now: place the statements
        self.cl.close()
        for place in self.todo:
            place()

    def view(self, st: Any, base: Val, vmap: tuple, cls: tuple) -> None:
        v = Val(st.target, tuple(st.shape), st.dtype, "view", cls, base=base.name, vmap=vmap)
        self.define(st.target, v)

    def unify_into(self, cls_out: list, d: int, c: int | None) -> None:
        if c is None:
            return
        cls_out[d] = c if cls_out[d] is None else self.cl.union(cls_out[d], c)

    def fresh_cls(self, shape: tuple, cls: list) -> tuple:
        return tuple(None if s == 1 else (c if c is not None else self.cl.new(s)) for s, c in zip(shape, cls))

    def broadcast(self, st: ir.Broadcast) -> None:
        a = self.lookup(st.arg)
        vmap = align(a.shape, tuple(st.shape))
        cls: list = [None] * len(st.shape)
        lead = len(st.shape) - len(a.shape)
        for d, c in enumerate(a.cls):
            if c is not None:
                self.unify_into(cls, d + lead, c)
        self.view(st, a, vmap, self.fresh_cls(tuple(st.shape), cls))

    def transpose(self, st: ir.Transpose) -> None:
        a = self.lookup(st.arg)
        if len(a.shape) == 2 and tuple(int(x) % 2 for x in st.axes) == (1, 0):
            self.transposed[st.target] = st.arg
        axes = tuple(int(x) % max(len(a.shape), 1) for x in st.axes)
        vmap: list = [None] * len(a.shape)
        for j, ax in enumerate(axes):
            vmap[ax] = ("d", j) if a.shape[ax] != 1 else ("c", 0)
        cls = tuple(a.cls[ax] for ax in axes)
        self.view(st, a, tuple(vmap), cls)

    def reshape(self, st: ir.Reshape) -> None:
        a = self.lookup(st.arg)
        shape = tuple(st.shape)
        src = [d for d, s in enumerate(a.shape) if s != 1]
        dst = [d for d, s in enumerate(shape) if s != 1]
        if [a.shape[d] for d in src] == [shape[d] for d in dst]:
            vmap: list = [("c", 0)] * len(a.shape)
            cls: list = [None] * len(shape)
            for ds, dd in zip(src, dst):
                vmap[ds] = ("d", dd)
                cls[dd] = a.cls[ds]
            self.view(st, a, tuple(vmap), tuple(cls))
            return
        # a real reshape: numpy.reshape of a contiguous copy; merged dims keep run-time extents
        cls = [None] * len(shape)
        i = j = 0
        while i < len(a.shape) or j < len(shape):
            gi, gj, pi, pj = [], [], 1, 1
            while True:
                if pi <= pj and i < len(a.shape):
                    gi.append(i)
                    pi *= a.shape[i]
                    i += 1
                elif j < len(shape):
                    gj.append(j)
                    pj *= shape[j]
                    j += 1
                else:
                    break
                if pi == pj and (i == len(a.shape) or a.shape[i] != 1 or pi == 0) and (
                        j == len(shape) or shape[j] != 1 or pi == 0):
                    break
            srcs = [d for d in gi if a.shape[d] != 1]
            dsts = [d for d in gj if shape[d] != 1]
            if len(srcs) == 1 and len(dsts) == 1:
                cls[dsts[0]] = a.cls[srcs[0]]
            elif len(dsts) == 1 and srcs:           # merged dims: the product of their extents
                cls[dsts[0]] = self.cl.new(shape[dsts[0]], ("prod", tuple(a.cls[d] for d in srcs)))
            elif dsts and srcs and math.prod(shape[d] for d in dsts[1:]):   # split: the first dim from the rest
                cls[dsts[0]] = self.cl.new(shape[dsts[0]], ("quot", tuple(a.cls[d] for d in srcs),
                                                            math.prod(shape[d] for d in dsts[1:])))
        v = Val(st.target, shape, st.dtype, "array", self.fresh_cls(shape, cls))
        v.varying = frozenset(v.nondims)
        self.define(st.target, v)
        v.arr = self.fresh(f"{v.name}_arr")

        def place() -> None:
            src = self.array_of(a)
            op = Op("numpy", st.note or f"{v.name} = reshape", (), v, data={"src": src, "cls": ()})
            if src.kind != "param":
                op.data["after"] = [src.arr_ready]
            src.used = True
            self.place(op)
            v.arr_ready = op
        self.defer(place)

    def matmul(self, st: ir.MatMul) -> None:
        """``a @ b`` (1-d and 2-d operands) as a product over the contraction's iteration space and a
        sum, iterating a transposed operand in its storage order: ``X.T @ r`` runs over X's rows
        (a sum over the outer loop into an array), so it fuses with a row pass over ``X``."""
        a, b = self.lookup(st.a), self.lookup(st.b)
        ra, rb = len(a.shape), len(b.shape)
        if ra not in (1, 2) or rb not in (1, 2):
            raise ir.Unsupported("emit_numba: batched matmul")
        if ra == 2 and rb == 2 and min(a.shape[0], b.shape[1]) > 1 and (
                a.shape[0] * a.shape[1] * b.shape[1] >= BLAS_MATMUL_FLOPS):
            # a real matrix-matrix product: blocked BLAS (the numpy kernel) beats fused loops by 4-25x
            raise ir.Unsupported("emit_numba: matrix-matrix product large enough for BLAS")
        dt = st.dtype

        def tmp(kind: type, *args: Any) -> str:
            name = self.fresh(f"{st.target}_{ {ir.Reshape: 'col', ir.Broadcast: 'bc', ir.Elementwise: 'prod'}[kind]}")
            stmt = kind(name, *args, note=st.note or f"{st.target} = matmul")
            {ir.Reshape: self.reshape, ir.Broadcast: self.broadcast, ir.Elementwise: self.elementwise}[kind](stmt)
            return name

        def as_shape(name: str, shape: tuple, full: tuple) -> str:
            """``name`` reshaped (size-1 dims added) to ``shape``, then broadcast to ``full``."""
            v = self.lookup(name)
            if v.shape != shape:
                name = tmp(ir.Reshape, name, shape, v.dtype)
            return name if shape == full else tmp(ir.Broadcast, name, full, v.dtype)

        def prod_sum(x: str, y: str, full: tuple, axes: tuple) -> None:
            e = sp.Symbol(x, real=True) * sp.Symbol(y, real=True)
            t = tmp(ir.Elementwise, e, full, dt)
            self.reduce(ir.Reduce(st.target, "sum", t, axes, False, tuple(st.shape), dt, st.note))

        if ra == 1 and rb == 1:
            prod_sum(st.a, st.b, a.shape, (0,))
        elif ra == 2 and rb == 1:
            p, q = a.shape
            if st.a in self.transposed:             # a = a0.T, a0 (q, p): run over a0's rows
                a0 = self.transposed[st.a]
                bc = as_shape(st.b, (q, 1), (q, p))
                prod_sum(a0, bc, (q, p), (0,))
            else:
                prod_sum(st.a, as_shape(st.b, (q,), (p, q)), (p, q), (1,))
        elif ra == 1 and rb == 2:
            q, r = b.shape
            if st.b in self.transposed:             # b = b0.T, b0 (r, q)
                prod_sum(self.transposed[st.b], as_shape(st.a, (q,), (r, q)), (r, q), (1,))
            else:
                prod_sum(as_shape(st.a, (q, 1), (q, r)), st.b, (q, r), (0,))
        else:
            p, q = a.shape
            r = b.shape[1]
            if st.a in self.transposed:             # a = a0.T, a0 (q, p): (q, p, r), sum over q
                x = as_shape(self.transposed[st.a], (q, p, 1), (q, p, r))
                y = as_shape(st.b, (q, 1, r), (q, p, r))
                prod_sum(x, y, (q, p, r), (0,))
            else:                                   # (p, q, r), sum over q
                x = as_shape(st.a, (p, q, 1), (p, q, r))
                y = as_shape(st.b, (1, q, r), (p, q, r))
                prod_sum(x, y, (p, q, r), (1,))

    def reduce(self, st: ir.Reduce) -> None:
        if st.kind not in self.reductions:
            raise ir.Unsupported(f"emit_numba: reduction {st.kind!r}")
        a = self.lookup(st.arg)
        nd = len(a.shape)
        axes = sorted({int(x) % nd for x in st.axes}) if nd else []
        shape = tuple(st.shape)
        rmap: list = []                          # the result's dims -> the argument's dims
        for d in range(nd):
            if d in axes:
                if st.keepdims:
                    rmap.append(None)
            else:
                rmap.append(d)
        cls = tuple(None if s == 1 else a.cls[rmap[j]] for j, s in enumerate(shape))
        if not [d for d in axes if a.shape[d] != 1]:
            # only size-1 dims reduced: a view of the argument
            vmap: list = [("c", 0)] * nd
            for j, d in enumerate(rmap):
                if d is not None and a.shape[d] != 1:
                    vmap[d] = ("d", j)
            self.view(st, a, tuple(vmap), cls)
            return
        v = Val(st.target, shape, st.dtype, "scalar", cls, frozenset(d for d, s in enumerate(shape) if s != 1))
        self.define(st.target, v)
        nd = a.nondims
        red = [nd.index(d) for d in axes if a.shape[d] != 1]
        if red != list(range(red[0], len(nd))):
            v.kind = "array"
        self.defer(lambda: self.reductions[st.kind](self, st, v, a, axes, rmap))

    def index_map(self, spec: tuple, base_shape: tuple, base_cls: tuple) -> tuple:
        """``base[spec]`` as a view: (result shape, result classes, map of the base index from the
        result index, slices as (base dim, result dim, start, stop, step))."""
        consumed = sum(1 for e in spec if e[0] in "isa")
        ents: list = []
        for e in spec:
            if e[0] == "e":
                ents.extend([("s", None, None, None)] * (len(base_shape) - consumed))
            else:
                ents.append(e)
        ents.extend([("s", None, None, None)] * (len(base_shape) - sum(1 for e in ents if e[0] in "isa")))
        # numpy: the broadcast dims of integer-array indices replace them where they stand when they
        # (and any ints among them) are adjacent, else they go first
        adv = [k for k, e in enumerate(ents) if e[0] in "ia"]
        arrays = [np.array(e[1], dtype=np.int64).reshape(e[2]) for e in ents if e[0] == "a"]
        bshape = tuple(np.broadcast_shapes(*[a.shape for a in arrays])) if arrays else ()
        at = 0
        if arrays and adv == list(range(adv[0], adv[-1] + 1)):
            at = sum(1 for e in ents[:adv[0]] if e[0] in "sn")
        out: list = []          # result dims in order: ("n",) | ("s", base dim) | ("b", k)
        bd = 0
        for e in ents:
            if e[0] == "n":
                out.append(("n",))
            elif e[0] == "s":
                out.append(("s", bd))
            bd += e[0] in "isa"
        if arrays:
            out[at:at] = [("b", k) for k in range(len(bshape))]
        shape: list = []
        cls: list = []
        vmap: list = [None] * len(base_shape)
        slices = []
        base_of_ent = []
        bd = 0
        for e in ents:
            base_of_ent.append(bd if e[0] in "isa" else None)
            bd += e[0] in "isa"
        for j, o in enumerate(out):
            if o[0] == "n":
                shape.append(1)
                cls.append(None)
            elif o[0] == "b":
                shape.append(bshape[o[1]])
                cls.append(None if bshape[o[1]] == 1 else self.cl.new(bshape[o[1]]))
            else:
                b = o[1]
                e = ents[base_of_ent.index(b)]
                start, stop, step = e[1], e[2], e[3]
                size = len(range(*slice(start, stop, step).indices(base_shape[b])))
                c = base_cls[b]
                whole = start in (None, 0) and stop is None and step in (None, 1)
                if size == 1:
                    rc = None
                elif c is not None and whole:
                    rc = c
                else:
                    rc = self.cl.new(size, ("slice", c, start, stop, step) if c is not None else None)
                shape.append(size)
                cls.append(rc)
                slices.append((b, j, start, stop, step))
                if base_shape[b] == 1:
                    vmap[b] = ("c", 0)
                elif size == 1:
                    vmap[b] = ("a", ("c", 0), slice_start(start, c), step or 1)
                elif start in (None, 0) and step in (None, 1):
                    vmap[b] = ("d", j)
                else:
                    vmap[b] = ("a", ("d", j), slice_start(start, c), step or 1)
        bpos = [j for j, o in enumerate(out) if o[0] == "b"]
        for e, b in zip(ents, base_of_ent):
            if e[0] == "i":
                vmap[b] = ("c", int(e[1]))
            elif e[0] == "a":
                arr = np.array(e[1], dtype=np.int64).reshape(e[2])
                text = f"numpy.array({list(e[1])!r}, dtype=numpy.int64).reshape({tuple(e[2])!r})"
                if text not in self.consts:
                    self.consts[text] = self.fresh(f"gather{len(self.consts)}")
                name = self.consts[text]
                lead = len(bshape) - arr.ndim
                vmap[b] = ("g", name, tuple(("c", 0) if arr.shape[k] == 1 else ("d", bpos[lead + k])
                                            for k in range(arr.ndim)))
        return tuple(shape), tuple(cls), tuple(vmap), slices

    def index(self, st: ir.Index) -> None:
        a = self.lookup(st.arg)
        shape, cls, vmap, _ = self.index_map(st.index, a.shape, a.cls)
        if tuple(shape) != tuple(st.shape):
            raise ValueError(f"emit_numba: index {st.index} of {a.shape} gives {shape}, the IR says {st.shape}")
        self.view(st, a, vmap, cls)

    def index_add(self, st: ir.IndexAdd) -> None:
        g = self.lookup(st.arg)
        tshape = tuple(st.shape)
        tcls = tuple(None if s == 1 else self.cl.new(s) for s in tshape)
        rshape, rcls, vmap, slices = self.index_map(st.index, tshape, tcls)
        lead = len(rshape) - len(g.shape)
        for d, c in enumerate(g.cls):
            if c is not None and rcls[d + lead] is not None:
                self.cl.union(c, rcls[d + lead])
        # the target's extent from the scattered value's, where a slice determines it: the base of
        # the same slice elsewhere (``x[1:]``'s gradient scatters into x's shape), else arithmetic
        for b, j, start, stop, step in slices:
            if tcls[b] is None or rcls[j] is None or step not in (None, 1):
                continue
            nt, nr = tshape[b], rshape[j]
            if stop is None and start is not None and start > 0 and nt == nr + start:
                inverse = ("islice", rcls[j], start, None, 1)
            elif start in (None, 0) and stop is not None and stop < 0 and nt == nr - stop:
                inverse = ("islice", rcls[j], None, stop, 1)
            else:
                continue
            same = [src[1] for src in self.cl.sources[self.cl.find(rcls[j])]
                    if src[0] == "slice" and src[2:] == (start, stop, step)
                    and self.cl.find(src[1]) != self.cl.find(tcls[b])]
            if same:
                self.cl.union(tcls[b], same[0])
            else:
                self.cl.sources[self.cl.find(tcls[b])].append(inverse)
        v = Val(st.target, tshape, st.dtype, "array", tcls, frozenset(d for d, s in enumerate(tshape) if s != 1))
        self.define(st.target, v)
        v.arr = self.fresh(f"{v.name}_arr")
        v.alloc = "zeros"
        op = Op("scatter", st.note or f"{v.name} = index_add", rshape, v,
                 data={"map": vmap, "cls": rcls, "gather": any(c is not None and c[0] == "g" for c in vmap)})
        op.reads = [self.read_of(g, align(g.shape, rshape))]

        def place() -> None:
            self.place(op)
            v.arr_ready = chain_of(op)[0]
        self.defer(place)

    def size(self, st: ir.Size) -> None:
        """A count of ``arg``'s extents: a 0-d value before the loops; ``arg``'s elements are not read."""
        a = self.lookup(st.arg)
        count = [a.cls[d] for d in st.axes if a.shape[d] != 1]
        v = Val(st.target, (), st.dtype, "scalar")
        self.define(st.target, v)
        v.var = v.name
        op = Op("stmt", st.note or f"{v.name} = size", (), v, data={"count": count})
        self.root.insert(0, op)
        v.chain = [op]

    def elementwise(self, st: ir.Elementwise) -> None:
        shape = tuple(st.shape)
        syms = sorted(st.expr.free_symbols, key=lambda s: s.name)
        cls: list = [None] * len(shape)
        ops = []
        for s in syms:
            a = self.lookup(s.name)
            lead = len(shape) - len(a.shape)
            for d, c in enumerate(a.cls):
                if c is not None:
                    self.unify_into(cls, d + lead, c)
            ops.append((s.name, a))
        v = Val(st.target, shape, st.dtype, "scalar", self.fresh_cls(shape, cls))
        self.define(st.target, v)
        v.var = v.name
        op = Op("stmt", st.note or f"{v.name} = elementwise", shape, v, data={"expr": st.expr, "syms": []})
        for name, a in ops:
            op.reads.append(self.read_of(a, align(a.shape, shape)))
            op.data["syms"].append(name)
        v.varying = frozenset(self.varying_of(op))

        def place() -> None:
            self.place(op)
            v.chain = chain_of(op)
        self.defer(place)

    # ------------------------------------------------------------------ reads
    def resolve(self, a: Val, m: tuple) -> tuple[Val, tuple]:
        while a.kind == "view":
            m = compose(a.vmap, m)
            a = self.vals[a.base]
        return a, m

    def read_of(self, a: Val, m: tuple) -> list:
        root, m = self.resolve(a, m)
        root.used = True
        return [root, m, None]

    def varying_of(self, op: Op) -> set[int]:
        out: set[int] = set()
        for root, m, _ in op.reads:
            dims = root.varying if root.kind != "param" else frozenset(root.nondims)
            for d in dims:
                out |= dims_of(m[d])
        return out

    def depth_of(self, op: Op, dims: set[int]) -> int:
        nd = [d for d, s in enumerate(op.shape) if s != 1]
        return max((nd.index(d) + 1 for d in dims if d in nd), default=0)

    def pure(self, op: Op, root: Val, m: tuple) -> bool:
        """Whether ``root``'s register value at ``op``'s element is the one ``m`` reads."""
        mine = [d for d, s in enumerate(op.shape) if s != 1]
        theirs = root.nondims
        for d in root.varying:
            c = m[d]
            if c[0] != "d" or c[1] not in mine or mine.index(c[1]) != theirs.index(d):
                return False
        return True

    # ------------------------------------------------------------------ placement
    def deps_of(self, op: Op) -> list[_Dep]:
        deps = []
        for r in op.reads:
            root, m, mode = r
            mode = r[2] = mode or ("scalar" if root.kind == "scalar" else "array")
            if mode == "scalar" and not self.pure(op, root, m):
                mode = r[2] = "array"
            if mode == "scalar":
                self.complete(root)
                deps.append(_Dep(root.chain, True, root, r))
            elif root.kind != "param":
                self.ensure_array(root)
                deps.append(self.array_dep(op, root, m, r, mode))
        for item in op.data.get("after", ()):
            deps.append(_Dep(chain_of(item), False))
        return deps

    def array_dep(self, op: Op, root: Val, m: tuple, r: list, mode: str) -> _Dep:
        """Reading ``root``'s array waits for the pass that writes it, or, when the writer is a store
        over the same leading loops and the read is pure on them, only for the writer's inner loop
        (a row written in one inner loop is read by a sibling loop of the same outer iteration)."""
        if mode == "array" and root.arr_item is not None:
            writer = chain_of(root.arr_item)
            mine = [d for d, s in enumerate(op.shape) if s != 1]
            j = 0
            for lvl, d in enumerate(root.nondims[:len(writer) - 1]):
                c = m[d]
                if c[0] != "d" or c[1] not in mine or mine.index(c[1]) != lvl:
                    break
                j = lvl + 1
            j = min(j, len(writer) - 2)
            if j >= 1:
                return _Dep(writer[:j + 1], True, root, r)
        return _Dep([root.arr_ready], False, root, r)

    def place(self, op: Op, min_depth: int = 0) -> None:
        sig = [self.cl.find(c) for c in self.cls_of_shape(op)]
        while True:
            deps = self.deps_of(op)
            depth = max([min_depth, self.depth_of(op, self.varying_of(op)) if op.kind == "stmt" else len(sig)]
                        + [len(d.chain) - 1 for d in deps if d.enter])
            res = self.try_place(op, sig, depth, deps)
            if res is None:
                return
            for d in res:
                d.read[2] = "array_root" if d.read[2] == "array" else "array"

    def cls_of_shape(self, op: Op) -> list[int]:
        if op.kind in ("store", "stmt") and op.val is not None and op.val.shape == op.shape:
            cls = op.val.cls
        else:
            cls = op.data["cls"]
        return [c for c in cls if c is not None]

    def try_place(self, op: Op, sig: list[int], depth: int, deps: list[_Dep]) -> list[_Dep] | None:
        path: list = []
        parent: Loop | None = None
        for j in range(depth + 1):
            block = self.root if parent is None else parent.items
            active = [d for d in deps if _same_prefix(d.chain, path, j) and len(d.chain) > j]
            if j == depth:
                lb = max((block.pos(d.chain[j]) for d in active), default=-1) + 1
                # program order, but ahead of any later loop (so that loops can use the value)
                if not block.loops:
                    lb = len(block)
                while lb < len(block) and not isinstance(block[lb], Loop):
                    lb += 1
                block.insert(lb, op)
                op.parent = parent
                return None
            must = [d for d in active if d.enter and len(d.chain) - 1 > j]
            others = [d for d in active if d not in must]
            lb = max((block.pos(d.chain[j]) for d in others), default=-1) + 1
            loops: list = []
            for d in must:
                if not any(d.chain[j] is x for x in loops):
                    loops.append(d.chain[j])
            if loops:
                ok = [x for x in loops if block.pos(x) >= lb and self.cl.find(x.cls) == sig[j]]
                keep = max(ok, key=lambda x: block.pos(x)) if ok else None
                bad = [d for d in must if d.chain[j] is not keep]
                if bad:
                    return bad
                nxt = keep
            else:
                cands = [x for x in block[lb:] if isinstance(x, Loop) and self.cl.find(x.cls) == sig[j]]
                if cands:
                    nxt = cands[-1]
                else:
                    nxt = Loop(sig[j], j, parent)
                    block.append(nxt)
            path.append(nxt)
            parent = nxt
        return None  # pragma: no cover

    # ------------------------------------------------------------------ reductions, stores, completions
    def plan_sum(self, st: ir.Reduce, v: Val, a: Val, axes: list[int], rmap: list) -> None:
        """Place a sum or mean: a register accumulator over innermost reduced loops, else an array."""
        nd = a.nondims
        red = [nd.index(d) for d in axes if a.shape[d] != 1]
        k = red[0]
        op = Op("update", st.note or f"{v.name} = {st.kind}", a.shape, v,
                 data={"cls": a.cls, "kind": st.kind, "adt": a.dtype})
        op.reads = [self.read_of(a, identity(len(a.shape)))]
        count = [a.cls[d] for d in axes if a.shape[d] != 1]
        if v.kind == "scalar":
            acc = self.accumulator()
            op.data["acc"] = acc
            self.place(op, min_depth=len(nd))
            chain = chain_of(op)
            loop = chain[k]
            parent = chain[k - 1] if k else None
            block = self.root if parent is None else parent.items
            init = Op("init", "", (), v, data={"acc": acc})
            init.parent = parent
            block.insert(block.pos(loop), init)
            done = Op("complete", st.note or f"{v.name} = {st.kind}", (), v,
                       data={"acc": acc, "kind": st.kind, "count": count})
            done.parent = parent
            v.var = v.name
            v.pending = (done, loop)
            loop.reductions.append((acc, v.dtype))
        else:
            v.arr = self.fresh(f"{v.name}_arr")
            v.alloc = "zeros"
            op.data["arr"] = v.arr
            # kept dims of the argument -> the result's dims
            op.data["rmap"] = rmap
            self.place(op, min_depth=len(nd))
            root_item = chain_of(op)[0]
            if root_item is op or not isinstance(root_item, Loop):
                raise AssertionError("an array reduction outside a loop")  # pragma: no cover
            if 0 in red:
                # summed over the outer loop: per-chunk partial arrays when it runs in parallel
                root_item.array_reductions.append(v)
            v.arr_ready = root_item
            if st.kind == "mean":
                v.rescaled = True
                done = Op("complete", st.note or f"{v.name} = mean", (), v,
                           data={"arr": v.arr, "kind": "mean", "count": count})
                self.root.insert(self.root.pos(root_item) + 1, done)
                v.arr_ready = done

    def complete(self, v: Val) -> None:
        if v.pending is None:
            return
        done, loop = v.pending
        v.pending = None
        block = self.root if done.parent is None else done.parent.items
        at = block.pos(loop) + 1
        while at < len(block) and isinstance(block[at], Op) and block[at].kind == "complete":
            at += 1
        block.insert(at, done)
        v.chain = chain_of(done)

    def ensure_array(self, v: Val) -> None:
        if v.arr is not None or v.kind == "param":
            return
        if v.kind != "scalar":
            raise AssertionError(f"no array for {v.name}")  # pragma: no cover
        self.complete(v)
        v.arr = self.fresh(f"{v.name}_arr")
        v.alloc = "empty"
        op = Op("store", f"{v.name} kept in an array", v.shape, v, data={"cls": v.cls, "arr": v.arr})
        op.reads = [[v, identity(len(v.shape)), "scalar"]]
        self.place(op)
        v.arr_ready = chain_of(op)[0]
        v.arr_item = op

    def materialize_view(self, v: Val) -> Val:
        """An array-backed value equal to view ``v`` (copied by a store pass)."""
        w = Val(self.fresh(f"{v.name}_copy"), v.shape, v.dtype, "array", v.cls, frozenset(v.nondims))
        w.arr = self.fresh(f"{v.name}_arr")
        w.alloc = "empty"
        op = Op("store", f"{v.name} materialised", v.shape, w, data={"cls": v.cls, "arr": w.arr})
        op.reads = [self.read_of(v, identity(len(v.shape)))]
        self.place(op)
        w.arr_ready = chain_of(op)[0]
        w.arr_item = op
        self.vals[w.name] = w
        return w

    def array_of(self, v: Val) -> Val:
        """A param or array-backed value equal to ``v``."""
        root, m = self.resolve(v, identity(len(v.shape)))
        if root is v or (v.kind == "view" and m == identity(len(root.shape)) and root.shape == v.shape):
            if root.kind == "param":
                return root
            self.ensure_array(root)
            return root
        if v.kind == "view":
            if v.copy is None:
                v.copy = self.materialize_view(v)
            return v.copy
        self.ensure_array(v)
        return v

    # ------------------------------------------------------------------ top level
    def plan(self) -> None:
        """Plan the kernel; ``outs`` then holds one entry per output: ``("scalar", code, dtype, None)``
        for a register or 0-d param, ``("element", array, dtype, map)`` for one element of an array,
        ``("array", array, dtype, value)`` for an array (the param or array-backed value returned)."""
        self.build()
        outs: list[tuple] = []
        for name in self.kernel.outputs:
            v = self.lookup(name)
            if not v.shape:
                root, m = self.resolve(v, ())
                root.used = True
                if root.kind == "scalar":
                    self.complete(root)
                    outs.append(("scalar", root.var, v.dtype, None))
                elif root.kind == "param" and not root.shape:
                    outs.append(("scalar", root.var, v.dtype, None))
                else:
                    outs.append(("element", root.name if root.kind == "param" else root.arr, v.dtype, m))
                continue
            a = self.array_of(v)
            a.used = True
            outs.append(("array", a.name if a.kind == "param" else a.arr, v.dtype, a))
        self.outs = outs


#: How the planner takes each IR statement type it plans itself (``folds.STATEMENTS`` has the rest).
STATEMENTS: dict[type, Callable[[Planner, Any], None]] = {
    ir.Elementwise: Planner.elementwise, ir.Reduce: Planner.reduce, ir.Broadcast: Planner.broadcast,
    ir.Transpose: Planner.transpose, ir.Reshape: Planner.reshape, ir.Index: Planner.index,
    ir.IndexAdd: Planner.index_add, ir.Size: Planner.size, ir.MatMul: Planner.matmul,
}

#: The ``Reduce`` kinds the planner places itself (``folds.REDUCTIONS``: max, min, prod).
REDUCTIONS: dict[str, Callable[..., None]] = {"sum": Planner.plan_sum, "mean": Planner.plan_sum}
