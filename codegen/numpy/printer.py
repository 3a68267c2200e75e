"""SymPy → numpy source: SymPy's NumPyPrinter with the few cases kernels print differently."""
from __future__ import annotations

from typing import Any

import sympy as sp
from sympy.core.function import Application
from sympy.logic.boolalg import Boolean
from sympy.printing.numpy import NumPyPrinter


class KernelPrinter(NumPyPrinter):
    """Prints scalar expressions that act elementwise on numpy arrays.

    Numbers print as Python literals (weakly typed, so float32 stays float32), two-branch
    ``Piecewise`` as ``numpy.where``, ``Max``/``Min`` as nested ``numpy.maximum``/``minimum``.
    """

    printmethod = "_symgrad_numpycode"

    def __init__(self, settings: dict | None = None) -> None:
        super().__init__({"fully_qualified_modules": True, "order": "none", **(settings or {})})

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
        return super()._print_Pow(expr, rational)


class NumpyCall:
    r"""A SymPy application that is a numpy function: never evaluated symbolically, printed
    ``numpy.<_numpy_name>(...)`` by every numpy printer (SymPy's, the kernels', numba's), and as
    ``name(...)`` / ``\operatorname{name}`` in formulas."""

    _numpy_name = ""
    args: tuple

    @classmethod
    def eval(cls, *args: Any) -> None:
        return None

    def _numpycode(self, printer: Any) -> str:
        return f"numpy.{self._numpy_name}({', '.join(printer._print(a) for a in self.args)})"

    _symgrad_numpycode = _symgrad_numbacode = _numpycode

    def _sympystr(self, printer: Any) -> str:
        return f"{self._numpy_name}({', '.join(printer._print(a) for a in self.args)})"

    def _latex(self, printer: Any) -> str:
        return rf"\operatorname{{{self._numpy_name}}}\left({', '.join(printer._print(a) for a in self.args)}\right)"


class NumpyPredicate(NumpyCall, Application, Boolean):
    """A numpy elementwise predicate as a SymPy boolean (usable as a ``Piecewise`` condition); never
    evaluated symbolically (a real SymPy symbol is finite, so SymPy would fold ``isinf(x)`` to False).
    Not a ``BooleanFunction``: SymPy's logic simplification treats it as one opaque proposition."""


class IsNan(NumpyPredicate):
    _numpy_name = "isnan"


class IsInf(NumpyPredicate):
    _numpy_name = "isinf"


class IsFinite(NumpyPredicate):
    _numpy_name = "isfinite"


class LessEqual(NumpyPredicate):
    """``a <= b`` that SymPy never folds: a relational between numbers (a Python scalar operand
    substituted unevaluated) would be re-evaluated, and canonicalised through a division by zero."""

    _numpy_name = "less_equal"
    _op, _tex = "<=", r"\leq"

    def _sympystr(self, printer: Any) -> str:
        return f"{printer._print(self.args[0])} {self._op} {printer._print(self.args[1])}"

    def _latex(self, printer: Any) -> str:
        return f"{printer._print(self.args[0])} {self._tex} {printer._print(self.args[1])}"


class NotEqual(LessEqual):
    _numpy_name = "not_equal"
    _op, _tex = "!=", r"\neq"


class NumpyIntFunction(sp.Function):
    """A numpy integer function (``bitwise_and``...) as a SymPy function, printed
    ``numpy.<name>(...)`` over its arguments as int64 (SymPy's symbols are real: a form may be
    evaluated on floats holding integers); the statement's dtype converts the result back."""

    _numpy_name = ""
    _operator = ""
    is_integer = True

    @classmethod
    def eval(cls, *args: Any) -> None:
        return None

    def _numpycode(self, printer: Any) -> str:
        args = ", ".join(f"numpy.asarray({printer._print(a)}).astype(numpy.int64)" for a in self.args)
        return f"numpy.{self._numpy_name}({args})"

    _symgrad_numpycode = _numpycode

    def _symgrad_numbacode(self, printer: Any) -> str:
        args = [f"int({printer._print(a)})" for a in self.args]
        return f"({self._operator}{args[0]})" if len(args) == 1 else f"({f' {self._operator} '.join(args)})"

    def _sympystr(self, printer: Any) -> str:
        return f"{self._numpy_name}({', '.join(printer._print(a) for a in self.args)})"

    def fdiff(self, argindex: int = 1) -> Any:
        return sp.S.Zero


class BitwiseAnd(NumpyIntFunction):
    _numpy_name, _operator = "bitwise_and", "&"


class BitwiseOr(NumpyIntFunction):
    _numpy_name, _operator = "bitwise_or", "|"


class BitwiseXor(NumpyIntFunction):
    _numpy_name, _operator = "bitwise_xor", "^"


class BitwiseNot(NumpyIntFunction):
    _numpy_name, _operator = "invert", "~"


class NumpyFloatFunction(NumpyCall, sp.Function):
    """A numpy float function SymPy lacks or cannot differentiate (``trunc``, ``fmod``...); numba
    compiles these ufuncs on scalars. ``_partials(*args)`` gives its derivatives (zero for the rounding
    functions: torch's convention)."""

    def _partials(self, *args: Any) -> tuple:
        return (sp.S.Zero,) * len(args)

    def fdiff(self, argindex: int = 1) -> Any:
        return self._partials(*self.args)[argindex - 1]


class Floor(NumpyFloatFunction):
    _numpy_name = "floor"


class Ceil(NumpyFloatFunction):
    _numpy_name = "ceil"


class Trunc(NumpyFloatFunction):
    _numpy_name = "trunc"


class Rint(NumpyFloatFunction):
    """Round half to even (torch.round, numpy.rint)."""

    _numpy_name = "rint"


class Divide(NumpyFloatFunction):
    """``a / b`` kept a division (SymPy folds a division by a number into a product by its reciprocal,
    which rounds differently)."""

    _numpy_name = "true_divide"

    def _partials(self, a: Any, b: Any) -> tuple:
        return 1 / b, -a / b**2


class Fmod(NumpyFloatFunction):
    """C's fmod: the remainder of ``a / b`` truncated toward zero (the sign of ``a``)."""

    _numpy_name = "fmod"

    def _partials(self, a: Any, b: Any) -> tuple:
        return sp.S.One, -Trunc(a / b)


class Remainder(NumpyFloatFunction):
    """Python's ``%``: the remainder of ``a / b`` floored (the sign of ``b``)."""

    _numpy_name = "remainder"

    def _partials(self, a: Any, b: Any) -> tuple:
        return sp.S.One, -Floor(a / b)


def namespace(expr: sp.Expr) -> dict:
    """The modules this printer's code for ``expr`` refers to, for ``lambdify``: numpy, and scipy when it
    calls ``erf``/``erfc`` (imported only then: ``import symgrad`` never imports scipy)."""
    import numpy
    if expr.has(sp.erf, sp.erfc):
        import scipy.special
        return {"numpy": numpy, "scipy": scipy}
    return {"numpy": numpy}


def print_expr(expr: sp.Expr) -> str:
    return KernelPrinter().doprint(expr)
