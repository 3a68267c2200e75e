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

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, e = expr.args
        if e == -1:
            return f"(1.0/{self.parenthesize(base, 1000)})"
        if e == 2 and not base.is_Number:
            b = self.parenthesize(base, 1000)
            return f"({b}*{b})" if base.is_Symbol else f"{b}**2"
        return super()._print_Pow(expr, rational)


class NumpyPredicate(Application, Boolean):
    """A numpy elementwise predicate as a SymPy boolean (usable as a ``Piecewise`` condition), printed
    as ``numpy.<name>(x)`` by every numpy printer (SymPy's, the kernels', numba's); never evaluated
    symbolically (a real SymPy symbol is finite, so SymPy would fold ``isinf(x)`` to False). Not a
    ``BooleanFunction``: SymPy's logic simplification treats it as one opaque proposition."""

    _numpy_name = ""

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


class IsNan(NumpyPredicate):
    _numpy_name = "isnan"


class IsInf(NumpyPredicate):
    _numpy_name = "isinf"


class IsFinite(NumpyPredicate):
    _numpy_name = "isfinite"


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


def print_expr(expr: sp.Expr) -> str:
    return KernelPrinter().doprint(expr)
