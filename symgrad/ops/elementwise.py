"""Elementwise ops: each is its scalar SymPy form, its numpy evaluation and torch's grad_fn name."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import exp2 as _exp2
from sympy.codegen.cfunctions import expm1 as _expm1
from sympy.codegen.cfunctions import log1p as _log1p
from sympy.codegen.cfunctions import log2 as _log2
from sympy.codegen.cfunctions import log10 as _log10

from codegen.functions import (
    BitwiseAnd,
    BitwiseLeftShift,
    BitwiseNot,
    BitwiseOr,
    BitwiseRightShift,
    BitwiseXor,
    Ceil,
    Divide,
    Floor,
    Fmod,
    IsFinite,
    IsInf,
    IsNan,
    LessEqual,
    NotEqual,
    Remainder,
    Rint,
    Trunc,
)
from codegen.numpy.printer import KernelPrinter, namespace

from ..core import dtypes
from .base import OUT, A, OpDef, broadcast_shapes, elementwise_infer, register


def _err() -> np.errstate:
    """A fresh ``errstate`` each time: numpy 2 refuses to enter one object twice."""
    return np.errstate(all="ignore")


def _ew(name: str, grad_fn: Any, eval_: Any, form: Any, partials: Any = None, keeps_int: bool = False,
        diff_args: tuple[int, ...] | None = None, doc: str = "", promote_attrs: tuple[str, ...] = (),
        check: Any = None, layout: Any = "inputs", linear: bool = False, literal_zero: bool = False) -> OpDef:
    return register(OpDef(name, "elementwise", grad_fn, eval_, elementwise_infer, form=form,
                          partials=partials, keeps_int=keeps_int, diff_args=diff_args, doc=doc,
                          promote_attrs=promote_attrs, check=check, layout=layout, linear=linear,
                          literal_zero=literal_zero))


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
    if a.dtype.kind == "f":  # torch's specialisations (numpy's power rounds x**3, x**-2, x**-0.5 otherwise)
        if exponent == 3:
            return a * a * a
        if exponent == -2:
            return 1 / (a * a)
        if exponent == -0.5:
            return 1 / np.sqrt(a)
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
           partials=lambda a: [sp.Piecewise((1, a > 0), (0, True))], keeps_int=True, check=_no_bool_relu,
           literal_zero=True)
abs_ = _ew("abs", "AbsBackward0", np.abs, sp.Abs, partials=lambda a: [sp.sign(a)], keeps_int=True,
           check=_no_bool_abs)
clamp = _ew("clamp", lambda at: at.get("fn", "ClampBackward1"), _clamp_eval, _clamp_form, partials=_clamp_partials,
            keeps_int=True, promote_attrs=("min", "max"),
            doc="clamp / clip / clamp_min / clamp_max; `fn` keeps torch's grad_fn name", literal_zero=True)


def _fused_eval(*arrays: np.ndarray, expr: sp.Expr, fn: str = "") -> np.ndarray:
    if expr is A[0] and len(arrays) == 1:  # an identity that only carries torch's grad_fn name
        return np.asarray(arrays[0])
    f = _fused_eval.cache.get((expr, len(arrays)))
    if f is None:

        # the kernels' printer: SymPy's own prints ``And`` as ``logical_and.reduce``, which cannot broadcast
        f = sp.lambdify(A[: len(arrays)], expr, modules=[namespace(expr), "numpy"], printer=KernelPrinter)
        _fused_eval.cache[expr, len(arrays)] = f
    with _err():
        out = np.asarray(f(*arrays))
    # an expression that leaves an input out (or none) may give a smaller result than the broadcast shape
    shapes = tuple(a.shape if type(a) is np.ndarray else np.shape(a) for a in arrays)
    shape = _BROADCAST.get(shapes)
    if shape is None:
        shape = _BROADCAST[shapes] = broadcast_shapes(*shapes) if arrays else ()
        if len(_BROADCAST) > 4096:
            _BROADCAST.clear()
    return out if out.shape == shape else np.broadcast_to(out, shape).copy()


_fused_eval.cache = {}
#: input shapes -> their broadcast shape (bounded)
_BROADCAST: dict[tuple, tuple] = {}



def _fused_grad_fn(attrs: dict) -> str:
    if attrs.get("fn"):  # a composite op's last step carries torch's name for the whole op (``VarBackward0``)
        return attrs["fn"]
    head = type(attrs["expr"]).__name__
    return {"Mul": "MulBackward0", "Add": "AddBackward0", "Pow": "PowBackward0"}.get(head, f"{head}Backward0")


#: A fused elementwise expression over ``a0..an`` (derivatives are made of these; ``fn``: torch's grad_fn name
#: when it ends a composite op).
fused = _ew("fused", _fused_grad_fn, _fused_eval, lambda *a, expr, fn="": expr)


def _to_infer(op: OpDef, a: Any, dtype: Any) -> Any:
    return a.shape, dtypes.from_any(dtype)


def _clone_eval(a: np.ndarray, saved: bool = False, contiguous: bool = False) -> np.ndarray:
    # torch's preserve_format: a dense tensor keeps its strides, an expanded or strided one becomes contiguous
    c = np.copy(a, order="C" if contiguous else "K")
    return c if contiguous or c.strides == a.strides else np.array(a, order="C", copy=True)


clone = _ew("clone", "CloneBackward0", _clone_eval, lambda a, saved=False, contiguous=False: a, keeps_int=True,
            layout=lambda at: "contiguous" if at.get("contiguous") else "inputs",
            doc="a copy (`contiguous`: in C order, as `.contiguous()`); `saved` marks the copy of self an in-place "
                "op keeps for its own backward (torch's original self), which next_functions looks through",
                linear=True)
to = register(OpDef("to", "elementwise", "ToCopyBackward0", lambda a, dtype: a.astype(np.dtype(dtype)),
                    _to_infer, form=lambda a, dtype: a, doc="dtype conversion; the gradient converts back",
                                                        linear=True))


stop_gradient = _ew("stop_gradient", "AliasBackward0", lambda a: a, lambda a: a, partials=lambda a: [0],
                    keeps_int=True, doc="identity whose derivative is zero: detach() while tracing")


def _where_form(c: sp.Expr, a: sp.Expr, b: sp.Expr) -> sp.Expr:
    return sp.Piecewise((a, sp.Ne(c, 0)), (b, True))


# Gradients are exactly zero in the branch not taken: no NaN leaks from it.
where = _ew("where", "WhereBackward0", lambda c, a, b: np.where(c, a, b), _where_form,
            partials=lambda c, a, b: [0, sp.Piecewise((1, sp.Ne(c, 0)), (0, True)),
                                      sp.Piecewise((0, sp.Ne(c, 0)), (1, True))],
            keeps_int=True, diff_args=(1, 2), literal_zero=True)
maximum = _ew("maximum", "MaximumBackward0", np.maximum, sp.Max,
              partials=lambda a, b: [sp.Piecewise((1, a > b), (sp.S.Half, sp.Eq(a, b)), (0, True)),
                                     sp.Piecewise((1, b > a), (sp.S.Half, sp.Eq(a, b)), (0, True))],
              keeps_int=True, literal_zero=True)
minimum = _ew("minimum", "MinimumBackward0", np.minimum, sp.Min,
              partials=lambda a, b: [sp.Piecewise((1, a < b), (sp.S.Half, sp.Eq(a, b)), (0, True)),
                                     sp.Piecewise((1, b < a), (sp.S.Half, sp.Eq(a, b)), (0, True))],
              keeps_int=True, literal_zero=True)


def _compare_infer(op: OpDef, *inputs: Any, **attrs: Any) -> Any:
    shape, _ = elementwise_infer(op, *inputs)
    return shape, dtypes.bool


def _cmp(name: str, fn: Any, rel: Any) -> OpDef:
    return register(OpDef(name, "elementwise", None, fn, _compare_infer, form=lambda a, b: sp.Piecewise(
        (1, rel(a, b)), (0, True)), partials=lambda a, b: [0, 0], keeps_int=True, diff_args=(),
        doc="comparison: a bool tensor, no gradient", comparison=True))


gt = _cmp("gt", np.greater, lambda a, b: a > b)
ge = _cmp("ge", np.greater_equal, lambda a, b: a >= b)
lt = _cmp("lt", np.less, lambda a, b: a < b)
le = _cmp("le", np.less_equal, lambda a, b: a <= b)
eq = _cmp("eq", np.equal, sp.Eq)
ne = _cmp("ne", np.not_equal, sp.Ne)


# ---------------------------------------------------------------------------- logical ops and predicates: bool, no grad

def _logic(name: str, fn: Any, form: Any, doc: str) -> OpDef:
    return register(OpDef(name, "elementwise", None, fn, _compare_infer, form=form,
                          partials=lambda *a: [0] * len(a), keeps_int=True, diff_args=(), doc=doc, comparison=True))


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


def _shift_eval(left: bool) -> Any:
    """torch's shift of integers: a count outside the width gives 0 (left) or the sign fill (right); computed in
    int64 and cast back, which drops the bits past a narrower dtype's width as torch's shift of that dtype does."""
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dt = np.result_type(a, b)
        a64, b64 = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
        out = (b64 < 0) | (b64 > 63)
        r = (np.where(out, 0, np.left_shift(a64, np.clip(b64, 0, 63))) if left
             else np.right_shift(a64, np.where(out, 63, b64)))
        return r.astype(dt)
    return run


bitwise_left_shift = _bitwise("bitwise_left_shift", _shift_eval(True), BitwiseLeftShift)
bitwise_right_shift = _bitwise("bitwise_right_shift", _shift_eval(False), BitwiseRightShift)


# ---------------------------------------------------------------------------- torch's elementwise math

def _refuse(kernel: str, ints: bool = True) -> Any:
    """torch's NotImplementedError for a kernel that takes no bool (``ints``: and no integer) inputs."""
    def check(*dts: Any, **attrs: Any) -> None:
        d = dts[0]
        for e in dts[1:]:
            d = dtypes.promote_types(d, e)
        if d.category == 0 or (ints and d.category == 1):
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtypes.torch_type_name(d)}'")
    return check


def _keep_ints(f: Any) -> Any:
    """``f`` on floats; integer (and bool) inputs are returned as they are (floor, sign... of an integer)."""
    def run(a: np.ndarray, **attrs: Any) -> np.ndarray:
        if a.dtype.kind in "iub":
            return a.copy()
        with _err():
            return f(a, **attrs)
    return run


def _scipy(name: str) -> Any:
    def run(a: np.ndarray) -> np.ndarray:
        import scipy.special  # deferred: scipy
        return getattr(scipy.special, name)(a).astype(a.dtype, copy=False)
    return run


def _sign_eval(a: np.ndarray, fn: str = "") -> np.ndarray:
    if a.dtype.kind == "b":
        return a.copy()
    if a.dtype.kind in "iu":
        return np.sign(a)
    return np.where(np.isnan(a), np.zeros((), a.dtype), np.sign(a))


def _sign_form(a: sp.Expr, fn: str = "") -> sp.Expr:
    # NaN compares false both ways: sign(nan) is 0, as torch's
    return sp.Piecewise((1, a > 0), (-1, a < 0), (0, True))


def _round_eval(a: np.ndarray, decimals: int = 0) -> np.ndarray:
    if decimals == 0:
        return np.rint(a)
    if decimals > 0:  # torch: nearbyint(x * 10^d) / 10^d, and nearbyint(x / 10^-d) * 10^-d
        ten = np.asarray(10.0 ** decimals, a.dtype)
        return np.rint(a * ten) / ten
    ten = np.asarray(10.0 ** -decimals, a.dtype)
    return np.rint(a / ten) * ten


def _round_form(a: sp.Expr, decimals: int = 0) -> sp.Expr:
    if decimals == 0:
        return Rint(a)
    ten = sp.Float(10.0 ** abs(decimals))
    return Divide(Rint(a * ten), ten) if decimals > 0 else Rint(Divide(a, ten)) * ten


def _round_check(a: Any, decimals: int = 0) -> None:
    _refuse("round_vml_cpu" if decimals == 0 else "round_cpu", ints=decimals != 0)(a)


def _sinc_form(a: sp.Expr) -> sp.Expr:
    return sp.Piecewise((sp.sin(sp.pi * a) / (sp.pi * a), sp.Ne(a, 0)), (1, True))


_DEG = sp.Float(np.pi / 180)
_RAD = sp.Float(180 / np.pi)

sinh = _ew("sinh", "SinhBackward0", _quiet(np.sinh), sp.sinh)
cosh = _ew("cosh", "CoshBackward0", _quiet(np.cosh), sp.cosh)

# `fn`: torch's in-place asinh_/acosh_/atanh_ record <Name>Backward1
asinh = _ew("asinh", lambda at: at.get("fn", "AsinhBackward0"), lambda a, fn="": np.arcsinh(a),
            lambda a, fn="": sp.asinh(a))
acosh = _ew("acosh", lambda at: at.get("fn", "AcoshBackward0"), _quiet(lambda a, fn="": np.arccosh(a)),
            lambda a, fn="": sp.acosh(a), partials=lambda a, fn="": [1 / sp.sqrt(a**2 - 1)])
atanh = _ew("atanh", lambda at: at.get("fn", "AtanhBackward0"), _quiet(lambda a, fn="": np.arctanh(a)),
            lambda a, fn="": sp.atanh(a), partials=lambda a, fn="": [1 / (1 - a**2)])
asin = _ew("asin", "AsinBackward0", _quiet(np.arcsin), sp.asin)
acos = _ew("acos", "AcosBackward0", _quiet(np.arccos), sp.acos)
atan = _ew("atan", "AtanBackward0", np.arctan, sp.atan)
expm1 = _ew("expm1", "Expm1Backward0", _quiet(np.expm1), _expm1, partials=lambda a: [OUT + 1])
exp2 = _ew("exp2", "Exp2Backward0", _quiet(np.exp2), _exp2, partials=lambda a: [OUT * sp.log(2)])
log2 = _ew("log2", "Log2Backward0", _quiet(np.log2), _log2)
log10 = _ew("log10", "Log10Backward0", _quiet(np.log10), _log10)
erf = _ew("erf", "ErfBackward0", _quiet(_scipy("erf")), sp.erf,
          doc="numpy kernels print scipy.special.erf, numba math.erf")
erfc = _ew("erfc", "ErfcBackward0", _quiet(_scipy("erfc")), sp.erfc)
rsqrt = _ew("rsqrt", "RsqrtBackward0", _quiet(lambda a: 1 / np.sqrt(a)), lambda a: 1 / sp.sqrt(a),
            partials=lambda a: [-OUT**3 / 2])
sign = _ew("sign", lambda at: at.get("fn", "SignBackward0"), _sign_eval, _sign_form,
           partials=lambda a, fn="": [0], keeps_int=True, doc="sign / sgn (`fn`: torch's grad_fn); sign(nan) = 0")
floor = _ew("floor", "FloorBackward0", _keep_ints(np.floor), Floor, partials=lambda a: [0], keeps_int=True,
            check=_refuse("floor_vml_cpu", ints=False))
ceil = _ew("ceil", "CeilBackward0", _keep_ints(np.ceil), Ceil, partials=lambda a: [0], keeps_int=True,
           check=_refuse("ceil_vml_cpu", ints=False))
trunc = _ew("trunc", "TruncBackward0", _keep_ints(np.trunc), Trunc, partials=lambda a: [0], keeps_int=True,
            check=_refuse("trunc_vml_cpu", ints=False))
round_ = _ew("round", lambda at: "RoundBackward1" if at.get("decimals") else "RoundBackward0", _keep_ints(_round_eval),
             _round_form, partials=lambda a, decimals=0: [0], keeps_int=True, check=_round_check,
             doc="round half to even (`decimals`: at that decimal place)")
frac = _ew("frac", "FracBackward0", _quiet(lambda a: a - np.trunc(a)), lambda a: a - Trunc(a),
           partials=lambda a: [1], keeps_int=True, check=_refuse("frac_cpu"))
deg2rad = _ew("deg2rad", "Deg2RadBackward0", lambda a: a * np.asarray(np.pi / 180, a.dtype), lambda a: a * _DEG)
rad2deg = _ew("rad2deg", "Rad2DegBackward0", lambda a: a * np.asarray(180 / np.pi, a.dtype), lambda a: a * _RAD)
sinc = _ew("sinc", "SincBackward0", _quiet(np.sinc), _sinc_form)


def _xlogy_form(a: sp.Expr, b: sp.Expr, fn: str = "") -> sp.Expr:
    """``x * log(y)`` with log(y) replaced by 0 where x == 0 and log(y) is infinite (y <= 0, y = inf), so
    that 0 * log(y) is 0 and NaN only for a NaN y; no ``And`` (SymPy's numpy printer cannot broadcast one),
    and predicates, not relationals: either side may be a Python number."""
    return a * sp.Piecewise((sp.log(b), NotEqual(a, 0)), (0, LessEqual(b, 0)), (0, IsInf(b)), (sp.log(b), True))


def _xlogy_eval(a: np.ndarray, b: np.ndarray, fn: str = "") -> np.ndarray:
    with _err():
        return np.where((a == 0) & ~np.isnan(b), np.zeros((), np.result_type(a, b)), a * np.log(b))


def _int_div_check(f: Any) -> Any:
    def run(a: np.ndarray, b: np.ndarray, fn: str = "") -> np.ndarray:
        if b.dtype.kind in "iu" and np.any(b == 0):
            raise RuntimeError("ZeroDivisionError")
        with _err():
            return f(a, b)
    return run


def _logaddexp_form(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    # equal arguments first: infinities of one sign give themselves, not inf - inf (symmetric: d/da = 1/2 there)
    return sp.Piecewise(((a + b) / 2 + sp.log(2), sp.Eq(a, b)), (sp.Max(a, b) + _log1p(sp.exp(-sp.Abs(a - b))), True))


atan2 = _ew("atan2", "Atan2Backward0", _quiet(np.arctan2), sp.atan2)
hypot = _ew("hypot", "HypotBackward0", _quiet(np.hypot), lambda a, b: sp.sqrt(a**2 + b**2),
            partials=lambda a, b: [a / OUT, b / OUT], check=_refuse("hypot_cpu"))
logaddexp = _ew("logaddexp", "LogaddexpBackward0", _quiet(np.logaddexp), _logaddexp_form,
                partials=lambda a, b: [1 / (1 + sp.exp(b - a)), 1 / (1 + sp.exp(a - b))],
                check=_refuse("logaddexp_cpu"))
xlogy = _ew("xlogy", lambda at: at.get("fn", "XlogyBackward0"), _xlogy_eval,
            _xlogy_form,
            partials=lambda a, b, fn="": [sp.Piecewise((sp.log(b), NotEqual(a, 0)), (0, LessEqual(b, 0)),
                                                       (sp.log(b), True)),
                                          a / b],
            doc="x * log(y), 0 where x == 0 (unless y is NaN); `fn`: torch's grad_fn (which side is a number). "
                "d/dx is log(y), 0 where x == 0 and y <= 0 (torch's mask)")
fmod = _ew("fmod", lambda at: at.get("fn", "FmodBackward1"), _int_div_check(np.fmod), lambda a, b, fn="": Fmod(a, b),
           keeps_int=True, check=_refuse("fmod_cpu", ints=False), doc="C's fmod (the sign of the dividend)")
remainder = _ew("remainder", lambda at: at.get("fn", "RemainderBackward1"), _int_div_check(np.remainder),
                lambda a, b, fn="": Remainder(a, b), keeps_int=True, check=_refuse("remainder_cpu", ints=False),
                doc="Python's % (the sign of the divisor)")


# ---------------------------------------------------------------------------- torch.nn.functional activations

def _sig(a: sp.Expr) -> sp.Expr:
    return 1 / (1 + sp.exp(-a))


def _softplus_form(a: sp.Expr, beta: float = 1, threshold: float = 20) -> sp.Expr:
    beta = 1 if beta == 1 else beta
    return sp.Piecewise((a, a * beta > threshold), (_log1p(sp.exp(beta * a)) / beta, True))


def _softplus_partials(a: sp.Expr, beta: float = 1, threshold: float = 20) -> list:
    # at beta x == threshold the partial is a constant: torch's second derivative is 0 there
    return [sp.Piecewise((1, a * beta > threshold), (_sig(beta * a), a * beta < threshold),
                         (1 / (1 + sp.exp(-sp.S(threshold))), True))]


def _softplus_eval(a: np.ndarray, beta: float = 1, threshold: float = 20) -> np.ndarray:
    b = np.asarray(beta, a.dtype)
    with _err():
        return np.where(a * b > threshold, a, np.log1p(np.exp(a * b)) / b)


def _gelu_form(a: sp.Expr, approximate: str = "none") -> sp.Expr:
    if approximate == "tanh":
        inner = sp.Float(np.sqrt(2 / np.pi)) * (a + sp.Float(0.044715) * a**3)
        return a * (1 + sp.tanh(inner)) / 2
    return a * (1 + sp.erf(a * sp.Float(np.sqrt(0.5)))) / 2


def _gelu_eval(a: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        k = np.asarray(np.sqrt(2 / np.pi), a.dtype)
        return a * (1 + np.tanh(k * (a + np.asarray(0.044715, a.dtype) * a**3))) / 2
    import scipy.special  # deferred: scipy
    return a * (1 + scipy.special.erf(a * np.asarray(np.sqrt(0.5), a.dtype))) / 2


def _hardtanh_eval(a: np.ndarray, min_val: float = -1.0, max_val: float = 1.0) -> np.ndarray:
    return np.minimum(np.maximum(a, np.asarray(min_val).astype(a.dtype)), np.asarray(max_val).astype(a.dtype))


# named nn_softplus: "softplus" is the documented example of a user's sg.custom_op (docs/custom_ops.md)
softplus = _ew("nn_softplus", "SoftplusBackward0", _softplus_eval, _softplus_form, partials=_softplus_partials,
               check=_refuse("softplus_cpu"), doc="log(1 + exp(beta x)) / beta, x above threshold / beta")
silu = _ew("silu", "SiluBackward0", _quiet(lambda a: a / (1 + np.exp(-a))), lambda a: a * _sig(a),
           partials=lambda a: [_sig(a) * (1 + a * (1 - _sig(a)))], check=_refuse("silu_cpu"))
gelu = _ew("gelu", "GeluBackward0", _quiet(_gelu_eval), _gelu_form, check=_refuse("GeluKernelImpl"),
           doc="x Phi(x) (`approximate='tanh'`: the tanh approximation)")


def _elu_eval(a: np.ndarray, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0,
              fn: str = "") -> np.ndarray:
    if scale == 1.0 and input_scale == 1.0:
        return np.where(a > 0, a, alpha * np.expm1(a))
    # torch's kernel: x * scale, (alpha * scale) * expm1(x * input_scale), the coefficients rounded to the dtype
    neg = np.expm1(a * np.asarray(input_scale, a.dtype)) * (np.asarray(alpha, a.dtype) * np.asarray(scale, a.dtype))
    return np.where(a > 0, a * np.asarray(scale, a.dtype), neg)


def _elu_form(a: sp.Expr, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0,
              fn: str = "") -> sp.Expr:
    if scale == 1.0 and input_scale == 1.0:
        return sp.Piecewise((a, a > 0), (alpha * _expm1(a), True))
    return sp.Piecewise((a * scale, a > 0), (_expm1(a * input_scale) * sp.Float(alpha * scale), True))


def _elu_partials(a: sp.Expr, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0,
                  fn: str = "") -> list:
    # alpha * scale * input_scale at 0 (torch's first derivative there), a constant: torch's second derivative is
    # 0 at 0
    if scale == 1.0 and input_scale == 1.0:
        return [sp.Piecewise((1, a > 0), (alpha, sp.Eq(a, 0)), (alpha * sp.exp(a), True))]
    if fn == "CeluBackward0":  # torch's celu backward takes input_scale = 1.0 / alpha.toFloat()
        input_scale = 1.0 / float(np.float32(alpha))
    neg = sp.Float(alpha * scale * input_scale)
    return [sp.Piecewise((scale, a > 0), (neg, sp.Eq(a, 0)), (neg * sp.exp(a * input_scale), True))]


elu = _ew("elu", lambda at: at.get("fn", "EluBackward0"), _quiet(_elu_eval), _elu_form, check=_refuse("elu_cpu"),
          partials=_elu_partials, doc="torch's elu kernel: x * scale for x > 0, alpha * scale * expm1(x * "
          "input_scale) otherwise (selu, celu: `fn` names torch's grad_fn)")
leaky_relu = _ew("leaky_relu", "LeakyReluBackward0",
                 lambda a, negative_slope=0.01: np.where(a > 0, a, a * np.asarray(negative_slope, a.dtype)),
                 lambda a, negative_slope=0.01: sp.Piecewise((a, a > 0), (negative_slope * a, True)),
                 check=_refuse("leaky_relu_cpu"))
logsigmoid = _ew("logsigmoid", "LogSigmoidBackward0",
                 _quiet(lambda a: np.minimum(a, np.zeros((), a.dtype)) - np.log1p(np.exp(-np.abs(a)))),
                 lambda a: sp.Min(a, 0) - _log1p(sp.exp(-sp.Abs(a))), partials=lambda a: [1 / (1 + sp.exp(a))],
                 check=_refuse("log_sigmoid_cpu"))
hardtanh = _ew("hardtanh", "HardtanhBackward0", _hardtanh_eval,
               lambda a, min_val=-1.0, max_val=1.0: sp.Min(sp.Max(a, min_val), max_val),
               partials=lambda a, min_val=-1.0, max_val=1.0: [sp.Piecewise((1, (a > min_val) & (a < max_val)),
                                                                           (0, True))],
               keeps_int=True, doc="clamp whose gradient is 0 at the bounds (integer tensors stay integer)",
               literal_zero=True)


def _mish_t(a: sp.Expr) -> sp.Expr:
    return sp.tanh(_log1p(sp.exp(a)))


mish = _ew("mish", "MishBackward0", _quiet(lambda a: a * np.tanh(np.log1p(np.exp(a)))), lambda a: a * _mish_t(a),
           partials=lambda a: [_mish_t(a) + a * _sig(a) * (1 - _mish_t(a) ** 2)], check=_refuse("mish_cpu"))


def _hard_clamp(a: Any) -> Any:
    return np.minimum(np.maximum(a + np.asarray(3, a.dtype), np.zeros((), a.dtype)), np.asarray(6, a.dtype))


hardsigmoid = _ew("hardsigmoid", "HardsigmoidBackward0", lambda a: _hard_clamp(a) / np.asarray(6, a.dtype),
                  lambda a: Divide(sp.Min(sp.Max(a + 3, 0), 6), 6),
                  # torch's backward multiplies by the float literal 1.0f / 6.0f, in float64 too
                  partials=lambda a: [sp.Piecewise((sp.Float(float(np.float32(1 / 6))), (a > -3) & (a < 3)),
                                                   (0, True))],
                  check=_refuse("hardsigmoid_cpu"), doc="min(max(x + 3, 0), 6) / 6", literal_zero=True)
hardswish = _ew("hardswish", "HardswishBackward0", lambda a: a * _hard_clamp(a) / np.asarray(6, a.dtype),
                lambda a: Divide(a * sp.Min(sp.Max(a + 3, 0), 6), 6),
                # torch's backward: grad * (x / 3 + 0.5), a division
                partials=lambda a: [sp.Piecewise((0, a <= -3), (Divide(a, 3) + sp.Rational(1, 2), a < 3), (1, True))],
                check=_refuse("hardswish_cpu"), doc="x * min(max(x + 3, 0), 6) / 6", literal_zero=True)


def _shrink_eval(soft: bool) -> Any:
    def f(a: np.ndarray, lambd: float = 0.5) -> np.ndarray:
        lam = np.asarray(lambd, a.dtype)
        inside = (a >= -lam) & (a <= lam)
        if not soft:
            return np.where(inside, np.zeros((), a.dtype), a)
        return np.where(a > lam, a - lam, np.where(a < -lam, a + lam, np.zeros((), a.dtype)))
    return f


def _outside(a: sp.Expr, lambd: float) -> Any:
    return (a < -lambd) | (a > lambd)


softshrink = _ew("softshrink", "SoftshrinkBackward0", _shrink_eval(True),
                 lambda a, lambd=0.5: sp.Piecewise((a - lambd, a > lambd), (a + lambd, a < -lambd), (0, True)),
                 partials=lambda a, lambd=0.5: [sp.Piecewise((1, _outside(a, lambd)), (0, True))],
                 check=_refuse("softshrink_check"), doc="x - lambd above lambd, x + lambd below -lambd, 0 between",
                 literal_zero=True)
hardshrink = _ew("hardshrink", "HardshrinkBackward0", _shrink_eval(False),
                 lambda a, lambd=0.5: sp.Piecewise((a, _outside(a, lambd)), (0, True)),
                 partials=lambda a, lambd=0.5: [sp.Piecewise((1, _outside(a, lambd)), (0, True))],
                 check=_refuse("hardshrink_cpu"), doc="x outside [-lambd, lambd], 0 inside", literal_zero=True)
threshold = _ew("threshold", "ThresholdBackward0",
                lambda a, threshold=0.0, value=0.0: np.where(a <= np.asarray(threshold, a.dtype),
                                                             np.asarray(value, a.dtype), a),
                lambda a, threshold=0.0, value=0.0: sp.Piecewise((value, a <= threshold), (a, True)),
                partials=lambda a, threshold=0.0, value=0.0: [sp.Piecewise((0, a <= threshold), (1, True))],
                keeps_int=True, check=_refuse("threshold_cpu", ints=False), doc="value where x <= threshold, else x",
                literal_zero=True)
