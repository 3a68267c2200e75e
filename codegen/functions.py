"""The SymPy function vocabulary of op forms: numpy functions and predicates SymPy lacks, folds or
cannot differentiate, as SymPy applications that print as numpy calls.

Each prints itself (``_symgrad_numpycode`` for the numpy kernels' printer, ``_symgrad_numbacode``
for numba's, ``_numpycode`` for SymPy's own), so every printer takes them without a case of its own.
"""
from __future__ import annotations

from typing import Any

import sympy as sp
from sympy.core.function import Application
from sympy.logic.boolalg import Boolean


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


class BitwiseLeftShift(NumpyIntFunction):
    """``a << b`` as torch shifts, in the int64 the form computes in: a count outside [0, 63] gives 0 (the
    statement's narrower dtype then drops the bits past its width, as torch's shift of that dtype does)."""

    _numpy_name, _operator = "left_shift", "<<"

    def _numpycode(self, printer: Any) -> str:
        a, b = (f"numpy.asarray({printer._print(x)}).astype(numpy.int64)" for x in self.args)
        return f"numpy.where(({b} < 0) | ({b} > 63), 0, numpy.left_shift({a}, numpy.clip({b}, 0, 63)))"

    _symgrad_numpycode = _numpycode

    def _symgrad_numbacode(self, printer: Any) -> str:
        a, b = (f"int({printer._print(x)})" for x in self.args)
        return f"(0 if ({b} < 0 or {b} > 63) else ({a} << {b}))"


class BitwiseRightShift(NumpyIntFunction):
    """``a >> b`` as torch shifts, in int64: a count outside [0, 63] fills with the sign (0 or -1)."""

    _numpy_name, _operator = "right_shift", ">>"

    def _numpycode(self, printer: Any) -> str:
        a, b = (f"numpy.asarray({printer._print(x)}).astype(numpy.int64)" for x in self.args)
        return f"numpy.right_shift({a}, numpy.where(({b} < 0) | ({b} > 63), 63, {b}))"

    _symgrad_numpycode = _numpycode

    def _symgrad_numbacode(self, printer: Any) -> str:
        a, b = (f"int({printer._print(x)})" for x in self.args)
        return f"({a} >> (63 if ({b} < 0 or {b} > 63) else {b}))"


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
