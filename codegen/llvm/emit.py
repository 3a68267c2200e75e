"""``Kernel`` -> one LLVM IR module: small values as scalar SSA values, loops as LLVM loops, large arrays as buffers.

Values
------
* ``Sc``: a value of at most ``SCALAR_LIMIT`` elements (or any value the scalar lines made): one element text per
  element, in C order (names bound in ``Lines.env``, or constants). Runs of consecutive statements over such values
  are printed by ``codegen.numba.scalar.scalar_lines`` (the code numba compiles for the same statements) and compiled
  by ``lines.Lines``.
* ``Buf``: a strided view of memory (a param, a scan's flat result, a materialised statement). ``Reshape``,
  ``Transpose``, ``Broadcast`` and ``Index`` of a buffer are views (no copy).
* ``Cat`` and ``Mapped``: a concatenation and an index map over other values, read element by element (the adjoint
  loop reads the history through them directly).

``ir.Scan`` becomes a loop whose carry is phi nodes; the step's values are scalars (the step kernel is walked
inside the loop body), its row is read from ``xs`` at the step index, its outputs stored into the scan's buffer. A
large ``Elementwise`` or ``Reduce`` of the main kernel is a loop nest over a ``malloc``-ed buffer. Anything else
raises ``ir.Unsupported`` (callers keep the numba kernel).

The function
------------
``define i32 @<name>(...)``: per kernel param, a 0-d value (double / float / i64 / i8) or the address of its
numpy array object (``id(a)``: the data pointer, flags, rank and dims are read from the object: numpy's
``PyArrayObject`` layout, and checked: C-contiguous, the expected rank, dims and dtype number, not big-endian);
then per array output the address of the array to write it into (allocated by the caller); then, where there are
0-d outputs, a pointer to doubles (float outputs) and one to int64s (int and bool outputs), one slot each. Returns 0,
or 1 when an argument fails its check (the caller converts and retries).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import ir
from ..numba import scalar
from .lines import FLOATS, Fn, Lines, Val, const, fconst, ll_type
from .values import (  # noqa: F401  (names importers of this module use)
    BYTEORDER,
    C_CONTIGUOUS,
    DATA,
    DESCR,
    DIMS,
    FLAGS,
    MAX_INSTRUCTIONS,
    NDIM,
    SCALAR_LIMIT,
    TYPE_NUM,
    WRITEABLE,
    Buf,
    Cat,
    Idx,
    Mapped,
    Sc,
    Value,
    c_strides,
    object_array,
    operands,
    storage,
)
from .views import Views


@dataclass
class _Outputs:
    arrays: dict = field(default_factory=dict)    # output position -> the array's data pointer (LLVM value)
    scalars: dict = field(default_factory=dict)   # output position -> ("f" | "i", slot)


class Emitter(Views):
    def __init__(self, kernel: ir.Kernel, out_params: tuple[int, ...] = ()) -> None:
        self.kernel = kernel
        self.out_params = tuple(out_params)
        self.decls: dict[str, str] = {}
        self.globs: list[str] = []
        self.fn = Fn(self.decls, self.globs)
        self.lines = Lines(self.fn)
        self.used: set[str] = set()
        self.allocas: list[str] = []
        self.mallocs: list[str] = []
        self.hoisted: list[str] = []     # the mallocs, at the start of the block after the argument checks
        self.depth = 0               # loop nesting: no allocation inside a loop
        self.loads: dict = {}

    # ------------------------------------------------------------------ names
    def fresh(self, stem: str) -> str:
        k = 0
        while f"{stem}_{k}" in self.used:
            k += 1
        self.used.add(f"{stem}_{k}")
        return f"{stem}_{k}"

    def bind(self, v: Val, stem: str = "_e") -> str:
        if v.py is not None:
            return self.const_text(v)
        name = self.fresh(stem)
        self.lines.bind(name, v)
        return name

    @staticmethod
    def const_text(v: Val) -> str:
        if v.ty == "i1":
            return "True" if v.py else "False"
        if v.ty == "i64":
            return f"numpy.int64({int(v.py)})"
        return f"numpy.{'float64' if v.ty == 'double' else 'float32'}({float(v.py)!r})"

    def val(self, text: str) -> Val:
        return self.lines.value(text)

    # ------------------------------------------------------------------ index arithmetic
    def iadd(self, a: Idx, b: Idx) -> Idx:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return self.fn.op(f"add i64 {a}, {b}")

    def imul(self, a: Idx, c: int) -> Idx:
        if isinstance(a, int):
            return a * c
        if c == 1:
            return a
        if c == 0:
            return 0
        return self.fn.op(f"mul i64 {a}, {c}")

    def clamp(self, a: Idx, lo: int, hi: int) -> Idx:
        if isinstance(a, int):
            return min(max(a, lo), hi)
        f = self.fn
        c1 = f.op(f"icmp slt i64 {a}, {lo}")
        a1 = f.op(f"select i1 {c1}, i64 {lo}, i64 {a}")
        c2 = f.op(f"icmp sgt i64 {a1}, {hi}")
        return f.op(f"select i1 {c2}, i64 {hi}, i64 {a1}")

    # ------------------------------------------------------------------ element reads
    def get(self, v: Value, idx: tuple) -> str:
        """The element text of ``v`` at ``idx`` (static ints or LLVM i64 values)."""
        if isinstance(v, Sc):
            if all(isinstance(i, int) for i in idx):
                return v.elems[tuple(idx)] if idx else v.elems[()]
            return self.select_elem(v, idx)
        if isinstance(v, Buf):
            off: Idx = v.offset
            for i, s in zip(idx, v.strides):
                off = self.iadd(off, self.imul(i, s))
            return self.load(v.ptr, v.dtype, off)
        if isinstance(v, Mapped):
            return self.get(v.base, v.fn(self, tuple(idx)))
        if isinstance(v, Cat):
            return self.cat_get(v, tuple(idx))
        raise ir.Unsupported(f"llvm: value {type(v).__name__}")

    def load(self, ptr: str, dtype: str, off: Idx) -> str:
        key = (ptr, off, self.fn.cur[0])
        got = self.loads.get(key)
        if got is not None:
            return got
        f = self.fn
        st = storage(dtype)
        p = ptr if off == 0 else f.op(f"getelementptr inbounds {st}, ptr {ptr}, i64 {off}")
        x = f.op(f"load {st}, ptr {p}")
        if st == "i8":
            x = f.op(f"icmp ne i8 {x}, 0")
        name = self.bind(Val(x, ll_type(dtype)), "_ld")
        self.loads[key] = name
        return name

    def store(self, ptr: str, dtype: str, off: Idx, text: str) -> None:
        f = self.fn
        v = self.lines.convert(self.val(text), ll_type(dtype))
        st = storage(dtype)
        x = v.text
        if st == "i8":
            x = f.op(f"zext i1 {x} to i8")
        p = ptr if off == 0 else f.op(f"getelementptr inbounds {st}, ptr {ptr}, i64 {off}")
        f.raw(f"store {st} {x}, ptr {p}")

    def select_elem(self, v: Sc, idx: tuple) -> str:
        flat: Idx = 0
        for i, s in zip(idx, c_strides(v.shape)):
            flat = self.iadd(flat, self.imul(i, s))
        elems = list(v.elems.reshape(-1))
        ty = ll_type(v.dtype)
        out = self.lines.convert(self.val(elems[-1]), ty)
        f = self.fn
        for j in range(len(elems) - 2, -1, -1):
            c = f.op(f"icmp eq i64 {flat}, {j}")
            e = self.lines.convert(self.val(elems[j]), ty)
            out = Val(f.op(f"select i1 {c}, {ty} {e.text}, {ty} {out.text}"), ty)
        return self.bind(out)

    def cat_get(self, v: Cat, idx: tuple) -> str:
        a = v.axis
        p = idx[a]
        offs = list(itertools.accumulate([0] + [part.shape[a] for part in v.parts]))
        ty = ll_type(v.dtype)
        if isinstance(p, int):
            for part, o, o2 in zip(v.parts, offs, offs[1:]):
                if o <= p < o2:
                    e = self.get(part, idx[:a] + (p - o,) + idx[a + 1:])
                    return self.bind(self.lines.convert(self.val(e), ty))
            raise IndexError(p)
        f = self.fn
        vals = []
        for part, o, o2 in zip(v.parts, offs, offs[1:]):
            if o2 == o:
                continue
            local = self.clamp(self.iadd(p, -o), 0, o2 - o - 1)
            e = self.get(part, idx[:a] + (local,) + idx[a + 1:])
            vals.append((o, self.lines.convert(self.val(e), ty)))
        out = vals[-1][1]
        for (_, x), (o2, _) in zip(reversed(vals[:-1]), reversed(vals[1:])):
            c = f.op(f"icmp slt i64 {p}, {o2}")
            out = Val(f.op(f"select i1 {c}, {ty} {x.text}, {ty} {out.text}"), ty)
        return self.bind(out)

    # ------------------------------------------------------------------ views
    def loop(self, n: int, carries: list[Val], body) -> list[Val]:
        """``for k in range(n)`` carrying ``carries`` (phi nodes): ``body(k, values) -> new values``."""
        f = self.fn
        pre = f.cur[0]
        head, bl, done = f.label("head"), f.label("body"), f.label("done")
        f.raw(f"br label %{head}")
        f.block(head)
        head_lines = f.cur[1]
        f.n += 1
        k = f"%k{f.n}"
        phis = []
        for c in carries:
            f.n += 1
            phis.append(Val(f"%c{f.n}", c.ty))
        cond = f.op(f"icmp slt i64 {k}, {n}")
        f.raw(f"br i1 {cond}, label %{bl}, label %{done}")
        f.block(bl)
        self.depth += 1
        new = body(k, phis)
        self.depth -= 1
        k1 = f.op(f"add i64 {k}, 1")
        latch = f.cur[0]
        f.raw(f"br label %{head}")
        head_lines[0:0] = [f"  {k} = phi i64 [0, %{pre}], [{k1}, %{latch}]"] + [
            f"  {p.text} = phi {p.ty} [{c.text}, %{pre}], [{x.text}, %{latch}]"
            for p, c, x in zip(phis, carries, new)]
        f.block(done)
        return phis

    def nest(self, shape: tuple, body, carries: list[Val] | None = None):
        """Loops over every index of ``shape`` (C order), threading ``carries``: ``body(idx[, values])``."""
        if carries is None:
            def wrap(idx, vals):
                body(idx)
                return vals
            self.nest(shape, wrap, [])
            return None

        def level(d: int, prefix: tuple, vals: list[Val]) -> list[Val]:
            if d == len(shape):
                return body(prefix, vals)
            if shape[d] == 1:
                return level(d + 1, prefix + (0,), vals)
            return self.loop(shape[d], vals, lambda k, vs: level(d + 1, prefix + (k,), vs))
        return level(0, (), carries)

    # ------------------------------------------------------------------ statements
    def walk(self, kernel: ir.Kernel, inputs: dict[str, Value]) -> list[Value]:
        vals: dict[str, Value] = dict(inputs)
        run: list = []
        run_names: set[str] = set()

        def flush() -> None:
            if run:
                self.scalar_run(run, vals)
                run.clear()
                run_names.clear()

        for st in kernel.body:
            small = math.prod(st.shape) <= SCALAR_LIMIT and not isinstance(st, ir.Scan | ir.Size)
            if small:
                for name in operands(st):
                    if name in run_names or ir.literal(name) is not None and name not in vals:
                        continue
                    v = vals.get(name)
                    if not isinstance(v, Sc):
                        small = False
                        break
            if small:
                run.append(st)
                run_names.add(st.target)
                continue
            flush()
            vals[st.target] = self.statement(st, vals)
        flush()
        return [self.lookup(vals, name) for name in kernel.outputs]

    def scalar_run(self, run: list, vals: dict) -> None:
        defined = {st.target for st in run}
        params, inputs = [], {}
        for st in run:
            for name in operands(st):
                if name in defined or name in inputs or (ir.literal(name) is not None and name not in vals):
                    continue
                v = vals[name]
                params.append(ir.Param(name, len(params), tuple(v.shape), v.dtype))
                inputs[name] = [str(e) for e in v.elems.reshape(-1)]
        sub = ir.Kernel("_run", tuple(params), tuple(run), tuple(st.target for st in run))
        if sum(math.prod(st.shape) for st in run) > 64 * scalar.SCALAR_BUDGET:
            raise ir.Unsupported("llvm: scalar code too long")
        lines, outs = scalar.scalar_lines(sub, inputs, self.fresh)
        self.lines.run(lines)
        for st, elems in zip(run, outs):
            vals[st.target] = Sc(object_array([str(e) for e in elems], tuple(st.shape)), st.dtype)

    def statement(self, st: Any, vals: dict) -> Value:
        if isinstance(st, ir.Size):
            a = self.lookup(vals, st.arg)
            count = math.prod(a.shape[int(d) % max(len(a.shape), 1)] for d in st.axes) if a.shape else 1
            v = Val(const(count, ll_type(st.dtype)), ll_type(st.dtype), float(count) if st.dtype.startswith("float")
                    else count)
            return Sc(object_array([self.const_text(v)], ()), st.dtype)
        if isinstance(st, ir.Index | ir.Reshape | ir.Transpose | ir.Broadcast):
            return self.view(st, self.lookup(vals, st.arg))
        if isinstance(st, ir.Concat):
            parts = [self.lookup(vals, a) for a in st.args]
            if st.stack:
                parts = [Mapped(p, (lambda ax: lambda em, idx: idx[:ax] + idx[ax + 1:])(st.axis),
                                tuple(p.shape[:st.axis]) + (1,) + tuple(p.shape[st.axis:]), p.dtype) for p in parts]
            axis = int(st.axis) % len(st.shape)
            return Cat(parts, axis, tuple(st.shape), st.dtype)
        if isinstance(st, ir.Scan):
            return self.scan(st, vals)
        if isinstance(st, ir.Elementwise):
            return self.elementwise(st, vals)
        if isinstance(st, ir.Reduce):
            return self.reduce(st, vals)
        if isinstance(st, ir.IndexAdd):
            return self.index_add(st, vals)
        raise ir.Unsupported(f"llvm: {type(st).__name__} of a large value")

    def elementwise(self, st: ir.Elementwise, vals: dict) -> Value:
        """A large elementwise statement: a loop nest storing one element per iteration."""
        shape = tuple(st.shape)
        names = operands(st)
        ops = [self.lookup(vals, n) for n in names]
        params = tuple(ir.Param(n, j, (), v.dtype) for j, (n, v) in enumerate(zip(names, ops)))
        one = ir.Elementwise(st.target, st.expr, (), st.dtype, st.note)
        sub = ir.Kernel("_elem", params, (one,), (st.target,))
        p = self.malloc(math.prod(shape), st.dtype)
        cs = c_strides(shape)

        def body(idx: tuple) -> None:
            inputs = {}
            for n, v in zip(names, ops):
                lead = len(shape) - len(v.shape)
                vi = tuple(0 if m == 1 else i for m, i in zip(v.shape, idx[lead:]))
                inputs[n] = [self.get(v, vi)]
            lines, (out,) = scalar.scalar_lines(sub, inputs, self.fresh)
            self.lines.run(lines)
            off: Idx = 0
            for i, s in zip(idx, cs):
                off = self.iadd(off, self.imul(i, s))
            self.store(p, st.dtype, off, out[0])
        self.nest(shape, body)
        return Buf(p, st.dtype, shape, cs)

    def index_add(self, st: ir.IndexAdd, vals: dict) -> Value:
        """A large scatter into zeros through ints, slices and new axes (no repeated target): zeros, then each
        element of the region added (``0 + x``, as numba's accumulation)."""
        shape = tuple(st.shape)
        g = self.lookup(vals, st.arg)
        spec = self.norm_index(st.index, shape)
        cs = c_strides(shape)
        region, off0, rstrides = [], 0, []
        d = 0
        for e in spec:
            if e[0] == "n":
                region.append(1)
                rstrides.append(0)
                continue
            if e[0] == "i":
                off0 += e[1] * cs[d]
            else:
                off0 += e[1] * cs[d]
                region.append(e[3])
                rstrides.append(e[2] * cs[d])
            d += 1
        gshape = tuple(g.shape)
        while len(gshape) > len(region) and gshape[0] == 1:   # numpy's assignment drops leading size-1 dims
            g = Mapped(g, lambda em, idx: (0,) + tuple(idx), gshape[1:], g.dtype)
            gshape = gshape[1:]
        if len(gshape) > len(region) or any(a not in (1, b) for a, b in zip(gshape[::-1], region[::-1])):
            raise ir.Unsupported(f"llvm: scatter of {gshape} into a region of {tuple(region)}")
        n = math.prod(shape)
        p = self.malloc(n, st.dtype)
        st_ty = storage(st.dtype)
        size = n * (1 if st_ty == "i8" else 4 if st.dtype == "float32" else 8)
        self.fn.declare("llvm.memset.p0.i64", "void", ["ptr", "i8", "i64", "i1"])
        self.fn.raw(f"call void @llvm.memset.p0.i64(ptr {p}, i8 0, i64 {size}, i1 false)")
        dt = ll_type(st.dtype)
        zero = Val(const(0, dt), dt, 0)
        lead = len(region) - len(gshape)

        def body(idx: tuple) -> None:
            off: Idx = off0
            for i, s in zip(idx, rstrides):
                off = self.iadd(off, self.imul(i, s))
            gi = tuple(0 if m == 1 else i for m, i in zip(gshape, idx[lead:]))
            x = self.lines.convert(self.val(self.get(g, gi)), dt)
            add = "fadd" if dt in FLOATS else "or" if dt == "i1" else "add"
            s = Val(self.fn.op(f"{add} {dt} {zero.text}, {x.text}"), dt)
            self.store(p, st.dtype, off, self.bind(s))
        self.nest(tuple(region), body)
        return Buf(p, st.dtype, shape, cs)

    def reduce(self, st: ir.Reduce, vals: dict) -> Value:
        a = self.lookup(vals, st.arg)
        nd = len(a.shape)
        axes = sorted({int(x) % nd for x in st.axes}) if nd else []
        kept = [d for d in range(nd) if d not in axes]
        kshape = tuple(a.shape[d] for d in kept)
        rshape = tuple(a.shape[d] for d in axes)
        dt = ll_type(st.dtype)
        if st.kind not in ("sum", "mean", "prod", "max", "min") or dt == "i1":
            raise ir.Unsupported(f"llvm: reduce {st.kind} to {st.dtype}")
        f = self.fn
        init = {"sum": 0, "mean": 0, "prod": 1, "max": -math.inf, "min": math.inf}[st.kind]
        if dt not in FLOATS and st.kind in ("max", "min"):
            init = -(1 << 63) if st.kind == "max" else (1 << 63) - 1

        def one(kidx: tuple) -> str:
            def step(ridx: tuple, accs: list[Val]) -> list[Val]:
                full = [0] * nd
                for d, i in zip(kept, kidx):
                    full[d] = i
                for d, i in zip(axes, ridx):
                    full[d] = i
                x = self.lines.convert(self.val(self.get(a, tuple(full))), dt)
                acc = accs[0]
                if st.kind in ("sum", "mean", "prod"):
                    opn = ("fadd" if st.kind != "prod" else "fmul") if dt in FLOATS else (
                        "add" if st.kind != "prod" else "mul")
                    return [Val(f.op(f"{opn} {dt} {acc.text}, {x.text}"), dt)]
                if dt in FLOATS:           # the first NaN, else the extreme (emit_numba's folds)
                    keep = f.op(f"fcmp {'uge' if st.kind == 'max' else 'ule'} {dt} {acc.text}, {x.text}")
                    return [Val(f.op(f"select i1 {keep}, {dt} {acc.text}, {dt} {x.text}"), dt)]
                keep = f.op(f"icmp {'sge' if st.kind == 'max' else 'sle'} {dt} {acc.text}, {x.text}")
                return [Val(f.op(f"select i1 {keep}, {dt} {acc.text}, {dt} {x.text}"), dt)]
            (acc,) = self.nest(rshape, step, [Val(const(init, dt), dt)])
            if st.kind == "mean":
                acc = Val(f.op(f"fdiv {dt} {acc.text}, {fconst(math.prod(rshape), dt)}"), dt)
            return self.bind(acc)

        if math.prod(kshape) <= SCALAR_LIMIT:
            elems = [one(kidx) for kidx in np.ndindex(*kshape)]
            out = Sc(object_array(elems, kshape), st.dtype)
            if st.keepdims:
                return Sc(out.elems.reshape(tuple(st.shape)), st.dtype)
            return out
        p = self.malloc(math.prod(kshape), st.dtype)
        cs = c_strides(kshape)

        def outer(kidx: tuple) -> None:
            off: Idx = 0
            for i, s in zip(kidx, cs):
                off = self.iadd(off, self.imul(i, s))
            self.store(p, st.dtype, off, one(kidx))
        self.nest(kshape, outer)
        return Buf(p, st.dtype, tuple(st.shape), c_strides(tuple(st.shape)))

    # ------------------------------------------------------------------ loops of the IR
    def scan(self, st: ir.Scan, vals: dict) -> Value:
        init = self.lookup(vals, st.init)
        wc, wy, n = st.carry_width, st.y_width, st.length
        if wc > SCALAR_LIMIT or not isinstance(init, Sc) and wc > 0:
            raise ir.Unsupported("llvm: a scan with a large carry")
        if wy and n is None:
            raise ir.Unsupported("llvm: a while loop with outputs")
        dt = ll_type(st.dtype)
        if dt not in FLOATS:
            raise ir.Unsupported(f"llvm: a scan over {st.dtype}")
        xs = self.lookup(vals, st.xs) if st.xs is not None else None
        consts = [self.lookup(vals, c) for c in st.consts]
        total = wc + (n or 0) * wy
        buf = self.target_buffer(st.target) if wy else None
        if wy and buf is None:
            buf = self.malloc(total, st.dtype)
        carry0 = [self.lines.convert(self.val(e), dt) for e in init.elems.reshape(-1)]
        first = wc - st.acc_width

        def inputs_for(body: ir.Kernel, k: Idx, carry: list[Val]) -> dict:
            out: dict[str, Value] = {}
            for q in body.params:
                if q.group == "carry":
                    out[q.name] = Sc(object_array([self.bind(c, "_c") for c in carry], tuple(q.shape)), st.dtype)
                elif q.group == "row":
                    elems = [self.get(xs, (k,) + tuple(ix)) for ix in np.ndindex(*q.shape)]
                    out[q.name] = Sc(object_array(elems, tuple(q.shape)), q.dtype)
                elif q.group == "step":
                    s = k if st.start == 0 else self.iadd(k, st.start)
                    s = Val(str(s), "i64", s) if isinstance(s, int) else Val(s, "i64")
                    out[q.name] = Sc(object_array([self.bind(s, "_k")], ()), "int64")
                else:
                    out[q.name] = consts[q.index]
            return out

        def step(k: Idx, carry: list[Val]) -> list[Val]:
            outs = self.walk(st.body, inputs_for(st.body, k, carry))
            new = [self.val(e) for e in self.elements(outs[0])]
            if st.acc_width:
                incs = [self.val(e) for e in self.elements(outs[1])]
                for j, d in enumerate(incs):
                    c = carry[first + j]
                    ty = c.ty if c.ty == d.ty else "double"
                    new.append(Val(self.fn.op(f"fadd {ty} {self.lines.convert(c, ty).text}, "
                                              f"{self.lines.convert(d, ty).text}"), ty))
                outs = [outs[0]] + outs[2:]
            if wy:
                ys = self.elements(outs[1])
                base = self.iadd(self.imul(k, wy), wc)
                for j, e in enumerate(ys):
                    self.store(buf, st.dtype, self.iadd(base, j), e)
            return [self.lines.convert(x, dt) for x in new]

        if st.cond is None:
            def counted(j: str, carry: list[Val]) -> list[Val]:
                k = self.fn.op(f"sub i64 {n - 1}, {j}") if st.reverse else j
                return step(k, carry)
            final = self.loop(n, carry0, counted)
        else:
            final = self.while_loop(st, carry0, inputs_for, step)
        if wy:
            for j, c in enumerate(final):
                self.store(buf, st.dtype, j, self.bind(c))
            return Buf(buf, st.dtype, (total,), (1,))
        return Sc(object_array([self.bind(c) for c in final], (wc,)), st.dtype)

    def elements(self, v: Value) -> list[str]:
        if isinstance(v, Sc):
            return [str(e) for e in v.elems.reshape(-1)]
        return [self.get(v, tuple(ix)) for ix in np.ndindex(*v.shape)]

    def while_loop(self, st: ir.Scan, carry0: list[Val], inputs_for, step) -> list[Val]:
        f = self.fn
        pre = f.cur[0]
        head, bl, done = f.label("whead"), f.label("wbody"), f.label("wdone")
        f.raw(f"br label %{head}")
        f.block(head)
        head_lines = f.cur[1]
        phis = []
        for c in carry0:
            f.n += 1
            phis.append(Val(f"%c{f.n}", c.ty))
        self.depth += 1
        (test,) = self.walk(st.cond, inputs_for(st.cond, 0, phis))
        cond = self.lines.convert(self.val(self.elements(test)[0]), "i1")
        f.raw(f"br i1 {cond.text}, label %{bl}, label %{done}")
        f.block(bl)
        new = step(0, phis)
        self.depth -= 1
        latch = f.cur[0]
        f.raw(f"br label %{head}")
        head_lines[0:0] = [f"  {p.text} = phi {p.ty} [{c.text}, %{pre}], [{x.text}, %{latch}]"
                           for p, c, x in zip(phis, carry0, new)]
        f.block(done)
        return phis

    # ------------------------------------------------------------------ the function
    def target_buffer(self, target: str) -> str | None:
        for j, name in enumerate(self.kernel.outputs):
            if name == target and j in self.outs.arrays and self.kernel.outputs.index(name) == j:
                self.direct.add(j)
                return self.outs.arrays[j]
        return None

    def emit(self) -> Module:
        k = self.kernel
        f = self.fn
        args, head = [], []
        ok = f.label("ok")
        checks: list[str] = []
        inputs: dict[str, Value] = {}
        pending: list[tuple] = []
        for q in k.params:
            if not q.shape:
                t = storage(q.dtype)
                args.append((q, t))
                head.append(f"{t} %p{q.index}_{q.name}")
                continue
            args.append((q, "obj"))
            head.append(f"i64 %p{q.index}_{q.name}")
            checks.append((f"%p{q.index}_{q.name}", q.shape, q.dtype, False))
        specs = self.output_specs()
        self.outs = _Outputs()
        self.direct: set[int] = set()
        for j, (_name, shape, dtype, kind) in enumerate(specs):
            if kind == "array":
                head.append(f"i64 %o{j}")
                checks.append((f"%o{j}", shape, dtype, True))
            elif kind == "scalar":     # a slot of the caller's per-thread double / int64 array
                group = "f" if dtype.startswith("float") else "i"
                self.outs.scalars[j] = (group, sum(1 for g, _ in self.outs.scalars.values() if g == group))
        groups = {g for g, _ in self.outs.scalars.values()}
        head += [f"ptr %s{g}" for g in ("f", "i") if g in groups]
        # argument checks, then the data pointers
        bad = f.label("bad")
        for _n, (obj, shape, dtype, out) in enumerate(checks):
            pass_label = f.label("chk")
            p = f.op(f"inttoptr i64 {obj} to ptr")
            conds = []
            fl = f.op(f"load i32, ptr {f.op(f'getelementptr i8, ptr {p}, i64 {FLAGS}')}")
            need = C_CONTIGUOUS | (WRITEABLE if out else 0)
            m = f.op(f"and i32 {fl}, {need}")
            conds.append(f.op(f"icmp eq i32 {m}, {need}"))
            nd = f.op(f"load i32, ptr {f.op(f'getelementptr i8, ptr {p}, i64 {NDIM}')}")
            conds.append(f.op(f"icmp eq i32 {nd}, {len(shape)}"))
            ds = f.op(f"load ptr, ptr {f.op(f'getelementptr i8, ptr {p}, i64 {DIMS}')}")
            de = f.op(f"load ptr, ptr {f.op(f'getelementptr i8, ptr {p}, i64 {DESCR}')}")
            num = f.op(f"load i32, ptr {f.op(f'getelementptr i8, ptr {de}, i64 {TYPE_NUM}')}")
            conds.append(f.op(f"icmp eq i32 {num}, {np.dtype(dtype).num}"))
            order = f.op(f"load i8, ptr {f.op(f'getelementptr i8, ptr {de}, i64 {BYTEORDER}')}")
            conds.append(f.op(f"icmp ne i8 {order}, {ord('>')}"))
            c = conds[0]
            for x in conds[1:]:
                c = f.op(f"and i1 {c}, {x}")
            dims_label = f.label("dims")
            f.raw(f"br i1 {c}, label %{dims_label}, label %{bad}")
            f.block(dims_label)
            dconds = []
            for d, size in enumerate(shape):
                dv = f.op(f"load i64, ptr {f.op(f'getelementptr i64, ptr {ds}, i64 {d}')}")
                dconds.append(f.op(f"icmp eq i64 {dv}, {size}"))
            c = "true"
            for x in dconds:
                c = f.op(f"and i1 {c}, {x}")
            f.raw(f"br i1 {c}, label %{pass_label}, label %{bad}")
            f.block(pass_label)
            data = f.op(f"load ptr, ptr {f.op(f'getelementptr i8, ptr {p}, i64 {DATA}')}")
            pending.append((obj, data))
        f.raw(f"br label %{ok}")
        f.block(bad)
        f.raw("ret i32 1")
        f.block(ok)
        ok_lines = f.cur[1]
        ptrs = dict(pending)
        for q, kind in args:
            if kind == "obj":
                ptr = ptrs[f"%p{q.index}_{q.name}"]
                if math.prod(q.shape) <= SCALAR_LIMIT:
                    b = Buf(ptr, q.dtype, tuple(q.shape), c_strides(tuple(q.shape)))
                    elems = [self.get(b, tuple(ix)) for ix in np.ndindex(*q.shape)]
                    inputs[q.name] = Sc(object_array(elems, tuple(q.shape)), q.dtype)
                else:
                    inputs[q.name] = Buf(ptr, q.dtype, tuple(q.shape), c_strides(tuple(q.shape)))
            else:
                x = Val(f"%p{q.index}_{q.name}", kind)
                if kind == "i8":
                    x = Val(f.op(f"icmp ne i8 {x.text}, 0"), "i1")
                elif ll_type(q.dtype) != kind:
                    x = self.lines.convert(x, ll_type(q.dtype))
                inputs[q.name] = Sc(object_array([self.bind(x, "_arg")], ()), q.dtype)
        for j, spec in enumerate(specs):
            if spec[3] == "array":
                self.outs.arrays[j] = ptrs[f"%o{j}"]
        outs = self.walk(k, inputs)
        for j, ((_name, _shape, _dtype, kind), v) in enumerate(zip(specs, outs)):
            if kind == "scalar":
                group, slot = self.outs.scalars[j]
                x = self.val(self.elements(v)[0])
                self.store(f"%s{group}", "float64" if group == "f" else "int64", slot,
                           self.bind(self.lines.convert(x, "double" if group == "f" else "i64")))
            elif kind == "array" and j not in self.direct:
                if isinstance(v, Buf) and v.ptr == self.outs.arrays[j]:
                    continue
                self.copy_into(self.outs.arrays[j], v)
        for p in self.mallocs:
            f.declare("free", "void", ["ptr"])
            f.raw(f"call void @free(ptr {p})")
        f.raw("ret i32 0")
        f.blocks[0][1][0:0] = self.allocas
        ok_lines[0:0] = self.hoisted
        count = sum(len(b[1]) for b in f.blocks)
        if count > MAX_INSTRUCTIONS:
            raise ir.Unsupported(f"llvm: {count} instructions")
        text = f.text(f"define i32 @{k.name}({', '.join(head)})")
        module = "\n".join([*self.globs, *self.decls.values(), "", text]) + "\n"
        return Module(k.name, module, args, specs, self.out_params, dict(self.outs.scalars))

    def output_specs(self) -> list[tuple]:
        """Per output: (name, shape, dtype, kind) with kind "param" (returned as given), "literal", "scalar" (0-d) or
        "array"."""
        k = self.kernel
        params = {q.name: q for q in k.params}
        shapes = {st.target: (tuple(st.shape), st.dtype) for st in k.body}
        out = []
        for j, name in enumerate(k.outputs):
            if name in params and j not in self.out_params:
                q = params[name]
                out.append((name, tuple(q.shape), q.dtype, "param"))
                continue
            if name in shapes:
                shape, dtype = shapes[name]
            elif name in params:
                shape, dtype = tuple(params[name].shape), params[name].dtype
            else:
                lit = ir.literal(name)
                if lit is None:
                    raise ir.Unsupported(f"llvm: output {name!r}")
                if j in self.out_params:
                    raise ir.Unsupported("llvm: a literal output written into out=")
                out.append((name, (), "", "literal"))
                continue
            ll_type(dtype)
            out.append((name, shape, dtype, "scalar" if not shape and j not in self.out_params else "array"))
        return out


@dataclass
class Module:
    """An emitted kernel: the LLVM IR text, the function's params ((ir.Param, kind): "obj" for an array's
    object address, else the LLVM type of a 0-d value) and outputs (``Emitter.output_specs``)."""

    name: str
    text: str
    args: list
    outputs: list
    out_params: tuple
    slots: dict = field(default_factory=dict)     # 0-d output position -> ("f" | "i", index in that array)


def emit_llvm(kernel: ir.Kernel, out_params: tuple[int, ...] = ()) -> Module:
    """The LLVM module of ``kernel`` (see the module docstring); raises ``ir.Unsupported`` for IR it does not take."""
    for q in kernel.params:
        ll_type(q.dtype)
    return Emitter(kernel, tuple(out_params)).emit()
