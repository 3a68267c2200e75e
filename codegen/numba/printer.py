"""SymPy → the scalar code of one element in a numba kernel, and the dtype spellings of that code.

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
"""
from __future__ import annotations

import sympy as sp

from ..numpy.printer import KernelPrinter


def np_dtype(dtype: str) -> str:
    """The numpy scalar type of ``dtype`` in generated code (``numpy.float32``, ``numpy.bool_``)."""
    return "numpy.bool_" if dtype in ("bool", "bool_") else f"numpy.{dtype}"


def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


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

    def _print_ComplexInfinity(self, expr: sp.Expr) -> str:
        return self._num("numpy.inf")

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
            out = self._choice(self._print(cond), self._print(value), out)
        return out

    def _choice(self, cond: str, value: str, other: str) -> str:
        """``value`` where ``cond`` holds, else ``other`` (a conditional expression)."""
        return f"({value} if {cond} else {other})"

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
