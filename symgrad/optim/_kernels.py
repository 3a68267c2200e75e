"""Fused numba kernels for the optimizers' updates, rounding as torch's CPU kernels round.

Each kernel performs, element by element, the same IEEE operations in the same order as torch's
single-tensor (``foreach=False``) optimizer step, so the results are bit-identical:

* ``t.add(o, alpha=a)`` is ``fma(o, a, t)`` (torch's vectorised ``add`` kernel, and GCC contracts
  its scalar tail the same way); ``addcmul(t1, t2, value=v)`` is ``fma(v * t1, t2, self)``;
  ``addcdiv(t1, t2, value=v)`` is ``self + (v * t1) / t2`` (no fusion across a division);
  ``lerp(end, w)`` is ``fma(w, end - self, self)`` for ``|w| < 0.5`` else ``fma(w - 1, end - self, end)``.
  Every scalar is first rounded to the tensor's dtype, as torch converts it.
* ``sqrt`` is torch's, which on CPU calls MKL's vector ``v?Sqrt``. On a non-Intel x86 CPU MKL runs
  its generic SSE kernel, which is *not* correctly rounded: an ``rsqrtps`` estimate refined in
  double (float64) or float (float32) arithmetic without FMA. :func:`torch_sqrt` reproduces it
  (the estimate comes from the same ``rsqrtps`` instruction, through LLVM's intrinsic). On Intel CPUs
  MKL picks other kernels; there ``np.sqrt`` (correctly rounded) is used, which may differ from
  torch by one ulp.

The exact fused multiply-add is LLVM's ``llvm.fma`` intrinsic (``IRBuilder.fma``), a single
``vfmadd`` instruction on any x86-64 CPU with FMA.
"""
from __future__ import annotations

import platform
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types as _types
from numba.extending import intrinsic, overload

__all__ = ["EMULATE_MKL_SQRT", "torch_sqrt", "sgd_update", "adam_update", "rmsprop_update", "adagrad_update",
           "adadelta_update", "nadam_update", "adamax_update", "radam_update", "rprop_update", "asgd_update"]


def _cpu_vendor() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


#: Whether torch's sqrt is MKL's generic (non-Intel) kernel here, which :func:`torch_sqrt` reproduces.
EMULATE_MKL_SQRT = platform.machine().lower() in ("x86_64", "amd64") and _cpu_vendor() not in ("", "GenuineIntel")


# ---------------------------------------------------------------------------- LLVM intrinsics
@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding."""
    if not (isinstance(a, _types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)
    return a(a, a, a), codegen


@intrinsic
def _rsqrtps(typingctx, x):
    """The x86 ``rsqrtps`` estimate of ``1/sqrt(x)`` for one float32 (the instruction MKL uses)."""
    if x != _types.float32:
        return None

    def codegen(context, builder, sig, args):
        v4 = ir.VectorType(ir.FloatType(), 4)
        fn = builder.module.declare_intrinsic("llvm.x86.sse.rsqrt.ps", fnty=ir.FunctionType(v4, [v4]))
        zero = ir.Constant(ir.IntType(32), 0)
        vec = builder.insert_element(ir.Constant(v4, None), args[0], zero)
        return builder.extract_element(builder.call(fn, [vec]), zero)
    return _types.float32(_types.float32), codegen


def _bitcast(src: Any, dst: Any) -> Any:
    @intrinsic
    def cast(typingctx, x):
        if x != src:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(dst))
        return dst(src), codegen
    return cast


_f64_bits = _bitcast(_types.float64, _types.uint64)
_bits_f64 = _bitcast(_types.uint64, _types.float64)
_f32_bits = _bitcast(_types.float32, _types.uint32)
_bits_f32 = _bitcast(_types.uint32, _types.float32)


# ---------------------------------------------------------------------------- torch's sqrt
_P0 = np.uint64(0x3fd1800032338cbb).view(np.float64).item()
_P1 = np.uint64(0x3fd40000b13001d9).view(np.float64).item()
_P2 = np.uint64(0x3fd80000000000f6).view(np.float64).item()
_P3 = np.uint64(0x3fdffffffffffe71).view(np.float64).item()


@numba.njit(inline="always", error_model="numpy")
def _mkl_sqrt64(x):  # noqa: ANN001, ANN202 - numba function
    bits = _f64_bits(x)
    # normal positive x below 2**1022 takes the fast path; zeros, negatives, subnormals, huge values,
    # inf and nan go to MKL's correctly rounded rare path
    if np.int32(np.uint32(bits >> np.uint64(32)) + np.uint32(0x7ff00000)) > np.int32(-4194305):
        return np.sqrt(x)
    odd = ~bits & np.uint64(0x0010000000000000)
    # x's top 23 mantissa bits as a float32 in [1, 4): the binade keeps the exponent's parity
    f = np.uint32(((bits & np.uint64(0x001fffffe0000000)) | (odd + np.uint64(0x07f0000000000000))) >> np.uint64(29))
    y0 = np.float64(_rsqrtps(_bits_f32(f)))
    scale = _bits_f64((odd - (bits & np.uint64(0x7ff0000000000000)) + np.uint64(0xbfd0000000000000)) >> np.uint64(1))
    y = scale * y0
    yy = y * y
    xhi = _bits_f64(bits & np.uint64(0xfffffffff8000000))
    xlo = x - xhi
    e = (1.0 - xhi * yy) - xlo * yy
    p = (((e * _P0 + _P1) * e + _P2) * e + _P3) * e
    p = (p * y) * x
    return xhi * y + (xlo * y + p)


@numba.njit(inline="always", error_model="numpy")
def _mkl_sqrt32(x):  # noqa: ANN001, ANN202 - numba function
    if np.int32(_f32_bits(x) + np.uint32(0x7f800000)) > np.int32(-16781312):
        return np.sqrt(x)
    half = np.float32(0.5)
    r = _rsqrtps(x)
    s = x * r
    h = r * half
    t = half - s * h
    s1 = s * t + s
    h1 = h * t + h
    d = x - s1 * s1
    return d * h1 + s1


def _sqrt(x):  # noqa: ANN001, ANN202 - dispatched by the overload below
    return np.sqrt(x)


@overload(_sqrt)
def _sqrt_impl(x):  # noqa: ANN001, ANN202
    if EMULATE_MKL_SQRT and x == _types.float64:
        def impl64(x):  # noqa: ANN001, ANN202
            return _mkl_sqrt64(x)
        return impl64
    if EMULATE_MKL_SQRT and x == _types.float32:
        def impl32(x):  # noqa: ANN001, ANN202
            return _mkl_sqrt32(x)
        return impl32

    def impl(x):  # noqa: ANN001, ANN202
        return np.sqrt(x)
    return impl


@numba.njit(cache=True, error_model="numpy")
def _sqrt_kernel(x, out):  # noqa: ANN001, ANN202
    for i in range(x.size):
        out[i] = _sqrt(x[i])


def torch_sqrt(x: np.ndarray) -> np.ndarray:
    """Elementwise ``torch.sqrt`` of a float32/float64 array, rounded as torch's CPU kernel rounds."""
    a = np.ascontiguousarray(x)
    out = np.empty_like(a)
    _sqrt_kernel(a.reshape(-1), out.reshape(-1))
    return out


# ---------------------------------------------------------------------------- the updates
@numba.njit(inline="always")
def _lerp(start, end, w, w_small, w_m1):  # noqa: ANN001, ANN202
    """torch's vectorised ``lerp`` (``w_m1`` is ``w - 1`` in the tensor's dtype)."""
    d = end - start
    if w_small:
        return _fma(w, d, start)
    return _fma(w_m1, d, end)


@numba.njit(inline="always")
def _maximum(a, b):  # noqa: ANN001, ANN202
    """``torch.maximum``: NaN if either is NaN."""
    return a if a > b or a != a else b


# Each kernel works on flat arrays: ``p`` the parameter, ``g`` its gradient, ``s*`` the states; ``f``
# holds the int flags and ``c`` the scalars (in ``p``'s dtype), laid out as the ``*_update`` functions
# below fill them. The flags are read in the loop, not hoisted into locals: LLVM then doesn't clone the
# loop for every combination of them (which doubled the compile time, and ran no faster).
_JIT = dict(cache=True, error_model="numpy")


@numba.njit(**_JIT)
def _sgd_kernel(p, g, buf, f, c):  # noqa: ANN001, ANN202
    # f: first, maximize, has_wd, has_momentum, nesterov; c: wd, momentum, 1-dampening, -lr
    for i in range(p.size):
        gi = -g[i] if f[1] else g[i]
        if f[2]:
            gi = _fma(p[i], c[0], gi)                      # grad.add(param, alpha=weight_decay)
        if f[3]:
            if f[0]:
                b = gi                                     # buf = grad.clone()
            else:
                b = _fma(gi, c[2], buf[i] * c[1])          # buf.mul_(momentum).add_(grad, alpha=1-dampening)
            buf[i] = b
            gi = _fma(b, c[1], gi) if f[4] else b          # grad.add(buf, alpha=momentum) if nesterov
        p[i] = _fma(gi, c[3], p[i])                        # param.add_(grad, alpha=-lr)


@numba.njit(**_JIT)
def _adam_kernel(p, g, m, v, vmax, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd, decoupled, amsgrad, w_small
    # c: wd, 1-lr*wd, 1-beta1, -beta1, beta2, 1-beta2, bias_correction2**0.5, eps, -step_size
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        pi = p[i]
        if f[1]:
            if f[2]:
                pi = pi * c[1]                             # param.mul_(1 - lr * weight_decay)
            else:
                gi = _fma(pi, c[0], gi)                    # grad.add(param, alpha=weight_decay)
        mi = _lerp(m[i], gi, c[2], f[4], c[3])             # exp_avg.lerp_(grad, 1 - beta1)
        m[i] = mi
        vi = _fma(c[5] * gi, gi, v[i] * c[4])              # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1-beta2)
        v[i] = vi
        if f[3]:
            vi = _maximum(vmax[i], vi)                     # torch.maximum(max_exp_avg_sq, exp_avg_sq, out=)
            vmax[i] = vi
        denom = _sqrt(vi) / c[6] + c[7]                    # (sqrt() / bias_correction2_sqrt).add_(eps)
        p[i] = pi + (c[8] * mi) / denom                    # param.addcdiv_(exp_avg, denom, value=-step_size)


@numba.njit(**_JIT)
def _rmsprop_kernel(p, g, sq, gavg, buf, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd, centered, has_momentum, w_small; c: wd, alpha, 1-alpha, -alpha, eps, momentum, -lr
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        if f[1]:
            gi = _fma(p[i], c[0], gi)
        s = _fma(c[2] * gi, gi, sq[i] * c[1])              # square_avg.mul_(alpha).addcmul_(grad, grad, 1-alpha)
        sq[i] = s
        if f[2]:
            ga = _lerp(gavg[i], gi, c[2], f[4], c[3])      # grad_avg.lerp_(grad, 1 - alpha)
            gavg[i] = ga
            avg = _sqrt(_fma(-ga, ga, s))                  # square_avg.addcmul(grad_avg, grad_avg, -1).sqrt_()
        else:
            avg = _sqrt(s)
        avg = avg + c[4]                                   # avg.add_(eps)
        if f[3]:
            b = buf[i] * c[5] + gi / avg                   # buf.mul_(momentum).addcdiv_(grad, avg)
            buf[i] = b
            p[i] = _fma(b, c[6], p[i])                     # param.add_(buf, alpha=-lr)
        else:
            p[i] = p[i] + (c[6] * gi) / avg                # param.addcdiv_(grad, avg, value=-lr)


@numba.njit(**_JIT)
def _adagrad_kernel(p, g, ssum, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd; c: wd, eps, -clr
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        if f[1]:
            gi = _fma(p[i], c[0], gi)
        s = _fma(gi, gi, ssum[i])                          # state_sum.addcmul_(grad, grad, value=1)
        ssum[i] = s
        std = _sqrt(s) + c[1]                              # state_sum.sqrt().add_(eps)
        p[i] = p[i] + (c[2] * gi) / std                    # param.addcdiv_(grad, std, value=-clr)


@numba.njit(**_JIT)
def _adadelta_kernel(p, g, sq, acc, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd; c: wd, rho, 1-rho, eps, -lr
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        if f[1]:
            gi = _fma(p[i], c[0], gi)                      # grad.add(param, alpha=weight_decay)
        s = _fma(c[2] * gi, gi, sq[i] * c[1])              # square_avg.mul_(rho).addcmul_(grad, grad, 1-rho)
        sq[i] = s
        std = _sqrt(s + c[3])                              # square_avg.add(eps).sqrt_()
        delta = _sqrt(acc[i] + c[3])                       # acc_delta.add(eps).sqrt_()
        delta = delta / std * gi                           # delta.div_(std).mul_(grad)
        acc[i] = _fma(c[2] * delta, delta, acc[i] * c[1])  # acc_delta.mul_(rho).addcmul_(delta, delta, 1-rho)
        p[i] = _fma(delta, c[4], p[i])                     # param.add_(delta, alpha=-lr)


@numba.njit(**_JIT)
def _nadam_kernel(p, g, m, v, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd, decoupled, w_small
    # c: wd, 1-lr*wd, 1-beta1, -beta1, beta2, 1-beta2, bias_correction2, eps, grad coefficient, exp_avg coefficient
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        pi = p[i]
        if f[1]:
            if f[2]:
                pi = pi * c[1]                             # param.mul_(1 - lr * weight_decay)
            else:
                gi = _fma(pi, c[0], gi)                    # grad.add(param, alpha=weight_decay)
        mi = _lerp(m[i], gi, c[2], f[3], c[3])             # exp_avg.lerp_(grad, 1 - beta1)
        m[i] = mi
        vi = _fma(c[5] * gi, gi, v[i] * c[4])              # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1-beta2)
        v[i] = vi
        denom = _sqrt(vi / c[6]) + c[7]                    # exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
        pi = pi + (c[8] * gi) / denom                      # param.addcdiv_(grad, denom, value=-lr (1-mu) / (1-prod))
        p[i] = pi + (c[9] * mi) / denom                    # param.addcdiv_(exp_avg, denom, value=-lr mu' / (1-prod'))


@numba.njit(**_JIT)
def _adamax_kernel(p, g, m, u, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd, w_small; c: wd, 1-beta1, -beta1, beta2, eps, -clr
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        if f[1]:
            gi = _fma(p[i], c[0], gi)                      # grad.add(param, alpha=weight_decay)
        mi = _lerp(m[i], gi, c[1], f[2], c[2])             # exp_avg.lerp_(grad, 1 - beta1)
        m[i] = mi
        ui = _maximum(u[i] * c[3], abs(gi) + c[4])         # torch.maximum(exp_inf.mul_(beta2), |grad| + eps)
        u[i] = ui
        p[i] = p[i] + (c[5] * mi) / ui                     # param.addcdiv_(exp_avg, exp_inf, value=-clr)


@numba.njit(**_JIT)
def _radam_kernel(p, g, m, v, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd, decoupled, w_small, rectified
    # c: wd, 1-lr*wd, 1-beta1, -beta1, beta2, 1-beta2, bias_correction1, lr, bias_correction2**0.5, eps, rect, 1
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        pi = p[i]
        if f[1]:
            if f[2]:
                pi = pi * c[1]                             # param.mul_(1 - lr * weight_decay)
            else:
                gi = _fma(pi, c[0], gi)                    # grad.add(param, alpha=weight_decay)
        mi = _lerp(m[i], gi, c[2], f[3], c[3])             # exp_avg.lerp_(grad, 1 - beta1)
        m[i] = mi
        vi = _fma(c[5] * gi, gi, v[i] * c[4])              # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1-beta2)
        v[i] = vi
        step = (mi / c[6]) * c[7]                          # exp_avg / bias_correction1 * lr
        if f[4]:
            # * (bc2**0.5 / (sqrt(v) + eps)) * rect; a number over a tensor is torch's reciprocal() * number
            step = (step * ((c[11] / (_sqrt(vi) + c[9])) * c[8])) * c[10]
        p[i] = pi - step                                   # param.add_(..., alpha=-1.0)


@numba.njit(inline="always")
def _sign(x, one, zero):  # noqa: ANN001, ANN202
    """torch's CPU ``sign`` of a float: ``(0 < x) - (x < 0)`` (0 for NaN and both zeros)."""
    return one if x > 0 else (-one if x < 0 else zero)


@numba.njit(**_JIT)
def _rprop_kernel(p, g, prev, ss, f, c):  # noqa: ANN001, ANN202
    # f: maximize; c: etaminus, etaplus, step_size_min, step_size_max, 1, 0
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        s = _sign(gi * prev[i], c[4], c[5])                # grad.mul(prev).sign()
        if s > 0:
            s = c[1]                                       # sign[sign.gt(0)] = etaplus
        elif s < 0:
            s = c[0]                                       # sign[sign.lt(0)] = etaminus
        else:
            s = c[4]                                       # sign[sign.eq(0)] = 1
        st = ss[i] * s                                     # step_size.mul_(sign).clamp_(min, max)
        if st < c[2]:
            st = c[2]
        if st > c[3]:
            st = c[3]
        ss[i] = st
        if s == c[0]:
            gi = c[5]                                      # grad[sign.eq(etaminus)] = 0
        p[i] = _fma(-_sign(gi, c[4], c[5]), st, p[i])     # param.addcmul_(grad.sign(), step_size, value=-1)
        prev[i] = gi                                       # prev.copy_(grad)


@numba.njit(**_JIT)
def _asgd_kernel(p, g, ax, f, c):  # noqa: ANN001, ANN202
    # f: maximize, has_wd, averaging; c: wd, 1-lambd*eta, -eta, mu
    for i in range(p.size):
        gi = -g[i] if f[0] else g[i]
        if f[1]:
            gi = _fma(p[i], c[0], gi)                      # grad.add(param, alpha=weight_decay)
        pi = p[i] * c[1]                                   # param.mul_(1 - lambd * eta)
        pi = _fma(gi, c[2], pi)                            # param.add_(grad, alpha=-eta)
        p[i] = pi
        if f[2]:
            ax[i] = ax[i] + (pi - ax[i]) * c[3]            # ax.add_(param.sub(ax).mul_(mu))
        else:
            ax[i] = pi                                     # ax.copy_(param)


# ---------------------------------------------------------------------------- Python entry points
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_EMPTY = {d: np.empty(0, d) for d in _KERNEL_DTYPES}


def _flags(p: np.ndarray, flags: list[bool], scalars: list[float]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(flags, dtype=np.int8), np.array(scalars, dtype=p.dtype)


def _or_empty(a: np.ndarray | None, p: np.ndarray) -> np.ndarray:
    return _EMPTY[p.dtype] if a is None else a


def _lerp_weight(dtype: np.dtype, w: float) -> tuple[Any, bool, Any]:
    """(the weight in ``dtype``, whether torch takes lerp's small-weight branch, ``weight - 1``)."""
    wd = dtype.type(w)
    return wd, bool(abs(wd) < 0.5), wd - dtype.type(1)


def sgd_update(p: np.ndarray, g: np.ndarray, buf: np.ndarray | None, first: bool, *, maximize: bool,
               weight_decay: float, momentum: float, dampening: float, nesterov: bool, lr: float) -> None:
    """One SGD step on flat arrays (``buf`` is written when ``momentum != 0``; ``first``: no buffer yet)."""
    _sgd_kernel(p, g, _or_empty(buf, p), *_flags(p, [first, maximize, weight_decay != 0, momentum != 0, nesterov],
                                                  [weight_decay, momentum, 1 - dampening, -lr]))


def adam_update(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, vmax: np.ndarray | None, *,
                amsgrad: bool, maximize: bool, weight_decay: float, decoupled: bool, lr: float, beta1: float,
                beta2: float, eps: float, step: float) -> None:
    """One Adam/AdamW step on flat arrays, at step number ``step`` (already incremented)."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bc2_sqrt = bias_correction2 ** 0.5
    w, small, w_m1 = _lerp_weight(p.dtype, 1 - beta1)
    _adam_kernel(p, g, m, v, _or_empty(vmax, p),
                 *_flags(p, [maximize, weight_decay != 0, decoupled, amsgrad, small],
                         [weight_decay, 1 - lr * weight_decay, w, w_m1, beta2, 1 - beta2, bc2_sqrt, eps, -step_size]))


def rmsprop_update(p: np.ndarray, g: np.ndarray, sq: np.ndarray, gavg: np.ndarray | None, buf: np.ndarray | None,
                   *, maximize: bool, weight_decay: float, alpha: float, centered: bool, eps: float,
                   momentum: float, lr: float) -> None:
    """One RMSprop step on flat arrays (``gavg`` used when ``centered``, ``buf`` when ``momentum > 0``)."""
    w, small, w_m1 = _lerp_weight(p.dtype, 1 - alpha)
    _rmsprop_kernel(p, g, sq, _or_empty(gavg, p), _or_empty(buf, p),
                    *_flags(p, [maximize, weight_decay != 0, centered, momentum > 0, small],
                            [weight_decay, alpha, w, w_m1, eps, momentum, -lr]))


def adagrad_update(p: np.ndarray, g: np.ndarray, ssum: np.ndarray, *, maximize: bool, weight_decay: float,
                   eps: float, clr: float) -> None:
    """One Adagrad step on flat arrays with the decayed learning rate ``clr``."""
    _adagrad_kernel(p, g, ssum, *_flags(p, [maximize, weight_decay != 0], [weight_decay, eps, -clr]))


def adadelta_update(p: np.ndarray, g: np.ndarray, sq: np.ndarray, acc: np.ndarray, *, maximize: bool,
                    weight_decay: float, rho: float, eps: float, lr: float) -> None:
    """One Adadelta step on flat arrays (``sq``: square_avg, ``acc``: acc_delta)."""
    _adadelta_kernel(p, g, sq, acc, *_flags(p, [maximize, weight_decay != 0], [weight_decay, rho, 1 - rho, eps, -lr]))


def nadam_update(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, *, maximize: bool, weight_decay: float,
                 decoupled: bool, lr: float, beta1: float, beta2: float, eps: float, step: float, mu: float,
                 mu_next: float, mu_product: float) -> None:
    """One NAdam step on flat arrays at step ``step`` (already incremented); ``mu_product`` already includes
    ``mu``, as torch reads it back from its float32 state."""
    bias_correction2 = 1 - beta2 ** step
    mu_product_next = mu_product * mu_next
    w, small, w_m1 = _lerp_weight(p.dtype, 1 - beta1)
    _nadam_kernel(p, g, m, v, *_flags(p, [maximize, weight_decay != 0, decoupled, small],
                                      [weight_decay, 1 - lr * weight_decay, w, w_m1, beta2, 1 - beta2,
                                       bias_correction2, eps, -lr * (1.0 - mu) / (1.0 - mu_product),
                                       (-lr * mu_next) / (1.0 - mu_product_next)]))


def adamax_update(p: np.ndarray, g: np.ndarray, m: np.ndarray, u: np.ndarray, *, maximize: bool,
                  weight_decay: float, lr: float, beta1: float, beta2: float, eps: float, step: float) -> None:
    """One Adamax step on flat arrays (``u``: exp_inf) at step ``step`` (already incremented)."""
    clr = lr / (1 - beta1 ** step)
    w, small, w_m1 = _lerp_weight(p.dtype, 1 - beta1)
    _adamax_kernel(p, g, m, u, *_flags(p, [maximize, weight_decay != 0, small],
                                       [weight_decay, w, w_m1, beta2, eps, -clr]))


def radam_update(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, *, maximize: bool,
                 weight_decay: float, decoupled: bool, lr: float, beta1: float, beta2: float, eps: float,
                 step: float) -> None:
    """One RAdam step on flat arrays at step ``step`` (already incremented): rectified once the approximated
    SMA length passes 5."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
    rectified = rho_t > 5.0
    rect = (((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            if rectified else 1.0)
    w, small, w_m1 = _lerp_weight(p.dtype, 1 - beta1)
    _radam_kernel(p, g, m, v, *_flags(p, [maximize, weight_decay != 0, decoupled, small, rectified],
                                      [weight_decay, 1 - lr * weight_decay, w, w_m1, beta2, 1 - beta2,
                                       bias_correction1, lr, bias_correction2 ** 0.5, eps, rect, 1.0]))


def rprop_update(p: np.ndarray, g: np.ndarray, prev: np.ndarray, step_size: np.ndarray, *, maximize: bool,
                 etaminus: float, etaplus: float, step_size_min: float, step_size_max: float) -> None:
    """One Rprop step on flat arrays (``prev``: the last masked gradient, ``step_size``: per element)."""
    _rprop_kernel(p, g, prev, step_size,
                  *_flags(p, [maximize], [etaminus, etaplus, step_size_min, step_size_max, 1.0, 0.0]))


def asgd_update(p: np.ndarray, g: np.ndarray, ax: np.ndarray, *, maximize: bool, weight_decay: float, lambd: float,
                eta: float, mu: float) -> None:
    """One ASGD step on flat arrays with the current ``eta`` and ``mu`` (``ax``: the running average, a copy of
    the parameter while ``mu == 1``)."""
    _asgd_kernel(p, g, ax, *_flags(p, [maximize, weight_decay != 0, mu != 1],
                                   [weight_decay, 1 - lambd * eta, -eta, mu]))
