"""Elementwise ops: each is its scalar SymPy form, its numpy evaluation and torch's grad_fn name."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import log1p as _log1p

from codegen.printer import BitwiseAnd, BitwiseNot, BitwiseOr, BitwiseXor, IsFinite, IsInf, IsNan

from .base import OUT, A, OpDef, elementwise_infer, register


def _err() -> np.errstate:
    """A fresh ``errstate`` each time: numpy 2 refuses to enter one object twice."""
    return np.errstate(all="ignore")


def _ew(name: str, grad_fn: Any, eval_: Any, form: Any, partials: Any = None, keeps_int: bool = False,
        diff_args: tuple[int, ...] | None = None, doc: str = "", promote_attrs: tuple[str, ...] = (),
        check: Any = None, layout: Any = "inputs") -> OpDef:
    return register(OpDef(name, "elementwise", grad_fn, eval_, elementwise_infer, form=form,
                          partials=partials, keeps_int=keeps_int, diff_args=diff_args, doc=doc,
                          promote_attrs=promote_attrs, check=check, layout=layout))


# ---------------------------------------------------------------------------- torch's refusals of bool inputs

def _no_bool_sub(*dts: Any, **attrs: Any) -> None:
    n = sum(d.name == "bool" for d in dts)
    if n >= 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if n:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _rsub_check(a: Any, other: Any = None, **attrs: Any) -> None:
    from .. import dtypes
    _no_bool_sub(a, dtypes.result_type(other))


def _no_bool_neg(a: Any) -> None:
    if a.name == "bool":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _no_bool_abs(a: Any) -> None:
    if a.name == "bool":
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")


def _no_bool_relu(a: Any) -> None:
    if a.name == "bool":
        raise RuntimeError("Boolean inputs not supported for relu")


def _quiet(f: Any) -> Any:
    def run(*args: Any, **kw: Any) -> Any:
        with _err():
            return f(*args, **kw)
    return run


def _pow_eval(a: np.ndarray, exponent: float) -> np.ndarray:
    if isinstance(exponent, int) and exponent < 0 and a.dtype.kind in "iub":
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return np.power(a, exponent)


def _add_form(a: sp.Expr, b: sp.Expr, alpha: float = 1) -> sp.Expr:
    return a + alpha * b


def _sub_form(a: sp.Expr, b: sp.Expr, alpha: float = 1) -> sp.Expr:
    return a - alpha * b


def _relu_form(a: sp.Expr) -> sp.Expr:
    return sp.Piecewise((a, a > 0), (0, True))


def _clamp_form(a: sp.Expr, min: float | None = None, max: float | None = None, fn: str = "") -> sp.Expr:  # noqa: A002
    if min is not None:
        a = sp.Max(a, min)
    if max is not None:
        a = sp.Min(a, max)
    return a


def _clamp_partials(a: sp.Expr, min: float | None = None, max: float | None = None, fn: str = "") -> list:  # noqa: A002
    # torch passes the gradient where min <= x <= max, bounds included
    cond = sp.true
    if min is not None:
        cond = cond & (a >= min)
    if max is not None:
        cond = cond & (a <= max)
    return [sp.Piecewise((1, cond), (0, True))]


def _clamp_eval(a: np.ndarray, min: float | None = None, max: float | None = None,  # noqa: A002
                fn: str = "") -> np.ndarray:
    if min is not None:
        a = np.maximum(a, np.asarray(min, a.dtype))
    if max is not None:
        a = np.minimum(a, np.asarray(max, a.dtype))
    return a


def _pow_tt_partials(a: sp.Expr, b: sp.Expr) -> list:
    # torch masks 0 * inf where the exponent is 0 and log(0) where the base is 0 and exponent >= 0
    return [sp.Piecewise((0, sp.Eq(b, 0)), (b * a ** (b - 1), True)),
            sp.Piecewise((0, sp.Eq(a, 0) & (b >= 0)), (OUT * sp.log(a), True))]


def _rpow_partials(a: sp.Expr, base: float) -> list:
    if base == 0:
        return [sp.Piecewise((0, a >= 0), (OUT * sp.log(sp.S(base)), True))]
    return [OUT * sp.log(sp.S(base))]


def _sigmoid_eval(a: np.ndarray) -> np.ndarray:
    with _err():
        return 1 / (1 + np.exp(-a))


add = _ew("add", "AddBackward0", lambda a, b, alpha=1: np.add(a, b if alpha == 1 else alpha * b), _add_form,
          keeps_int=True)
sub = _ew("sub", "SubBackward0", lambda a, b, alpha=1: np.subtract(a, b if alpha == 1 else alpha * b), _sub_form,
          keeps_int=True, check=_no_bool_sub)
rsub = _ew("rsub", "RsubBackward1", lambda a, other: np.subtract(np.asarray(other, a.dtype), a),
           lambda a, other: other - a, keeps_int=True, promote_attrs=("other",), check=_rsub_check)
mul = _ew("mul", "MulBackward0", np.multiply, lambda a, b: a * b, keeps_int=True)
div = _ew("div", "DivBackward0", _quiet(np.true_divide), lambda a, b: a / b)
reciprocal = _ew("reciprocal", "ReciprocalBackward0", _quiet(np.reciprocal), lambda a: 1 / a,
                 partials=lambda a: [-OUT**2])
neg = _ew("neg", "NegBackward0", np.negative, lambda a: -a, keeps_int=True, check=_no_bool_neg)
pow_ = _ew("pow", "PowBackward0", _quiet(_pow_eval), lambda a, exponent: a**exponent, keeps_int=True,
           promote_attrs=("exponent",))
pow_tensor = _ew("pow_tensor", "PowBackward1", _quiet(np.power), lambda a, b: a**b, partials=_pow_tt_partials,
                 keeps_int=True)
rpow = _ew("rpow", "PowBackward2", _quiet(lambda a, base: np.power(np.asarray(base, a.dtype), a)),
           lambda a, base: sp.S(base) ** a, partials=_rpow_partials, keeps_int=True, promote_attrs=("base",),
           layout="contiguous")
exp = _ew("exp", "ExpBackward0", _quiet(np.exp), sp.exp)
log = _ew("log", "LogBackward0", _quiet(np.log), sp.log)
log1p = _ew("log1p", "Log1PBackward0", _quiet(np.log1p), _log1p)
sqrt = _ew("sqrt", "SqrtBackward0", _quiet(np.sqrt), sp.sqrt, partials=lambda a: [1 / (2 * OUT)])
sin = _ew("sin", "SinBackward0", np.sin, sp.sin)
cos = _ew("cos", "CosBackward0", np.cos, sp.cos)
tan = _ew("tan", "TanBackward0", np.tan, sp.tan, partials=lambda a: [1 + OUT**2])
tanh = _ew("tanh", "TanhBackward0", np.tanh, sp.tanh, partials=lambda a: [1 - OUT**2])
sigmoid = _ew("sigmoid", "SigmoidBackward0", _sigmoid_eval, lambda a: 1 / (1 + sp.exp(-a)),
              partials=lambda a: [OUT * (1 - OUT)])
relu = _ew("relu", "ReluBackward0", lambda a: np.maximum(a, np.zeros((), a.dtype)), _relu_form,
           partials=lambda a: [sp.Piecewise((1, a > 0), (0, True))], keeps_int=True, check=_no_bool_relu)
abs_ = _ew("abs", "AbsBackward0", np.abs, sp.Abs, partials=lambda a: [sp.sign(a)], keeps_int=True,
           check=_no_bool_abs)
clamp = _ew("clamp", lambda at: at.get("fn", "ClampBackward1"), _clamp_eval, _clamp_form, partials=_clamp_partials,
            keeps_int=True, promote_attrs=("min", "max"),
            doc="clamp / clip / clamp_min / clamp_max; `fn` keeps torch's grad_fn name")


def _fused_eval(*arrays: np.ndarray, expr: sp.Expr) -> np.ndarray:
    f = _fused_eval.cache.get((expr, len(arrays)))
    if f is None:
        from codegen.printer import KernelPrinter

        # the kernels' printer: SymPy's own prints ``And`` as ``logical_and.reduce``, which cannot broadcast
        f = sp.lambdify(A[: len(arrays)], expr, modules=[{"numpy": np}, "numpy"], printer=KernelPrinter)
        _fused_eval.cache[expr, len(arrays)] = f
    with _err():
        out = np.asarray(f(*arrays))
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays)) if arrays else ()
    return out if out.shape == shape else np.broadcast_to(out, shape).copy()


_fused_eval.cache = {}


def _fused_grad_fn(attrs: dict) -> str:
    head = type(attrs["expr"]).__name__
    return {"Mul": "MulBackward0", "Add": "AddBackward0", "Pow": "PowBackward0"}.get(head, f"{head}Backward0")


#: A fused elementwise expression over ``a0..an`` (derivatives are made of these).
fused = _ew("fused", _fused_grad_fn, _fused_eval, lambda *a, expr: expr)


def _to_infer(op: OpDef, a: Any, dtype: Any) -> Any:
    from .. import dtypes
    return a.shape, dtypes.from_any(dtype)


def _clone_eval(a: np.ndarray, saved: bool = False, contiguous: bool = False) -> np.ndarray:
    # torch's preserve_format: a dense tensor keeps its strides, an expanded or strided one becomes contiguous
    c = np.copy(a, order="C" if contiguous else "K")
    return c if contiguous or c.strides == a.strides else np.array(a, order="C", copy=True)


clone = _ew("clone", "CloneBackward0", _clone_eval, lambda a, saved=False, contiguous=False: a, keeps_int=True,
            layout=lambda at: "contiguous" if at.get("contiguous") else "inputs",
            doc="a copy (`contiguous`: in C order, as `.contiguous()`); `saved` marks the copy of self an in-place "
                "op keeps for its own backward (torch's original self), which next_functions looks through")
to = register(OpDef("to", "elementwise", "ToCopyBackward0", lambda a, dtype: a.astype(np.dtype(dtype)),
                    _to_infer, form=lambda a, dtype: a, doc="dtype conversion; the gradient converts back"))


stop_gradient = _ew("stop_gradient", "AliasBackward0", lambda a: a, lambda a: a, partials=lambda a: [0],
                    keeps_int=True, doc="identity whose derivative is zero: detach() while tracing")


def _where_form(c: sp.Expr, a: sp.Expr, b: sp.Expr) -> sp.Expr:
    return sp.Piecewise((a, sp.Ne(c, 0)), (b, True))


# Gradients are exactly zero in the branch not taken: no NaN leaks from it.
where = _ew("where", "WhereBackward0", lambda c, a, b: np.where(c, a, b), _where_form,
            partials=lambda c, a, b: [0, sp.Piecewise((1, sp.Ne(c, 0)), (0, True)),
                                      sp.Piecewise((0, sp.Ne(c, 0)), (1, True))],
            keeps_int=True, diff_args=(1, 2))
maximum = _ew("maximum", "MaximumBackward0", np.maximum, sp.Max,
              partials=lambda a, b: [sp.Piecewise((1, a > b), (sp.S.Half, sp.Eq(a, b)), (0, True)),
                                     sp.Piecewise((1, b > a), (sp.S.Half, sp.Eq(a, b)), (0, True))],
              keeps_int=True)
minimum = _ew("minimum", "MinimumBackward0", np.minimum, sp.Min,
              partials=lambda a, b: [sp.Piecewise((1, a < b), (sp.S.Half, sp.Eq(a, b)), (0, True)),
                                     sp.Piecewise((1, b < a), (sp.S.Half, sp.Eq(a, b)), (0, True))],
              keeps_int=True)


def _compare_infer(op: OpDef, *inputs: Any, **attrs: Any) -> Any:
    from .. import dtypes
    shape, _ = elementwise_infer(op, *inputs)
    return shape, dtypes.bool


def _cmp(name: str, fn: Any, rel: Any) -> OpDef:
    return register(OpDef(name, "elementwise", None, fn, _compare_infer, form=lambda a, b: sp.Piecewise(
        (1, rel(a, b)), (0, True)), partials=lambda a, b: [0, 0], keeps_int=True, diff_args=(),
        doc="comparison: a bool tensor, no gradient"))


gt = _cmp("gt", np.greater, lambda a, b: a > b)
ge = _cmp("ge", np.greater_equal, lambda a, b: a >= b)
lt = _cmp("lt", np.less, lambda a, b: a < b)
le = _cmp("le", np.less_equal, lambda a, b: a <= b)
eq = _cmp("eq", np.equal, sp.Eq)
ne = _cmp("ne", np.not_equal, sp.Ne)


# ---------------------------------------------------------------------------- logical ops and predicates: bool, no grad

def _logic(name: str, fn: Any, form: Any, doc: str) -> OpDef:
    return register(OpDef(name, "elementwise", None, fn, _compare_infer, form=form,
                          partials=lambda *a: [0] * len(a), keeps_int=True, diff_args=(), doc=doc))


def _true(a: sp.Expr) -> Any:
    return sp.Ne(a, 0)


def _bool_form(cond: Any) -> sp.Expr:
    return sp.Piecewise((1, cond), (0, True))


# indicator arithmetic rather than And/Or conditions: SymPy's own numpy printer cannot broadcast those
logical_and = _logic("logical_and", np.logical_and, lambda a, b: _bool_form(_true(a)) * _bool_form(_true(b)),
                     "logical and of the truth values (non-zero is true; `&` on bools)")
logical_or = _logic("logical_or", np.logical_or,
                    lambda a, b: 1 - _bool_form(sp.Eq(a, 0)) * _bool_form(sp.Eq(b, 0)),
                    "logical or of the truth values (`|` on bools)")
logical_xor = _logic("logical_xor", np.logical_xor,
                     lambda a, b: (_bool_form(_true(a)) - _bool_form(_true(b))) ** 2,
                     "logical exclusive or of the truth values (`^` on bools)")
logical_not = _logic("logical_not", np.logical_not, lambda a: _bool_form(sp.Eq(a, 0)),
                     "logical not (`~` on bools)")
isnan = _logic("isnan", np.isnan, lambda a: _bool_form(IsNan(a)), "x is NaN")
isinf = _logic("isinf", np.isinf, lambda a: _bool_form(IsInf(a)), "x is +-inf")
isfinite = _logic("isfinite", np.isfinite, lambda a: _bool_form(IsFinite(a)), "x is neither NaN nor +-inf")


def _bitwise(name: str, fn: Any, form: Any) -> OpDef:
    return _ew(name, None, fn, form, partials=lambda *a: [0] * len(a), keeps_int=True, diff_args=(),
               doc=f"{name} of integer tensors (`&`, `|`, `^`, `~`; bools use the logical ops), no gradient")


bitwise_and = _bitwise("bitwise_and", np.bitwise_and, BitwiseAnd)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or, BitwiseOr)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor, BitwiseXor)
bitwise_not = _bitwise("bitwise_not", np.invert, BitwiseNot)
