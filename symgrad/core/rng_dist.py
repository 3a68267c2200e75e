"""torch's CPU samplers with rejection loops (``_standard_gamma``, ``_sample_dirichlet``'s gammas, ``poisson``,
``binomial``) and the implicit reparameterisation gradients (``_standard_gamma_grad``, ``_dirichlet_grad``), ported
from ``aten/src/ATen/native/Distributions.h`` / ``Distributions.cpp``.

Each element runs torch's scalar algorithm on the shared stream, in the output's memory order, drawing
``uniform_real_distribution<double>`` (53-bit) uniforms and ``normal_distribution<double>`` normals (the scalar
Box-Muller with the generator's cached normal), so a seeded program draws torch's numbers. Arithmetic follows the
C++ types: for a float32 ``alpha``, ``alpha + 1``, ``1 / alpha`` and ``alpha - 1/3`` are float32 operations, the
rest double; float literals such as ``0.0331f`` are float32 constants widened to double. ``math`` gives glibc's
``log``/``exp``/``sqrt``/``pow`` results; ``lgamma`` is glibc's through ctypes (CPython's own differs in the last bits).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import numpy as np

from .rng import Generator, _scalar_normals, _u53

__all__ = ["binomial", "dirichlet_gammas", "dirichlet_grad", "poisson", "standard_gamma", "standard_gamma_grad"]

_F32 = np.float32


def _f(x: float) -> float:
    """A C++ ``float`` literal or ``float`` result widened to double."""
    return float(_F32(x))


_THIRD_F = _f(_F32(1.0) / _F32(3.0))   # 1.0f / 3.0f
_C0331 = _f(0.0331)


class _Stream:
    """One element's view of the generator: scalar double uniforms and normals, drawn in small batches."""

    __slots__ = ("gen",)

    def __init__(self, gen: Generator) -> None:
        self.gen = gen

    def uniform(self) -> float:
        return float(_u53(self.gen, 1)[0])

    def normal(self) -> float:
        return float(_scalar_normals(self.gen, 1)[0])


@functools.lru_cache(maxsize=1)
def _glibc_lgamma():  # noqa: ANN202 - a ctypes function
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    f = lib.lgamma
    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
    return f


def _gamma_one(alpha: float, single: bool, s: _Stream) -> float:
    """``sample_gamma<scalar_t, double>`` for one ``alpha`` (``single``: scalar_t is float)."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        inv = _f(_F32(1.0) / _F32(alpha)) if single else 1.0 / alpha
        scale *= math.pow(1 - s.uniform(), inv)
        alpha = _f(_F32(alpha) + _F32(1.0)) if single else alpha + 1.0
    d = _f(_F32(alpha) - _F32(_THIRD_F)) if single else alpha - _THIRD_F
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = s.normal()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1 - s.uniform()
        xx = x * x
        if u < 1.0 - _C0331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def standard_gamma(gen: Generator, alpha: np.ndarray) -> np.ndarray:
    """``torch._standard_gamma(alpha)`` on CPU (float32 / float64 ``alpha``; at least the dtype's tiny)."""
    alpha = np.ascontiguousarray(alpha)
    if alpha.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"\"gamma_cpu\" not implemented for '{_torch_name(alpha.dtype)}'")
    single = alpha.dtype == np.float32
    s = _Stream(gen)
    tiny = float(np.finfo(alpha.dtype).tiny)
    out = np.empty(alpha.shape, alpha.dtype)
    flat = out.reshape(-1)
    for i, a in enumerate(alpha.reshape(-1).tolist()):
        v = _gamma_one(a, single, s)
        flat[i] = v
        if not flat[i] >= tiny:   # std::max(min, (scalar_t) sample) keeps min for a NaN too
            flat[i] = tiny
    return out


def dirichlet_gammas(gen: Generator, alpha: np.ndarray) -> np.ndarray:
    """The double gammas of ``_s_dirichlet_cpu`` (``sample_gamma<double, double>`` on ``alpha`` widened)."""
    alpha = np.ascontiguousarray(alpha)
    s = _Stream(gen)
    tiny = float(np.finfo(np.float64).tiny)
    vals = [_gamma_one(float(a), False, s) for a in alpha.reshape(-1).tolist()]
    return np.maximum(np.array(vals, np.float64), tiny).reshape(alpha.shape)


def _poisson_one(lam: float, s: _Stream) -> int:
    if not lam >= 0:
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        lgamma = _glibc_lgamma()
        while True:
            u = s.uniform() - 0.5
            v = s.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= \
                    (-lam + k * loglam - lgamma(float(k) + 1)):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= s.uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def poisson(gen: Generator, rate: np.ndarray) -> np.ndarray:
    """``torch.poisson(rate)`` on CPU: one sample per element (the rate widened to double)."""
    rate = np.ascontiguousarray(rate)
    s = _Stream(gen)
    vals = [_poisson_one(float(r), s) for r in rate.reshape(-1).tolist()]
    return np.array(vals, np.float64).astype(rate.dtype).reshape(rate.shape)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _sc(x: float, single: bool) -> float:
    """``static_cast<scalar_t>`` of a double."""
    return _f(x) if single else x


def _binomial_inversion(count: float, prob: float, single: bool, s: _Stream) -> float:
    geom_sum = 0.0
    num_geom = 0.0
    logprob = math.log1p(-prob)
    while True:
        u = s.uniform()
        geom_sum += math.ceil(math.log(u) / logprob) if u > 0 else math.inf
        if geom_sum > count:
            return num_geom
        num_geom = _sc(num_geom + 1, single)


def _btrs(count: float, prob: float, single: bool, s: _Stream) -> float:
    # count * prob * (1 - prob) is scalar_t arithmetic: float32 for float tensors
    if single:
        c32, p32 = _F32(count), _F32(prob)
        spq = _f(c32 * p32 * (_F32(1) - p32))
        cp = _f(c32 * p32)
        r = _f(p32 / (_F32(1) - p32))
        m = math.floor(_f((c32 + _F32(1)) * p32))
    else:
        spq = count * prob * (1 - prob)
        cp = count * prob
        r = prob / (1 - prob)
        m = math.floor((count + 1) * prob)
    stddev = math.sqrt(spq)
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = cp + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * stddev
    while True:
        u = s.uniform() - 0.5
        v = s.uniform()
        us = 0.5 - abs(u)
        k = _sc(math.floor((2 * a / us + b) * u + c), single)
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upper:
            return k


def _binomial_one(count: float, prob: float, single: bool, s: _Stream) -> float:
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        cp = _f(_F32(count) * _F32(prob)) if single else count * prob
        return _btrs(count, prob, single, s) if cp >= 10.0 else _binomial_inversion(count, prob, single, s)
    if prob > 0.5:
        q = _sc(1.0 - prob, single)
        cq = _f(_F32(count) * _F32(q)) if single else count * q
        k = _btrs(count, q, single, s) if cq >= 10.0 else _binomial_inversion(count, q, single, s)
        return _sc(count - k, single)
    return math.nan


def binomial(gen: Generator, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """``torch.binomial(count, prob)`` on CPU (BTRS for ``n*p >= 10``, else geometric inversion)."""
    count, prob = np.broadcast_arrays(np.asarray(count), np.asarray(prob))
    dt = count.dtype
    if dt not in (np.float32, np.float64):
        raise RuntimeError(f"\"binomial_cpu\" not implemented for '{_torch_name(dt)}'")
    single = dt == np.float32
    s = _Stream(gen)
    vals = [_binomial_one(c, p, single, s) for c, p in zip(count.reshape(-1).tolist(), prob.reshape(-1).tolist())]
    return np.array(vals, np.float64).astype(dt).reshape(count.shape)


def _torch_name(dt: np.dtype) -> str:
    return {"float16": "Half", "int64": "Long", "int32": "Int", "bool": "Bool"}.get(np.dtype(dt).name, str(dt))


# ------------------------------------------------------------------------------------ reparameterisation grads


_PSI_10 = 2.25175258906672110764
_PSI_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
          8.33333333333333333333E-2)


@functools.lru_cache(maxsize=1)
def _libm_f():  # noqa: ANN202 - the ctypes library
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name, n in (("logf", 1), ("tanf", 1), ("powf", 2)):
        f = getattr(lib, name)
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float] * n
    return lib


def _digamma_f(x: float) -> float:
    """``digamma_one<float, double>``: ``x`` stays a float (``1 / x``, ``x += 1``, ``logf``), sums in double."""
    lib = _libm_f()
    x = _f(x)
    if x == 0:
        return math.inf
    extra = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.inf
        pi_f = _f(math.pi)
        extra = -pi_f / _f(lib.tanf(_f(pi_f * x)))
        extra = _f(extra)
        x = _f(1 - x)
    result = 0.0
    while x < 10:
        result -= _f(1 / x)
        x = _f(x + 1)
    if x == 10:
        return _f(result + _PSI_10 + extra)
    y = 0.0
    if x < _f(1.0e17):
        z = 1.0 / _f(x * x)
        p = 0.0
        for a in _PSI_A:
            p = p * z + a
        y = z * p
    return _f(result + _f(lib.logf(x)) - _f(0.5 / x) - y + extra)


def _digamma(x: float, single: bool) -> float:
    return _digamma_f(x) if single else _digamma_one(x)


def _digamma_one(x: float) -> float:
    """``digamma_one<double, double>`` (Cephes)."""
    if x == 0:
        return math.inf
    extra = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.inf
        extra = -math.pi / math.tan(math.pi * x)
        x = 1 - x
    result = 0.0
    while x < 10:
        result -= 1 / x
        x += 1
    if x == 10:
        return result + _PSI_10 + extra
    y = 0.0
    if x < 1.0e17:
        z = 1.0 / (x * x)
        p = 0.0
        for a in _PSI_A:
            p = p * z + a
        y = z * p
    return result + math.log(x) - (0.5 / x) - y + extra


_COEF_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
            (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
             -0.00058392623),
            (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
             -1.5247877e-07))


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except (OverflowError, ValueError):
        return float(np.power(np.float64(a), np.float64(b)))


def _gamma_grad_one(alpha: float, x: float) -> float:
    """``standard_gamma_grad_one<scalar_t, double>``: ``-(d/dalpha cdf(x; alpha)) / pdf(x; alpha)``."""
    if x < _f(0.8):
        numer, denom = 1.0, alpha
        series1 = numer / denom
        series2 = numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / float(i)
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = _pow(x, alpha)
        gamma_pdf = _pow(x, alpha - 1) * math.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (math.log(x) - _digamma_one(alpha)) * gamma_cdf - pow_x_alpha * series2
        with np.errstate(all="ignore"):
            result = float(np.float64(-gamma_cdf_alpha) / np.float64(gamma_pdf))
        return 0.0 if result != result else result
    if alpha > 8.0:
        if _f(0.9) * alpha <= x <= _f(1.1) * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
            denom = 1244160 * (alpha * alpha) * (alpha * alpha)
            return numer_1 * numer_2 / denom
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = _pow(x - alpha - alpha * math.log(x / alpha), -1.5)
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = math.log(x / alpha) * term23 - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        numer = x * term1
        return -stirling * numer / denom
    u = math.log(x / alpha)
    v = math.log(alpha)
    cv = [_COEF_UV[0][i] + u * (_COEF_UV[1][i] + u * _COEF_UV[2][i]) for i in range(8)]
    p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
    q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
    return math.exp(p / q)


class _NumpyMath:
    """``math``'s names over numpy scalars: C's IEEE results (inf, NaN) where ``math`` raises."""

    pi, inf, nan = math.pi, math.inf, math.nan
    log, exp, sqrt, floor, tan, pow = np.log, np.exp, np.sqrt, np.floor, np.tan, np.power


def _ieee(fn, *args: float) -> float:  # noqa: ANN001
    """``fn(*args)``; where Python raises (a division by zero, ``log(0)``, an overflow), the same code again on
    numpy float64 scalars, which return C's inf / NaN as torch's kernel does."""
    try:
        return fn(*args)
    except (ArithmeticError, ValueError):
        g = globals()
        saved = g["math"]
        g["math"] = _NumpyMath
        try:
            with np.errstate(all="ignore"):
                return float(fn(*(np.float64(a) for a in args)))
        finally:
            g["math"] = saved


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``torch._standard_gamma_grad(alpha, x)`` (CPU, double accumulation, cast to the dtype)."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha), np.asarray(x))
    with np.errstate(all="ignore"):
        vals = [_ieee(_gamma_grad_one, a, v) for a, v in zip(alpha.reshape(-1).tolist(), x.reshape(-1).tolist())]
    return np.array(vals, np.float64).astype(alpha.dtype).reshape(alpha.shape)


_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))))


def _float_ops(single: bool) -> tuple:
    """``scalar_t`` rounding, ``log`` and ``pow``: float32 results (``logf``, ``powf``) when ``single``."""
    if not single:
        return float, math.log, _pow
    lib = _libm_f()
    return _f, (lambda v: _f(lib.logf(v))), (lambda a, b: _f(lib.powf(a, b)))


def _beta_grad_alpha_small(x: float, alpha: float, beta: float, single: bool) -> float:
    r, log, pw = _float_ops(single)
    factor = r(r(_digamma(alpha, single) - _digamma(r(alpha + beta), single)) - log(x))
    numer = 1.0
    series = r(r(numer / alpha) * r(factor + r(1 / alpha)))
    for i in range(1, 11):
        ci = float(i)
        numer = r(numer * r(r(r(ci - beta) * x) / ci))
        denom = r(alpha + ci)
        series = r(series + r(r(numer / denom) * r(factor + r(1 / denom))))
    result = r(r(x * pw(r(1 - x), -beta)) * series)
    return 0.0 if result != result else result


def _beta_grad_beta_small(x: float, alpha: float, beta: float, single: bool) -> float:
    r, _, pw = _float_ops(single)
    factor = r(_digamma(r(alpha + beta), single) - _digamma(beta, single))
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, r(factor / alpha)
    for i in range(1, 9):
        ci = float(i)
        numer = r(numer * r(-x / ci))
        dbetas = r(r(dbetas * r(beta - ci)) + betas)
        betas = r(betas * r(beta - ci))
        series = r(series + r(r(numer / r(alpha + ci)) * r(dbetas + r(factor * betas))))
    result = r(-pw(r(1 - x), r(1 - beta)) * series)
    return 0.0 if result != result else result


def _beta_grad_alpha_mid(x: float, alpha: float, beta: float) -> float:
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:
        poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1_den = math.sqrt(2 * alpha / beta) * _pow(total, 1.5) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * math.log(alpha / (total * x))
    term3 = math.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4_base = beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))
    term4 = _pow(term4_base, -1.5)
    term1234 = term1 + term2 * (term3 + (term4 if x < mean else -term4))
    return stirling * prefactor * term1234


def _dirichlet_grad_one(x: float, alpha: float, total: float, single: bool) -> float:
    r = _f if single else float
    beta = r(total - alpha)
    boundary = r(r(total * x) * r(1 - x))
    if x <= 0.5 and boundary < 2.5:
        return _beta_grad_alpha_small(x, alpha, beta, single)
    if x >= 0.5 and boundary < 0.75:
        return -_beta_grad_beta_small(r(1 - x), beta, alpha, single)
    beta_ = total - alpha
    if alpha > 6 and beta > 6:
        return _beta_grad_alpha_mid(x, alpha, beta_)
    u = math.log(x)
    a = math.log(alpha) - u
    b = math.log(total) - a
    pow_u, pow_a = (1.0, u, u * u), (1.0, a, a * a)
    p = q = 0.0
    c0, c1 = _DIRICHLET_C
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            k0, k1 = c0[i][j], c1[i][j]
            p += ua * (k0[0] + b * (k0[1] + b * (k0[2] + b * k0[3])))
            q += ua * (k1[0] + b * (k1[1] + b * (k1[2] + b * k1[3])))
    approx = x * r(_digamma(total, single) - _digamma(alpha, single)) / beta_
    return p / q * approx


def dirichlet_grad(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``torch._dirichlet_grad(x, alpha, total)`` on CPU."""
    x, alpha, total = np.broadcast_arrays(np.asarray(x), np.asarray(alpha), np.asarray(total))
    single = x.dtype == np.float32
    with np.errstate(all="ignore"):
        vals = [_ieee(_dirichlet_grad_one, a, b, c, single)
                for a, b, c in zip(x.reshape(-1).tolist(), alpha.reshape(-1).tolist(), total.reshape(-1).tolist())]
    return np.array(vals, np.float64).astype(x.dtype).reshape(x.shape)
