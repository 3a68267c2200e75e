"""Formulas for people: the DAG inlined into SymPy expressions with readable names, as str / pretty / LaTeX."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import sympy as sp
from sympy.printing.pretty.stringpict import prettyForm
from sympy.printing.str import StrPrinter

from ..core import dtypes
from ..core.graph import Node, toposort
from ..derive.reverse import backward_graph
from ..derive.simplify import display_simplify, shield, unshield
from ..ops import A
from ..ops import source as _src
from .record import _const_node
from .tensor import Tensor

# ---------------------------------------------------------------------- display-only SymPy objects


def _power(tex: str, exp: str | None) -> str:
    """``tex`` raised to ``exp`` (SymPy's LaTeX printer hands a function's power to the function)."""
    return tex if exp is None else rf"\left({tex}\right)^{{{exp}}}"


class ConstSymbol(sp.Symbol):
    """A value outside the graph (detached, no_grad, not requiring grad): printed ``const(y2)``, ``\\bar{y_2}``."""

    def _sympystr(self, printer: Any) -> str:
        return f"const({self.name})"

    def _latex(self, printer: Any) -> str:
        return r"\overline{" + printer._print(sp.Symbol(self.name)) + "}"

    def _pretty(self, printer: Any) -> Any:
        return prettyForm(f"const({self.name})")


# ---------------------------------------------------------------------- notebook display

def _math(tex: str) -> str:
    """LaTeX for a notebook, as SymPy shows expressions: inline math in display style."""
    return f"$\\displaystyle {tex}$"


def _tex_name(name: str) -> str:
    """A name in LaTeX: as written if plain letters and digits (``w2``), else as SymPy prints the symbol
    (``learning_rate``: no double subscript); ``f`` for a lambda."""
    if not name.isidentifier():
        name = "f"
    return name if name.isalnum() else sp.latex(sp.Symbol(name))


def _kind(n: Node) -> str:
    """``float64[3, 4]`` (``float64`` for a 0-d value): a node's dtype and shape for a signature."""
    name = np.dtype(n.dtype.np).name if hasattr(n.dtype, "np") else str(n.dtype)
    return name + (f"[{', '.join(map(str, n.shape))}]" if n.shape else "")


# ---------------------------------------------------------------------- the result object

@dataclass
class Formula:
    """A formula: ``expr`` after the intermediate ``definitions`` (name, expr) it refers to.

    ``str(f)``, ``f.pretty()`` and ``f.latex()`` render it; ``f.expr`` is a SymPy expression
    whose leaf symbols are ``f.symbols[name]`` (real).
    """

    expr: sp.Expr
    definitions: list[tuple[sp.Symbol, sp.Expr]] = field(default_factory=list)
    symbols: dict[str, sp.Symbol] = field(default_factory=dict)
    label: str = ""

    def __str__(self) -> str:
        lines = [f"{s} = {StrPrinter().doprint(e)}" for s, e in self.definitions]
        lines.append(StrPrinter().doprint(self.expr))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def pretty(self) -> str:
        parts = [sp.pretty(sp.Eq(s, e, evaluate=False)) for s, e in self.definitions]
        parts.append(sp.pretty(self.expr))
        return "\n\n".join(parts)

    def latex(self) -> str:
        if not self.definitions:
            return sp.latex(self.expr)
        rows = [f"{sp.latex(s)} &= {sp.latex(e)}" for s, e in self.definitions]
        rows.append(f"& {sp.latex(self.expr)}")
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"

    def _repr_latex_(self) -> str:
        return _math(self.latex())

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Formula):
            other = other.inlined()
        return sp.simplify(self.inlined() - sp.sympify(other)) == 0

    __hash__ = None  # type: ignore[assignment]

    def inlined(self) -> sp.Expr:
        """``expr`` with every definition substituted back."""
        e = self.expr
        for s, d in reversed(self.definitions):
            e = e.xreplace({s: d})
        return e

    def subs(self, *args: Any, **kw: Any) -> sp.Expr:
        return self.inlined().subs(*args, **kw)


# ---------------------------------------------------------------------- naming

#: ``source(value)`` -> an iterable of (tensor, name) pairs naming the tensors that ``value`` (an object in a
#: calling frame) holds, or None: ``sg.nn`` registers one by which a ``Module`` names its parameters and buffers
#: by their qualified names (``0.weight``, ``fc1.bias``). Those names win over variable names.
NAME_SOURCES: list[Callable[[Any], Iterable[tuple[Any, str]] | None]] = []


def _caller_names(depth: int = 2) -> dict[int, str]:
    """Map id(array or node) -> the variable name a calling frame binds to a tensor over it, or the
    qualified name a ``NAME_SOURCES`` entry gives it (for a module's parameter: the longest path found)."""
    names: dict[int, str] = {}
    paths: dict[int, str] = {}
    f = sys._getframe(depth)
    hops = 0
    while f is not None and hops < 8:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith("symgrad") or mod.startswith("symgrad.cli") or mod.startswith("symgrad.tour"):
            for scope in (f.f_locals, f.f_globals):
                for k, v in list(scope.items()):
                    if isinstance(v, Tensor):
                        if k.isidentifier() and not k.startswith("_"):
                            if v._node is not None:
                                names.setdefault(v._node.id, k)
                            names.setdefault(id(v._data), k)
                        continue
                    for source in NAME_SOURCES:
                        for t, qualified in source(v) or ():
                            keys = [id(t._data)] + ([t._node.id] if t._node is not None else [])
                            for key in keys:
                                if key not in paths or qualified.count(".") > paths[key].count("."):
                                    paths[key] = qualified
        f = f.f_back
        hops += 1
    names.update(paths)
    return names


class _Namer:
    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.used: dict[str, int] = {}
        self.count = 0
        self.symbols: dict[str, sp.Symbol] = {}

    def _fresh(self, base: str) -> str:
        if base not in self.used:
            self.used[base] = 1
            return base
        self.used[base] += 1
        return f"{base}_{self.used[base] - 1}"

    def for_node(self, n: Node, default_prefix: str = "t") -> str:
        base = n.name or self.names.get(n.id) or (self.names.get(id(n.value)) if n.value is not None else None)
        if base is None:
            base = f"{default_prefix}{self.count}"
            self.count += 1
        return self._fresh(base)


def _number(v: Any) -> sp.Expr:
    if isinstance(v, bool):
        return sp.Integer(int(v))
    if isinstance(v, int):
        return sp.Integer(v)
    fr = Fraction(v).limit_denominator(1000)
    if float(fr) == v:
        return sp.Rational(fr.numerator, fr.denominator)
    return sp.Float(v)


# ---------------------------------------------------------------------- DAG → display expression

class _Display:
    """Inline nodes into SymPy expressions; nodes reused and large get a named definition."""

    INLINE_OPS = 12

    def __init__(self, namer: _Namer, roots: Sequence[Node], stop: Any = None) -> None:
        self.namer = namer
        self.exprs: dict[int, sp.Expr] = {}
        self.definitions: list[tuple[sp.Symbol, sp.Expr]] = []
        order = toposort(roots, stop=stop)
        self.uses: dict[int, int] = {}
        for n in order:
            for i in n.inputs:
                self.uses[i.id] = self.uses.get(i.id, 0) + 1
        self.stop = stop

    def leaf_symbol(self, n: Node, const: bool) -> sp.Expr:
        name = self.namer.for_node(n, "c" if const else "t")
        s = ConstSymbol(name, real=True) if const else sp.Symbol(name, real=True)
        self.namer.symbols[name] = s
        return s

    def of(self, root: Node) -> sp.Expr:
        for n in toposort([root], stop=lambda m: m.id in self.exprs or (self.stop is not None and self.stop(m))):
            if n.id not in self.exprs:
                self.exprs[n.id] = self._build(n)
        return self.exprs[root.id]

    def _build(self, n: Node) -> sp.Expr:
        op = n.op
        if op is _src.leaf:
            return self.leaf_symbol(n, False)
        if op is _src.const:
            if n.value is not None and getattr(n.value, "size", 0) == 1 and n.name is None and \
                    self.namer.names.get(id(n.value)) is None:
                return _number(n.value.reshape(()).item())
            return self.leaf_symbol(n, True)
        if op is _src.scalar:
            return _number(n.attr("value"))
        ins = [self.exprs[i.id] for i in n.inputs]
        if op.display is not None:
            e = op.display(n, ins)
        elif op.family == "elementwise":
            form = op.scalar_form(len(ins), n.attrs)
            if form.has(sp.Piecewise):
                # opaque inputs (sums, indexing...) stay out of SymPy's evaluation of the conditions, which
                # would fold a Piecewise out of a sum's argument
                table: dict = {}
                e = unshield(form.xreplace(dict(zip(A, (shield(i, table) for i in ins)))), table)
            else:
                e = form.xreplace(dict(zip(A, ins)))
        elif op.family == "shape":
            e = ins[0]
        else:
            e = sp.Function(op.name, real=True)(*ins)
        if self.uses.get(n.id, 0) > 1 and sp.count_ops(e) > self.INLINE_OPS:
            name = self.namer.for_node(n, "u")
            s = sp.Symbol(name, real=True)
            self.definitions.append((s, e))
            return s
        return e


def _frame_names() -> dict[int, str]:
    try:
        return _caller_names(3)
    except ValueError:
        return {}


def formula(t: Any, *, simplify: bool = False) -> Formula:
    """The SymPy expression of ``t`` in terms of the leaves it depends on.

    >>> import symgrad as sg
    >>> x = sg.ones(2, 2, requires_grad=True)
    >>> print(sg.formula((3 * (x + 2) ** 2).mean()))
    mean(3*(x + 2)**2)
    """
    namer = _Namer(_frame_names())
    node = _node_of(t)
    d = _Display(namer, [node])
    e = d.of(node)
    if simplify:
        e = display_simplify(e)
    return Formula(e, d.definitions, namer.symbols)


def _node_of(t: Any) -> Node:
    if isinstance(t, Node):
        return t
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor, got {type(t).__name__}")
    return t._node if t._node is not None else _const_node(t)


def _grad_expr(namer: _Namer, roots: Sequence[Node], seeds: Sequence[Any], wrt: Node
               ) -> tuple[sp.Expr, list[tuple[sp.Symbol, sp.Expr]]]:
    seed_nodes = []
    for r, s in zip(roots, seeds):
        if s is None or (getattr(s, "size", 0) == 1 and float(s.reshape(()).item()) == 1.0 and r.shape == ()):
            seed_nodes.append(Node(_src.scalar, (), (("value", 1),), r.shape, r.dtype))
        else:
            n = Node(_src.const, (), (), r.shape, dtypes.float_result(r.dtype), name=_seed_name(namer), value=s)
            seed_nodes.append(n)
    (g,), _ = backward_graph(list(roots), seed_nodes, [wrt])
    if g is None:
        return sp.Integer(0), []
    d = _Display(namer, [g])
    return d.of(g), d.definitions


def _seed_name(namer: _Namer) -> str:
    return "v" if "v" not in namer.used else namer._fresh("grad_output")


def grad_formula(out: Any, x: Any = None, *, simplify: bool = True) -> Formula:
    """d(out)/dx as a simplified SymPy formula, elementwise in the leaves' element symbols.

    With one argument (a leaf ``x``), the formula behind its accumulated ``x.grad``.

    >>> import symgrad as sg
    >>> x = sg.ones(2, 2, requires_grad=True)
    >>> out = (3 * (x + 2) ** 2).mean()
    >>> print(sg.grad_formula(out, x))
    3*x/2 + 3
    """
    namer = _Namer(_frame_names())
    if x is None:
        leaf = out
        g = leaf._grad
        if g is None:
            raise RuntimeError("this tensor has no .grad yet: call backward() first")
        terms = g._grad_terms
        if not terms.known:
            raise RuntimeError(".grad was modified in place (other than zero_()) or accumulated too many times; "
                               "its formula is not known")
        e = sp.Integer(0)
        defs: list = []
        for roots, seeds, w in terms.items:
            te, td = _grad_expr(namer, roots, seeds, w)
            e, defs = e + te, defs + td
    else:
        on, xn = _node_of(out), _node_of(x)
        if not on.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        e, defs = _grad_expr(namer, [on], [None if on.shape == () else _nonscalar_seed(on)], xn)
    if simplify:
        e = display_simplify(e)
        if len(defs) <= 8:
            defs = [(s_, display_simplify(d_)) for s_, d_ in defs]
    return Formula(e, defs, namer.symbols)


def _nonscalar_seed(n: Node) -> Any:
    return np.ones(n.shape) * np.nan  # a symbolic weight ``v``: the value is never used


def loop_recurrences(roots: Sequence[Node]) -> list[tuple[str, list[tuple[str, Formula]]]]:
    """The step of every loop (``scan`` node) under ``roots`` as recurrences in the user's names, loops inside
    steps included: ``s[k+1] = ...`` for a step, ``λ_s[k] = ...`` for its adjoint (reverse mode)."""
    out: list[tuple[str, list[tuple[str, Formula]]]] = []
    seen: set[int] = set()
    queue = [n for n in toposort(roots) if n.op.name == "scan"]
    while queue:
        node = queue.pop(0)
        body = node.attr("body")
        if body.derived is not None and body.derived[0] == "history":
            body = body.derived[1]
        if id(body) in seen:
            continue
        seen.add(id(body))
        inner = [n for n in toposort(body.outputs()) if n.op.name == "scan"]
        queue += inner
        d = body.display
        if d is None:
            continue
        namer = _Namer({})
        disp = _Display(namer, [n for _, n in d["outs"]])
        for n, name in d["ins"]:
            sym = sp.Symbol(name, real=True)
            namer.symbols[name] = sym
            disp.exprs[n.id] = sym
        rows = [(lhs, Formula(display_simplify(disp.of(n)), [], namer.symbols)) for lhs, n in d["outs"]]
        if disp.definitions and rows:
            rows[0][1].definitions = list(disp.definitions)
        steps = node.attr("length")
        title = f"{body.label} ({steps} steps{', ' + d['note'] if d['note'] else ''})"
        out.append((title, rows))
    return out


class CompiledFormulas:
    """The forward formula of a compiled function and its gradient with respect to each argument."""

    def __init__(self, out: Node, grads: Sequence[Node], wrt: Sequence[str], fname: str,
                 params: Sequence[str], extra: Sequence[tuple[str, str, Node]] = ()) -> None:
        namer = _Namer({})
        d = _Display(namer, [out, *grads, *(n for _, _, n in extra)])
        self.name = fname
        self.params = list(params)
        self.forward = Formula(d.of(out), list(d.definitions), namer.symbols)
        self.gradients: dict[str, Formula] = {}
        for w, g in zip(wrt, grads):
            self.gradients[w] = Formula(display_simplify(d.of(g)), [], namer.symbols)
        #: further derived formulas: (plain-text label, LaTeX label, formula), e.g. a Hessian-vector product
        self.extra = [(label, tex, Formula(display_simplify(d.of(n)), [], namer.symbols)) for label, tex, n in extra]
        self.definitions = list(d.definitions)
        self.forward.definitions = self.definitions
        #: the loops' steps as recurrences: (title, [(left-hand side, formula)]), the step then its adjoint
        self.loops = loop_recurrences([out, *grads])
        leaves = {n.name: n for n in toposort([out, *grads, *(n for _, _, n in extra)])
                  if n.op is _src.leaf and n.name is not None}
        #: (parameter, ``float64[3]``) per parameter the formulas read, and the result's kind
        self.signature = [(p, _kind(leaves[p])) for p in self.params if p in leaves]
        self.result = _kind(out)

    def __str__(self) -> str:
        lines = [f"{self.name}({', '.join(self.params)}) = {self.forward}"]
        for w, f in self.gradients.items():
            lines.append(f"d{self.name}/d{w} = {f}")
        for label, _, f in self.extra:
            lines.append(f"{label} = {f}")
        for title, rows in self.loops:
            lines.append(f"{title}:")
            for lhs, f in rows:
                lines += [f"    {s} = {StrPrinter().doprint(e)}" for s, e in f.definitions]
                lines.append(f"  {lhs} = {StrPrinter().doprint(f.expr)}")
        return "\n".join(lines)

    __repr__ = __str__

    def latex(self) -> str:
        name = _tex_name(self.name)
        params = ", ".join(_tex_name(p) for p in self.params)
        rows = [f"{name}({params}) &= {self.forward.latex()}"]
        for w, f in self.gradients.items():
            rows.append(rf"\frac{{\partial {name}}}{{\partial {_tex_name(w)}}} &= {f.latex()}")
        for _, tex, f in self.extra:
            rows.append(rf"{tex} &= {f.latex()}")
        for title, loop_rows in self.loops:
            rows.append(rf"&\text{{{title}:}}")
            for lhs, f in loop_rows:
                rows += [f"{sp.latex(d)} &= {sp.latex(e)}" for d, e in f.definitions]
                rows.append(f"{sp.latex(sp.Symbol(lhs))} &= {sp.latex(f.expr)}")
            rows = [r.replace("λ", r"\lambda") for r in rows]
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"

    def signature_text(self) -> str:
        """``w2(x: float64[1000], y: float64[1000]) -> float64``: the signature the formulas were derived at."""
        return f"{self.name}({', '.join(f'{p}: {k}' for p, k in self.signature)}) -> {self.result}"

    def _repr_latex_(self) -> str:
        return _math(self.latex())

    def _repr_markdown_(self) -> str:
        return f"`{self.signature_text()}`\n\n$$\n{self.latex()}\n$$"
