"""The op registry: ``OpDef`` and the helpers every op family uses to define itself in one place."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from ..core import dtypes
from ..core.errors import broadcast_error
from ..core.graph import Node

#: Positional scalar symbols of elementwise forms: ``a0, a1, ...``; ``OUT`` stands for the result.
A = tuple(sp.Symbol(f"a{i}", real=True) for i in range(8))
OUT = sp.Symbol("out", real=True)

Shape = tuple[int, ...]


@dataclass(eq=False)
class OpDef:
    """Everything symgrad knows about one op.

    family     "source", "elementwise", "reduce", "shape" (codegen and printing dispatch on it)
    grad_fn    torch's ``grad_fn`` class name, or a function of the attrs returning it
    eval       numpy implementation: ``eval(*arrays, **attrs) -> ndarray``
    form       elementwise only: ``form(*symbols, **attrs) -> sympy.Expr`` (the scalar meaning)
    partials   elementwise, optional: explicit local partials (may use ``OUT``); else ``sympy.diff``
    vjp        non-elementwise: ``vjp(node, g) -> tuple[Node | None, ...]`` in graph ops
    jvp        optional: ``jvp(node, tangents) -> Node | None`` (else forward mode derives it from the rules below)
    lower      non-elementwise: ``lower(node, target, args) -> list[codegen.ir stmt]``
    infer      ``infer(*input_nodes, **attrs) -> (shape, dtype)``
    diff_args  indices of inputs that can carry a gradient (None: all)
    view       the result shares storage with input 0 (reshape, squeeze, transpose, ...); a bool or
               a function of the attrs (indexing with an integer array copies)
    keeps_int  elementwise: integer inputs give an integer result (add, mul, abs, ...)
    promote_attrs  attrs holding Python numbers that take part in type promotion as torch's
               wrapped scalars (``exponent`` of ``x ** 2``: a bool tensor squared is int64)
    layout     elementwise: "inputs" lays the result out as torch's TensorIterator does (following the
               strides of the inputs, first input first), "contiguous" always C order (``2 ** x``)
    check      ``check(*input_dtypes, **attrs)`` raises torch's error for inputs the op refuses
               (bool subtraction, ...); Python numbers arrive as their dtype
    display    optional: ``display(node, input_exprs) -> sympy.Expr``, how formulas print the op
               (see ``call_expr``); default: ``name(inputs)``
    linear     linear in every input: forward mode's tangent of ``op(x, ...)`` is ``op(t, ...)`` (same attrs)
    bilinear   linear in each input separately (matmul): the tangent is ``op(ta, b) + op(a, tb)``
    comparison the result is a bool tensor with no gradient (comparisons, logical ops, predicates)
    literal_zero  elementwise: torch's backward writes a literal 0 where the partial is 0 (``threshold_backward``,
               ``clamp_backward``, ``where``), not ``grad * 0``: the VJP folds the gradient into the partial's
               Piecewise branches, so that zero is +0.0 whatever the gradient's sign
    sparsity   the structural-Jacobian rule ``derive.sparsity`` applies (``"elementwise"``, ``"reduce"``,
               ``"sum_to"``, ``"cumsum"``, ``"softmax"``, ``"gather"``, ``"scatter"``, ``"put"``, ``"matmul"``,
               ``"none"``; ``"probe"`` transposes the VJP); None: the family's rule
    """

    name: str
    family: str
    grad_fn: str | Callable[[dict], str] | None
    eval: Callable[..., Any]
    infer: Callable[..., tuple[Shape, dtypes.DType]]
    form: Callable[..., sp.Expr] | None = None
    partials: Callable[..., Sequence[sp.Expr]] | None = None
    vjp: Callable[..., tuple[Node | None, ...]] | None = None
    jvp: Callable[..., Node | None] | None = None
    lower: Callable[..., list] | None = None
    diff_args: tuple[int, ...] | None = None
    view: bool | Callable[[dict], bool] = False
    keeps_int: bool = False
    promote_attrs: tuple[str, ...] = ()
    layout: str | Callable[[dict], str] = "inputs"
    check: Callable[..., None] | None = None
    display: Callable[..., sp.Expr] | None = None
    linear: bool = False
    bilinear: bool = False
    comparison: bool = False
    literal_zero: bool = False
    sparsity: str | None = None
    doc: str = ""
    _cache: dict = field(default_factory=dict, repr=False)

    def result_layout(self, attrs: dict) -> str:
        return self.layout(attrs) if callable(self.layout) else self.layout

    def is_view(self, attrs: dict) -> bool:
        """Whether the result shares storage with input 0 (``view`` may depend on the attrs)."""
        return self.view(attrs) if callable(self.view) else self.view

    def grad_fn_name(self, attrs: dict) -> str:
        g = self.grad_fn
        return g(attrs) if callable(g) else (g or f"{self.name.capitalize()}Backward0")

    def scalar_form(self, n: int, attrs: tuple) -> sp.Expr:
        """The form over ``a0..a{n-1}``, cached per attrs (elementwise ops only)."""
        key = ("form", n, attrs)
        if key not in self._cache:
            self._cache[key] = sp.sympify(self.form(*A[:n], **dict(attrs)))
        return self._cache[key]

    def local_partials(self, n: int, attrs: tuple) -> tuple[sp.Expr, ...]:
        """d(form)/d(a_i) for each input: explicit rules where given, else ``sympy.diff``."""
        key = ("partials", n, attrs)
        if key not in self._cache:
            if self.partials is not None:
                ps = tuple(sp.sympify(p) for p in self.partials(*A[:n], **dict(attrs)))
            else:
                f = self.scalar_form(n, attrs)
                # derivatives of steps (sign, Heaviside) are zero where defined: torch's convention, no DiracDelta
                ps = tuple(sp.diff(f, A[i]).replace(sp.DiracDelta, lambda *a: sp.S.Zero) for i in range(n))
                if not f.is_Symbol and not f.is_Number:
                    ps = tuple(p.subs(f, OUT) for p in ps)
            self._cache[key] = ps
        return self._cache[key]

    def __repr__(self) -> str:
        return f"<op {self.name}>"


REGISTRY: dict[str, OpDef] = {}


def call_expr(name: str, *args: sp.Expr, **kw: Any) -> sp.Expr:
    """``name(args, key=value, ...)`` as an opaque SymPy function application, for formulas
    (keyword arguments print as given; None ones are left out)."""
    extra = [sp.Symbol(f"{k}={v}") for k, v in kw.items() if v is not None]
    return sp.Function(name, real=True)(*args, *extra)


def dims_text(dims: tuple[int, ...]) -> Any:
    """How formulas print a reduction's dims: ``1`` for one, ``(0, 2)`` for several."""
    return dims[0] if len(dims) == 1 else tuple(dims)


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is already registered")
    REGISTRY[op.name] = op
    return op


def get(name: str) -> OpDef:
    return REGISTRY[name]


# --------------------------------------------------------------------------- shapes

def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy/torch broadcasting, with torch's error text."""
    out: Shape = ()
    for s in shapes:
        if s == out:
            continue
        n = max(len(out), len(s))
        a = (1,) * (n - len(out)) + out
        b = (1,) * (n - len(s)) + tuple(s)
        res = []
        for x, y in zip(a, b):
            if x == y or y == 1:
                res.append(x)
            elif x == 1:
                res.append(y)
            else:
                raise broadcast_error(out, tuple(s))
        out = tuple(res)
    return out


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """``dim`` (None, int or sequence, negatives allowed) as sorted non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    lo, hi = (-max(ndim, 1), max(ndim, 1) - 1)
    out = []
    for d in dims:
        if not lo <= d <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
        d = int(d) % max(ndim, 1)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out)) if ndim else ()


# --------------------------------------------------------------------------- node construction

def apply(op: OpDef | str, *inputs: Node, dtype: dtypes.DType | None = None, **attrs: Any) -> Node:
    """A new symbolic node of ``op`` over ``inputs`` (shape and dtype inferred, no value)."""
    if isinstance(op, str):
        op = REGISTRY[op]
    key = tuple(sorted(attrs.items()))
    shape, inferred = op.infer(op, *inputs, **attrs)
    diff = op.diff_args
    rg = any(x.requires_grad for i, x in enumerate(inputs) if diff is None or i in diff)
    return Node(op, tuple(inputs), key, shape, dtype or inferred, requires_grad=rg)


def promotion_operands(op: OpDef, inputs: Sequence[Any], attrs: dict) -> list[Any]:
    """What torch's type promotion sees: the inputs (a ``scalar`` node as the Python number it holds)
    and the op's scalar attrs (``promote_attrs``)."""
    ins = [x.attr("value") if isinstance(x, Node) and x.op.name == "scalar" else x for x in inputs]
    return [*ins, *(attrs[k] for k in op.promote_attrs if attrs.get(k) is not None)]


def elementwise_infer(op: OpDef, *inputs: Node, **attrs: Any) -> tuple[Shape, dtypes.DType]:
    shape = broadcast_shapes(*(i.shape for i in inputs))
    dtype = dtypes.result_type(*promotion_operands(op, inputs, attrs)) if inputs else dtypes.get_default_dtype()
    return shape, (dtype if op.keeps_int else dtypes.float_result(dtype))
