"""What numpy makes of a kernel's values before emission prints them: the dtypes numpy's promotion gives
(``WEAK`` for Python literals), the names each statement reads, broadcast shapes, the numpy ufunc an
application prints as, and the kernel with every target assigned once (``ssa``)."""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import numpy
import sympy as sp

from .. import ir
from ..cse import rebuild
from ..names import fresh
from .printer import KernelPrinter

WEAK = "weak"                       # the dtype of a Python literal: it takes the other operand's
FLOATS = ("float32", "float64")
ARITH = (sp.Add, sp.Mul, sp.Pow, sp.Max, sp.Min)
#: statement types that take a numpy scalar where a 0-d array would do
SCALAR_SAFE = (ir.Elementwise, ir.Reshape, ir.Broadcast, ir.Size)
_UFUNCS: dict[tuple, str | None] = {}


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _strings(v, out)


def symbols_of(e: sp.Basic, memo: dict) -> frozenset[str]:
    """The names of ``e``'s free symbols (memoised per expression)."""
    r = memo.get(e)
    if r is None:
        r = memo[e] = frozenset(s.name for s in e.free_symbols)
    return r


def reads_of(st: Any, names: dict, memo: dict | None = None) -> list[str]:
    """The names ``st`` reads: an expression's free symbols, else every string among its operands that is
    a name of the kernel (so a statement type added later is read conservatively)."""
    if isinstance(st, ir.Elementwise):
        return sorted(n for n in symbols_of(st.expr, {} if memo is None else memo) if n in names)
    found: list[str] = []
    for f in fields(st):
        if f.name not in ("target", "shape", "dtype", "note"):
            _strings(getattr(st, f.name), found)
    return [n for n in dict.fromkeys(found) if n in names and n != st.target]


def bshape(shapes: list[tuple]) -> tuple | None:
    if not shapes:
        return ()
    if all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])
    try:
        return tuple(numpy.broadcast_shapes(*shapes))
    except ValueError:
        return None


def ufunc_of(e: sp.Expr, printer: KernelPrinter) -> str | None:
    """The numpy ufunc an application prints as, where it maps each float dtype to itself."""
    key = (e.func, len(e.args))
    if key not in _UFUNCS:
        _UFUNCS[key] = None
        try:
            code = KernelPrinter().doprint(e.func(*sp.symbols(f"a0:{len(e.args)}", real=True)))
        except Exception:  # noqa: BLE001 - an application that cannot take plain symbols: not a ufunc
            code = ""
        head = code.split("(", 1)[0]
        fn = getattr(numpy, head[len("numpy."):], None) if head.startswith("numpy.") else None
        if (isinstance(fn, numpy.ufunc) and fn.nin == len(e.args) and fn.nout == 1
                and code == f"{head}({', '.join(f'a{k}' for k in range(len(e.args)))})"
                and all(c * fn.nin + "->" + c in fn.types for c in "fd")):
            _UFUNCS[key] = head
    return _UFUNCS[key]


def _rename_expr(e: sp.Basic, m: dict[str, sp.Symbol]) -> sp.Basic:
    if e.is_Symbol:
        return m.get(e.name, e)
    if not e.args:
        return e
    return rebuild(e, tuple(_rename_expr(a, m) for a in e.args))


def _rename_value(v: Any, m: dict[str, str]) -> Any:
    if isinstance(v, str):
        return m.get(v, v)
    if isinstance(v, tuple):
        return tuple(_rename_value(x, m) for x in v)
    return v


def ssa(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with each target defined once: a redefinition (``sum_to``'s keepdims sum, then its
    reshape into the same name) takes a fresh name, and the statements after it read that name."""
    targets = [st.target for st in kernel.body]
    params = {q.name for q in kernel.params}
    if len(set(targets)) == len(targets) and not params & set(targets):
        return kernel
    taken = params | set(targets)
    current: dict[str, str] = {}
    defined = set(params)
    body = []
    for st in kernel.body:
        if current:
            if isinstance(st, ir.Elementwise):
                syms = {k: sp.Symbol(v, real=True) for k, v in current.items()}
                st = replace(st, expr=_rename_expr(st.expr, syms))
            else:
                st = replace(st, **{f.name: _rename_value(getattr(st, f.name), current) for f in fields(st)
                                    if f.name not in ("target", "shape", "dtype", "note")})
        t = st.target
        if t in defined:
            current[t] = fresh(t, taken)
            st = replace(st, target=current[t])
        defined.add(t)
        body.append(st)
    return replace(kernel, body=tuple(body), outputs=tuple(current.get(o, o) for o in kernel.outputs))


#: statements whose emission gives their value the IR's dtype
_CASTS = tuple(t for t in (ir.Elementwise, ir.Size, ir.ArgReduce, ir.CumSum, ir.Concat, ir.IndexAdd,
                           getattr(ir, "Scan", None)) if t is not None)


def runtime_dtypes(kernel: ir.Kernel) -> dict[str, str | None]:
    """The dtype each value has when the kernel runs, where it is sure: a reshape or broadcast of a
    Python number (``numpy.asarray(1)``: int64) keeps numpy's dtype, not the IR's."""
    rd: dict[str, str | None] = {q.name: q.dtype for q in kernel.params}
    for st in kernel.body:
        if isinstance(st, _CASTS):
            rd[st.target] = st.dtype
        elif isinstance(st, (ir.Reshape, ir.Broadcast, ir.Transpose, ir.Index)):
            lit = ir.literal(st.arg)
            if lit is None:
                rd[st.target] = rd.get(st.arg)
            else:
                rd[st.target] = "float64" if lit not in ("True", "False") and any(c in lit for c in ".eE") else None
        elif isinstance(st, ir.Reduce):
            rd[st.target] = rd.get(st.arg) if rd.get(st.arg) in FLOATS else None
        elif isinstance(st, ir.MatMul):
            rd[st.target] = rd.get(st.a) if rd.get(st.a) == rd.get(st.b) and rd.get(st.a) in FLOATS else None
        else:
            rd[st.target] = None
    return rd
