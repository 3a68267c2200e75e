"""One-pass numba kernels for 1-d stencils: shifted slices and their scatter-add adjoints.

``emit_stencil(kernel, parallel_threshold, out_params)`` returns the source of a module with the
calling convention of ``emit.emit_numba`` (and its ``out=`` form), or ``None`` when the kernel is
not a 1-d stencil (then the general loop-nest emitter takes it). A kernel qualifies when it
shifts (a step-1 slice ``x[a:-b]`` or its adjoint, an ``IndexAdd`` into such a slice) and
everything in it is 0-d or 1-d over one base extent ``n0`` (the first 1-d param's length):
elementwise statements, full sum/mean reductions, broadcasts and reshapes of scalars, such slices
and scatters; one float dtype (``STATEMENTS`` lists the statement types taken).

How: every 1-d value of extent ``n0 + d`` (``d`` a constant, checked at run time) is a SymPy
expression of its own element index ``i``, whose leaves read params at ``i + offset``. A slice
``x[a:]`` shifts the expression by ``a``; a scatter-add into ``[a:...]`` of a value ``g`` is the
*gather* ``g(i - a) if a <= i < a + len(g) else 0`` (a guard), so ``x[1:]``'s gradient reads its
neighbour instead of writing it: no zeroed buffers, no read-modify-write. The outputs and the
summands of the reductions are computed in one loop over ``i`` (a value shorter than the loop is
guarded), in as many passes as reductions feeding later values require (usually one). The loop
is split into the interior, where every guard holds (no conditions: vectorised, ``prange`` over
unsigned chunk indices above the threshold), and the few boundary iterations, where guards are
evaluated and reads are clamped into the array (a guard that fails discards the value read).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sympy as sp

from .. import ir
from ..cse import has_ops
from ..names import comment, fresh
from .printer import NumbaPrinter
from .render import HEADER, RADD, bind_outputs, caller_array, chunks_code

__all__ = ["emit_stencil"]

#: names the generated function uses besides the kernel's own
RESERVED = ("math", "numba", "numpy", "_radd", "n0", "i0", "j", "lo", "cnt", "chunk", "nchunks", "ncount")

#: the most SymPy operations in the inlined expressions of one pass (beyond: the general emitter)
MAX_OPS = 2000


class _No(Exception):
    """The kernel is not a 1-d stencil this module takes."""


@dataclass
class _V:
    rank: int                  # 0: a scalar (register); 1: an expression of the element index
    expr: sp.Expr
    d: int | None = 0          # extent n0 + d (rank 1); None: a broadcast scalar, any extent
    stage: int = 0             # the pass after which the value can be computed


@dataclass
class _Pass:
    roots: list = field(default_factory=list)     # (kind "sum" | "mean" | "out", name, expr, d)


#: the most nodes (counted as a tree) one inlined stencil expression may have; a deep chain reusing
#: its value grows exponentially as a tree
MAX_TREE = 400


def _too_big(e: sp.Expr, limit: int = MAX_TREE) -> bool:
    return has_ops(e, limit + 1)


def _lit(text: str) -> sp.Expr | None:
    """The number an operand that is not a name stands for (booleans are not taken here)."""
    lit = ir.literal(text)
    return sp.sympify(lit) if lit is not None and lit not in ("True", "False") else None


class _Stencil:
    def __init__(self, k: ir.Kernel, threshold: int, out_params: Sequence[int] = ()) -> None:
        self.k = k
        self.threshold = threshold
        self.out_params = tuple(out_params)
        self.vals: dict[str, _V] = {}
        self.reads: dict[tuple, sp.Symbol] = {}       # (param, offset) -> symbol
        self.read_of: dict[sp.Symbol, tuple] = {}
        self.guards: dict[tuple, sp.Symbol] = {}      # ("ge", c): i >= c | ("lt", c): i < n0 + c
        self.guard_of: dict[sp.Symbol, tuple] = {}
        self.scalars: list[tuple[str, sp.Expr, int, str]] = []   # (name, expr, stage, note)
        self.passes: dict[int, _Pass] = {}
        self.shifts = False
        self.base: str | None = None
        self.n_base = 0
        self.dtype: str | None = None
        self.checks: list[str] = []
        self.pre: list[str] = []                       # 0-d params read once
        self.param_d: dict[str, int] = {}
        self.taken = {k.name} | {p.name for p in k.params} | {st.target for st in k.body} | set(RESERVED)

    # ------------------------------------------------------------------ symbols
    def fresh(self, want: str) -> str:
        return fresh(want, self.taken)

    def read(self, param: str, off: int) -> sp.Symbol:
        key = (param, off)
        if key not in self.reads:
            s = sp.Symbol(self.fresh(f"_rd{len(self.reads)}"), real=True)
            self.reads[key] = s
            self.read_of[s] = key
        return self.reads[key]

    def guard(self, kind: str, c: int) -> sp.Symbol:
        key = (kind, c)
        if key not in self.guards:
            s = sp.Symbol(self.fresh(f"_gd{len(self.guards)}"))
            self.guards[key] = s
            self.guard_of[s] = key
        return self.guards[key]

    def shift(self, e: sp.Expr, k: int) -> sp.Expr:
        """The expression of element ``i + k``."""
        if k == 0:
            return e
        rep: dict = {}
        for s in e.free_symbols:
            if s in self.read_of:
                p, off = self.read_of[s]
                rep[s] = self.read(p, off + k)
            elif s in self.guard_of:
                kind, c = self.guard_of[s]
                rep[s] = self.guard(kind, c - k)
        return e.xreplace(rep)

    def stage_of(self, e: sp.Expr) -> int:
        st = 0
        for s in e.free_symbols:
            v = self.vals.get(s.name)
            if v is not None and v.rank == 0:
                st = max(st, v.stage)
        return st

    def lookup(self, name: str) -> _V:
        if name in self.vals:
            return self.vals[name]
        lit = _lit(name)
        if lit is None:
            raise _No(f"unknown value {name!r}")
        return _V(0, lit)

    # ------------------------------------------------------------------ analysis
    def scalar(self, target: str, e: sp.Expr, stage: int, note: str) -> _V:
        self.scalars.append((target, e, stage, note))
        v = _V(0, sp.Symbol(target, real=True), stage=stage)
        self.vals[target] = v
        return v

    def build(self) -> None:
        for p in self.k.params:
            if p.name in RESERVED:
                raise _No(f"a param named {p.name}")
            nd = [s for s in p.shape if s != 1]
            if not nd:
                code = f"{p.name}[{', '.join('0' for _ in p.shape)}]" if p.shape else f"numpy.asarray({p.name})[()]"
                var = self.fresh(f"{p.name}_v")
                self.pre.append(f"    {var} = {code}")
                self.vals[p.name] = _V(0, sp.Symbol(var, real=True))
                continue
            if len(p.shape) != 1:
                raise _No("a param of rank > 1")
            self.float_dtype(p.dtype)
            if self.base is None:
                self.base, self.n_base = p.name, p.shape[0]
                d = 0
            else:
                d = p.shape[0] - self.n_base
                self.checks.append(f"    if {p.name}.shape[0] != {self.ext(d)}:\n"
                                   f'        raise ValueError("{p.name}: dim 0 does not match the other arguments")')
            self.vals[p.name] = _V(1, self.read(p.name, 0), d)
            self.param_d[p.name] = d
        if self.base is None:
            raise _No("no 1-d param")
        for st in self.k.body:
            take = STATEMENTS.get(type(st))
            if take is None:
                raise _No(f"a {type(st).__name__} statement")
            take(self, st)
        if not self.shifts:
            raise _No("nothing shifts")

    def float_dtype(self, dt: str) -> None:
        if not dt.startswith("float") or (self.dtype is not None and dt != self.dtype):
            raise _No("not one float dtype")
        self.dtype = dt

    def ext(self, d: int) -> str:
        return "n0" if d == 0 else f"n0 + {d}" if d > 0 else f"n0 - {-d}"

    @staticmethod
    def rank_of(shape: tuple) -> int:
        nd = [s for s in shape if s != 1]
        if 0 in shape:
            raise _No("an empty dim")
        if len(nd) > 1 or (nd and len(shape) != 1):
            raise _No("rank > 1")
        return len(nd)

    def st_elementwise(self, st: ir.Elementwise) -> None:
        rank = self.rank_of(tuple(st.shape))
        rep, d = {}, None
        for s in st.expr.free_symbols:
            a = self.lookup(s.name)
            rep[s] = a.expr
            if a.rank == 1 and a.d is not None:
                if d is not None and d != a.d:
                    raise _No("operands of different extents")
                d = a.d
        e = st.expr.xreplace(rep)
        if _too_big(e):
            raise _No("inlined expression too large (a deep chain): the general emitter keeps temporaries")
        if rank == 0:
            if any(self.lookup(s.name).rank for s in st.expr.free_symbols):
                raise _No("a 1-d operand of a 0-d statement")
            self.scalar(st.target, e, self.stage_of(e), st.note)
            return
        self.float_dtype(st.dtype)
        self.vals[st.target] = _V(1, e, d, self.stage_of(e))

    def st_reduce(self, st: ir.Reduce) -> None:
        a = self.lookup(st.arg)
        if a.rank == 0:
            self.vals[st.target] = a
            return
        if st.kind not in ("sum", "mean") or a.d is None or self.rank_of(tuple(st.shape)) != 0:
            raise _No("a reduction other than a full sum or mean")
        stage = self.stage_of(a.expr)
        acc = self.fresh(f"acc{sum(len(p.roots) for p in self.passes.values())}")
        self.passes.setdefault(stage, _Pass()).roots.append((st.kind, acc, a.expr, a.d, st.note))
        self.scalar(st.target, sp.Symbol(acc, real=True), stage + 1, st.note)

    def st_size(self, st: ir.Size) -> None:
        """``Size``: a count of the argument's extents (``mean``'s n), read at run time."""
        a = self.lookup(st.arg)
        if a.rank == 1 and a.d is None:
            raise _No("size of an unknown extent")
        var = self.fresh(st.target)
        count = f"max({self.ext(a.d)}, 0)" if a.rank == 1 and st.axes else "1"
        self.pre.append(f"    {var} = numpy.{st.dtype}({count})  # {comment(st.note or 'size', 60)}")
        self.vals[st.target] = _V(0, sp.Symbol(var, real=True))

    def st_reshape(self, st: ir.Reshape) -> None:
        a = self.lookup(st.arg)
        if self.rank_of(tuple(st.shape)) != a.rank:
            raise _No("a reshape that changes the rank")
        self.vals[st.target] = a

    def st_transpose(self, st: ir.Transpose) -> None:
        self.st_reshape(st)  # 0-d and 1-d: the identity

    def st_broadcast(self, st: ir.Broadcast) -> None:
        a = self.lookup(st.arg)
        rank = self.rank_of(tuple(st.shape))
        if rank == a.rank:
            self.vals[st.target] = a
        elif a.rank == 0:
            self.vals[st.target] = _V(1, a.expr, None, a.stage)
        else:
            raise _No("broadcast")

    def slice_of(self, index: tuple) -> tuple[int, int]:
        """(start, cut) of a step-1 slice ``[start:-cut]`` (``cut`` 0 for no stop)."""
        if len(index) != 1 or index[0][0] != "s":
            raise _No("not one slice")
        _, start, stop, step = index[0]
        if step not in (None, 1) or (start or 0) < 0 or (stop is not None and stop >= 0):
            raise _No("a slice that is not [a:-b] with step 1")
        return int(start or 0), -int(stop or 0)

    def st_index(self, st: ir.Index) -> None:
        a = self.lookup(st.arg)
        if a.rank != 1 or a.d is None:
            raise _No("index of a scalar")
        start, cut = self.slice_of(st.index)
        if self.rank_of(tuple(st.shape)) != 1:
            raise _No("a slice of one element")
        self.shifts = self.shifts or start > 0 or cut > 0
        self.vals[st.target] = _V(1, self.shift(a.expr, start), a.d - start - cut, a.stage)

    def st_indexadd(self, st: ir.IndexAdd) -> None:
        g = self.lookup(st.arg)
        if g.rank != 1 or g.d is None or self.rank_of(tuple(st.shape)) != 1:
            raise _No("scatter of a scalar")
        start, cut = self.slice_of(st.index)
        d = g.d + start + cut
        if st.shape[0] - self.n_base != d:
            raise _No("a scatter target whose extent the slice does not determine")
        e = self.shift(g.expr, -start)
        cond = []
        if start > 0:
            cond.append(self.guard("ge", start))
        if cut > 0:
            cond.append(self.guard("lt", g.d + start))
        self.shifts = True
        self.float_dtype(st.dtype)
        e = sp.Piecewise((e, sp.And(*cond)), (0, True)) if cond else e
        self.vals[st.target] = _V(1, e, d, g.stage)

    def plan_outputs(self) -> None:
        self.outs: list[tuple[str, str]] = []    # ("array" | "scalar", code)
        for name in self.k.outputs:
            v = self.lookup(name)
            if v.rank == 0:
                self.outs.append(("scalar", str(v.expr) if isinstance(v.expr, sp.Symbol) else None))
                if not isinstance(v.expr, sp.Symbol):
                    t = self.fresh(f"{name}_s")
                    self.scalar(t, v.expr, self.stage_of(v.expr), f"output {name}")
                    self.outs[-1] = ("scalar", t)
                continue
            if v.d is None:
                raise _No("an output of unknown extent")
            p = next((p for p in self.k.params if p.name == name), None)
            if p is not None:
                self.outs.append(("array", p.name))
                continue
            arr = self.fresh(f"{name}_arr")
            stage = self.stage_of(v.expr)
            self.passes.setdefault(stage, _Pass()).roots.append(("out", arr, v.expr, v.d, f"output {name}"))
            self.outs.append(("array", arr))
        ops = sum(sp.count_ops(r[2]) for p in self.passes.values() for r in p.roots)
        if ops > MAX_OPS:
            raise _No("expressions too large to inline")

    # ------------------------------------------------------------------ rendering
    def np_dt(self) -> str:
        return f"numpy.{self.dtype}"

    def render(self) -> str:
        dt = self.np_dt()
        body: list[str] = []
        allocs: list[tuple[str, str]] = []      # (output array, its allocation)
        done: set[str] = set()
        parallel = False
        cse_n = [0]

        def emit_scalars(upto: int) -> None:
            for name, e, stage, note in self.scalars:
                if name in done or stage > upto:
                    continue
                done.add(name)
                if note:
                    body.append(f"    # {comment(note)}")
                pr = NumbaPrinter({s.name: s.name for s in e.free_symbols}, self.dtype)
                body.append(f"    {name} = {pr.doprint(e)}")

        for stage in sorted(self.passes):
            emit_scalars(stage)
            roots = self.passes[stage].roots
            dmax = max(r[3] for r in roots)
            exprs = []
            for kind, name, e, d, _note in roots:
                if d < dmax:
                    e = sp.Piecewise((e, self.guard("lt", d)), (0, True))
                exprs.append(e)
                if kind == "out":
                    allocs.append((name, f"    {name} = numpy.empty((max({self.ext(d)}, 0),), {dt})"))
                else:
                    body.append(f"    {name} = {dt}(0.0)")
            used = set().union(*(e.free_symbols for e in exprs))
            gs = [self.guard_of[s] for s in used if s in self.guard_of]
            lo = max([c for k, c in gs if k == "ge"] + [0])
            hi_c = min([c for k, c in gs if k == "lt"] + [dmax])
            top = self.ext(dmax)
            notes = ", ".join(r[4] for r in roots if r[4])
            body.append(f"    # pass {stage}: {comment(notes, 80)}")
            if lo > 0:
                body.append(f"    # first {lo} element(s): guarded, reads clamped into the arrays")
                body.append(f"    for i0 in range(min({lo}, {top})):")
                self.loop_body(roots, exprs, body, "        ", "edge", cse_n)
            hi = self.ext(hi_c)
            n_int = self.n_base + hi_c - lo
            interior = {s: sp.true for s in self.guard_of}
            inner = [e.xreplace(interior) for e in exprs]
            if n_int >= self.threshold:
                parallel = True
                body.append("    # interior: every guard holds (parallel chunks, unsigned indices)")
                body.append(f"    ncount = max({self.ext(hi_c - lo)}, 0)")
                body.append(f"    nchunks = {chunks_code('ncount')}")
                for kind, name, *_ in roots:   # chunk partials added in chunk order: any number of threads
                    if kind != "out":
                        body.append(f"    {name}_chunks = numpy.empty(nchunks, {dt})")
                body.append("    for chunk in numba.prange(nchunks):")
                for kind, name, *_ in roots:
                    if kind != "out":
                        body.append(f"        {name}_part = {dt}(0.0)")
                body.append(f"        lo = numba.uint64({lo} + ncount * chunk // nchunks)")
                body.append(f"        cnt = numba.uint64({lo} + ncount * (chunk + 1) // nchunks) - lo")
                body.append("        for j in range(cnt):")
                body.append("            i0 = lo + j")
                self.loop_body(roots, inner, body, "            ", "par", cse_n, parts=True)
                for kind, name, *_ in roots:
                    if kind != "out":
                        body.append(f"        {name}_chunks[chunk] = {name}_part")
                for kind, name, *_ in roots:
                    if kind != "out":
                        body.append("    for c in range(nchunks):")
                        body.append(f"        {name} += {name}_chunks[c]")
            else:
                body.append("    # interior: every guard holds")
                body.append(f"    for i0 in range({lo}, {hi}):")
                self.loop_body(roots, inner, body, "        ", "ser", cse_n)
            if hi_c < dmax:
                body.append(f"    # last {dmax - hi_c} element(s): guarded, reads clamped into the arrays")
                body.append(f"    for i0 in range(max({hi}, {lo}), {top}):")
                self.loop_body(roots, exprs, body, "        ", "edge", cse_n)
            for kind, name, _e, d, _note in roots:
                if kind == "mean":
                    body.append(f"    {name} = {name} / {dt}(max({self.ext(d)}, 0))")
        emit_scalars(1 << 30)
        ret = [f"{dt}({code})" if kind == "scalar" else code for kind, code in self.outs]
        own = {name for name, _ in allocs}
        outs, bound = bind_outputs([code if kind == "array" else None for kind, code in self.outs],
                                   self.out_params, self.fresh, own.__contains__)
        args = ", ".join([p.name for p in self.k.params] + outs)
        flags = ["cache=True", 'error_model="numpy"'] + (["parallel=True"] if parallel else [])
        doc = comment(self.k.doc) if self.k.doc else f"kernel {self.k.name}"
        lines = [f"@numba.njit({', '.join(flags)})", f"def {self.k.name}({args}):",
                 f'    """{doc.replace(chr(92), "/").replace(chr(34) * 3, "")} (1-d stencil, one pass)"""',
                 "    # extents (read from the arguments) and agreement checks",
                 f"    n0 = {self.base}.shape[0]", *self.checks]
        if self.pre:
            lines.append("    # 0-d params")
            lines += self.pre
        if allocs:
            lines.append("    # outputs")
            for name, line in allocs:
                lines += caller_array(name, bound[name], False) if name in bound else [line]
        lines += body
        lines.append(f"    return ({', '.join(ret)}{',' if len(ret) == 1 else ''})")
        src = HEADER + (RADD if self.radd else "")
        return src + "\n\n" + "\n".join(lines) + "\n"

    radd = False

    def read_code(self, param: str, off: int, mode: str, dmax: int) -> str:
        if mode == "edge" and (off or self.param_d[param] < dmax):
            at = f"i0 {'+' if off >= 0 else '-'} {abs(off)}" if off else "i0"
            return f"{param}[min(max({at}, 0), {param}.shape[0] - 1)]"
        if off == 0:
            return f"{param}[i0]"
        if mode == "par":
            return f"{param}[i0 {'+' if off > 0 else '-'} numba.uint64({abs(off)})]"
        return f"{param}[i0 {'+' if off > 0 else '-'} {abs(off)}]"

    def loop_body(self, roots: list, exprs: list, out: list, pad: str, mode: str, cse_n: list,
                  parts: bool = False) -> None:
        dmax = max(r[3] for r in roots)
        names = {}
        for s, (p, off) in self.read_of.items():
            names[s.name] = self.read_code(p, off, mode, dmax)
        for s, (kind, c) in self.guard_of.items():
            names[s.name] = f"(i0 >= {c})" if kind == "ge" else f"(i0 < {self.ext(c)})"
        for e in exprs:
            for sym in e.free_symbols:
                names.setdefault(sym.name, sym.name)      # scalars: registers of their own name

        def temps():
            while True:
                yield sp.Symbol(self.fresh(f"c{cse_n[0]}"), real=True)
                cse_n[0] += 1
        reps, exprs = sp.cse(exprs, symbols=temps(), order="canonical")
        pr = NumbaPrinter(names, self.dtype)
        for s, e in reps:
            names[s.name] = s.name
            out.append(f"{pad}{s.name} = {pr.doprint(e)}")
        dt = self.np_dt()
        for (kind, name, _, _, note), e in zip(roots, exprs):
            code = f"{dt}({pr.doprint(e)})"
            if kind == "out":
                out.append(f"{pad}{name}[i0] = {code}  # {comment(note, 60)}")
            else:
                self.radd = True
                acc = f"{name}_part" if parts else name
                out.append(f"{pad}{acc} = _radd({acc}, {code})  # {comment(note, 60)}")


def emit_stencil(kernel: ir.Kernel, parallel_threshold: int = 1 << 17, out_params: Sequence[int] = ()) -> str | None:
    """The one-pass stencil source of ``kernel`` (``out_params``: its ``out=`` form), or None if it is
    not a 1-d stencil."""
    s = _Stencil(kernel, parallel_threshold, out_params)
    try:
        s.build()
        s.plan_outputs()
    except _No:
        return None
    return s.render()


#: How each statement type is taken (any other: not a stencil, the general emitter's).
STATEMENTS: dict[type, Callable[[_Stencil, object], None]] = {
    ir.Elementwise: _Stencil.st_elementwise, ir.Reduce: _Stencil.st_reduce, ir.Size: _Stencil.st_size,
    ir.Reshape: _Stencil.st_reshape, ir.Transpose: _Stencil.st_transpose, ir.Broadcast: _Stencil.st_broadcast,
    ir.Index: _Stencil.st_index, ir.IndexAdd: _Stencil.st_indexadd,
}
