"""SymPy → numpy source: SymPy's NumPyPrinter with the few cases kernels print differently."""
from __future__ import annotations

import math

import numpy
import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import precedence


def _power_of_two(c: sp.Basic) -> bool:
    """Whether ``c`` is a number ``±2**k``: a product scaled by it rounds as the unscaled one (barring overflow)."""
    if not c.is_Number or c.is_zero or not c.is_finite:
        return False
    if c.is_Rational:
        p, q = abs(int(c.p)), int(c.q)
        return p & (p - 1) == 0 and q & (q - 1) == 0
    return math.frexp(float(c))[0] in (0.5, -0.5)


def _split_exact(f: sp.Basic, head: list[sp.Basic]) -> sp.Basic:
    """``f`` without its numeric factors ``±2**k`` (a product), which are appended to ``head``."""
    if not f.is_Mul:
        return f
    exact = [a for a in f.args if _power_of_two(a)]
    if not exact:
        return f
    rest = [a for a in f.args if not _power_of_two(a)]
    head.extend(exact)
    return sp.Mul(*rest, evaluate=False) if len(rest) > 1 else rest[0] if rest else sp.Integer(1)


class KernelPrinter(NumPyPrinter):
    """Prints scalar expressions that act elementwise on numpy arrays.

    Numbers print as Python literals (weakly typed, so float32 stays float32), two-branch
    ``Piecewise`` as ``numpy.where``, ``Max``/``Min`` as nested ``numpy.maximum``/``minimum``.

    Two per-kernel settings, empty by default: ``scalars``, the names of values with one element (a
    product prints its factors over them first, so ``6*t5*t0`` scales the array once, not twice), and
    ``rename``, the code that reads a symbol where it is not its own name (a chunk ``t0_c`` of ``t0``).
    """

    printmethod = "_symgrad_numpycode"

    def __init__(self, settings: dict | None = None) -> None:
        super().__init__({"fully_qualified_modules": True, "order": "none", **(settings or {})})
        self.scalars: set[str] = set()
        self.rename: dict[str, str] = {}
        self._memo: dict = {}

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        name = self.rename.get(expr.name)
        return name if name is not None else super()._print_Symbol(expr)

    def _one_element(self, e: sp.Basic) -> bool:
        """Whether ``e`` reads only ``scalars`` (memoised per subexpression)."""
        if e.is_Symbol:
            return e.name in self.scalars
        r = self._memo.get(e)
        if r is None:
            r = self._memo[e] = all(self._one_element(a) for a in e.args)
        return r

    def _print_Mul(self, expr: sp.Mul) -> str:
        # numpy evaluates ``a*b*c`` left to right: the factors with one element go first, so that the
        # array is multiplied once by their product rather than once by each of them
        if self.scalars:
            head = [f for f in expr.args if self._one_element(f)]
            tail = [f for f in expr.args if not self._one_element(f)]
            if head:
                # a factor 2**k of an array factor joins them: (s*3)*(2*x) is (s*3*2)*x, the same bits
                tail = [_split_exact(f, head) for f in tail]
            if 2 <= len(head) and tail:
                prec = precedence(expr)
                h = sp.Mul(*head, evaluate=False)
                t = sp.Mul(*tail, evaluate=False) if len(tail) > 1 else tail[0]
                return f"{self.parenthesize(h, prec)}*{self.parenthesize(t, prec)}"
        return super()._print_Mul(expr)

    def _print_Float(self, expr: sp.Float) -> str:
        return repr(float(expr))

    def _print_Rational(self, expr: sp.Rational) -> str:
        return repr(float(expr))

    def _print_Half(self, expr: sp.Expr) -> str:
        return "0.5"

    def _print_NumberSymbol(self, expr: sp.Expr) -> str:
        return repr(float(expr))

    _print_Pi = _print_Exp1 = _print_NumberSymbol

    def _print_Infinity(self, expr: sp.Expr) -> str:
        return "numpy.inf"

    def _print_NegativeInfinity(self, expr: sp.Expr) -> str:
        return "(-numpy.inf)"

    def _print_NaN(self, expr: sp.Expr) -> str:
        return "numpy.nan"

    def _print_ComplexInfinity(self, expr: sp.Expr) -> str:
        """SymPy's ``zoo`` (``1/0`` of a constant folded into a form): infinite, as the float division gives."""
        return "numpy.inf"

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        out = None
        for value, cond in reversed(expr.args):
            if out is None:
                if cond != sp.true:
                    out = "numpy.nan"
                else:
                    out = self._print(value)
                    continue
            out = f"numpy.where({self._print(cond)}, {self._print(value)}, {out})"
        return out

    def _minmax(self, expr: sp.Expr, fn: str) -> str:
        args = [self._print(a) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = f"numpy.{fn}({out}, {a})"
        return out

    def _print_Max(self, expr: sp.Expr) -> str:
        return self._minmax(expr, "maximum")

    def _print_Min(self, expr: sp.Expr) -> str:
        return self._minmax(expr, "minimum")

    def _logical(self, expr: sp.Expr, fn: str) -> str:
        # SymPy's ``numpy.logical_and.reduce((a, b))`` stacks its operands and fails on broadcasting shapes
        args = [self._print(a) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = f"numpy.{fn}({out}, {a})"
        return out

    def _print_And(self, expr: sp.Expr) -> str:
        return self._logical(expr, "logical_and")

    def _print_Or(self, expr: sp.Expr) -> str:
        return self._logical(expr, "logical_or")

    def _print_erf(self, expr: sp.Expr) -> str:
        # numpy has no erf: generated numpy kernels import scipy.special when they use it (``emit_numpy``)
        self.module_imports["scipy.special"].add("erf")
        return f"scipy.special.erf({self._print(expr.args[0])})"

    def _print_erfc(self, expr: sp.Expr) -> str:
        self.module_imports["scipy.special"].add("erfc")
        return f"scipy.special.erfc({self._print(expr.args[0])})"

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, e = expr.args
        if e == -1:
            return f"(1.0/{self.parenthesize(base, 1000)})"
        if e == 2 and not base.is_Number:
            b = self.parenthesize(base, 1000)
            return f"({b}*{b})" if base.is_Symbol else f"{b}**2"
        if e.is_Number and not base.is_Number and float(e) in (3.0, -2.0, 0.5, -0.5):
            # torch's pow specialisations: x*x*x, 1/(x*x), sqrt, 1/sqrt (numpy's power rounds otherwise)
            b = self.parenthesize(base, 1000)
            return {3.0: f"({b}*{b}*{b})" if base.is_Symbol else f"{b}**3", -2.0: f"(1.0/{b}**2)",
                    0.5: f"numpy.sqrt({self._print(base)})", -0.5: f"(1.0/numpy.sqrt({self._print(base)}))"}[float(e)]
        return super()._print_Pow(expr, rational)


def namespace(expr: sp.Expr) -> dict:
    """The modules this printer's code for ``expr`` refers to, for ``lambdify``: numpy, and scipy when it
    calls ``erf``/``erfc`` (imported only then: ``import symgrad`` never imports scipy)."""
    if expr.has(sp.erf, sp.erfc):
        import scipy.special  # deferred: scipy is heavy, and only kernels calling erf/erfc need it
        return {"numpy": numpy, "scipy": scipy}
    return {"numpy": numpy}
