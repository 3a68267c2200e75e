"""Special functions SymPy's printers cannot emit as numpy (``erfinv``, ``lgamma``, ``digamma``, ``polygamma``, Bessel
``i0``/``i1`` and their scaled forms, ``ndtri``, ``log_ndtr``, ``erfcx``): one op, ``special``, whose ``name`` attr
picks the ``scipy.special`` function; evaluated and lowered (``ir.Call``) through ``codegen.arrayfns.special``. Its VJPs
are fused expressions of the result and other ``special`` nodes (digamma's derivative is ``polygamma(1, x)``), so
derivatives of any order are graph nodes."""
from __future__ import annotations

from typing import Any

import sympy as sp

from codegen import arrayfns, ir

from ..core.graph import Node
from .base import A, OpDef, apply, call_expr, register

#: the op's ``name`` attr -> (torch's grad_fn name, the name formulas print)
NAMES = {"erfinv": ("ErfinvBackward0", "erfinv"), "gammaln": ("LgammaBackward0", "lgamma"),
         "psi": ("DigammaBackward0", "digamma"), "polygamma": ("PolygammaBackward0", "polygamma"),
         "i0": ("I0Backward0", "i0"), "i0e": ("SpecialI0EBackward0", "i0e"), "i1": ("SpecialI1Backward0", "i1"),
         "i1e": ("SpecialI1EBackward0", "i1e"), "ndtri": ("SpecialNdtriBackward0", "ndtri"),
         "log_ndtr": ("SpecialLogNdtrBackward0", "log_ndtr"), "erfcx": ("SpecialErfcxBackward0", "erfcx")}


def _sp(x: Node, name: str, n: int = 0) -> Node:
    return apply("special", x, name=name, n=n)


def _fused(expr: sp.Expr, *xs: Node, dtype: Any) -> Node:
    return apply("fused", *xs, expr=expr, dtype=dtype)


def _vjp(node: Node, g: Node) -> tuple:
    x, name, n, dt = node.inputs[0], node.attr("name"), node.attr("n"), node.dtype
    g0, x1, o2 = A[0], A[1], A[2]
    if name == "erfinv":       # sqrt(pi) / 2 * exp(erfinv(x)^2)
        return (_fused(g0 * sp.sqrt(sp.pi) / 2 * sp.exp(o2 ** 2), g, x, node, dtype=dt),)
    if name == "ndtri":        # sqrt(2 pi) * exp(ndtri(x)^2 / 2)
        return (_fused(g0 * sp.sqrt(2 * sp.pi) * sp.exp(o2 ** 2 / 2), g, x, node, dtype=dt),)
    if name == "log_ndtr":     # exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)
        return (_fused(g0 * sp.exp(-x1 ** 2 / 2 - o2) / sp.sqrt(2 * sp.pi), g, x, node, dtype=dt),)
    if name == "erfcx":        # 2 x erfcx(x) - 2 / sqrt(pi)
        return (_fused(g0 * (2 * x1 * o2 - 2 / sp.sqrt(sp.pi)), g, x, node, dtype=dt),)
    if name == "gammaln":
        return (_fused(g0 * A[1], g, _sp(x, "psi"), dtype=dt),)
    if name == "psi":
        return (_fused(g0 * A[1], g, _sp(x, "polygamma", 1), dtype=dt),)
    if name == "polygamma":
        return (_fused(g0 * A[1], g, _sp(x, "polygamma", n + 1), dtype=dt),)
    if name == "i0":
        return (_fused(g0 * A[1], g, _sp(x, "i1"), dtype=dt),)
    if name == "i0e":          # i1e(x) - sign(x) * i0e(x)
        return (_fused(g0 * (A[3] - sp.sign(x1) * o2), g, x, node, _sp(x, "i1e"), dtype=dt),)
    if name == "i1":           # i0(x) - i1(x) / x, 1/2 at 0
        return (_fused(g0 * sp.Piecewise((sp.Rational(1, 2), sp.Eq(x1, 0)), (A[3] - o2 / x1, True)),
                       g, x, node, _sp(x, "i0"), dtype=dt),)
    if name == "i1e":          # i0e(x) - i1e(x) * (sign(x) + 1 / x), 1/2 at 0
        return (_fused(g0 * sp.Piecewise((sp.Rational(1, 2), sp.Eq(x1, 0)), (A[3] - o2 * (sp.sign(x1) + 1 / x1), True)),
                       g, x, node, _sp(x, "i0e"), dtype=dt),)
    raise KeyError(f"special: {name!r} is not one of {sorted(NAMES)}")    # every registered name has a rule above


def _lower(node: Node, target: str, args: list[str]) -> list:
    attrs = (("name", node.attr("name")), ("n", node.attr("n")))
    return [ir.Call(target, "special", (args[0],), attrs, node.shape, node.dtype.np.name, note=node.attr("name"))]


def _display(node: Node, ins: list) -> sp.Expr:
    shown = NAMES[node.attr("name")][1]
    return call_expr(shown, sp.Integer(node.attr("n")), ins[0]) if shown == "polygamma" else call_expr(shown, ins[0])


special = register(OpDef(
    "special", "special", lambda at: NAMES[at["name"]][0],
    lambda x, name, n=0: arrayfns.special(x, name, n), lambda op, x, name, n=0: (x.shape, x.dtype),
    vjp=_vjp, lower=_lower, display=_display, sparsity="elementwise",
    doc="a scipy.special function of a float tensor, elementwise (attr name; polygamma's order n)"))
