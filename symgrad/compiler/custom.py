"""User-defined ops: ``custom_op`` (an elementwise op from its SymPy scalar form) and ``custom_rule``
(a function of ``sg`` ops with an explicit VJP or JVP rule, as ``jax.custom_vjp`` / ``torch.autograd.Function``).

Both register an ordinary op in the registry, so the result works everywhere a built-in op does:
eager tensors and ``backward()``, ``@sg.compile`` (numpy and numba kernels), formulas, and
derivatives of any order.
"""
from __future__ import annotations

import functools
import inspect
import keyword
import re
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from codegen import ir
from codegen.numpy.printer import KernelPrinter, namespace

from ..core import context as _trace
from ..core.graph import Node, substitute
from ..derive.reverse import backward_graph
from ..eager.formula import _number
from ..eager.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..eager.record import _apply, _input_node
from ..eager.tensor import Tensor
from ..ops import OUT, REGISTRY, A, OpDef, register
from ..ops import source as _src
from ..ops.base import broadcast_shapes, elementwise_infer
from ..ops.reduce import sum_to_node
from .tracing import TraceContext, Tracer

__all__ = ["CustomOp", "CustomRule", "custom_op", "custom_rule", "is_custom"]

#: names of the ops registered through this module (the registry test requires rows only for the others)
CUSTOM: dict[str, Any] = {}


def is_custom(op: OpDef | str) -> bool:
    """Whether ``op`` (an ``OpDef`` or a name) was registered by ``custom_op`` / ``custom_rule``."""
    return (op if isinstance(op, str) else op.name) in CUSTOM


def _camel(name: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in name.split("_") if w)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"custom op name must be a Python identifier, got {name!r}")


# ---------------------------------------------------------------------------- printing checks

def check_printable(expr: sp.Expr, what: str) -> None:
    """Raise a ValueError unless the kernels' printer turns ``expr`` into numpy code."""
    p = KernelPrinter({"strict": True})
    try:
        p.doprint(expr)
    except Exception as exc:  # noqa: BLE001 - SymPy raises several kinds for an unprintable function
        raise ValueError(f"{what} cannot be printed as numpy code by symgrad's kernel printer "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0]}); write it with functions numpy "
                         "has (exp, log, sin, sqrt, Abs, Piecewise, Max, ...)") from None
    other = sorted(m for m in p.module_imports if m not in ("numpy", "scipy.special"))  # erf, erfc: kernels import it
    if other:
        names = sorted(f for m in other for f in p.module_imports[m])
        raise ValueError(f"{what} needs {', '.join(other)} ({', '.join(names)}), which generated kernels do not "
                         "import: write it with functions numpy has (exp, log, sin, sqrt, Abs, Piecewise, Max, ...)")


# ---------------------------------------------------------------------------- custom_op: elementwise, from a form

def _signature(form: Callable, nargs: int | None, what: str) -> tuple[int, dict[str, Any]]:
    """(number of tensor inputs, attrs with their defaults) of a form ``lambda x, y, k=1: ...``."""
    try:
        params = list(inspect.signature(form).parameters.values())
    except (TypeError, ValueError):
        if nargs is None:
            raise TypeError(f"cannot read the signature of {what}: pass nargs=") from None
        return nargs, {}
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    attrs = {p.name: p.default for p in params
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is not p.empty}
    missing = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if missing:
        raise TypeError(f"keyword-only parameters of {what} need defaults (they are the op's attributes): {missing}")
    var = any(p.kind is p.VAR_POSITIONAL for p in params)
    if nargs is None:
        if var:
            raise TypeError(f"{what} takes *args: pass nargs= (the number of tensor inputs)")
        nargs = len(pos)
    elif not var and nargs != len(pos):
        raise TypeError(f"nargs={nargs} but {what} takes {len(pos)} positional arguments")
    if not 1 <= nargs <= len(A):
        raise ValueError(f"a custom op takes 1 to {len(A)} tensor inputs, {what} takes {nargs}")
    return nargs, attrs


def _positional_arity(fn: Callable) -> int | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def _err() -> np.errstate:
    return np.errstate(all="ignore")


class CustomOp:
    """An elementwise op defined by its SymPy scalar form; call it like ``sg.exp``.

    On tensors it records a node (``grad_fn`` ``<Name>Backward0``); inside ``@sg.compile`` it is
    traced and its form is printed into the kernels; on Python numbers it returns a float, on
    numpy arrays an array (evaluated with ``numpy=`` or the form), on SymPy expressions its form.
    ``op.form(*symbols)`` is the scalar form, ``op.op`` the registry entry.
    """

    def __init__(self, name: str, form: Callable[..., Any], *, partials: Callable[..., Sequence[Any]] | None = None,
                 numpy: Callable[..., Any] | None = None, nargs: int | None = None, display: str = "call",
                 grad_fn: str | None = None, doc: str = "") -> None:
        _check_name(name)
        if display not in ("call", "form"):
            raise ValueError(f"display must be 'call' or 'form', got {display!r}")
        self.name = self.__name__ = name
        self.nargs, self.defaults = _signature(form, nargs, f"the form of {name!r}")
        self._form, self._partials, self._numpy = form, partials, numpy
        self._partials_take_out = False
        if partials is not None:
            k = _positional_arity(partials)
            if k not in (None, self.nargs, self.nargs + 1):
                raise TypeError(f"partials of {name!r} must take the {self.nargs} inputs (and optionally the result "
                                f"as one more argument), but takes {k} positional arguments")
            self._partials_take_out = k == self.nargs + 1
        self._evals: dict[tuple, Callable] = {}
        self._classes: dict[tuple, type] = {}
        self.__doc__ = doc or getattr(form, "__doc__", None) or f"The custom elementwise op {name!r}."
        self._validate(self.defaults)
        self.op = OpDef(name, "elementwise", grad_fn or f"{_camel(name)}Backward0", self._eval, elementwise_infer,
                        form=self._form_expr, partials=self._partial_exprs if partials is not None else None,
                        display=self._display if display == "call" else None, doc=self.__doc__)
        self.op.custom = self  # type: ignore[attr-defined]

    # -- the op's stanza

    def _form_expr(self, *syms: sp.Expr, **attrs: Any) -> sp.Expr:
        return self._form(*syms, **{**self.defaults, **attrs})

    def _partial_exprs(self, *syms: sp.Expr, **attrs: Any) -> list:
        extra = (OUT,) if self._partials_take_out else ()
        ps = self._partials(*syms, *extra, **{**self.defaults, **attrs})
        if isinstance(ps, (sp.Basic, int, float)):
            ps = [ps]
        return list(ps)

    def _eval(self, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
        key = tuple(sorted(attrs.items()))
        f = self._evals.get(key)
        if f is None:
            if self._numpy is not None:
                f = functools.partial(self._numpy, **attrs) if attrs else self._numpy
            else:
                expr = self.op.scalar_form(self.nargs, key)
                f = sp.lambdify(A[: self.nargs], expr, modules=[namespace(expr), "numpy"], printer=KernelPrinter)
            self._evals[key] = f
        with _err():
            out = np.asarray(f(*arrays))
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
        return out if out.shape == shape else np.broadcast_to(out, shape).copy()

    def _display(self, node: Node, ins: list) -> sp.Expr:
        return self.function(**dict(node.attrs))(*ins)

    def _validate(self, attrs: dict) -> None:
        what = f"the form of custom op {self.name!r}"
        expr = sp.sympify(self._form_expr(*A[: self.nargs], **attrs))
        if not isinstance(expr, sp.Expr) or isinstance(expr, sp.logic.boolalg.Boolean):
            raise TypeError(f"{what} must return a SymPy expression, got {type(expr).__name__}: {expr}")
        extra = expr.free_symbols - set(A[: self.nargs])
        if extra:
            raise ValueError(f"{what} uses symbols that are not its arguments: {sorted(map(str, extra))}")
        check_printable(expr, what)
        if self._partials is not None:
            ps = [sp.sympify(p) for p in self._partial_exprs(*A[: self.nargs], **attrs)]
            if len(ps) != self.nargs:
                raise ValueError(f"partials of custom op {self.name!r} returned {len(ps)} expressions, "
                                 f"expected {self.nargs} (one per input)")
        else:
            ps = [sp.diff(expr, a) for a in A[: self.nargs]]
        for i, p in enumerate(ps):
            extra = p.free_symbols - set(A[: self.nargs]) - {OUT}
            if extra:
                raise ValueError(f"the partial d/d(input {i}) of custom op {self.name!r} uses unknown symbols "
                                 f"{sorted(map(str, extra))}")
            check_printable(p.replace(sp.DiracDelta, lambda *a: sp.S.Zero),
                            f"the derivative d/d(input {i}) of custom op {self.name!r} ({p})")

    # -- display

    def function(self, **attrs: Any) -> type:
        """The SymPy function class formulas print this op with (``softplus(x)``): ``.doit()`` expands
        it to the form, ``diff`` uses the op's partials, numpy printers print the form."""
        attrs = {**self.defaults, **attrs}
        key = tuple(sorted(attrs.items()))
        cls = self._classes.get(key)
        if cls is not None:
            return cls
        op, n, name = self, self.nargs, self.name
        text = "".join(f", {k}={v}" for k, v in key if self.defaults.get(k) != v)

        def expand(self_: Any, args: Sequence[Any]) -> sp.Expr:
            return op.op.scalar_form(n, key).xreplace(dict(zip(A, args)))

        def fdiff(self_: Any, argindex: int = 1) -> sp.Expr:
            p = op.op.local_partials(n, key)[argindex - 1]
            return p.xreplace({**dict(zip(A, self_.args)), OUT: self_})

        def doit(self_: Any, deep: bool = True, **hints: Any) -> sp.Expr:
            args = [a.doit(deep=deep, **hints) for a in self_.args] if deep else list(self_.args)
            return expand(self_, args)

        def sympystr(self_: Any, printer: Any) -> str:
            return f"{name}({', '.join(printer._print(a) for a in self_.args)}{text})"

        def latex(self_: Any, printer: Any) -> str:
            body = ", ".join(printer._print(a) for a in self_.args) + text.replace("_", r"\_")
            return rf"\operatorname{{{name}}}\left({body}\right)".replace("_", r"\_", name.count("_"))

        def numpycode(self_: Any, printer: Any) -> str:
            return printer._print(expand(self_, self_.args))

        cls = type(name, (sp.Function,), {
            "nargs": n, "is_real": True, "opaque": True, "eval": classmethod(lambda c, *a: None),
            "fdiff": fdiff, "doit": doit, "_sympystr": sympystr, "_latex": latex, "_numpycode": numpycode,
            "_symgrad_numpycode": numpycode, "_symgrad_numbacode": numpycode, "__module__": __name__})
        self._classes[key] = cls
        return cls

    def form(self, *args: Any, **attrs: Any) -> sp.Expr:
        """The scalar form applied to SymPy expressions (default: the symbols ``a0, a1, ...``)."""
        self._check_attrs(attrs)
        args = args or A[: self.nargs]
        if len(args) != self.nargs:
            raise TypeError(f"{self.name}() takes {self.nargs} positional arguments but {len(args)} were given")
        key = tuple(sorted({**self.defaults, **attrs}.items()))
        return self.op.scalar_form(self.nargs, key).xreplace(dict(zip(A, map(sp.sympify, args))))

    def _check_attrs(self, attrs: dict) -> None:
        for k in attrs:
            if k not in self.defaults:
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{k}'")

    # -- calling

    def __call__(self, *args: Any, **attrs: Any) -> Any:
        if len(args) != self.nargs:
            raise TypeError(f"{self.name}() takes {self.nargs} positional arguments but {len(args)} were given")
        self._check_attrs(attrs)
        full = {**self.defaults, **attrs}
        if any(isinstance(a, Tensor) for a in args):
            if full != self.defaults:
                self._validate_once(full)
            ins = [Tensor(np.asarray(a)) if isinstance(a, np.ndarray) else a for a in args]
            return _apply(self.op, *ins, **full)
        if any(isinstance(a, sp.Basic) for a in args):
            return self.form(*args, **attrs)
        arrays = [np.asarray(a) for a in args]
        dt = np.result_type(*arrays)
        if dt.kind != "f":
            dt = np.dtype(np.float64)
        out = self._eval(*(a.astype(dt, copy=False) for a in arrays), **full).astype(dt, copy=False)
        if all(isinstance(a, (int, float, np.number)) and not isinstance(a, np.ndarray) for a in args):
            return float(out)
        return out

    def _validate_once(self, attrs: dict) -> None:
        key = ("validated", tuple(sorted(attrs.items())))
        if key not in self._evals:
            self._validate(attrs)
            self._evals[key] = True

    def __repr__(self) -> str:
        return f"<custom op {self.name}: {self.form()}>"


def _same_definition(a: CustomOp, b: CustomOp) -> bool:
    """Whether two definitions of one name mean the same op (re-running a notebook cell)."""
    def code(f: Any) -> Any:
        c = getattr(f, "__code__", None)
        return (c.co_code, c.co_consts, c.co_names) if c is not None else f
    if (a.nargs, a.defaults, a._partials_take_out) != (b.nargs, b.defaults, b._partials_take_out):
        return False
    if a.form() != b.form() or code(a._numpy) != code(b._numpy) or a.op.grad_fn != b.op.grad_fn:
        return False
    try:  # the forms with symbolic attributes, where the form takes them
        syms = {k: sp.Symbol(f"_{k}") for k in a.defaults}
        if sp.sympify(a._form(*A[: a.nargs], **syms)) != sp.sympify(b._form(*A[: b.nargs], **syms)):
            return False
    except Exception:  # noqa: BLE001, S110 - a form may need numeric attributes: the defaults compared above
        pass
    key = tuple(sorted(a.defaults.items()))
    return a.op.local_partials(a.nargs, key) == b.op.local_partials(b.nargs, key) and \
        (a.op.display is None) == (b.op.display is None)


def custom_op(name: str, form: Callable[..., Any], *, partials: Callable[..., Sequence[Any]] | None = None,
              numpy: Callable[..., Any] | None = None, nargs: int | None = None, display: str = "call",
              grad_fn: str | None = None, doc: str = "") -> CustomOp:
    """Register an elementwise op from its SymPy scalar form; returns the function applying it.

    ``form(*symbols, **attrs)`` is the op's value at one element: its positional parameters are the
    tensor inputs, parameters with defaults are attributes (``softplus(x, beta=2)``). Derivatives
    are ``sympy.diff`` of the form unless ``partials`` gives them (one expression per input; a
    ``partials`` taking one more argument receives the op's result, as ``lambda x, out: [1 - out**2]``).
    ``numpy`` evaluates it eagerly (default: the form printed as numpy code). ``display`` is how
    formulas print it: ``"call"`` (``softplus(x)``, expand with ``.doit()``) or ``"form"`` (inlined).

    >>> import sympy, symgrad as sg
    >>> softplus = sg.custom_op("softplus", lambda x: sympy.log(1 + sympy.exp(x)))
    >>> x = sg.tensor([0.0], requires_grad=True)
    >>> softplus(x)
    tensor([0.6931], grad_fn=<SoftplusBackward0>)
    """
    new = CustomOp(name, form, partials=partials, numpy=numpy, nargs=nargs, display=display, grad_fn=grad_fn, doc=doc)
    old = REGISTRY.get(name)
    if old is not None:
        prev = getattr(old, "custom", None)
        if isinstance(prev, CustomOp) and _same_definition(prev, new):
            return prev
        if prev is None:
            raise ValueError(f"{name!r} is a built-in op: choose another name for the custom op")
        raise ValueError(f"op {name!r} is already registered with a different definition: choose another name "
                         "(registered programs and kernels refer to ops by name)")
    register(new.op)
    CUSTOM[name] = new
    return new


# ---------------------------------------------------------------------------- custom_rule: an explicit VJP / JVP

#: a custom rule's node: input 0 is the forward's result (no gradient), the others its tensor arguments
_RULE_DIFF_ARGS = tuple(range(1, 256))


def _rule_infer(op: OpDef, *inputs: Node, **attrs: Any) -> tuple:
    return inputs[0].shape, inputs[0].dtype


def _rule_eval(*arrays: np.ndarray, **attrs: Any) -> np.ndarray:
    return arrays[0]


def _rule_lower(node: Node, target: str, args: list[str]) -> list:
    return [ir.Elementwise(target, sp.Symbol(args[0], real=True), node.shape, node.dtype.np.name)]


def _unique_op_name(base: str) -> str:
    base = re.sub(r"\W", "_", base).strip("_") or "rule"
    if base[0].isdigit():
        base = f"rule_{base}"
    name, k = base, 1
    while name in REGISTRY:
        name, k = f"{base}_{k}", k + 1
    return name




class CustomRule:
    """A function of ``sg`` ops whose derivative is the given rule (see ``custom_rule``)."""

    def __init__(self, fn: Callable[..., Any], vjp: Callable[..., Any] | None = None,
                 jvp: Callable[..., Any] | None = None, name: str | None = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn, self.vjp_rule, self.jvp_rule = fn, vjp, jvp
        self.name = name or getattr(fn, "__name__", "rule")
        op_name = _unique_op_name(self.name)
        self.grad_fn_name = _camel(re.sub(r"\W", "_", self.name)) + "Backward"
        self.op = register(OpDef(op_name, "custom", self.grad_fn_name, _rule_eval, _rule_infer, vjp=self._vjp,
                                 lower=_rule_lower, diff_args=_RULE_DIFF_ARGS, display=self._display,
                                 doc=f"custom rule {self.name!r}: the value of input 0, the derivative of the rule"))
        self.op.custom = self  # type: ignore[attr-defined]
        CUSTOM[op_name] = self

    def defvjp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Set the VJP rule ``rule(g, out, *args) -> one gradient per argument`` (usable as a decorator)."""
        self.vjp_rule = rule
        return rule

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Set the JVP rule ``rule(*tangents, out, *args) -> tangent of out`` (usable as a decorator)."""
        self.jvp_rule = rule
        return rule

    def __repr__(self) -> str:
        return f"<custom rule {self.name} (op {self.op.name})>"

    # -- calling

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(Tensor(np.asarray(a)) if isinstance(a, np.ndarray) else a for a in args)
        for k, v in kwargs.items():
            if isinstance(v, (Tensor, np.ndarray)):
                raise TypeError(f"custom rule {self.name!r}: pass tensor arguments positionally ({k!r} is a "
                                "keyword): only positional tensors are inputs of the graph")
        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tracing = _trace.active is not None
        if not tracing and not (is_grad_enabled() and any(args[i].requires_grad for i in tensors)):
            return self.fn(*args, **kwargs)
        if self.vjp_rule is None and self.jvp_rule is None:
            raise RuntimeError(f"custom rule {self.name!r} has no vjp or jvp rule: set one with "
                               f"@{self.name}.defvjp or @{self.name}.defjvp")
        with no_grad():
            out = self.fn(*args, **kwargs)
            if not isinstance(out, Tensor):
                if isinstance(out, (tuple, list)):
                    raise TypeError(f"custom rule {self.name!r}: the function must return one tensor, "
                                    f"it returned a {type(out).__name__}")
                out = Tensor(np.asarray(out))
            if not tracing and any(out is args[i] or out._data is args[i]._data for i in tensors):
                out = out.clone()  # the result must not share storage with an input
        attrs = {"nargs": len(args), "positions": tuple(tensors),
                 "consts": tuple((i, a) for i, a in enumerate(args) if i not in tensors),
                 "kw": tuple(sorted(kwargs.items()))}
        try:
            hash(tuple(attrs.values()))
        except TypeError:
            raise TypeError(f"custom rule {self.name!r}: arguments that are not tensors must be hashable "
                            "(numbers, strings, tuples): they are part of the recorded graph") from None
        return _apply(self.op, out, *(args[i] for i in tensors), **attrs)

    def _arguments(self, node: Node, tensors: Sequence[Any]) -> tuple[list, dict]:
        """The call's positional arguments (``tensors`` at the tensor positions) and keywords."""
        args: list[Any] = [None] * node.attr("nargs")
        for i, v in node.attr("consts"):
            args[i] = v
        for i, t in zip(node.attr("positions"), tensors):
            args[i] = t
        return args, dict(node.attr("kw"))

    def _display(self, node: Node, ins: list) -> sp.Expr:

        def show(v: Any) -> Any:
            return _number(v) if isinstance(v, (int, float)) else v if isinstance(v, sp.Basic) else repr(v)

        args, kw = self._arguments(node, ins[1:])
        shown = [a if isinstance(a, sp.Basic) else sp.sympify(show(a)) if isinstance(a, (int, float))
                 else sp.Symbol(repr(a)) for a in args]
        extra = [sp.Symbol(f"{k}={show(v)}") for k, v in kw.items()]
        return sp.Function(self.name, real=True)(*shown, *extra)

    # -- differentiation

    def _vjp(self, node: Node, g: Node) -> tuple[Node | None, ...]:
        ins = node.inputs[1:]
        with enable_grad(), TraceContext():
            if self.vjp_rule is not None:
                args, kw = self._arguments(node, [Tracer.wrap(x) for x in ins])
                res = self.vjp_rule(Tracer.wrap(g), Tracer.wrap(node), *args, **kw)
                grads = self._check_vjp(node, res)
            else:
                grads = self._transpose_jvp(node, g)
        return (None, *(None if r is None else sum_to_node(r, x.shape) for r, x in zip(grads, ins)))

    def _check_vjp(self, node: Node, res: Any) -> list:
        """The rule's gradients for the tensor inputs, validated as torch validates a Function's."""
        nargs, positions = node.attr("nargs"), node.attr("positions")
        if isinstance(res, Tensor) or res is None:
            res = (res,)
        if not isinstance(res, (tuple, list)):
            raise TypeError(f"the vjp rule of {self.name!r} must return a tuple of gradients (one per argument), "
                            f"got {type(res).__name__}")
        if len(res) != nargs:
            raise RuntimeError(f"function {self.grad_fn_name} returned an incorrect number of gradients "
                               f"(expected {nargs}, got {len(res)})")
        for i, r in enumerate(res):
            if i not in positions and r is not None:
                raise RuntimeError(f"function {self.grad_fn_name} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return [self._gradient(res[i], x, i) for i, x in zip(positions, node.inputs[1:])]

    def _gradient(self, r: Any, x: Node, index: int) -> Node | None:
        """``r`` as the gradient node of input ``x``: shape checked (broadcast ones are summed back
        afterwards, as torch does), dtype converted."""
        if r is None:
            return None
        if not isinstance(r, Tensor):
            raise TypeError(f"function {self.grad_fn_name} returned a {type(r).__name__} as the gradient at index "
                            f"{index}: gradients must be tensors or None")
        shape = tuple(r.shape)
        if shape != x.shape:
            try:
                ok = broadcast_shapes(x.shape, shape) == shape
            except RuntimeError:
                ok = False
            if not ok:
                raise RuntimeError(f"Function {self.grad_fn_name} returned an invalid gradient at index {index} - got "
                                   f"{list(shape)} but expected shape compatible with {list(x.shape)}")
        if r.dtype is not x.dtype:
            r = r.to(x.dtype)
        return _input_node(r)

    def _transpose_jvp(self, node: Node, g: Node) -> list:
        """The VJP of a JVP rule: the rule applied to stand-in leaves (tangents, result, arguments),
        differentiated with respect to the tangents and evaluated back on the real nodes."""
        ins = node.inputs[1:]
        tangents = [Node(_src.leaf, (), (), x.shape, x.dtype, requires_grad=x.requires_grad) for x in ins]
        stand_out = Node(_src.const, (), (), node.shape, node.dtype)
        stand_ins = [Node(_src.const, (), (), x.shape, x.dtype) for x in ins]
        args, kw = self._arguments(node, [Tracer.wrap(s) for s in stand_ins])
        tan, _ = self._arguments(node, [Tracer.wrap(t) for t in tangents])
        tan = [t if isinstance(t, Tensor) else None for t in tan]
        tout = self.jvp_rule(*tan, Tracer.wrap(stand_out), *args, **kw)
        if tout is None:
            return [None] * len(ins)
        if not isinstance(tout, Tensor):
            raise TypeError(f"the jvp rule of {self.name!r} must return a tensor (the tangent of the result), "
                            f"got {type(tout).__name__}")
        if tuple(tout.shape) != node.shape:
            try:
                tout = tout.expand(*node.shape)
            except RuntimeError:
                raise RuntimeError(f"the jvp rule of {self.name!r} returned a tangent of shape {list(tout.shape)}, "
                                   f"but the result has shape {list(node.shape)}") from None
        if tout.dtype is not node.dtype:
            tout = tout.to(node.dtype)
        t_node = tout._node if tout._node is not None else None
        if t_node is None or not t_node.requires_grad:
            return [None] * len(ins)
        grads, _ = backward_graph([t_node], [g], tangents)
        mapping = {stand_out.id: node, **{s.id: x for s, x in zip(stand_ins, ins)}}
        forbidden = {t.id for t in tangents}
        what = (f"the jvp rule of custom rule {self.name!r} is not linear in its tangents (its transpose, the VJP, "
                "still depends on them): a JVP must be a linear function of the tangents")
        return [None if gr is None else substitute(gr, mapping, forbidden, what) for gr in grads]


def custom_rule(fn: Callable[..., Any] | None = None, *, vjp: Callable[..., Any] | None = None,
                jvp: Callable[..., Any] | None = None, name: str | None = None) -> Any:
    """Decorate a function of ``sg`` ops with its own derivative rule (``jax.custom_vjp`` style).

    ``vjp(g, out, *args, **kwargs)`` returns one gradient per positional argument (None for
    arguments that are not tensors or get none); ``jvp(*tangents, out, *args, **kwargs)`` returns
    the tangent of the result, linear in the tangents (None for non-tensor arguments), and is
    transposed into the VJP symbolically. Rules are written in ``sg`` ops: they are traced into
    ordinary graph nodes, so the derivative compiles, prints and can be differentiated again
    (``out`` is the function's own result, itself differentiable through the rule). The
    forward runs without recording; its derivative is the rule's, never its own.

    >>> import symgrad as sg
    >>> @sg.custom_rule(vjp=lambda g, out, x: (g * (1 - out**2),))
    ... def mytanh(x):
    ...     return sg.tanh(x)
    >>> mytanh(sg.tensor([0.5], requires_grad=True)).grad_fn.name()
    'MytanhBackward'
    """
    def deco(f: Callable[..., Any]) -> CustomRule:
        return CustomRule(f, vjp=vjp, jvp=jvp, name=name)

    return deco if fn is None else deco(fn)
