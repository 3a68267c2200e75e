"""How formulas show the ops that are not elementwise: explicit reductions, indexing, scatters and writes as
opaque SymPy applications (SymPy never folds them), with text and LaTeX printing; and the ``display`` rules the
stanzas of ``ops/`` build from them."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp


def _power(tex: str, exp: str | None) -> str:
    """``tex`` raised to ``exp`` (SymPy's LaTeX printer hands a function's power to the function)."""
    return tex if exp is None else rf"\left({tex}\right)^{{{exp}}}"



class _Reduction(sp.Function):
    """``sum(e)`` / ``mean(e, (0,))``: a reduction kept explicit; the optional 2nd arg is the dims."""

    _label = "sum"
    is_real = True
    opaque = True  # not elementwise: display_simplify keeps SymPy out of it

    @classmethod
    def eval(cls, *args: Any) -> None:
        return None

    def _sympystr(self, printer: Any) -> str:
        inner = printer._print(self.args[0])
        dims = "" if len(self.args) == 1 else f", dim={tuple(int(d) for d in self.args[1])}"
        return f"{self._label}({inner}{dims})"

    def _latex(self, printer: Any, exp: str | None = None) -> str:
        inner = printer._print(self.args[0])
        sub = "" if len(self.args) == 1 else "_{" + ",".join(str(int(d)) for d in self.args[1]) + "}"
        return _power(rf"\operatorname{{{self._label}}}{sub}\left({inner}\right)", exp)

    def _eval_derivative(self, s: Any) -> Any:
        return self.func(self.args[0].diff(s), *self.args[1:])


class SumOf(_Reduction):
    _label = "sum"


class MeanOf(_Reduction):
    _label = "mean"


class Indexed(sp.Function):
    """``e[spec]``: an indexed tensor; ``spec`` is kept as a symbol holding its source text."""

    is_real = True
    opaque = True  # not elementwise: display_simplify keeps SymPy out of it

    @classmethod
    def eval(cls, *args: Any) -> None:
        return None

    def _sympystr(self, printer: Any) -> str:
        inner = printer._print(self.args[0])
        if not self.args[0].is_Atom:
            inner = f"({inner})"
        return f"{inner}{self.args[1].name}"

    def _latex(self, printer: Any, exp: str | None = None) -> str:
        inner = printer._print(self.args[0])
        if not self.args[0].is_Atom:
            inner = rf"\left({inner}\right)"
        return _power(rf"{{{inner}}}_{{\texttt{{{self.args[1].name}}}}}", exp)


class Scattered(sp.Function):
    """``scatter(e, spec)``: zeros with ``e`` placed at ``spec`` (the adjoint of indexing)."""

    is_real = True
    opaque = True  # not elementwise: display_simplify keeps SymPy out of it

    @classmethod
    def eval(cls, *args: Any) -> None:
        return None

    def _sympystr(self, printer: Any) -> str:
        return f"scatter({printer._print(self.args[0])}, {self.args[1].name})"


class Updated(sp.Function):
    """``put(e, spec = v)``: ``e`` with ``v`` written at ``spec`` (``+=``: added), from ``t[spec] = v``,
    ``index_put`` and ``index_add``; args: base, value, spec symbol, operator symbol."""

    is_real = True
    opaque = True  # not elementwise: display_simplify keeps SymPy out of it

    @classmethod
    def eval(cls, *args: Any) -> None:
        return None

    def _sympystr(self, printer: Any) -> str:
        base, value, spec, how = self.args
        return f"put({printer._print(base)}, {spec.name} {how.name} {printer._print(value)})"

    def _latex(self, printer: Any, exp: str | None = None) -> str:
        base, value, spec, how = self.args
        arrow = r"\mathrel{+}=" if how.name == "+=" else r"\leftarrow"
        return _power(rf"\operatorname{{put}}\left({printer._print(base)},\ \texttt{{{spec.name}}} {arrow} "
                      rf"{printer._print(value)}\right)", exp)


def describe(spec: tuple) -> str:
    """An index spec as Python source for formulas: ``[1:, ::2]``, ``[[0, 2], None, ...]``."""
    parts = []
    for e in spec:
        if e[0] == "i":
            parts.append(str(e[1]))
        elif e[0] == "s":
            start, stop, step = ("" if v is None else str(v) for v in e[1:])
            parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        elif e[0] == "n":
            parts.append("None")
        elif e[0] == "e":
            parts.append("...")
        else:
            parts.append(str(np.array(e[1], dtype=np.int64).reshape(e[2]).tolist()))
    return f"[{', '.join(parts)}]"
