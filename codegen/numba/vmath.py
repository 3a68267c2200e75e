"""Vectorisable float64 ``exp``, ``log``, ``log1p``, ``sin``, ``cos`` and ``tanh`` for numba kernels.

numba lowers ``numpy.sin`` and friends to scalar libm calls (no SVML here), and a call in a loop
body keeps LLVM from vectorising the loop. These functions are written only with arithmetic,
comparisons, ``copysign`` and bit casts, without branches (both sides of a choice are computed and
selected), so a loop that inlines them runs several elements at a time (4 doubles per AVX2
vector). They follow the classical fdlibm algorithms (the same range reductions and minimax
coefficients, Cephes' rational for small ``tanh``), whose error bound is below 1 ulp; ``tanh``
above 0.625 is ``1 - 2/(exp(2|x|) + 1)``, within 2 ulp.

Each function is exact only on a *domain* (a finite argument not too large, a normal result) and
returns NaN outside it, and for a NaN argument. The kernels that use them
(``codegen.numba``) sum the results of every call over a chunk of elements and, if the sum is
NaN, compute that chunk again with numpy's scalar functions: the results are those functions'
everywhere, to within the error bound above, and the special cases (infinities, NaN, huge
arguments, subnormal results) are libm's.

========  ===================================
function  domain (else NaN)
========  ===================================
exp       ``|x| < 708``
log       ``2.2250738585072014e-308 <= x < inf``
log1p     ``-1 < x < inf``
sin, cos  ``|x| < 2**19``
tanh      any non-NaN ``x``
========  ===================================

The jitted functions (``vexp``...) are for tests and direct use. Generated kernels do not call
them: ``inline`` turns a helper, and the helpers it calls, into straight-line statements of the
kernel (numba would compile every called helper as a function of its own, a Python wrapper
included, which costs seconds), and the kernel file copies ``PRELUDE`` (the bit casts and two
constants, the text between the ``kernel prelude`` markers below), so it stands alone and its
content hash covers everything it runs. Helpers must therefore be straight-line: assignments, then
one ``return``; choices are ``a if c else b`` on values already computed.
"""
from __future__ import annotations

import numba
import numpy

from .vmath_text import NAMES, PRELUDE, inline  # noqa: F401  (the text side, shared with the emitter)

# isort: split
# ----- kernel prelude: begin
from numba.core import types as _types
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def _vm_bits(typingctx, x):
    """The bits of a float64 as an int64."""
    if x != _types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(_types.int64))
    return _types.int64(x), codegen


@_intrinsic
def _vm_float(typingctx, i):
    """The float64 whose bits are the int64 ``i``."""
    if not isinstance(i, _types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(_types.float64))
    return _types.float64(_types.int64), codegen


# x * c + _VM_SHIFT rounds x * c to an integer k held in the low mantissa bits (|k| < 2**51)
_VM_SHIFT = 6755399441055744.0
_VM_NAN = numpy.nan

# ----- kernel prelude: end


@numba.njit(error_model="numpy")
def _vm_exp(x):
    """exp(x) for |x| < 708 (fdlibm: x = k ln2 + r, a rational form of exp(r), 2**k by the bits)."""
    t = x * 1.44269504088896338700e+00 + _VM_SHIFT
    k = t - _VM_SHIFT
    hi = x - k * 6.93147180369123816490e-01
    lo = k * 1.90821492927058770002e-10
    r = hi - lo
    z = r * r
    c = r - z * (1.66666666666666019037e-01 + z * (-2.77777777770155933842e-03 + z * (
        6.61375632143793436117e-05 + z * (-1.65339022054652515390e-06 + z * 4.13813679705723846039e-08))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    scale = _vm_float((_vm_bits(t) - _vm_bits(_VM_SHIFT) + 1023) << 52)
    return y * scale if abs(x) < 708.0 else _VM_NAN


@numba.njit(error_model="numpy")
def _vm_log_core(u, c):
    """log(u) + c / u, u a positive normal float (fdlibm's log and log1p: u = 2**k m, sqrt(2)/2 <= m
    < sqrt(2), log(m) from s = (m-1)/(m+1) by a minimax series in s**2); c corrects 1 + x's rounding."""
    iu = _vm_bits(u) + 0x0009_5F62_0000_0000            # m's threshold at sqrt(2)/2 (0x3fe6a09e)
    k = (iu >> 52) - 1023
    f = _vm_float((iu & 0x000F_FFFF_FFFF_FFFF) + 0x3FE6_A09E_0000_0000) - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01))
    t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (
        1.818357216161805012e-01 + w * 1.479819860511658591e-01)))
    dk = numpy.float64(k)
    return (s * (hfsq + t1 + t2) + (dk * 1.90821492927058770002e-10 + c / u) - hfsq + f
            + dk * 6.93147180369123816490e-01)


@numba.njit(error_model="numpy")
def _vm_log(x):
    """log(x) for a positive normal finite x."""
    r = _vm_log_core(x, 0.0)
    return r if (x >= 2.2250738585072014e-308) and (x <= 1.7976931348623157e308) else _VM_NAN


@numba.njit(error_model="numpy")
def _vm_log1p(x):
    """log1p(x) for -1 < x < inf: log(u), u = 1 + x, plus the rounding error of u over u."""
    u = 1.0 + x
    k = ((_vm_bits(u) + 0x0009_5F62_0000_0000) >> 52) - 1023
    c = (1.0 - (u - x)) if k >= 2 else (x - (u - 1.0))
    c = c if k < 54 else 0.0
    r = numpy.copysign(_vm_log_core(u, c), x)            # log1p(-0) = -0
    return r if (x > -1.0) and (x <= 1.7976931348623157e308) else _VM_NAN


@numba.njit(error_model="numpy")
def _vm_ksin(x, y):
    """sin(x + y) for |x + y| <= pi/4, y the tail of x (fdlibm's kernel)."""
    z = x * x
    w = z * z
    r = 8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * 2.75573137070700676789e-06) + z * w * (
        -2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)
    v = z * x
    return x - ((z * (0.5 * y - v * r) - y) - v * -1.66666666666666324348e-01)


@numba.njit(error_model="numpy")
def _vm_kcos(x, y):
    """cos(x + y) for |x + y| <= pi/4 (fdlibm's kernel)."""
    z = x * x
    w = z * z
    r = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * 2.48015872894767294178e-05)) + (
        w * w * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


@numba.njit(error_model="numpy")
def _vm_sincos(x, quarter):
    """sin(x + quarter * pi/2) for |x| < 2**19: x = n pi/2 + (y0 + y1) with pi/2 in three parts
    (fdlibm's medium-size reduction, all three steps), then the quadrant of n + quarter."""
    t = x * 6.36619772367581382433e-01 + _VM_SHIFT
    fn = t - _VM_SHIFT
    r = x - fn * 1.57079632673412561417e+00
    w = fn * 6.07710050650619224932e-11
    u = r
    w = fn * 6.07710050630396597660e-11
    r = u - w
    w = fn * 2.02226624879595063154e-21 - ((u - r) - w)
    u = r
    w = fn * 2.02226624871116645580e-21
    r = u - w
    w = fn * 8.47842766036889956997e-32 - ((u - r) - w)
    y0 = r - w
    y1 = (r - y0) - w
    n = (_vm_bits(t) + quarter) & 3
    s = _vm_ksin(y0, y1)
    c = _vm_kcos(y0, y1)
    v = c if n & 1 else s
    v = -v if n & 2 else v
    return v if abs(x) < 524288.0 else _VM_NAN


@numba.njit(error_model="numpy")
def _vm_sin(x):
    """sin(x) for |x| < 2**19."""
    return _vm_sincos(x, 0)


@numba.njit(error_model="numpy")
def _vm_cos(x):
    """cos(x) for |x| < 2**19."""
    return _vm_sincos(x, 1)


@numba.njit(error_model="numpy")
def _vm_tanh(x):
    """tanh(x): Cephes' rational x + x**3 P(x**2)/Q(x**2) below 0.625, else 1 - 2/(exp(2|x|) + 1)."""
    a = abs(x)
    e = _vm_exp(2.0 * (a if a < 20.0 else 20.0))
    big = 1.0 - 2.0 / (e + 1.0)
    z = x * x
    small = x + x * z * (((-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z
                          - 1.61468768441708447952e3)
                         / (((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z
                            + 4.84406305325125486048e3))
    # tanh is odd: the sign of x (copysign, not a select on x > 0, keeps the loop vectorisable; and
    # x + x z P/Q would turn -0 into +0)
    r = numpy.copysign(small if a < 0.625 else big, x)
    return r if a == a else _VM_NAN


__all__ = ["NAMES", "PRELUDE", "inline", "vexp", "vlog", "vlog1p", "vsin", "vcos", "vtanh"]

vexp, vlog, vlog1p, vsin, vcos, vtanh = _vm_exp, _vm_log, _vm_log1p, _vm_sin, _vm_cos, _vm_tanh

