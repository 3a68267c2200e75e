"""Emission of a ``Kernel`` as one fused, ``numba.njit``-ed Python function.

API
---
``emit_numba(kernel, *, parallel_threshold=1 << 17) -> str`` returns the source of a module that
defines ``def {kernel.name}(p0, p1, ...)``: one positional argument per ``kernel.params`` entry, in
order, named by the param names. Arguments are numpy arrays (a 0-d param may also be a Python or
numpy scalar). It returns a tuple with one entry per ``kernel.outputs`` name, in order: a freshly
allocated numpy array for an output with one or more dims (a param returned as an output is
returned as given, as ``emit_numpy`` does), and **a Python scalar for a 0-d output** (``float``,
``int`` or ``bool``: numba boxes numpy scalars so). Its value is one of the output dtype (a float32
result is rounded to float32 before boxing), so ``numpy.float32(v)`` recovers it exactly; a 0-d
array would cost ~0.7 µs more per call. The function is decorated with
``@numba.njit(cache=True, error_model="numpy"[, parallel=True])`` so that, imported from a real
file (``codegen.cache.load_kernel``), numba's on-disk cache serves later processes.
``error_model="numpy"`` gives numpy's results for ``1/0`` (inf) and ``0/0`` (nan) instead of
``ZeroDivisionError``.

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

* ``MatMul`` (1-d and 2-d operands; batched ones raise ``NotImplementedError``) is a product over
  the contraction's iteration space and a sum, a transposed operand iterated in its storage order,
  so ``X @ w`` is a row reduction and ``X.T @ r`` a sum over X's rows into an array: both fuse with
  the elementwise work around them into one pass over the rows (no BLAS call).
* 1-d stencils (step-1 slices ``x[a:-b]`` and their scatter-add adjoints) go to
  ``numba_stencil.emit_stencil``: one pass over ``x``, scatters turned into guarded gathers.

Loops and threads
-----------------
An outer loop whose pass has at least ``parallel_threshold`` iterations (concrete sizes at codegen)
runs as ``numba.prange`` over at most ``PARALLEL_CHUNKS`` contiguous chunks; a full reduction
then sums a per-chunk partial and adds it to the accumulator (numba's prange reduction). A pass
with an integer-array scatter stays serial; one that sums over its outer dim into an array gives
each chunk a row of a zeroed partial array (``MAX_PARTS`` elements at most), added up after the loop. Smaller
passes use ``range``.

Floating point
--------------
No ``fastmath`` flag is set on the function, so every elementwise operation is strict IEEE, in
the statement's dtype: float32 kernels print literals as ``numpy.float32(...)`` and accumulate in
float32. The only relaxation is on the accumulation itself: reduction updates call ``_radd``, an
intrinsic emitting ``fadd reassoc``, which lets LLVM vectorise the reduction with several partial
sums (as numpy's pairwise summation also reorders) while leaving the rest of the math untouched.
Per-element math prints to numpy's scalar functions (``numpy.exp``, ``numpy.log1p``...),
``Piecewise`` to ``(a if c else b)``, relations to ``(a > b)``, small integer powers to ``x**2``
(multiplications in x's type), negative ones to ``1.0/x**2`` (numba's integer power raises at 0).

Vectorised transcendentals
--------------------------
numba calls scalar libm for ``numpy.exp`` & co. (no SVML here), and a call keeps LLVM from
vectorising the loop, so a transcendental-bound pass runs at one element per libm call. A flat
pass (one loop, no inner loops: elementwise statements, stores, full sums) of at least
``vector_threshold`` iterations (``VECTOR_THRESHOLD``) whose float statements call ``exp``,
``log``, ``log1p``, ``sin``, ``cos`` or ``tanh`` (``VECTOR_MIN_CALLS``) and nothing else that a
vector loop cannot take (another libm function, a non-integer power, an argument of another float
type than its statement's, which numpy would compute in that type) computes those calls with
``codegen.vmath``: branch-free fdlibm-style code (within 1 ulp of the exact value), inlined as
straight-line statements (``m0 = sin(v0[i0])`` and its lines), which LLVM vectorises with the rest
of the loop. In a float32 statement the helper runs in float64 and its result is rounded to
float32 (float32 W2: 0.31x the libm kernel's time). Each helper returns NaN outside its domain (huge or infinite
arguments, subnormal results, NaN), and the pass adds every helper result into a check sum
(``vchk``): a NaN sum reruns the chunk (parallel) or the pass (serial) with numpy's scalar
functions after resetting its accumulators, so the results are libm's wherever libm's special
cases matter. A parallel vectorised pass runs each chunk in a module-level function
(``_<kernel>_chunk0``) that the ``prange`` loop calls: numba's parfor passes over the long inlined
body would take seconds. Measured (``benchmarks/fused_kernels.py``): W2 at 10**6 elements
0.3x the time of the best hand-written libm kernel, ``sum(exp(x))`` 0.15x; numba's compile of
such a pass takes 2-3x longer, which is why small passes keep libm.

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

import ast
import builtins
import keyword
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from . import vmath
from .ir import Broadcast, Elementwise, Index, IndexAdd, Kernel, MatMul, Reduce, Reshape, Size, Transpose
from .names import comment
from .printer import Ceil, Floor, KernelPrinter, NumpyIntFunction, Rint, Trunc

__all__ = ["emit_numba", "NumbaPrinter"]

HEADER = """\
# Generated by symgrad (numba): do not edit. Fused loop nests; each comment names the IR node.
import math
import numba
import numpy
"""

#: Module-level names of the generated source.
RESERVED = ("math", "numba", "numpy", "_radd", "_types", "_intrinsic", "_vm_bits", "_vm_float", "_VM_SHIFT", "_VM_NAN")

#: A flat pass with at least this many float64 calls of ``vmath.NAMES`` functions per element, and
#: no other call that would keep LLVM from vectorising it, computes them with ``codegen.vmath``
#: when it has at least ``VECTOR_THRESHOLD`` iterations. Measured (2-core AVX2, serial, 10**6
#: elements): one call per element already runs 4-7x faster (``sum(exp(x))`` 0.15x the libm
#: kernel's time, ``sin`` 0.17x, ``tanh`` 0.20x, ``log`` 0.25x), W2 0.3x; but the inlined helpers
#: make numba's compile 2-3x longer, which a small pass never earns back (W2 at 1000 elements
#: saves ~50 us a call for ~0.5 s more compile).
VECTOR_MIN_CALLS = 1
VECTOR_THRESHOLD = 1 << 15

#: Functions that print as arithmetic, selects or LLVM intrinsics, which vectorise.
_VECTOR_SAFE = (sp.Abs, sp.Piecewise, sp.Max, sp.Min, sp.floor, sp.ceiling, sp.sign, NumpyIntFunction, Floor, Ceil,
                Trunc, Rint)

#: Chunks a parallel outer loop is cut into (numba's prange deals them out to the threads);
#: ``numba.get_num_threads()`` would make the function uncacheable (a dynamic global).
PARALLEL_CHUNKS = 256

#: The most elements of per-chunk partial arrays (sums over a parallel outer loop into an array);
#: beyond, the pass stays serial.
MAX_PARTS = 1 << 22

RADD = '''
from numba.core import types as _types
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def _radd(typingctx, a, b):
    """``a + b`` marked ``reassoc``: only reduction accumulations may be reordered (vectorised)."""
    if not isinstance(a, _types.Float):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))
    return a(a, a), codegen
'''


def _small(expr: sp.Expr, limit: int = 7) -> bool:
    """At most ``limit`` nodes: not worth a common-subexpression pass."""
    for n, _ in enumerate(sp.preorder_traversal(expr)):
        if n >= limit:
            return False
    return True


def _vector_calls(expr: sp.Expr, foreign: set[str]) -> tuple[int, int]:
    """(calls ``codegen.vmath`` computes, other calls that keep a loop scalar) in ``expr``; a call
    whose argument reads a symbol in ``foreign`` (a float type other than the statement's: numpy
    would compute it in that precision) is another call, and so is one in a ``Piecewise`` branch
    (the helper would run on the elements the branch is not taken for, as ``log`` of the
    non-positive ones in ``where(x > 0, log(x), 0)``, and its NaN would rerun every chunk)."""
    vec = other = 0
    guarded = {a for pw in expr.atoms(sp.Piecewise) for value, _ in pw.args for a in sp.preorder_traversal(value)}
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Function):
            if (type(node).__name__ in vmath.NAMES and len(node.args) == 1 and node not in guarded
                    and not {s.name for s in node.args[0].free_symbols} & foreign):
                vec += 1
            elif not isinstance(node, _VECTOR_SAFE):
                other += 1
        elif isinstance(node, sp.Pow):
            e = node.exp
            if not (e.is_Integer or e in (sp.S.Half, -sp.S.Half)):
                other += 1
    return vec, other


def _np_dtype(dtype: str) -> str:
    return "numpy.bool_" if dtype in ("bool", "bool_") else f"numpy.{dtype}"


def _is_float(dtype: str) -> bool:
    return dtype.startswith("float")


# =========================================================================== printing


#: a 2-d @ 2-d product with at least this many multiply-adds keeps the numpy kernel (BLAS)
BLAS_MATMUL_FLOPS = 1 << 16


class NumbaPrinter(KernelPrinter):
    """Prints one element of an elementwise expression as scalar code numba compiles.

    ``names`` maps each free symbol's name to the code that reads it at the current element
    (``v0[i0, 0]``, a register name...). In a float32 statement every literal is a
    ``numpy.float32`` so that numba's scalar promotion keeps the arithmetic in float32.
    """

    printmethod = "_symgrad_numbacode"

    def __init__(self, names: dict[str, str], dtype: str = "float64") -> None:
        super().__init__()
        self._names = names
        self._f32 = dtype == "float32"

    def _num(self, text: str) -> str:
        return f"numpy.float32({text})" if self._f32 else text

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        try:
            return self._names[expr.name]
        except KeyError:
            raise KeyError(f"emit_numba: no value named {expr.name!r} is defined before its use") from None

    _print_Dummy = _print_Symbol

    def _print_Integer(self, expr: sp.Expr) -> str:
        return self._num(str(int(expr)))

    _print_Zero = _print_One = _print_NegativeOne = _print_Integer

    def _print_Float(self, expr: sp.Expr) -> str:
        return self._num(repr(float(expr)))

    _print_Rational = _print_Half = _print_NumberSymbol = _print_Pi = _print_Exp1 = _print_Float

    def _print_Infinity(self, expr: sp.Expr) -> str:
        return self._num("numpy.inf")

    def _print_NegativeInfinity(self, expr: sp.Expr) -> str:
        return f"(-{self._num('numpy.inf')})"

    def _print_NaN(self, expr: sp.Expr) -> str:
        return self._num("numpy.nan")

    def _print_BooleanTrue(self, expr: sp.Expr) -> str:
        return "True"

    def _print_BooleanFalse(self, expr: sp.Expr) -> str:
        return "False"

    def _print_Abs(self, expr: sp.Expr) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _print_erf(self, expr: sp.Expr) -> str:
        # numba compiles math.erf (libm), not scipy.special
        return f"math.erf({self._print(expr.args[0])})"

    def _print_erfc(self, expr: sp.Expr) -> str:
        return f"math.erfc({self._print(expr.args[0])})"

    def _print_Relational(self, expr: sp.Expr) -> str:
        return f"({self._print(expr.lhs)} {expr.rel_op} {self._print(expr.rhs)})"

    def _print_And(self, expr: sp.Expr) -> str:
        return "(" + " and ".join(self._print(a) for a in expr.args) + ")"

    def _print_Or(self, expr: sp.Expr) -> str:
        return "(" + " or ".join(self._print(a) for a in expr.args) + ")"

    def _print_Not(self, expr: sp.Expr) -> str:
        return f"(not {self._print(expr.args[0])})"

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        out = None
        for value, cond in reversed(expr.args):
            if out is None:
                if cond == sp.true:
                    out = self._print(value)
                    continue
                out = self._print(sp.nan)
            out = f"({self._print(value)} if {self._print(cond)} else {out})"
        return out

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, e = expr.args
        b = self.parenthesize(base, 1000)
        one = self._num("1.0")
        if e.is_Integer:
            n = int(e)
            # numba turns ``x ** <int literal>`` into multiplications in x's type; a negative one
            # would raise ZeroDivisionError at 0, so it prints as a division
            if n >= 0:
                return f"{b}**{n}"
            return f"({one}/{b})" if n == -1 else f"({one}/{b}**{-n})"
        if e == sp.Rational(1, 2):
            return f"numpy.sqrt({self._print(base)})"
        if e == sp.Rational(-1, 2):
            return f"({one}/numpy.sqrt({self._print(base)}))"
        return f"{b}**{self.parenthesize(e, 1000)}"


# =========================================================================== index maps
#
# A view maps each index of its base to an expression of the view's own index:
#   ("d", j)                  the view's dim j
#   ("c", k)                  the constant k
#   ("a", inner, start, step) start + step * inner; start an int or ("neg", cls, k): max(n + k, 0)
#   ("g", name, comps)        name[comps...] (a constant integer array, for integer-array indexing)


def _subst(c: tuple, sub: list[tuple]) -> tuple:
    """``c`` (over a view's dims) with each ("d", j) replaced by ``sub[j]``."""
    k = c[0]
    if k == "d":
        return sub[c[1]]
    if k == "c":
        return c
    if k == "a":
        inner = _subst(c[1], sub)
        if inner[0] == "c" and isinstance(c[2], int):
            return ("c", c[2] + c[3] * inner[1])
        return ("a", inner, c[2], c[3])
    return ("g", c[1], tuple(_subst(x, sub) for x in c[2]))


def _compose(outer: tuple, inner: tuple) -> tuple:
    """Map of base(view(x)) when ``outer`` maps the base from the view and ``inner`` the view from x."""
    return tuple(_subst(c, list(inner)) for c in outer)


def _dims_of(c: tuple) -> set[int]:
    k = c[0]
    if k == "d":
        return {c[1]}
    if k == "c":
        return set()
    if k == "a":
        return _dims_of(c[1])
    out: set[int] = set()
    for x in c[2]:
        out |= _dims_of(x)
    return out


def _identity(ndim: int) -> tuple:
    return tuple(("d", j) for j in range(ndim))


def _align(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple:
    """The broadcasting map: reading a value of shape ``src`` at an element of shape ``dst``."""
    lead = len(dst) - len(src)
    if lead < 0:
        raise ValueError(f"cannot broadcast shape {src} to {dst}")
    return tuple(("c", 0) if s == 1 else ("d", d + lead) for d, s in enumerate(src))


# =========================================================================== extent classes


class _Classes:
    """Union-find over dims known to have equal run-time extents, each with ways to compute it."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[int] = []
        self.sources: list[list[tuple]] = []

    def new(self, size: int, source: tuple | None = None) -> int:
        self.parent.append(len(self.parent))
        self.size.append(int(size))
        self.sources.append([source] if source else [])
        return len(self.parent) - 1

    def find(self, c: int) -> int:
        while self.parent[c] != c:
            self.parent[c] = self.parent[self.parent[c]]
            c = self.parent[c]
        return c

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.sources[ra].extend(self.sources[rb])
        self.sources[rb] = []
        return ra

    def close(self) -> None:
        """Unify classes derived alike from equal classes (the same slice of the same extent)."""
        while self._close_once():
            pass

    def _close_once(self) -> bool:
        seen: dict = {}
        for c in range(len(self.parent)):
            if self.find(c) != c:
                continue
            for s in self.sources[c]:
                if s[0] == "slice":
                    key = ("slice", self.find(s[1]), *s[2:])
                elif s[0] == "prod":
                    key = ("prod", *(self.find(x) for x in s[1]))
                else:
                    continue
                if key in seen and self.find(seen[key]) != c:
                    self.union(seen[key], c)
                    return True
                seen.setdefault(key, c)
        return False


def _slice_start(start: int | None, cls: int) -> Any:
    if start is None or start >= 0:
        return int(start or 0)
    return ("neg", cls, int(start))


# =========================================================================== values and items


@dataclass(eq=False)
class _Val:
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
    copy: _Val | None = None       # views: an array copy, made once when an array is needed
    arr_item: Any = None           # the store that writes ``arr`` element by element, if one does

    @property
    def nondims(self) -> list[int]:
        return [d for d, s in enumerate(self.shape) if s != 1]


@dataclass(eq=False)
class _Loop:
    cls: int
    level: int
    parent: _Loop | None
    items: _Items = field(default_factory=lambda: _Items())
    parallel: bool = False
    unsafe: bool = False           # iterations write shared array elements: never prange
    reductions: list = field(default_factory=list)   # (accumulator, dtype) of full reductions over it
    array_reductions: list = field(default_factory=list)   # values summed into arrays over this loop's dim
    vector: bool = False           # transcendentals by ``codegen.vmath``, with a scalar rerun on NaN


@dataclass(eq=False)
class _Op:
    kind: str                      # "stmt" | "store" | "init" | "update" | "complete" | "scatter" | "numpy"
    note: str
    shape: tuple[int, ...] = ()    # the iteration shape whose non-1 dims are the enclosing loops
    val: _Val | None = None
    reads: list = field(default_factory=list)   # [[root value, map, mode]]: "scalar" | "array" | "array_root"
    data: dict = field(default_factory=dict)
    parent: _Loop | None = None


@dataclass(eq=False)
class _Dep:
    chain: list
    enter: bool
    val: _Val | None = None
    read: list | None = None


def _chain(item: Any) -> list:
    out = [item]
    p = item.parent
    while p is not None:
        out.append(p)
        p = p.parent
    out.reverse()
    return out


def _same_prefix(a: list, b: list, n: int) -> bool:
    return len(a) >= n and len(b) >= n and all(x is y for x, y in zip(a[:n], b[:n]))


class _Items(list):
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
        self.loops += isinstance(x, _Loop)

    def append(self, x: Any) -> None:
        self.insert(len(self), x)

    def pos(self, x: Any) -> int:
        if self._pos is None:
            self._pos = {id(y): k for k, y in enumerate(self)}
        return self._pos[id(x)]


# =========================================================================== the planner


class _Emitter:
    def __init__(self, kernel: Kernel, parallel_threshold: int, vector_threshold: int | None = None) -> None:
        self.k = kernel
        self.threshold = parallel_threshold
        self.vector_threshold = vector_threshold
        self.vchk: str | None = None     # while rendering a vectorised body: its NaN check sum
        self.chunk_fns: list[str] = []   # module-level functions running one chunk of a parallel pass
        self.taken: set[str] = {kernel.name} | {p.name for p in kernel.params}
        for st in kernel.body:
            self.taken.add(st.target)
            if isinstance(st, Elementwise):
                self.taken |= {s.name for s in st.expr.free_symbols}
        self.taken |= set(RESERVED)
        self.vals: dict[str, _Val] = {}
        self.cur: dict[str, str] = {}          # IR name -> current SSA name
        self.cl = _Classes()
        self.root = _Items()
        self.consts: dict[str, str] = {}       # module-level constant arrays: code -> name
        self.n_radd = 0
        self.cse_counter = 0

    # ------------------------------------------------------------------ names
    def fresh(self, want: str) -> str:
        name = want
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def lookup(self, name: str) -> _Val:
        ssa = self.cur.get(name)
        if ssa is None:
            return self.literal(name)
        return self.vals[ssa]

    def literal(self, text: str) -> _Val:
        """A non-name argument that ``lower`` passes for Python numbers: ``numpy.asarray(2.0)``."""
        m = re.fullmatch(r"\s*(?:numpy\.asarray\()?\s*([-+0-9.eE]+|True|False)\s*\)?\s*", text)
        if not m:
            raise KeyError(f"emit_numba: no value named {text!r}")
        lit = m.group(1)
        dtype = "bool" if lit in ("True", "False") else "float64" if re.search(r"[.eE]", lit) else "int64"
        v = _Val(self.fresh("lit"), (), dtype, "scalar")
        op = _Op("stmt", f"literal {lit}", (), v, data={"code": f"{_np_dtype(dtype)}({lit})"})
        v.var = v.name
        self.root.insert(0, op)
        v.chain = [op]
        self.vals[v.name] = v
        self.cur[text] = v.name
        return v

    def define(self, target: str, v: _Val) -> _Val:
        ssa = target if target not in self.vals and target not in self.cur else self.fresh(f"{target}_1")
        v.name = ssa
        self.vals[ssa] = v
        self.cur[target] = ssa
        return v

    # ------------------------------------------------------------------ extents
    def ext(self, c: int | None) -> str:
        """The code of class ``c``'s run-time extent (a prelude variable), ``1`` for size-1 dims."""
        if c is None:
            return "1"
        r = self.cl.find(c)
        if r in self.ext_names:
            return self.ext_names[r]
        if r in self.ext_busy:
            raise RecursionError
        self.ext_busy.add(r)
        try:
            expr = None
            order = {"param": 0, "slice": 1, "prod": 1, "islice": 2, "quot": 3}
            for s in sorted(self.cl.sources[r], key=lambda s: order[s[0]]):
                try:
                    expr = self.source_code(s)
                    break
                except RecursionError:
                    continue
            if expr is None:
                expr = self.same_size_param(self.cl.size[r])
        finally:
            self.ext_busy.discard(r)
        same = [n for c, n in self.ext_names.items() if self.ext_src[c] == expr]
        if same:                 # classes never unified but computed alike share the variable
            self.ext_names[r] = same[0]
            self.ext_src[r] = expr
            return same[0]
        name = self.fresh(f"n{len(set(self.ext_names.values()))}")
        self.ext_names[r] = name
        self.prelude.append(f"    {name} = {expr}")
        self.ext_src[r] = expr
        return name

    def same_size_param(self, size: int) -> str:
        """An extent nothing determines (a dim only a broadcast or a scatter creates) as the first param
        dim of the same size, else a literal. The source is only ever run on arrays of the sizes it was
        emitted for (callers key kernels by exact shapes), where the two are equal; reading the param
        keeps the text, hence numba's compilation, the same for every size."""
        for p in self.k.params:
            for d, n in enumerate(p.shape):
                if n == size:
                    return f"{p.name}.shape[{d}]"
        return str(size)

    def source_code(self, s: tuple) -> str:
        if s[0] == "param":
            return f"{s[1]}.shape[{s[2]}]"
        if s[0] == "quot":            # the split side of a reshape: the merged extent over the literal rest
            return f"({' * '.join(self.ext(c) for c in s[1])}) // {s[2]}"
        if s[0] == "prod":
            return " * ".join(self.ext(c) for c in s[1])
        if s[0] == "slice":
            _, base, start, stop, step = s
            return self.slice_len(self.ext(base), start, stop, step)
        _, res, start, stop, step = s          # islice: the base length from the sliced length
        n = self.ext(res)
        return f"{n} + {start or 0}" if stop is None else f"{n} + {-stop}"

    @staticmethod
    def bound(n: str, v: int | None, default: str) -> str:
        if v is None:
            return default
        return f"min({v}, {n})" if v >= 0 else f"max({n} - {-v}, 0)"

    def slice_len(self, n: str, start: int | None, stop: int | None, step: int | None) -> str:
        """Python's ``len(range(n)[start:stop:step])`` for a positive step, as code over ``n``."""
        step = step or 1
        if stop is None and (start or 0) >= 0:
            span = f"{n} - {start}" if start else n        # max(., 0) below covers start > n
        else:
            s = self.bound(n, start, "0") if start else "0"
            e = self.bound(n, stop, n)
            span = e if s == "0" else f"{e} - {s}"
        if step == 1:
            return n if span == n else f"max({span}, 0)"
        return f"max(({span} + {step - 1}) // {step}, 0)"

    # ------------------------------------------------------------------ analysis of the body
    def build(self) -> None:
        self.todo: list = []
        self.transposed: dict[str, str] = {}    # IR target of a 2-d Transpose -> its argument
        for name in [self.k.name] + [p.name for p in self.k.params]:
            if not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED:
                raise ValueError(f"emit_numba: {name!r} cannot name a function or an argument")
        for p in self.k.params:
            cls = tuple(None if s == 1 else self.cl.new(s, ("param", p.name, d)) for d, s in enumerate(p.shape))
            v = _Val(p.name, tuple(p.shape), p.dtype, "param", cls, frozenset(d for d, s in enumerate(p.shape)
                                                                                    if s != 1))
            if not p.shape:
                v.var = self.fresh(f"{p.name}_v")
            self.vals[p.name] = v
            self.cur[p.name] = p.name
        for st in self.k.body:
            if isinstance(st, Elementwise):
                self.elementwise(st)
            elif isinstance(st, Reduce):
                self.reduce(st)
            elif isinstance(st, Broadcast):
                self.broadcast(st)
            elif isinstance(st, Transpose):
                self.transpose(st)
            elif isinstance(st, Reshape):
                self.reshape(st)
            elif isinstance(st, Index):
                self.index(st)
            elif isinstance(st, IndexAdd):
                self.index_add(st)
            elif isinstance(st, Size):
                self.size(st)
            elif isinstance(st, MatMul):
                self.matmul(st)
            else:
                from .numba_reduce import build_stmt
                build_stmt(self, st)       # ArgReduce, CumSum, Concat
        # extent classes are final only now: place the statements
        self.cl.close()
        for place in self.todo:
            place()

    def view(self, st: Any, base: _Val, vmap: tuple, cls: tuple) -> None:
        v = _Val(st.target, tuple(st.shape), st.dtype, "view", cls, base=base.name, vmap=vmap)
        self.define(st.target, v)

    def unify_into(self, cls_out: list, d: int, c: int | None) -> None:
        if c is None:
            return
        cls_out[d] = c if cls_out[d] is None else self.cl.union(cls_out[d], c)

    def fresh_cls(self, shape: tuple, cls: list) -> tuple:
        return tuple(None if s == 1 else (c if c is not None else self.cl.new(s)) for s, c in zip(shape, cls))

    def broadcast(self, st: Broadcast) -> None:
        a = self.lookup(st.arg)
        vmap = _align(a.shape, tuple(st.shape))
        cls: list = [None] * len(st.shape)
        lead = len(st.shape) - len(a.shape)
        for d, c in enumerate(a.cls):
            if c is not None:
                self.unify_into(cls, d + lead, c)
        self.view(st, a, vmap, self.fresh_cls(tuple(st.shape), cls))

    def transpose(self, st: Transpose) -> None:
        a = self.lookup(st.arg)
        if len(a.shape) == 2 and tuple(int(x) % 2 for x in st.axes) == (1, 0):
            self.transposed[st.target] = st.arg
        axes = tuple(int(x) % max(len(a.shape), 1) for x in st.axes)
        vmap: list = [None] * len(a.shape)
        for j, ax in enumerate(axes):
            vmap[ax] = ("d", j) if a.shape[ax] != 1 else ("c", 0)
        cls = tuple(a.cls[ax] for ax in axes)
        self.view(st, a, tuple(vmap), cls)

    def reshape(self, st: Reshape) -> None:
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
        v = _Val(st.target, shape, st.dtype, "array", self.fresh_cls(shape, cls))
        v.varying = frozenset(v.nondims)
        self.define(st.target, v)
        v.arr = self.fresh(f"{v.name}_arr")

        def place() -> None:
            src = self.array_of(a)
            op = _Op("numpy", st.note or f"{v.name} = reshape", (), v, data={"src": src, "cls": ()})
            if src.kind != "param":
                op.data["after"] = [src.arr_ready]
            src.used = True
            self.place(op)
            v.arr_ready = op
        self.todo.append(place)

    def matmul(self, st: MatMul) -> None:
        """``a @ b`` (1-d and 2-d operands) as a product over the contraction's iteration space and a
        sum, iterating a transposed operand in its storage order: ``X.T @ r`` runs over X's rows
        (a sum over the outer loop into an array), so it fuses with a row pass over ``X``."""
        a, b = self.lookup(st.a), self.lookup(st.b)
        ra, rb = len(a.shape), len(b.shape)
        if ra not in (1, 2) or rb not in (1, 2):
            raise NotImplementedError("emit_numba: batched matmul")
        if ra == 2 and rb == 2 and min(a.shape[0], b.shape[1]) > 1 and (
                a.shape[0] * a.shape[1] * b.shape[1] >= BLAS_MATMUL_FLOPS):
            # a real matrix-matrix product: blocked BLAS (the numpy kernel) beats fused loops by 4-25x
            raise NotImplementedError("emit_numba: matrix-matrix product large enough for BLAS")
        dt = st.dtype

        def tmp(kind: type, *args: Any) -> str:
            name = self.fresh(f"{st.target}_{ {Reshape: 'col', Broadcast: 'bc', Elementwise: 'prod'}[kind]}")
            stmt = kind(name, *args, note=st.note or f"{st.target} = matmul")
            {Reshape: self.reshape, Broadcast: self.broadcast, Elementwise: self.elementwise}[kind](stmt)
            return name

        def as_shape(name: str, shape: tuple, full: tuple) -> str:
            """``name`` reshaped (size-1 dims added) to ``shape``, then broadcast to ``full``."""
            v = self.lookup(name)
            if v.shape != shape:
                name = tmp(Reshape, name, shape, v.dtype)
            return name if shape == full else tmp(Broadcast, name, full, v.dtype)

        def prod_sum(x: str, y: str, full: tuple, axes: tuple) -> None:
            e = sp.Symbol(x, real=True) * sp.Symbol(y, real=True)
            t = tmp(Elementwise, e, full, dt)
            self.reduce(Reduce(st.target, "sum", t, axes, False, tuple(st.shape), dt, st.note))

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

    def reduce(self, st: Reduce) -> None:
        if st.kind not in ("sum", "mean", "max", "min", "prod"):
            raise NotImplementedError(f"emit_numba: reduction {st.kind!r}")
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
        v = _Val(st.target, shape, st.dtype, "scalar", cls, frozenset(d for d, s in enumerate(shape) if s != 1))
        self.define(st.target, v)
        nd = a.nondims
        red = [nd.index(d) for d in axes if a.shape[d] != 1]
        if red != list(range(red[0], len(nd))):
            v.kind = "array"
        self.todo.append(lambda: self.plan_reduce(st, v, a, axes, rmap))

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
                    vmap[b] = ("a", ("c", 0), _slice_start(start, c), step or 1)
                elif start in (None, 0) and step in (None, 1):
                    vmap[b] = ("d", j)
                else:
                    vmap[b] = ("a", ("d", j), _slice_start(start, c), step or 1)
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

    def index(self, st: Index) -> None:
        a = self.lookup(st.arg)
        shape, cls, vmap, _ = self.index_map(st.index, a.shape, a.cls)
        if tuple(shape) != tuple(st.shape):
            raise ValueError(f"emit_numba: index {st.index} of {a.shape} gives {shape}, the IR says {st.shape}")
        self.view(st, a, vmap, cls)

    def index_add(self, st: IndexAdd) -> None:
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
        v = _Val(st.target, tshape, st.dtype, "array", tcls, frozenset(d for d, s in enumerate(tshape) if s != 1))
        self.define(st.target, v)
        v.arr = self.fresh(f"{v.name}_arr")
        v.alloc = "zeros"
        op = _Op("scatter", st.note or f"{v.name} = index_add", rshape, v,
                 data={"map": vmap, "cls": rcls, "gather": any(c is not None and c[0] == "g" for c in vmap)})
        op.reads = [self.read_of(g, _align(g.shape, rshape))]

        def place() -> None:
            self.place(op)
            v.arr_ready = _chain(op)[0]
        self.todo.append(place)

    def size(self, st: Size) -> None:
        """A count of ``arg``'s extents: a 0-d value before the loops; ``arg``'s elements are not read."""
        a = self.lookup(st.arg)
        count = [a.cls[d] for d in st.axes if a.shape[d] != 1]
        v = _Val(st.target, (), st.dtype, "scalar")
        self.define(st.target, v)
        v.var = v.name
        op = _Op("stmt", st.note or f"{v.name} = size", (), v, data={"count": count})
        self.root.insert(0, op)
        v.chain = [op]

    def elementwise(self, st: Elementwise) -> None:
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
        v = _Val(st.target, shape, st.dtype, "scalar", self.fresh_cls(shape, cls))
        self.define(st.target, v)
        v.var = v.name
        op = _Op("stmt", st.note or f"{v.name} = elementwise", shape, v, data={"expr": st.expr, "syms": []})
        for name, a in ops:
            op.reads.append(self.read_of(a, _align(a.shape, shape)))
            op.data["syms"].append(name)
        v.varying = frozenset(self.varying_of(op))

        def place() -> None:
            self.place(op)
            v.chain = _chain(op)
        self.todo.append(place)

    # ------------------------------------------------------------------ reads
    def resolve(self, a: _Val, m: tuple) -> tuple[_Val, tuple]:
        while a.kind == "view":
            m = _compose(a.vmap, m)
            a = self.vals[a.base]
        return a, m

    def read_of(self, a: _Val, m: tuple) -> list:
        root, m = self.resolve(a, m)
        root.used = True
        return [root, m, None]

    def varying_of(self, op: _Op) -> set[int]:
        out: set[int] = set()
        for root, m, _ in op.reads:
            dims = root.varying if root.kind != "param" else frozenset(root.nondims)
            for d in dims:
                out |= _dims_of(m[d])
        return out

    def depth_of(self, op: _Op, dims: set[int]) -> int:
        nd = [d for d, s in enumerate(op.shape) if s != 1]
        return max((nd.index(d) + 1 for d in dims if d in nd), default=0)

    def pure(self, op: _Op, root: _Val, m: tuple) -> bool:
        """Whether ``root``'s register value at ``op``'s element is the one ``m`` reads."""
        mine = [d for d, s in enumerate(op.shape) if s != 1]
        theirs = root.nondims
        for d in root.varying:
            c = m[d]
            if c[0] != "d" or c[1] not in mine or mine.index(c[1]) != theirs.index(d):
                return False
        return True

    # ------------------------------------------------------------------ placement
    def deps_of(self, op: _Op) -> list[_Dep]:
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
            deps.append(_Dep(_chain(item), False))
        return deps

    def array_dep(self, op: _Op, root: _Val, m: tuple, r: list, mode: str) -> _Dep:
        """Reading ``root``'s array waits for the pass that writes it, or, when the writer is a store
        over the same leading loops and the read is pure on them, only for the writer's inner loop
        (a row written in one inner loop is read by a sibling loop of the same outer iteration)."""
        if mode == "array" and root.arr_item is not None:
            writer = _chain(root.arr_item)
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

    def place(self, op: _Op, min_depth: int = 0) -> None:
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

    def cls_of_shape(self, op: _Op) -> list[int]:
        if op.kind in ("store", "stmt") and op.val is not None and op.val.shape == op.shape:
            cls = op.val.cls
        else:
            cls = op.data["cls"]
        return [c for c in cls if c is not None]

    def try_place(self, op: _Op, sig: list[int], depth: int, deps: list[_Dep]) -> list[_Dep] | None:
        path: list = []
        parent: _Loop | None = None
        for j in range(depth + 1):
            block = self.root if parent is None else parent.items
            active = [d for d in deps if _same_prefix(d.chain, path, j) and len(d.chain) > j]
            if j == depth:
                lb = max((block.pos(d.chain[j]) for d in active), default=-1) + 1
                # program order, but ahead of any later loop (so that loops can use the value)
                if not block.loops:
                    lb = len(block)
                while lb < len(block) and not isinstance(block[lb], _Loop):
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
                cands = [x for x in block[lb:] if isinstance(x, _Loop) and self.cl.find(x.cls) == sig[j]]
                if cands:
                    nxt = cands[-1]
                else:
                    nxt = _Loop(sig[j], j, parent)
                    block.append(nxt)
            path.append(nxt)
            parent = nxt
        return None  # pragma: no cover

    # ------------------------------------------------------------------ reductions, stores, completions
    def plan_reduce(self, st: Reduce, v: _Val, a: _Val, axes: list[int], rmap: list) -> None:
        if st.kind not in ("sum", "mean"):
            from .numba_reduce import plan_fold
            plan_fold(self, st, v, a, axes, rmap)
            return
        nd = a.nondims
        red = [nd.index(d) for d in axes if a.shape[d] != 1]
        k = red[0]
        op = _Op("update", st.note or f"{v.name} = {st.kind}", a.shape, v,
                 data={"cls": a.cls, "kind": st.kind, "adt": a.dtype})
        op.reads = [self.read_of(a, _identity(len(a.shape)))]
        count = [a.cls[d] for d in axes if a.shape[d] != 1]
        if v.kind == "scalar":
            acc = self.fresh(f"acc{self.n_radd}")
            self.n_radd += 1
            op.data["acc"] = acc
            self.place(op, min_depth=len(nd))
            chain = _chain(op)
            loop = chain[k]
            parent = chain[k - 1] if k else None
            block = self.root if parent is None else parent.items
            init = _Op("init", "", (), v, data={"acc": acc})
            init.parent = parent
            block.insert(block.pos(loop), init)
            done = _Op("complete", st.note or f"{v.name} = {st.kind}", (), v,
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
            root_item = _chain(op)[0]
            if root_item is op or not isinstance(root_item, _Loop):
                raise AssertionError("an array reduction outside a loop")  # pragma: no cover
            if 0 in red:
                # summed over the outer loop: per-chunk partial arrays when it runs in parallel
                root_item.array_reductions.append(v)
            v.arr_ready = root_item
            if st.kind == "mean":
                done = _Op("complete", st.note or f"{v.name} = mean", (), v,
                           data={"arr": v.arr, "kind": "mean", "count": count})
                self.root.insert(self.root.pos(root_item) + 1, done)
                v.arr_ready = done

    def complete(self, v: _Val) -> None:
        if v.pending is None:
            return
        done, loop = v.pending
        v.pending = None
        block = self.root if done.parent is None else done.parent.items
        at = block.pos(loop) + 1
        while at < len(block) and isinstance(block[at], _Op) and block[at].kind == "complete":
            at += 1
        block.insert(at, done)
        v.chain = _chain(done)

    def ensure_array(self, v: _Val) -> None:
        if v.arr is not None or v.kind == "param":
            return
        if v.kind != "scalar":
            raise AssertionError(f"no array for {v.name}")  # pragma: no cover
        self.complete(v)
        v.arr = self.fresh(f"{v.name}_arr")
        v.alloc = "empty"
        op = _Op("store", f"{v.name} kept in an array", v.shape, v, data={"cls": v.cls, "arr": v.arr})
        op.reads = [[v, _identity(len(v.shape)), "scalar"]]
        self.place(op)
        v.arr_ready = _chain(op)[0]
        v.arr_item = op

    def materialize_view(self, v: _Val) -> _Val:
        """An array-backed value equal to view ``v`` (copied by a store pass)."""
        w = _Val(self.fresh(f"{v.name}_copy"), v.shape, v.dtype, "array", v.cls, frozenset(v.nondims))
        w.arr = self.fresh(f"{v.name}_arr")
        w.alloc = "empty"
        op = _Op("store", f"{v.name} materialised", v.shape, w, data={"cls": v.cls, "arr": w.arr})
        op.reads = [self.read_of(v, _identity(len(v.shape)))]
        self.place(op)
        w.arr_ready = _chain(op)[0]
        w.arr_item = op
        self.vals[w.name] = w
        return w

    def array_of(self, v: _Val) -> _Val:
        """A param or array-backed value equal to ``v``."""
        root, m = self.resolve(v, _identity(len(v.shape)))
        if root is v or (v.kind == "view" and m == _identity(len(root.shape)) and root.shape == v.shape):
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
        self.build()
        outs = []
        for name in self.k.outputs:
            v = self.lookup(name)
            if not v.shape:
                root, m = self.resolve(v, ())
                root.used = True
                if root.kind == "scalar":
                    self.complete(root)
                    outs.append(("scalar", root.var, v.dtype))
                elif root.kind == "param" and not root.shape:
                    outs.append(("scalar", root.var, v.dtype))
                else:
                    arr = root.name if root.kind == "param" else root.arr
                    outs.append(("scalar", f"{arr}[{self.index_code(m, [])}]", v.dtype))
                continue
            a = self.array_of(v)
            a.used = True
            outs.append(("array", a.name if a.kind == "param" else a.arr, v.dtype))
        self.outs = outs

    # ------------------------------------------------------------------ rendering
    def index_code(self, m: tuple, codes: list[str]) -> str:
        return ", ".join(self.comp_code(c, codes) for c in m)

    def comp_code(self, c: tuple, codes: list[str]) -> str:
        k = c[0]
        if k == "d":
            return codes[c[1]]
        if k == "c":
            return str(c[1])
        if k == "g":
            return f"{c[1]}[{', '.join(self.comp_code(x, codes) for x in c[2])}]"
        inner = self.comp_code(c[1], codes)
        start, step = c[2], c[3]
        if isinstance(start, tuple):
            start = f"max({self.ext(start[1])} - {-start[2]}, 0)"
        term = inner if step == 1 else f"{step} * {inner}"
        if start == 0:
            return term
        return f"{start}" if inner == "0" else f"{start} + {term}"

    def codes_for(self, shape: tuple) -> list[str]:
        out, lvl = [], 0
        for s in shape:
            if s == 1:
                out.append("0")
            else:
                out.append(self.loopvar(lvl))
                lvl += 1
        return out

    def loopvar(self, level: int) -> str:
        while len(self.loopvars) <= level:
            self.loopvars.append(self.fresh(f"i{len(self.loopvars)}"))
        return self.loopvars[level]

    def read_code(self, op: _Op, r: list) -> str:
        root, m, mode = r
        codes = self.codes_for(op.shape)
        if (mode or ("scalar" if root.kind == "scalar" else "array")) == "scalar":
            return root.var
        if root.kind == "param":
            if not root.shape:
                return root.var
            return f"{root.name}[{self.index_code(m, codes)}]"
        return f"{root.arr}[{self.index_code(m, codes)}]"

    def render(self) -> str:
        self.ext_names: dict[int, str] = {}
        self.ext_busy: set[int] = set()
        self.ext_src: dict[int, str] = {}
        self.prelude: list[str] = []
        self.loopvars: list[str] = []
        self.parallel = False
        self.decide_parallel()
        self.decide_vector()
        body: list[str] = []
        for item in self.root:
            self.render_item(item, body, 1)
        allocs = []
        for v in self.vals.values():
            if v.alloc and v.arr:
                shape = ", ".join(self.ext(c) if c is not None else "1" for c in v.cls)
                shape = f"({shape}{',' if len(v.cls) == 1 else ''})"
                fn = "numpy.zeros" if v.alloc == "zeros" else "numpy.empty"
                allocs.append(f"    {v.arr} = {fn}({shape}, {_np_dtype(v.dtype)})")
        checks = self.checks()
        scal = [f"    {p.var} = numpy.asarray({p.name})[()]" for p in self.vals.values()
                if p.kind == "param" and not p.shape and p.var and p.used]
        ret = []
        for kind, code, dtype in self.outs:
            ret.append(f"{_np_dtype(dtype)}({code})" if kind == "scalar" else code)
        args = ", ".join(p.name for p in self.k.params)
        flags = ["cache=True", 'error_model="numpy"'] + (["parallel=True"] if self.parallel else [])
        lines = [f"@numba.njit({', '.join(flags)})", f"def {self.k.name}({args}):"]
        doc = comment(self.k.doc) if self.k.doc else f"kernel {self.k.name}"
        lines.append(f'    """{doc.replace(chr(92), "/").replace(chr(34) * 3, "")}"""')
        if self.prelude or checks:
            lines.append("    # extents (read from the arguments) and agreement checks")
        lines += self.prelude + checks
        if scal:
            lines.append("    # 0-d params")
            lines += scal
        if allocs:
            lines.append("    # arrays: outputs, values read across passes, accumulators")
            lines += allocs
        lines += body
        lines.append(f"    return ({', '.join(ret)}{',' if len(ret) == 1 else ''})")
        src = HEADER
        if self.n_radd_used:
            src += RADD
        if any(isinstance(x, _Loop) and x.vector for x in self.root):
            src += "\n" + vmath.PRELUDE
        if self.consts:
            src += "\n" + "".join(f"{name} = {text}\n" for text, name in self.consts.items())
        for fn in self.chunk_fns:
            src += "\n\n" + fn
        return src + "\n\n" + "\n".join(lines) + "\n"

    def checks(self) -> list[str]:
        out = []
        for p in self.k.params:
            v = self.vals[p.name]
            for d, s in enumerate(p.shape):
                if s == 1:
                    out.append(f"    if {p.name}.shape[{d}] != 1:")
                    out.append(f'        raise ValueError("{p.name}: dim {d} must have size 1")')
                    continue
                r = self.cl.find(v.cls[d])
                if r not in self.ext_names:
                    continue
                if self.ext_src[r] != f"{p.name}.shape[{d}]":
                    out.append(f"    if {p.name}.shape[{d}] != {self.ext_names[r]}:")
                    out.append(f'        raise ValueError("{p.name}: dim {d} does not match the other arguments")')
        return out

    def decide_parallel(self) -> None:
        def work(item: Any) -> int:
            if not isinstance(item, _Loop):
                return 1
            inner = max((work(x) for x in item.items), default=1)
            return self.cl.size[self.cl.find(item.cls)] * inner

        def unsafe(item: Any) -> bool:
            if isinstance(item, _Loop):
                return item.unsafe or any(unsafe(x) for x in item.items)
            return item.kind == "scatter" and item.data["gather"]

        def parts_size(item: _Loop) -> int:
            """Elements of the per-chunk partial arrays of its sums over the outer dim."""
            total = 0
            for v in item.array_reductions:
                total += PARALLEL_CHUNKS * int(np.prod([self.cl.size[self.cl.find(c)] for c in v.cls if c is not None]))
            return total

        for item in self.root:
            if (isinstance(item, _Loop) and work(item) >= self.threshold and not unsafe(item)
                    and parts_size(item) <= MAX_PARTS):
                item.parallel = True
                self.parallel = True

    def decide_vector(self) -> None:
        """Mark the flat passes of at least ``vector_threshold`` iterations whose per-element work is
        transcendental calls ``codegen.vmath`` computes (in float statements, on arguments of the
        statement's float type or integers for float64; at least ``VECTOR_MIN_CALLS``) and code LLVM
        vectorises: elementwise statements, stores and full reductions, no other libm call, no
        inner loop."""
        if self.vector_threshold is None:
            return
        for loop in self.root:
            if (not isinstance(loop, _Loop) or loop.array_reductions
                    or self.cl.size[self.cl.find(loop.cls)] < self.vector_threshold):
                continue
            vec = other = 0
            for op in loop.items:
                if isinstance(op, _Loop) or op.kind not in ("stmt", "store", "update") or (
                        op.kind == "update" and "acc" not in op.data):
                    break
                if op.kind == "stmt" and "expr" in op.data:
                    dt = op.val.dtype
                    foreign = {sym for sym, r in zip(op.data["syms"], op.reads)
                               if r[0].dtype != dt and (dt == "float32" or _is_float(r[0].dtype))}
                    v, o = _vector_calls(op.data["expr"], foreign)
                    if dt not in ("float64", "float32"):
                        v, o = 0, o + v
                    vec, other = vec + v, other + o
            else:
                loop.vector = vec >= VECTOR_MIN_CALLS and not other

    def lift_calls(self, expr: sp.Expr, pr: NumbaPrinter, names: dict, out: list[str], pad: str,
                   dtype: str) -> sp.Expr:
        """``expr`` with each ``vmath`` function application replaced by a register computed (inner
        ones first) by the helper's inlined statements, each result added to the NaN check sum. In a
        float32 statement the helper runs in float64 and its result is rounded to float32 (so the
        rest of the statement stays float32 arithmetic)."""
        apps = [a for a in sp.preorder_traversal(expr)
                if isinstance(a, sp.Function) and type(a).__name__ in vmath.NAMES and len(a.args) == 1]
        apps = sorted(set(apps), key=lambda a: (sp.count_ops(a), sp.default_sort_key(a)))
        lifted: dict = {}
        for a in apps:
            sym = sp.Symbol(self.fresh(f"m{self.cse_counter}"), real=True)
            self.cse_counter += 1
            names[sym.name] = sym.name
            arg = pr.doprint(a.args[0].xreplace(lifted))
            helper = vmath.NAMES[type(a).__name__]
            out.append(f"{pad}# {sym.name} = {type(a).__name__}({arg}) by codegen.vmath.{helper}")
            lines, res = vmath.inline(helper, arg, self.fresh, sym.name)
            out.extend(f"{pad}{line}" for line in lines)
            out.append(f"{pad}{sym.name} = {res if dtype == 'float64' else f'{_np_dtype(dtype)}({res})'}")
            lifted[a] = sym
        if lifted:
            self.n_radd_used = True
            total = " + ".join(s.name for s in lifted.values())
            out.append(f"{pad}{self.vchk} = _radd({self.vchk}, {total})")
        return expr.xreplace(lifted)

    def render_item(self, item: Any, out: list[str], ind: int, partials: dict | None = None) -> None:
        pad = "    " * ind
        if isinstance(item, _Loop):
            self.render_loop(item, out, ind, partials)
            return
        if item.kind in ("fold", "fold_init", "fold_fill", "custom"):
            from .numba_reduce import render
            render(self, item, out, ind, partials)
            return
        op = item
        note = comment(op.note) if op.note else ""
        v = op.val
        if op.kind == "stmt":
            if note:
                out.append(f"{pad}# {note}")
            if "code" in op.data:
                out.append(f"{pad}{v.var} = {op.data['code']}")
                return
            if "count" in op.data:
                out.append(f"{pad}{v.var} = {_np_dtype(v.dtype)}({' * '.join(map(self.ext, op.data['count'])) or 1})")
                return
            self.render_stmt(op, out, pad)
        elif op.kind == "store":
            codes = self.codes_for(op.shape)
            src = self.read_code(op, op.reads[0])
            out.append(f"{pad}{op.data['arr']}[{', '.join(codes)}] = {src}" + (f"  # {note}" if note else ""))
        elif op.kind == "init":
            zero = "0.0" if _is_float(v.dtype) else "0"
            acc = (partials or {}).get(op.data["acc"], op.data["acc"])
            out.append(f"{pad}{acc} = {_np_dtype(v.dtype)}({zero})")
        elif op.kind == "update":
            if note:
                out.append(f"{pad}# {note}")
            src = self.read_code(op, op.reads[0])
            if op.data["adt"] != v.dtype:
                src = f"{_np_dtype(v.dtype)}({src})"
            if "acc" in op.data:
                acc = (partials or {}).get(op.data["acc"], op.data["acc"])
                if _is_float(v.dtype):
                    self.n_radd_used = True
                    out.append(f"{pad}{acc} = _radd({acc}, {src})")
                else:
                    out.append(f"{pad}{acc} += {src}")
            else:
                codes = self.codes_for(op.shape)
                idx = [codes[d] if d is not None and op.shape[d] != 1 else "0" for d in op.data["rmap"]]
                arr = op.data["arr"]
                if partials and arr in partials:       # this chunk's row of the partial sums
                    arr, idx = partials[arr][0], [partials[arr][1], *idx]
                out.append(f"{pad}{arr}[{', '.join(idx)}] += {src}")
        elif op.kind == "complete":
            cnt = " * ".join(self.ext(c) for c in op.data["count"]) or "1"
            dt = _np_dtype(v.dtype)
            if note:
                out.append(f"{pad}# {note} (complete)")
            if "arr" in op.data:
                out.append(f"{pad}{op.data['arr']} /= {dt}({cnt})")
            elif op.data["kind"] == "mean":
                out.append(f"{pad}{v.var} = {op.data['acc']} / {dt}({cnt})")
            else:
                out.append(f"{pad}{v.var} = {op.data['acc']}")
        elif op.kind == "scatter":
            if note:
                out.append(f"{pad}# {note}")
            codes = self.codes_for(op.shape)
            src = self.read_code(op, op.reads[0])
            out.append(f"{pad}{v.arr}[{self.index_code(op.data['map'], codes)}] += {src}")
        elif op.kind == "numpy":
            if note:
                out.append(f"{pad}# {note}")
            src = op.data["src"]
            arr = src.name if src.kind == "param" else src.arr
            shape = ", ".join(self.ext(c) if c is not None else "1" for c in v.cls)
            shape = f"({shape}{',' if len(v.cls) == 1 else ''})"
            out.append(f"{pad}{v.arr} = numpy.reshape(numpy.ascontiguousarray({arr}), {shape})")

    def render_stmt(self, op: _Op, out: list[str], pad: str) -> None:
        v = op.val
        names = {}
        for sym, r in zip(op.data["syms"], op.reads):
            names[sym] = self.read_code(op, r)
        expr = op.data["expr"]
        reps: list = []
        if not _small(expr):
            def temps():
                while True:
                    yield sp.Symbol(self.fresh(f"c{self.cse_counter}"), real=True)
                    self.cse_counter += 1
            reps, (expr,) = sp.cse([expr], symbols=temps(), order="canonical")
        pr = NumbaPrinter(names, v.dtype)
        lift = self.vchk is not None and v.dtype in ("float64", "float32")
        for s, e in reps:
            if lift:
                e = self.lift_calls(e, pr, names, out, pad, v.dtype)
            names[s.name] = s.name
            out.append(f"{pad}{s.name} = {pr.doprint(e)}")
        if lift:
            expr = self.lift_calls(expr, pr, names, out, pad, v.dtype)
        out.append(f"{pad}{v.var} = {_np_dtype(v.dtype)}({pr.doprint(expr)})")

    def render_loop(self, loop: _Loop, out: list[str], ind: int, partials: dict | None) -> None:
        pad = "    " * ind
        iv = self.loopvar(loop.level)
        n = self.ext(loop.cls)
        what = self.summary(loop)
        if loop.parallel:
            # numbered names: numba's parfor lowering mangles trailing underscores into collisions
            self.n_par = getattr(self, "n_par", -1) + 1
            k = "" if self.n_par == 0 else str(self.n_par)
            nch, ch = self.fresh(f"nchunks{k}"), self.fresh(f"chunk{k}")
            reds = loop.reductions
            parts = {acc: self.fresh(f"{acc}_part") for acc, _ in reds}
            out.append(f"{pad}# pass over {n} (parallel): {what}")
            out.append(f"{pad}{nch} = min({n}, {PARALLEL_CHUNKS})")
            arr_parts = {}
            for v in loop.array_reductions:
                name = self.fresh(f"{v.arr}_part")
                shape = ", ".join([nch] + [self.ext(c) if c is not None else "1" for c in v.cls])
                out.append(f"{pad}{name} = numpy.zeros(({shape}), {_np_dtype(v.dtype)})  # per-chunk partial sums")
                arr_parts[v.arr] = (name, ch)
            out.append(f"{pad}for {ch} in numba.prange({nch}):")
            # a vectorised chunk is a function of its own: numba's parfor passes take seconds over the
            # long inlined body, a plain function a fraction of that
            target = [] if loop.vector else out
            deep0 = 1 if loop.vector else ind + 1
            for acc, dt in reds:
                target.append(f"{'    ' * deep0}{parts[acc]} = {_np_dtype(dt)}({'0.0' if _is_float(dt) else '0'})")
            # unsigned indices counted from 0 in each chunk: no negative-index wraparound, so LLVM vectorises
            lo, cnt, j = self.fresh(f"lo{k}"), self.fresh(f"cnt{k}"), self.fresh(f"j{k}")
            out.append(f"{pad}    {lo} = numba.uint64({n} * {ch} // {nch})")
            out.append(f"{pad}    {cnt} = numba.uint64({n} * ({ch} + 1) // {nch}) - {lo}")
            names = {**(partials or {}), **parts, **arr_parts}

            def body(deep: int) -> None:
                target.append(f"{'    ' * deep}for {j} in range({cnt}):")
                target.append(f"{'    ' * deep}    {iv} = {lo} + {j}")
                for x in loop.items:
                    self.render_item(x, target, deep + 1, names)
            self.render_vector(loop, target, deep0, body, [(parts[acc], dt) for acc, dt in reds], "chunk")
            if loop.vector:
                rets = "".join(f"{parts[acc]}, " for acc, _ in reds)
                call = self.chunk_function(target, [lo, cnt], rets.rstrip(", "), what)
                out.append(f"{pad}    {rets}= {call}" if rets else f"{pad}    {call}")
            for acc, _ in reds:
                out.append(f"{pad}    {acc} += {parts[acc]}")
            for v in loop.array_reductions:
                name = arr_parts[v.arr][0]
                c = self.fresh(f"c{k}")
                out.append(f"{pad}for {c} in range({nch}):")
                idx, deep = [], pad + "    "
                for cls in v.cls:
                    if cls is None:
                        idx.append("0")
                        continue
                    kk = self.fresh(f"k{k}_{len(idx)}")
                    out.append(f"{deep}for {kk} in range({self.ext(cls)}):")
                    idx.append(kk)
                    deep += "    "
                out.append(f"{deep}{v.arr}[{', '.join(idx)}] += {name}[{', '.join([c, *idx])}]")
            return
        out.append(f"{pad}# {'pass' if loop.level == 0 else 'loop'} over {n}: {what}")

        def body(deep: int) -> None:
            out.append(f"{'    ' * deep}for {iv} in range({n}):")
            for x in loop.items:
                self.render_item(x, out, deep + 1, partials)
        self.render_vector(loop, out, ind, body, loop.reductions, "pass")

    def chunk_function(self, body: list[str], first: list[str], ret: str, what: str) -> str:
        """A module-level function running ``body`` (lines at function-body indentation): its
        arguments are ``first`` and every other name the body reads and does not assign (sorted),
        it returns ``ret``. Returns the code calling it."""
        tree = ast.parse("def _f():\n" + "\n".join(body))
        stored = {x.id for x in ast.walk(tree) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
        loaded = {x.id for x in ast.walk(tree) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)}
        glob = set(RESERVED) | set(self.consts.values()) | set(dir(builtins))
        args = first + sorted(loaded - stored - glob - set(first))
        name = self.fresh(f"_{self.k.name}_chunk{len(self.chunk_fns)}")
        lines = ['@numba.njit(error_model="numpy")', f"def {name}({', '.join(args)}):",
                 f'    """one chunk of the pass: {what}"""', *body]
        if ret:
            lines.append(f"    return ({ret}{',' if ',' not in ret else ''})")
        self.chunk_fns.append("\n".join(lines) + "\n")
        return f"{name}({', '.join(args)})"

    def render_vector(self, loop: _Loop, out: list[str], ind: int, body: Any, accs: list, what: str) -> None:
        """``body`` (a function rendering the loop at an indentation); for a vectorised loop, with
        ``codegen.vmath`` and a NaN check sum, then, if the sum is NaN, the accumulators ``accs``
        reset and the loop again with numpy's scalar functions."""
        if not loop.vector:
            body(ind)
            return
        pad = "    " * ind
        self.vchk = self.fresh("vchk")
        out.append(f"{pad}{self.vchk} = numpy.float64(0.0)  # NaN if a vectorised function is out of its domain")
        try:
            body(ind)
        finally:
            chk, self.vchk = self.vchk, None
        out.append(f"{pad}if {chk} != {chk}:")
        out.append(f"{pad}    # an argument outside codegen.vmath's domain, or NaN data: this {what} again with libm")
        for acc, dt in accs:
            out.append(f"{pad}    {acc} = {_np_dtype(dt)}({'0.0' if _is_float(dt) else '0'})")
        body(ind + 1)

    def summary(self, loop: _Loop) -> str:
        names: list[str] = []

        def walk(item: Any) -> None:
            if isinstance(item, _Loop):
                for x in item.items:
                    walk(x)
            elif item.kind in ("stmt", "update", "fold", "scatter") and item.val is not None:
                label = item.val.name + ("" if item.kind == "stmt" else f" ({item.kind})")
                if label not in names:
                    names.append(label)
            elif item.kind == "store" and item.val is not None:
                names.append(f"store {item.val.name}")
        walk(loop)
        return comment(", ".join(names), 90)


def emit_numba(kernel: Kernel, *, parallel_threshold: int = 1 << 17,
               vector_threshold: int | None = VECTOR_THRESHOLD) -> str:
    """Source of a module defining ``kernel`` as one fused ``numba.njit(cache=True)`` function.

    See the module docstring for the calling convention, the fusion rules and the floating-point
    policy; ``vector_threshold`` is the size from which a pass may use ``codegen.vmath`` (``None``:
    never). The text is a pure function of the arguments.
    """
    from .numba_stencil import emit_stencil

    src = emit_stencil(kernel, parallel_threshold)
    if src is not None:
        return src
    em = _Emitter(kernel, parallel_threshold, vector_threshold)
    em.n_radd_used = False
    em.plan()
    return em.render()
