"""Scalar emission: a small-array ``Kernel`` as straight-line scalar numba code, no array allocated (CasADi SX style).

API
---
``scalarizable(kernel, limit=SCALAR_LIMIT)``: whether this module takes ``kernel`` (every value has at most
``limit`` elements, the whole kernel at most ``SCALAR_BUDGET`` scalar operations, every statement a form below).

``scalar_lines(kernel, inputs, fresh) -> (lines, outputs)``: unindented lines computing the kernel's outputs
from its params' elements (``inputs[param.name]``: one scalar expression per element, in C order), and per
output the scalar expressions holding its elements in C order: local names the lines assign, literals
(``numpy.float64(0.0)``) or the caller's input expressions (an output that is a view of a param). ``fresh(stem)``
gives every local name, so the lines can be inlined into a loop body of a bigger function. The lines may call
``SELECT`` (``_sg_select``): the module they go into defines it once at module level with ``PRELUDE`` (after
``import numba``); they also use ``numpy`` and ``math``.

``emit_scalar(kernel) -> str``: a module defining the kernel as one ``@numba.njit(cache=True,
error_model="numpy")`` function with ``emit_numba``'s calling convention (0-d outputs returned as Python
scalars, others as fresh arrays; a param returned as an output is returned as given).

How
---
Every value is held as a numpy object array of its shape whose entries are scalar expressions (text). Views
cost no line: ``Reshape``, ``Broadcast``, ``Transpose`` and ``Index`` (ints, slices, ``None``, ``...``, integer
arrays) are numpy's own reshaping and indexing applied to those arrays when the code is generated, so their
semantics are numpy's exactly. ``Size`` is a literal (shapes are static). Computations assign one local per
element:

* ``Elementwise``: the expression (common subexpressions bound first, as ``emit_numpy`` does) is printed once
  per pattern of known operands by ``ScalarPrinter`` (``printer.NumbaPrinter``'s element code, float32
  literals in a float32 statement, ``Piecewise`` as selects) with a placeholder per operand, then instantiated
  per element with the operands' elements (broadcast); elements whose operands are the same expressions share
  one local (a broadcast 0-d value is computed once), and the result is converted to the statement's dtype as
  ``emit_numba`` does (``numpy.float32(...)``), which is also how casts convert. An expression that is one
  operand of the same dtype is that operand, no line.
* ``Reduce``: sum/mean/prod fold the elements in order (converted to the result dtype), at most
  ``TERMS`` terms a line; max/min keep the first NaN (``emit_numba``'s folds); mean divides by the count.
* ``ArgReduce``: first occurrence of the extreme, NaN counting as the extreme (three lines per candidate).
* ``MatMul`` (numpy's matmul semantics, batched and 1-d operands included): unrolled sums of products.
* ``CumSum`` (forwards or reversed), ``IndexAdd`` (repeated targets summed in order, untouched ones a zero
  literal) and ``Concat`` (elements converted to its dtype).

``Scan`` (a loop) and any statement type without an entry in ``EMIT`` are refused (``scalarizable`` is False;
``scalar_lines`` raises ``ir.Unsupported``), as are an argmax over an empty extent and a matmul of a 0-d operand
(numpy raises on both).

Compile time is what limits scalar code: numba spends milliseconds typing and lowering each operation, so the
printing avoids operations where it exactly can: no branch (``PRELUDE``'s select: numba's compile time grows
quadratically with a function's branches), no conversion where numba's types already match the statement's
dtype (``_typed``), structural zeros (a scatter's untouched elements) dropped from sums, known numbers (seeds,
counts) folded into the expressions, numpy predicates of numbers evaluated, each non-name input and each
float32 literal computed once. ``SCALAR_LIMIT`` and ``SCALAR_BUDGET`` were measured: see their comments.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair

from .. import ir
from ..cse import has_ops, rebuild, repeats, tree_cse
from ..functions import IsFinite, IsInf, IsNan, NumpyPredicate
from ..names import comment, fresh, identifier
from .plan import RESERVED
from .printer import NumbaPrinter, is_float, np_dtype

__all__ = ["SCALAR_LIMIT", "SCALAR_BUDGET", "PRELUDE", "SELECT", "scalarizable", "scalar_lines", "emit_scalar"]

#: The most elements of any value (param, statement, output) that scalar emission takes. Measured on an RK4
#: step of ``dx/dt = -x + a f(x) + b mean(x)`` over n elements and on its VJP (the state read from row k of a
#: stored trajectory, the parameters' adjoint accumulated), in a 1000-step numba loop, against the
#: ``emit_numba`` kernel of the same IR called in the same loop: µs per step, and numba compile in CPU seconds
#: (2-core AVX2 under load, numba 0.68; best of 7 runs of 1000 steps):
#:
#: ==========================  ==========  ==========  ==========  ==========  ==========
#:  f = x³/(1+x²) (arithmetic)  n = 1       3           8           16          32
#: ==========================  ==========  ==========  ==========  ==========  ==========
#:  step, scalar                0.040 0.8   0.045 0.6   0.061 1.2   0.099 2.1   0.282 6.2
#:  step, array kernel          0.064 0.5   0.233 0.7   0.133 0.7   0.144 0.6   0.170 0.7
#:  VJP, scalar                 0.060 0.6   0.092 1.3   0.198 2.9   0.331 6.2   1.14 12.0
#:  VJP, array kernel           0.484 1.3   2.32 3.5    2.02 2.7    2.35 3.3    6-17 2.6
#: ==========================  ==========  ==========  ==========  ==========  ==========
#:  f = tanh (libm-bound)
#:  step, scalar                            0.164 0.6   0.435 1.1   0.533 1.9   1.04 4.0
#:  step, array kernel                      0.243 0.8   0.687 0.6   0.656 0.6   1.17 0.6
#:  VJP, scalar                             0.271 1.1   0.461 1.9   0.896 4.1   1.89 9.4
#:  VJP, array kernel                       0.945 2.4   1.25 1.7    1.45 1.9    2.14 1.5
#: ==========================  ==========  ==========  ==========  ==========  ==========
#:
#: Scalar code's compile time grows with the elements (about 5-15 ms of numba time per line) while the array
#: kernel's does not. Up to 16 elements the scalar step is faster (1.2-5x, 7x for the arithmetic VJP) for at
#: most 2-4x the array kernel's compile; at 32 the array step is as fast or faster (its loops vectorise) and
#: scalar compiles take 4-7x longer (6-12 s).
SCALAR_LIMIT = 16

#: The most scalar operations (``_work``: elements computed times expression nodes, terms summed) of one
#: kernel, about 3 per line emitted: the arithmetic VJP above is 2643 at 16 elements (1004 lines, 6 s of
#: compile), 5219 at 32.
SCALAR_BUDGET = 3000

#: The most terms of a sum printed on one line (long left-nested sums only deepen Python's parse).
TERMS = 16

HEADER = """\
# Generated by symgrad (numba, scalar): do not edit. Straight-line scalar code; each comment names the IR node.
import math
import numba
import numpy
"""

#: The name of ``PRELUDE``'s select, which the lines call for ``Piecewise``, max/min and argmax/argmin.
SELECT = "_sg_select"

#: Module-level source the lines need (a module inlining ``scalar_lines`` defines it once, after ``import
#: numba``): ``_sg_select(c, a, b)`` is ``a if c else b`` as one LLVM ``select`` of both values. A
#: conditional expression would be a branch, and numba's compile time grows quadratically with the branches
#: of a function (400 lines: 67 s with ternaries, 11 s with selects); numpy's ``where`` computes both too.
PRELUDE = '''
from numba.core import types as _sg_types
from numba.extending import intrinsic as _sg_intrinsic


@_sg_intrinsic
def _sg_select(typingctx, c, a, b):
    """``a if c else b`` without a branch: both are computed, one LLVM select picks."""
    t = typingctx.unify_types(_sg_types.unliteral(a), _sg_types.unliteral(b))
    if not isinstance(t, (_sg_types.Number, _sg_types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])
    return t(_sg_types.boolean, t, t), codegen
'''

_REDUCE_KINDS = ("sum", "mean", "max", "min", "prod")
_ATOM = re.compile(r"[A-Za-z_][\w.]*(?:\[[^\[\]()]*\]|\([^()\[\]]*\))?|\d[\w.]*")
_TOKEN = re.compile(r"@(\w+)@")
_NAME = re.compile(r"[A-Za-z_]\w*")
_F32_LITERAL = re.compile(r"numpy\.float32\((?:[-+0-9.eE]+|numpy\.inf|numpy\.nan)\)")


def _atom(code: str) -> str:
    """``code`` safe to splice into any expression (parenthesised unless a name, a read or a call)."""
    return code if _ATOM.fullmatch(code) else f"({code})"


def _literal_dtype(lit: str) -> str:
    """The dtype ``emit_numba`` gives a literal operand (``ir.literal``'s text)."""
    return "bool" if lit in ("True", "False") else "float64" if re.search(r"[.eE]", lit) else "int64"


def _zero(dtype: str) -> str:
    return "False" if dtype in ("bool", "bool_") else f"{np_dtype(dtype)}({'0.0' if is_float(dtype) else '0'})"


def _objects(items: list, shape: tuple) -> np.ndarray:
    """An object array of ``shape`` holding ``items`` in C order."""
    out = np.empty(len(items), dtype=object)
    for k, x in enumerate(items):
        out[k] = x
    return out.reshape(shape)


def _flat(a: np.ndarray) -> list:
    return list(np.asarray(a, dtype=object).reshape(-1))


def _index(spec: tuple) -> tuple:
    """An IR index tuple as a numpy index."""
    out: list = []
    for e in spec:
        if e[0] == "i":
            out.append(int(e[1]))
        elif e[0] == "s":
            out.append(slice(*(None if v is None else int(v) for v in e[1:])))
        elif e[0] == "n":
            out.append(None)
        elif e[0] == "e":
            out.append(Ellipsis)
        else:
            out.append(np.array(e[1], dtype=np.int64).reshape(e[2]))
    return tuple(out)


def _fold_predicates(expr: sp.Basic) -> sp.Basic:
    """``expr`` with numpy predicates of numbers evaluated (``isinf(0.1)`` is False: masked adjoints guard
    their constant factors too) and the logic and ``Piecewise`` over them folded by SymPy."""
    if not expr.atoms(NumpyPredicate):
        return expr
    done: dict = {}

    def walk(e: sp.Basic) -> sp.Basic:
        got = done.get(e)
        if got is not None:
            return got
        if not e.args:
            out = e
        else:
            args = tuple(walk(a) for a in e.args)
            if isinstance(e, NumpyPredicate) and all(a.is_Number for a in args):
                fn = getattr(np, e._numpy_name)
                out = sp.true if bool(fn(*(float(a) for a in args))) else sp.false
            elif isinstance(e, sp.And | sp.Or | sp.Not | sp.Piecewise | ExprCondPair) and args != e.args:
                out = e.func(*args)
            else:
                out = rebuild(e, args)
        done[e] = out
        return out
    return walk(expr)


def _drop_zero_terms(expr: sp.Basic, zeros: set) -> sp.Basic:
    """``expr`` with the symbols ``zeros`` (structural zeros) dropped from sums (``x + 0`` is ``x``; products
    keep them: ``0 * inf`` is NaN). A sum of zeros only is ``sympy.S.Zero``."""
    done: dict = {}

    def walk(e: sp.Basic) -> sp.Basic:
        got = done.get(e)
        if got is not None:
            return got
        if e in zeros and isinstance(e, sp.Symbol):
            out = e
        elif not e.args:
            out = e
        else:
            args = tuple(walk(a) for a in e.args)
            if isinstance(e, sp.Add):
                args = tuple(a for a in args if a not in zeros and not (a == 0 and not isinstance(a, sp.Float)))
                out = sp.S.Zero if not args else args[0] if len(args) == 1 else rebuild(e, args)
            else:
                out = rebuild(e, args)
        done[e] = out
        return out
    return walk(expr)


def _nodes(expr: sp.Basic, cap: int) -> int:
    """The operation nodes of ``expr`` as a tree, counted up to ``cap``."""
    n, stack = 0, [expr]
    while stack and n < cap:
        e = stack.pop()
        if e.args:
            n += 1
            stack.extend(e.args)
    return n


class ScalarPrinter(NumbaPrinter):
    """``NumbaPrinter`` without branches: ``Piecewise`` as nested selects (``PRELUDE``), ``And``/``Or`` as
    ``&``/``|`` of the (boolean) operands instead of short-circuit ``and``/``or``."""

    def _choice(self, cond: str, value: str, other: str) -> str:
        return f"{SELECT}({cond}, {value}, {other})"

    def _print_Integer(self, expr: sp.Expr) -> str:
        # in a float64 statement a float literal (the same value: numba converts ints first), so that selects
        # and sums of numbers are float64 and need no conversion
        return repr(float(int(expr))) if self._f64 else super()._print_Integer(expr)

    _print_Zero = _print_One = _print_NegativeOne = _print_Integer

    def __init__(self, names: dict[str, str], dtype: str = "float64") -> None:
        super().__init__(names, dtype)
        self._f64 = dtype == "float64"

    def _print_And(self, expr: sp.Expr) -> str:
        return "(" + " & ".join(self._print(a) for a in expr.args) + ")"

    def _print_Or(self, expr: sp.Expr) -> str:
        args = list(expr.args)
        infs = {a.args[0] for a in args if isinstance(a, IsInf)}
        nans = {a.args[0] for a in args if isinstance(a, IsNan)}
        both = infs & nans                 # isinf(x) | isnan(x): not isfinite(x), one call
        parts = [f"(not {self._print(IsFinite(x))})" for x in sorted(both, key=sp.default_sort_key)]
        parts += [self._print(a) for a in args
                  if not (isinstance(a, IsInf | IsNan) and a.args[0] in both)]
        return parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"


#: Functions of a float64 argument whose printed numba call returns float64.
_FLOAT_FUNCTIONS = (sp.exp, sp.log, sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh, sp.asin, sp.acos, sp.atan,
                    sp.asinh, sp.acosh, sp.atanh, sp.Abs)


def _typed(expr: sp.Basic, dtypes: dict[str, str], dtype: str) -> bool:
    """Whether numba types ``ScalarPrinter``'s code of ``expr`` (operand symbols of ``dtypes``) as ``dtype``
    already, so the statement needs no conversion: float arithmetic, functions, ``Max``/``Min`` and selects over
    operands of the statement's float dtype and numbers (printed in it); comparisons and logic for bool.
    Conservative: False when unsure."""
    if dtype == "bool":
        if isinstance(expr, sp.Symbol):
            return dtypes.get(expr.name) == "bool"
        if isinstance(expr, sp.core.relational.Relational | NumpyPredicate):
            return True
        if isinstance(expr, sp.And | sp.Or | sp.Not):
            return all(_typed(a, dtypes, "bool") for a in expr.args)
        return False
    if dtype not in ("float64", "float32"):
        return False

    def walk(e: sp.Basic) -> bool:
        if isinstance(e, sp.Symbol):
            return dtypes.get(e.name) == dtype
        if e.is_Number or isinstance(e, sp.NumberSymbol):
            return True
        if isinstance(e, sp.Add | sp.Mul | sp.Max | sp.Min):
            return all(walk(a) for a in e.args)
        if isinstance(e, sp.Pow):
            return walk(e.base) and e.exp.is_Number
        if isinstance(e, _FLOAT_FUNCTIONS) and len(e.args) == 1:
            return walk(e.args[0])
        if isinstance(e, sp.Piecewise):
            return all(walk(value) for value, _ in e.args)
        return False
    return walk(expr)


# =========================================================================== emission


class _Emitter:
    """Emits one kernel's lines; ``vals`` maps each IR name to (object array of element expressions, dtype)."""

    def __init__(self, kernel: ir.Kernel, inputs: dict[str, list[str]], fresh: Callable[[str], str]) -> None:
        self.kernel = kernel
        self.fresh = fresh
        self.lines: list[str] = []
        self.vals: dict[str, tuple[np.ndarray, str]] = {}
        self.counts: dict[str, int] = {}
        self.zeros: set[str] = set()           # element texts that are structural zeros (``zero``)
        self.numbers: dict[str, sp.Basic] = {}  # element texts of other known numbers -> their value
        self.reads: dict[str, tuple] = {}      # input texts that are not names (``xs[k, 3]``) -> (stem, local)
        self.consts: dict[str, int] = {}       # float32 literal -> its position in ``const_names``
        self.const_names: list[list] = []      # [literal, its local once assigned]
        for p in kernel.params:
            elems = list(inputs[p.name])
            if len(elems) != math.prod(p.shape):
                raise ValueError(f"scalar_lines: {len(elems)} input elements for {p.name} of shape {p.shape}")
            self.vals[p.name] = (_objects(elems, tuple(p.shape)), p.dtype)
            for j, x in enumerate(elems):
                if not _NAME.fullmatch(x):
                    self.reads[x] = (identifier(f"{p.name}_{j}"), None)

    def lookup(self, name: str) -> tuple[np.ndarray, str]:
        v = self.vals.get(name)
        if v is not None:
            return v
        lit = ir.literal(name)
        if lit is None:
            raise KeyError(f"scalar_lines: no value named {name!r} is defined before its use")
        dtype = _literal_dtype(lit)
        value = sp.true if lit == "True" else sp.false if lit == "False" else sp.sympify(lit)
        v = self.vals[name] = (_objects([self.literal_of(value, dtype)], ()), dtype)
        return v

    def use(self, x: str) -> str:
        """The code reading element text ``x``: an input that is not a name is read once, into a local, at its
        first use (each ``xs[k, 3]`` is an indexing op for numba to type and lower)."""
        got = self.reads.get(x)
        if got is None:
            return x
        if got[1] is None:
            got = self.reads[x] = (got[0], self.assign(got[0], x))
        return got[1]

    def atom(self, x: str) -> str:
        return _atom(self.use(x))

    def stem(self, st: Any) -> str:
        return identifier(st.target)

    def assign(self, stem: str, code: str) -> str:
        """A new local ``<stem>_<k>`` (k counts the locals of that stem) holding ``code``."""
        k = self.counts.get(stem, 0)
        self.counts[stem] = k + 1
        name = self.fresh(f"{stem}_{k}")
        self.lines.append(f"{name} = {code}")
        return name

    def convert(self, code: str, src: str, dst: str) -> str:
        if code in self.zeros:
            return self.zero(dst)
        return code if src == dst else f"{np_dtype(dst)}({self.use(code)})"

    def define(self, st: Any, elems: list, dtype: str | None = None) -> None:
        self.vals[st.target] = (_objects(elems, tuple(st.shape)), dtype or st.dtype)

    def heading(self, st: Any) -> None:
        self.lines.append(f"# {comment(st.note or type(st).__name__ + ' ' + st.target)}")

    def zero(self, dtype: str) -> str:
        """The literal of a structural zero (an element no scatter writes): additions drop it."""
        z = _zero(dtype)
        self.zeros.add(z)
        return z

    def fold_sum(self, stem: str, terms: list[str], op: str = "+") -> str:
        """``terms`` combined left to right by ``op``, at most ``TERMS`` a line; the expression of the result."""
        acc = terms[0]
        for k in range(1, len(terms), TERMS - 1):
            chunk = terms[k:k + TERMS - 1]
            acc = self.assign(stem, f" {op} ".join([self.atom(acc)] + [self.atom(t) for t in chunk]))
        return acc

    # ------------------------------------------------------------------ statements
    def elementwise(self, st: ir.Elementwise) -> None:
        syms = sorted(st.expr.free_symbols, key=lambda s: s.name)
        ops = [self.lookup(s.name) for s in syms]
        shape = tuple(st.shape)
        dtypes = {s.name: dt for s, (_, dt) in zip(syms, ops)}
        bcast = [_flat(np.broadcast_to(a, shape)) for a, _ in ops]
        templates: dict[frozenset, tuple] = {}
        stem = self.stem(st)
        elems: list[str] = []
        memo: dict[tuple, str] = {}
        headed = False
        for j in range(math.prod(shape)):
            args = tuple(b[j] for b in bcast)
            got = memo.get(args)
            if got is None:
                zeros = frozenset(k for k, x in enumerate(args) if x in self.zeros)
                nums = tuple((k, x) for k, x in enumerate(args) if x in self.numbers)
                key = (zeros, nums)
                if key not in templates:
                    templates[key] = self.template(st, syms, dtypes, zeros, nums)
                kind, reps, code = templates[key]
                if kind == "operand":
                    got = args[code]
                elif kind == "literal":
                    got = code
                else:
                    if not headed:
                        self.heading(st)
                        headed = True
                    subs = {f"a{k}": self.atom(x) for k, x in enumerate(args)}
                    for k, rc in enumerate(reps):
                        subs[f"c{k}"] = self.assign(f"{stem}c", self.fill(rc, subs))
                    got = self.assign(stem, self.fill(code, subs))
                memo[args] = got
            elems.append(got)
        self.define(st, elems)

    def template(self, st: ir.Elementwise, syms: list, dtypes: dict[str, str], zeros: frozenset,
                 numbers: tuple) -> tuple:
        """How the elements whose operands ``zeros`` (positions) are structural zeros and whose operands
        ``numbers`` ((position, text) pairs) are known numbers are computed: ("operand", None, k) for operand k
        itself, ("literal", None, text) for a number, else ("code", common subexpressions' code, the element's
        code) with placeholders ``@a<k>@`` (operand k) and ``@c<k>@`` (subexpression k)."""
        expr = _fold_predicates(st.expr)
        if numbers:                        # 1 * x is x, exactly: seeds and counts fold into the expression
            expr = expr.xreplace({syms[k]: self.numbers[text] for k, text in numbers})
        if zeros:
            expr = _drop_zero_terms(expr, {syms[k] for k in zeros})
        if st.dtype == "bool" and isinstance(expr, sp.Piecewise) and len(expr.args) == 2 and (
                expr.args[0][0] == 1 and expr.args[1][0] == 0 and expr.args[1][1] == sp.true):
            expr = expr.args[0][1]         # the indicator of a condition, as a bool: the condition
        if (expr.is_Number and expr.is_finite) or expr is sp.true or expr is sp.false:
            return "literal", None, self.literal_of(expr, st.dtype)
        if isinstance(expr, sp.Symbol) and dtypes.get(expr.name) == st.dtype:
            return "operand", None, syms.index(expr)
        names = {s.name: f"@a{k}@" for k, s in enumerate(syms)}
        taken = set(names)
        temps: list[str] = []

        def symbols():
            k = 0
            while True:
                name = f"_c{k}"
                k += 1
                if name not in taken:
                    temps.append(name)
                    names[name] = f"@c{len(temps) - 1}@"
                    yield sp.Symbol(name, real=True)

        reps: list = []
        if has_ops(expr, 4) and repeats(expr):
            reps, (expr,) = tree_cse([expr], symbols())
        pr = ScalarPrinter(names, st.dtype)
        code = pr.doprint(expr)
        if not _typed(expr, dtypes, st.dtype):
            code = f"{np_dtype(st.dtype)}({code})"
        return "code", [self.constants(pr.doprint(e)) for _, e in reps], self.constants(code)

    def literal_of(self, value: sp.Basic, dtype: str) -> str:
        """The element text of a known number in ``dtype`` (registered: zeros as structural zeros, other
        numbers for substitution into later expressions)."""
        if dtype in ("bool", "bool_"):
            return "True" if bool(value) else "False"
        if value == 0:
            return self.zero(dtype)
        if is_float(dtype):
            text = f"{np_dtype(dtype)}({float(value)!r})"
            self.numbers[text] = sp.Float(float(value)) if dtype == "float64" else sp.Float(float(
                np.float32(float(value))))
        else:
            text = f"{np_dtype(dtype)}({int(value)})"
            self.numbers[text] = sp.Integer(int(value))
        return text

    def constants(self, code: str) -> str:
        """``code`` with each float32 literal (a call in numba) replaced by a placeholder ``@k<k>@`` of a local
        that ``fill`` assigns on its first use."""
        def sub(m: re.Match) -> str:
            lit = m.group(0)
            if lit not in self.consts:
                self.consts[lit] = len(self.const_names)
                self.const_names.append([lit, None])
            return f"@k{self.consts[lit]}@"
        return _F32_LITERAL.sub(sub, code)

    def fill(self, template: str, subs: dict[str, str]) -> str:
        """``template`` with its placeholders replaced: operands and subexpressions from ``subs``, constants."""
        def get(m: re.Match) -> str:
            key = m.group(1)
            if key[0] == "k":
                entry = self.const_names[int(key[1:])]
                if entry[1] is None:
                    entry[1] = self.assign("f32c", entry[0])
                return entry[1]
            return subs[key]
        return _TOKEN.sub(get, template)

    def reduce(self, st: ir.Reduce) -> None:
        a, adt = self.lookup(st.arg)
        nd = a.ndim
        axes = sorted({int(x) % nd for x in st.axes}) if nd else []
        kept = [d for d in range(nd) if d not in axes]
        kshape = tuple(a.shape[d] for d in kept)
        nred = math.prod(a.shape[d] for d in axes)
        rows = np.transpose(a, kept + axes).reshape(kshape + (nred,))
        dt = st.dtype
        self.heading(st)
        stem = self.stem(st)
        elems = []
        for idx in np.ndindex(*kshape):
            xs = [self.convert(x, adt, dt) for x in rows[idx]]
            elems.append(self.fold(stem, st.kind, xs, dt, nred))
        self.define(st, elems)

    def fold(self, stem: str, kind: str, xs: list[str], dt: str, count: int) -> str:
        if kind in ("sum", "mean"):
            xs = [x for x in xs if x not in self.zeros]
            if not xs:
                total = self.zero(dt)
            elif len(xs) == 1 and kind == "sum":
                total = self.assign(stem, f"{np_dtype(dt)}({self.use(xs[0])})")
            else:
                total = self.fold_sum(stem, xs)
            if kind == "mean":
                return self.assign(stem, f"{np_dtype(dt)}({self.atom(total)} / {np_dtype(dt)}({count}))")
            return total
        if kind == "prod":
            if not xs:
                return "True" if dt in ("bool", "bool_") else f"{np_dtype(dt)}(1)"
            if len(xs) > 1:
                return self.fold_sum(stem, xs, "*")
            return self.assign(stem, f"{np_dtype(dt)}({self.use(xs[0])})")
        if not xs:                         # max/min of nothing: the identity (emit_numba's folds)
            top = kind == "max"
            if is_float(dt):
                return f"{np_dtype(dt)}({'-' if top else ''}numpy.inf)"
            if dt in ("bool", "bool_"):
                return "False" if top else "True"
            info = np.iinfo(dt)
            return f"{np_dtype(dt)}({int(info.min) + 1} - 1)" if top else f"{np_dtype(dt)}({int(info.max)})"
        acc = xs[0]
        op = ">=" if kind == "max" else "<="
        for x in xs[1:]:
            a, b = self.atom(acc), self.atom(x)
            keep = f"({a} {op} {b}) | ({a} != {a})" if is_float(dt) else f"{a} {op} {b}"
            acc = self.assign(stem, f"{SELECT}({keep}, {a}, {b})")
        return acc if len(xs) > 1 else self.assign(stem, f"{np_dtype(dt)}({self.use(acc)})")

    def arg_reduce(self, st: ir.ArgReduce) -> None:
        a, adt = self.lookup(st.arg)
        nd = a.ndim
        if st.axis is None or nd == 0:
            rows = a.reshape(1, -1)
            out_shape: tuple = (1,)
        else:
            axis = int(st.axis) % nd
            moved = np.moveaxis(a, axis, -1)
            out_shape = moved.shape[:-1]
            rows = moved.reshape(out_shape + (a.shape[axis],))
        self.heading(st)
        stem = self.stem(st)
        op = ">" if st.kind == "argmax" else "<"
        elems = []
        for idx in np.ndindex(*out_shape):
            xs = list(rows[idx])
            acc, at = self.atom(xs[0]), "numpy.int64(0)"
            for k, x in enumerate(xs[1:], 1):
                x = self.atom(x)
                nan = f" | (({x} != {x}) & ({acc} == {acc}))" if is_float(adt) else ""
                better = self.assign(f"{stem}b", f"({x} {op} {acc}){nan}")
                if k < len(xs) - 1:
                    acc = self.assign(f"{stem}m", f"{SELECT}({better}, {x}, {acc})")
                at = self.assign(stem, f"{SELECT}({better}, numpy.int64({k}), {at})")
            elems.append(at)
        self.define(st, elems, "int64")

    def matmul(self, st: ir.MatMul) -> None:
        (a, adt), (b, bdt) = self.lookup(st.a), self.lookup(st.b)
        A = a[None, :] if a.ndim == 1 else a
        B = b[:, None] if b.ndim == 1 else b
        batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
        A = np.broadcast_to(A, batch + A.shape[-2:])
        B = np.broadcast_to(B, batch + B.shape[-2:])
        p, q, r = A.shape[-2], A.shape[-1], B.shape[-1]
        dt = st.dtype
        self.heading(st)
        stem = self.stem(st)
        elems = []
        for bi in np.ndindex(*batch):
            for i in range(p):
                for j in range(r):
                    terms = []
                    for k in range(q):
                        prod = f"{self.atom(A[bi + (i, k)])} * {self.atom(B[bi + (k, j)])}"
                        terms.append(prod if adt == bdt == dt else f"{np_dtype(dt)}({prod})")
                    if not terms:
                        elems.append(self.zero(dt))
                    elif len(terms) == 1:
                        elems.append(self.assign(stem, terms[0]))
                    else:
                        elems.append(self.fold_sum(stem, terms))
        self.define(st, elems)

    def cum_sum(self, st: ir.CumSum) -> None:
        a, adt = self.lookup(st.arg)
        dt = st.dtype
        if a.ndim == 0:
            self.heading(st)
            self.define(st, [self.assign(self.stem(st), f"{np_dtype(dt)}({self.use(a[()])})")])
            return
        axis = int(st.axis) % a.ndim
        moved = np.moveaxis(a, axis, -1)
        out = np.empty(moved.shape, dtype=object)
        self.heading(st)
        stem = self.stem(st)
        n = moved.shape[-1]
        order = range(n - 1, -1, -1) if st.reverse else range(n)
        for idx in np.ndindex(*moved.shape[:-1]):
            prev = None
            for k in order:
                x = self.convert(moved[idx + (k,)], adt, dt)
                if x in self.zeros:
                    out[idx + (k,)] = x if prev is None else prev
                    continue
                code = f"{np_dtype(dt)}({self.use(x)})" if prev is None else f"{prev} + {self.atom(x)}"
                prev = out[idx + (k,)] = self.assign(stem, code)
        self.define(st, _flat(np.moveaxis(out, -1, axis)))

    def concat(self, st: ir.Concat) -> None:
        args = [self.lookup(name) for name in st.args]
        if any(adt != st.dtype for _, adt in args):
            self.heading(st)
        stem = self.stem(st)
        parts = []
        for a, adt in args:
            if adt != st.dtype:
                conv = [self.convert(x, adt, st.dtype) for x in _flat(a)]
                a = _objects([x if x in self.zeros else self.assign(stem, x) for x in conv], a.shape)
            parts.append(a)
        joined = np.stack(parts, axis=st.axis) if st.stack else np.concatenate(parts, axis=st.axis)
        self.define(st, _flat(joined))

    def index_add(self, st: ir.IndexAdd) -> None:
        g, gdt = self.lookup(st.arg)
        shape = tuple(st.shape)
        pos = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[_index(st.index)]
        pos = np.asarray(pos)
        while g.ndim > pos.ndim and g.shape[0] == 1:    # numpy's assignment drops leading size-1 dims
            g = g[0]
        g = np.broadcast_to(g, pos.shape)
        into: dict[int, list[str]] = {}
        for k, x in zip(pos.reshape(-1), _flat(g)):
            x = self.convert(x, gdt, st.dtype)
            into.setdefault(int(k), [])
            if x not in self.zeros:
                into[int(k)].append(x)
        self.heading(st)
        stem = self.stem(st)
        elems = []
        for k in range(math.prod(shape)):
            xs = into.get(k)
            if not xs:
                elems.append(self.zero(st.dtype))
            elif len(xs) == 1:
                elems.append(xs[0] if gdt == st.dtype else self.assign(stem, xs[0]))
            else:
                elems.append(self.fold_sum(stem, xs))
        self.define(st, elems)

    def size(self, st: ir.Size) -> None:
        a, _ = self.lookup(st.arg)
        count = math.prod(a.shape[int(d) % max(a.ndim, 1)] for d in st.axes) if a.ndim else 1
        self.define(st, [self.literal_of(sp.Integer(count), st.dtype)])

    def reshape(self, st: ir.Reshape) -> None:
        a, dt = self.lookup(st.arg)
        self.define(st, _flat(a), dt)

    def broadcast(self, st: ir.Broadcast) -> None:
        a, dt = self.lookup(st.arg)
        self.define(st, _flat(np.broadcast_to(a, tuple(st.shape))), dt)

    def transpose(self, st: ir.Transpose) -> None:
        a, dt = self.lookup(st.arg)
        self.define(st, _flat(np.transpose(a, [int(x) % max(a.ndim, 1) for x in st.axes])), dt)

    def index(self, st: ir.Index) -> None:
        a, dt = self.lookup(st.arg)
        got = np.asarray(a[_index(st.index)], dtype=object)
        if got.shape != tuple(st.shape):
            raise ValueError(f"scalar_lines: index {st.index} of {a.shape} gives {got.shape}, the IR says {st.shape}")
        self.define(st, _flat(got), dt)

    def run(self) -> list[list[str]]:
        for st in self.kernel.body:
            emit = EMIT.get(type(st))
            if emit is None:
                raise ir.Unsupported(f"scalar_lines: no emission for IR statement {type(st).__name__}")
            emit(self, st)
        return [_flat(self.lookup(name)[0]) for name in self.kernel.outputs]


#: The emission of each statement type (every type of ``ir.STATEMENTS``).
EMIT: dict[type, Callable[[_Emitter, Any], None]] = {
    ir.Elementwise: _Emitter.elementwise, ir.Reduce: _Emitter.reduce, ir.Reshape: _Emitter.reshape,
    ir.Broadcast: _Emitter.broadcast, ir.Transpose: _Emitter.transpose, ir.Index: _Emitter.index,
    ir.IndexAdd: _Emitter.index_add, ir.MatMul: _Emitter.matmul, ir.ArgReduce: _Emitter.arg_reduce,
    ir.CumSum: _Emitter.cum_sum, ir.Concat: _Emitter.concat, ir.Size: _Emitter.size,
}


# =========================================================================== the interface


def _work(st: Any, shapes: dict[str, tuple], limit: int) -> int | None:
    """Scalar operations ``st`` emits (an upper estimate), or None for a form this module does not take."""
    n = math.prod(st.shape)
    arg = shapes.get(getattr(st, "arg", ""), ())
    if isinstance(st, ir.Elementwise):
        return n * max(1, _nodes(st.expr, SCALAR_BUDGET + 1))
    if isinstance(st, ir.Reduce):
        return math.prod(arg) + n if st.kind in _REDUCE_KINDS else None
    if isinstance(st, ir.ArgReduce):
        if st.kind not in ("argmax", "argmin") or (st.axis is None and math.prod(arg) == 0) or (
                st.axis is not None and arg and arg[int(st.axis) % len(arg)] == 0):
            return None                # numpy raises on an empty argmax
        return 3 * math.prod(arg)
    if isinstance(st, ir.MatMul):
        a, b = shapes.get(st.a, ()), shapes.get(st.b, ())
        if not a or not b:
            return None                # numpy's matmul refuses 0-d operands
        return n * a[-1]
    if isinstance(st, ir.IndexAdd | ir.CumSum | ir.Concat):
        return n + math.prod(arg)
    if type(st) in EMIT:
        return 0                       # views and sizes: no line
    return None


def scalarizable(kernel: ir.Kernel, limit: int = SCALAR_LIMIT) -> bool:
    """Whether every param, statement and output of ``kernel`` has at most ``limit`` elements, the kernel at
    most ``SCALAR_BUDGET`` scalar operations, and every statement type/form is one ``scalar_lines`` takes."""
    shapes: dict[str, tuple] = {}
    for p in kernel.params:
        if math.prod(p.shape) > limit:
            return False
        shapes[p.name] = tuple(p.shape)
    work = 0
    for st in kernel.body:
        if math.prod(st.shape) > limit:
            return False
        w = _work(st, shapes, limit)
        if w is None:
            return False
        work += w
        if work > SCALAR_BUDGET:
            return False
        shapes[st.target] = tuple(st.shape)
    return all(name in shapes or ir.literal(name) is not None for name in kernel.outputs)


def scalar_lines(kernel: ir.Kernel, inputs: dict[str, list[str]], fresh: Callable[[str], str]
                 ) -> tuple[list[str], list[list[str]]]:
    """Straight-line numba-compatible Python lines (no indentation) computing ``kernel``'s outputs from the
    params' elements: ``inputs[param.name]`` is the list of scalar expressions (variable names, or text like
    ``xs[k, 3]``) holding that param's elements in C order. Returns the lines and, per kernel output, the list
    of scalar names (or literal expressions) holding its elements in C order. ``fresh(stem)`` returns a new
    unique local name (so the lines can be inlined into a loop body of a bigger function).

    Raises ``ir.Unsupported`` for a statement type it has no emission for (``scalarizable`` says beforehand).
    """
    em = _Emitter(kernel, inputs, fresh)
    outs = em.run()
    return em.lines, outs


def emit_scalar(kernel: ir.Kernel) -> str:
    """Source of a module defining ``kernel`` as one ``numba.njit(cache=True, error_model="numpy")`` function of
    straight-line scalar code, with ``emit_numba``'s calling convention (see the module docstring)."""
    for name in [kernel.name] + [p.name for p in kernel.params]:
        if not name.isidentifier() or name in RESERVED or name.startswith("_sg_"):
            raise ValueError(f"emit_scalar: {name!r} cannot name a function or an argument")
    taken = {kernel.name, *(p.name for p in kernel.params), *RESERVED}
    new = lambda stem: fresh(stem, taken)  # noqa: E731
    inputs: dict[str, list[str]] = {}
    reads: dict[str, str] = {}
    for p in kernel.params:
        elems = []
        for idx in np.ndindex(*p.shape):
            name = new(f"{p.name}_{'_'.join(map(str, idx))}" if idx else f"{p.name}_v")
            reads[name] = f"{p.name}[{', '.join(map(str, idx))}]" if idx else f"numpy.asarray({p.name})[()]"
            elems.append(name)
        inputs[p.name] = elems
    lines, outs = scalar_lines(kernel, inputs, new)
    used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(lines + [x for o in outs for x in o])))
    body = [f"    {name} = {code}" for name, code in reads.items() if name in used]
    body += [f"    {line}" for line in lines]
    params = {p.name: p for p in kernel.params}
    ret = []
    for name, elems in zip(kernel.outputs, outs):
        p = params.get(name)
        v = next((st for st in kernel.body if st.target == name), None)
        shape, dtype = (tuple(p.shape), p.dtype) if p is not None else (tuple(v.shape), v.dtype) if v else ((), "")
        if p is not None and shape:
            ret.append(name)           # a param returned as given, as emit_numba does
        elif not shape:
            if not dtype:
                lit = ir.literal(name)
                dtype = _literal_dtype(lit) if lit is not None else "float64"
            ret.append(f"{np_dtype(dtype)}({elems[0]})")
        else:
            arr = new(f"{identifier(name)}_out")
            body.append(f"    {arr} = numpy.empty({shape!r}, {np_dtype(dtype)})")
            for idx, x in zip(np.ndindex(*shape), elems):
                body.append(f"    {arr}[{', '.join(map(str, idx))}] = {x}")
            ret.append(arr)
    doc = comment(kernel.doc) if kernel.doc else f"kernel {kernel.name}"
    lines = ['@numba.njit(cache=True, error_model="numpy")',
             f"def {kernel.name}({', '.join(p.name for p in kernel.params)}):",
             f'    """{doc.replace(chr(92), "/").replace(chr(34) * 3, "")} (scalar)"""',
             *body, f"    return ({', '.join(ret)}{',' if len(ret) == 1 else ''})"]
    prelude = PRELUDE if re.search(rf"\b{SELECT}\(", "\n".join(body)) else ""
    return HEADER + prelude + "\n\n" + "\n".join(lines) + "\n"
