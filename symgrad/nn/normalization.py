"""``torch.nn.functional``'s normalisations (``layer_norm``, ``batch_norm``, ``group_norm``) as composites of
registry ops, in the form torch's CPU kernels evaluate them: statistics over the normalised dims (biased
variance), then ``x * scale + shift`` (layer norm: ``(x - mean) * rstd * weight + bias``). The result
reports torch's grad_fn (``NativeLayerNormBackward0``, ``NativeBatchNormBackward0``, ``NativeGroupNormBackward0``);
its gradients are those of the composite. ``batch_norm`` in training updates the running statistics in place
(unbiased variance, ``momentum * stat + (1 - momentum) * running`` as torch's CPU kernel).

Eagerly, ``batch_norm``'s statistics, running statistics and result carry the bits of torch 2.13's CPU kernels
(``aten/src/ATen/native/cpu/batch_norm_kernel.cpp`` as built for AVX2/AVX-512, where the compiler fuses
multiply-adds): ``_torch_batch_stats``, ``_torch_affine``; the graph (and so the gradients' formulas) is the
composite's, its nodes' values replaced by those bits. ``layer_norm``'s mean, variance, rstd and result carry
the bits of ``layer_norm_kernel.cpp`` likewise (``_torch_row_moments``), ``group_norm``'s those of
``group_norm_kernel.cpp`` (the same moments per group, rstd in double, ``fma(scale, x, fma(-scale, mean, bias))``)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..compiler.tracing import Tracer
from ..core.errors import TracingError
from ..core.ranges import _fma
from ..core.ranges import get_num_threads as _torch_threads
from ..eager.composite import _named
from ..eager.edges import set_edges
from ..eager.tensor import Tensor

__all__ = ["layer_norm", "rms_norm", "batch_norm", "group_norm", "instance_norm"]


def _need(name: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _torch_row_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance of each row of a float (M, N) array with torch 2.13's CPU rounding
    (``RowwiseMoments`` of ``aten/src/ATen/native/cpu/moments_utils.h``, vectors of 32 bytes as this build runs it).

    Each lane of the vectors (8 floats, 4 doubles) runs Welford over chunks of 16 vectors (``m1 = fma(d, 1/(j+1),
    m1)``, ``m2 = fma(d, x - m1, m2)``); the chunks are merged by a binary-counter cascade (``m1 + c * d`` unfused,
    ``m2 = fma(d * c, d * m0, m2 + m2_add)``); the trailing ``N % lanes`` elements run a scalar Welford (unfused, a
    division by the count), and the lanes are merged into it in order (``m1 = fma(c, d, m1)``,
    ``m2 + fma(d * d * c, m0, m2_add)``)."""
    dt = x.dtype.type
    name = x.dtype.name
    rows, n_all = x.shape
    lanes = 32 // x.dtype.itemsize
    n = n_all // lanes
    vecs = x[:, :n * lanes].reshape(rows, n, lanes)
    zero = np.zeros((rows, lanes), dt)
    recip = [dt(1) / dt(j + 1) for j in range(16)]

    def chunk_moments(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # block: (rows, chunks, k, lanes)
        m1 = np.zeros(block.shape[:2] + block.shape[3:], dt)
        m2 = np.zeros_like(m1)
        for j in range(block.shape[2]):
            xv = block[:, :, j]
            d = xv - m1
            m1 = _fma(d, recip[j], m1, name)
            m2 = _fma(d, xv - m1, m2, name)
        return m1, m2

    full = n // 16
    parts: list[tuple[int, np.ndarray, np.ndarray]] = []
    if full:
        f1, f2 = chunk_moments(vecs[:, :full * 16].reshape(rows, full, 16, lanes))
        parts = [(16, f1[:, i], f2[:, i]) for i in range(full)]
    if n % 16:
        p1, p2 = chunk_moments(vecs[:, full * 16:].reshape(rows, 1, n % 16, lanes))
        parts.append((n % 16, p1[:, 0], p2[:, 0]))

    def merge(acc: list, m0_add: int, m1_add: np.ndarray, m2_add: np.ndarray) -> None:
        m0 = acc[0]
        tot = m0 + m0_add
        c = dt(0) if tot == 0 else dt(m0_add) / dt(tot)
        d = m1_add - acc[1]
        acc[1] = acc[1] + c * d
        acc[2] = _fma(d * c, d * dt(m0), acc[2] + m2_add, name)
        acc[0] = tot

    depth = max(int(len(parts) - 1).bit_length(), 1)  # torch's CeilLog2(m); slot 0 exists even when it is 0
    stack = [[0, zero, zero] for _ in range(depth)]
    for i, (cnt, m1, m2) in enumerate(parts):
        merge(stack[0], cnt, m1, m2)
        mask, j = i + 1, 1
        while j < depth and mask & 1 == 0:
            merge(stack[j], *stack[j - 1])
            stack[j - 1] = [0, zero, zero]
            mask >>= 1
            j += 1
    for j in range(1, depth):
        merge(stack[0], *stack[j])
    m0, m1, m2 = 0, np.zeros(rows, dt), np.zeros(rows, dt)
    for i in range(n * lanes, n_all):  # the scalar tail
        xi = x[:, i]
        d = xi - m1
        m0 += 1
        m1 = m1 + d / dt(m0)
        m2 = m2 + d * (xi - m1)
    lane_m1, lane_m2 = stack[0][1], stack[0][2]
    for k in range(lanes):
        tot = m0 + n
        c = dt(0) if tot == 0 else dt(n) / dt(tot)
        d = lane_m1[:, k] - m1
        m1 = _fma(c, d, m1, name)
        m2 = m2 + _fma(d * d * c, dt(m0), np.ascontiguousarray(lane_m2[:, k]), name)
        m0 = tot
    return m1, m2 / dt(n_all)


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then ``* weight + bias`` (each optional).

    Eagerly (float32 / float64, parameters of the input's dtype) the mean, variance, rstd and result carry torch
    2.13's CPU bits: ``_torch_row_moments``, ``rstd = 1 / sqrt(var + eps)``, ``y = (x - mean) * rstd`` then
    ``fma(y, weight, bias)`` (weight alone: ``fma(y, weight, 0)``; bias alone: ``fma(x - mean, rstd, bias)``)."""
    _need("layer_norm", input)
    shape = [int(normalized_shape)] if isinstance(normalized_shape, int) else [int(s) for s in normalized_shape]
    k = len(shape)
    if k == 0 or input.ndim < k or list(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape [*"
                           f"{''.join(', ' + str(s) for s in shape)}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {shape}")
    dims = tuple(range(input.ndim - k, input.ndim))
    exact = not isinstance(input, Tracer) and input._data.dtype in (np.float32, np.float64) and input._data.size > 0
    if exact:
        dt = input._data.dtype.type
        x2 = np.ascontiguousarray(input._data).reshape(-1, math.prod(shape))
        m_bits, v_bits = _torch_row_moments(x2)
    mean = input.mean(dims, keepdim=True)
    if exact:
        _set(mean, m_bits)
    d = input - mean
    var = (d * d).mean(dims, keepdim=True)
    rstd = (var + eps).rsqrt()
    if exact:
        _set(var, v_bits)
        r_bits = dt(1) / np.sqrt(v_bits + dt(eps))
        _set(rstd, r_bits)
    out = y = d * rstd
    exact = exact and all(t is None or t._data.dtype == dt for t in (weight, bias))
    if weight is not None:
        out = out * weight
        if exact and bias is None:
            _set(out, _fma(y._data, weight._data, np.zeros((), dt), dt.__name__))
    if bias is not None:
        out = out + bias
        if exact:
            name = dt.__name__
            _set(out, _fma(y._data, weight._data, bias._data, name) if weight is not None else
                 _fma(d._data, rstd._data, bias._data, name))
    return set_edges(_named(out, "NativeLayerNormBackward0"), input, weight, bias)


def rms_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """``x * rsqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims (torch's composite;
    ``eps`` None: the dtype's machine epsilon)."""
    _need("rms_norm", input)
    shape = [int(normalized_shape)] if isinstance(normalized_shape, int) else [int(s) for s in normalized_shape]
    k = len(shape)
    if k == 0 or input.ndim < k or list(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape [*{', '.join(map(str, shape))}]"
                           f", but got input of size{list(input.shape)}")
    if weight is not None and list(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {shape}")
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(input.ndim - k, input.ndim))
    ms = input.pow(2).mean(dims, keepdim=True)
    out = input * set_edges(_named(ms + eps, "AddBackward1"), ms).rsqrt()   # torch's C++ add of a number
    return out if weight is None else out * weight


def _verify_batch_size(size: Sequence[int]) -> None:
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape([1, -1] + [1] * (ndim - 2))


def _update_running(buf: Tensor, stat: np.ndarray, momentum: float, wide: bool = False) -> None:
    """``buf = momentum * stat + (1 - momentum) * buf``, untracked, as torch's CPU update: ``momentum`` in
    ``buf``'s dtype; ``wide``: ``stat`` is a double (the unbiased variance), so is its product and the sum."""
    dt = buf._data.dtype.type
    m = dt(momentum)
    if wide:
        new = np.float64(m) * np.asarray(stat, np.float64).reshape(-1) + ((dt(1) - m) * buf._data).astype(np.float64)
    else:
        new = m * np.asarray(stat, dt).reshape(-1) + (dt(1) - m) * buf._data
    buf._data[...] = new.astype(buf._data.dtype)
    buf._version.v += 1


def _seq_sum(a: np.ndarray, axis: int) -> np.ndarray:
    """The left-to-right sum along ``axis`` in double (torch's scalar ``acc_type`` accumulator)."""
    return np.cumsum(np.asarray(a, np.float64), axis=axis).take(-1, axis=axis)


def _torch_batch_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and sum of squared deviations of a C-contiguous float (N, C, *) array, with torch 2.13's
    CPU rounding (``batch_norm_cpu_collect_stats_*_impl``).

    With spatial dims each channel is summed in order (n, then the image) in a double accumulator; the mean is
    rounded to the dtype, the squared deviations are products in the dtype (float64: the compiler pairs the image's
    elements, and the odd last one is a fused multiply-add into the accumulator). Without them (``NC11 is also
    channels last``) each of torch's threads adds its rows into a dtype buffer (``buffer + (x - mean)**2`` fused),
    and the buffers are added in double; ``N`` no larger than the threads: in double (float64: fused)."""
    dt = x.dtype.type
    n0, c = x.shape[0], x.shape[1]
    img = x.size // (n0 * c) if n0 * c else 0
    count = n0 * img
    if img > 1:
        rows = x.reshape(n0, c, img)
        mean = (_seq_sum(rows.transpose(1, 0, 2).reshape(c, count), 1) / count).astype(dt)
        d = rows - mean[None, :, None]
        sq = d * d
        if dt is np.float64 and img % 2:
            total = np.zeros(c)
            for k in range(n0):  # per image: its pairs' products added in order, then the fused last element
                total = _seq_sum(np.concatenate([total[:, None], sq[k, :, :-1]], axis=1), 1)
                total = _fma(d[k, :, -1], d[k, :, -1], total, "float64")
            return mean, total
        return mean, _seq_sum(sq.transpose(1, 0, 2).reshape(c, count), 1).astype(dt)
    rows = x.reshape(count, c)
    threads = _torch_threads()
    if count > threads:
        chunk = -(-count // threads)
        parts = [rows[t * chunk:(t + 1) * chunk] for t in range(threads) if t * chunk < count]
        buf = np.stack([np.cumsum(p, axis=0, dtype=dt)[-1] for p in parts])  # rows added in order, in the dtype
        mean = (_seq_sum(buf, 0) / count).astype(dt)
        vbuf = []
        for p in parts:
            acc = np.zeros(c, dt)
            for r in p - mean:
                acc = _fma(r, r, acc, dt.__name__)
            vbuf.append(acc)
        return mean, _seq_sum(np.stack(vbuf), 0).astype(dt)
    mean = (_seq_sum(rows, 0) / count).astype(dt)
    d = rows - mean
    if dt is not np.float64:  # a float product added to a double: nothing to fuse
        return mean, _seq_sum(d * d, 0).astype(dt)
    total = np.zeros(c)
    for r in d:
        total = _fma(r, r, total, "float64")
    return mean, total


def _torch_affine(x: np.ndarray, alpha: np.ndarray, mean: np.ndarray,
                  bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """torch's per-channel ``beta = bias - mean * alpha`` and ``x * alpha + beta``, both fused multiply-adds."""
    name = x.dtype.name
    beta = _fma(-mean, alpha, np.zeros_like(alpha) if bias is None else bias, name)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return beta, _fma(x, alpha.reshape(shape), beta.reshape(shape), name)


def _exact(x: Any) -> bool:
    """Whether ``batch_norm`` reproduces torch's bits for ``x``: an eager float32/float64 C-contiguous tensor."""
    return not isinstance(x, Tracer) and x._data.dtype in (np.float32, np.float64) and x._data.flags.c_contiguous \
        and x._data.size > 0 and x.ndim >= 2


def _set(t: Tensor, value: np.ndarray) -> None:
    """Give ``t`` (a composite's intermediate result) torch's bits for its value."""
    t._data[...] = value.reshape(t._data.shape)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) by the batch's statistics (``training``; the running ones are updated) or
    by ``running_mean`` / ``running_var``, then ``* weight + bias``."""
    _need("batch_norm", input)
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    c = input.size(1)  # torch's IndexError for a 1-d input
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"{'running_mean' if running_mean is None else 'running_var'} must be defined in "
                           "evaluation mode")
    nd = input.ndim
    if training and (running_mean is not None or running_var is not None) and isinstance(input, Tracer):
        raise TracingError("batch_norm in training mode updates running_mean / running_var in place, which a compiled "
                           "function cannot do: call the module's .eval() (running statistics), build it with "
                           "track_running_stats=False (batch statistics), or run this step eagerly")
    exact = _exact(input)
    dt = input._data.dtype.type
    if training:
        dims = (0,) + tuple(range(2, nd))
        n = math.prod(input.shape[d] for d in dims)
        mean = input.mean(dims, keepdim=True)
        if exact:
            m_bits, vs_bits = _torch_batch_stats(input._data)
            _set(mean, m_bits)
        d = input - mean
        var_sum = (d * d).sum(dims, keepdim=True)
        invstd = (var_sum / n + eps).rsqrt()
        if exact:
            _set(var_sum, vs_bits)
            _set(invstd, (1.0 / np.sqrt((vs_bits / dt(n)).astype(np.float64) + eps)).astype(dt))
        else:
            m_bits, vs_bits = mean._data, var_sum._data
        if running_mean is not None:
            _update_running(running_mean, m_bits, momentum)
        if running_var is not None:
            _update_running(running_var, (np.asarray(vs_bits).reshape(-1) / dt(n - 1)).astype(np.float64), momentum,
                            wide=True)  # n > 1: verified above
    else:
        mean = _channel_view(running_mean, nd)
        invstd = _channel_view((running_var + eps).rsqrt(), nd)
        if exact and running_var._data.dtype == dt:
            _set(invstd, dt(1) / np.sqrt(running_var._data + dt(eps)))
    scale = invstd if weight is None else invstd * _channel_view(weight, nd)
    shift = -(mean * scale) if bias is None else _channel_view(bias, nd) - mean * scale
    out = input * scale + shift
    if exact and all(t is None or t._data.dtype == dt for t in (weight, bias, running_mean)):
        alpha, mu = np.asarray(scale._data).reshape(-1), np.asarray(mean._data).reshape(-1)
        beta, value = _torch_affine(input._data, alpha, mu, None if bias is None else bias._data.reshape(-1))
        _set(shift, beta)
        _set(out, value)
    return set_edges(_named(out, "NativeBatchNormBackward0"), input, weight, bias)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each of ``num_groups`` groups of channels (per sample), then ``* weight + bias`` per channel."""
    _need("group_norm", input)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    _verify_batch_size([n * c // num_groups, num_groups] + list(input.shape[2:]))
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    grouped = input.reshape(n, num_groups, -1)
    exact = not isinstance(input, Tracer) and input._data.dtype in (np.float32, np.float64) and input._data.size > 0
    if exact:  # torch 2.13's CPU bits (group_norm_kernel.cpp): RowwiseMoments per group, rstd in double
        dt = input._data.dtype.type
        m_bits, v_bits = _torch_row_moments(np.ascontiguousarray(input._data).reshape(n * num_groups, -1))
        r_bits = (1.0 / np.sqrt(np.maximum(v_bits, 0).astype(np.float64) + eps)).astype(dt)
    mean = grouped.mean((2,), keepdim=True)
    if exact:
        _set(mean, m_bits)
    d = grouped - mean
    var = (d * d).mean((2,), keepdim=True)
    rstd = (var + eps).rsqrt()
    if exact:
        _set(var, v_bits)
        _set(rstd, r_bits)
    nd = input.ndim
    ones = [1] * (nd - 2)
    per = [n, num_groups, c // num_groups] + ones
    full = [n, c] + ones
    rstd_c = rstd.reshape([n, num_groups, 1] + ones).expand(per).reshape(full)
    mean_c = mean.reshape([n, num_groups, 1] + ones).expand(per).reshape(full)
    scale = rstd_c if weight is None else rstd_c * _channel_view(weight, nd)
    shift = -(mean_c * scale) if bias is None else _channel_view(bias, nd) - mean_c * scale
    out = input * scale + shift
    if exact and all(t is None or t._data.dtype == dt for t in (weight, bias)):
        x = input._data
        if weight is None and bias is None:  # (x - mean) * rstd
            _set(out, (x.reshape(n, num_groups, -1) - m_bits.reshape(n, -1, 1)) * r_bits.reshape(n, -1, 1))
        else:  # fma(scale, x, fma(-scale, mean, bias)) per channel
            b = np.zeros((), dt) if bias is None else bias._data.reshape([1, -1] + ones)
            _set(shift, _fma(-scale._data, mean_c._data, b, dt.__name__))
            _set(out, _fma(scale._data, x, shift._data, dt.__name__))
    return set_edges(_named(out, "NativeGroupNormBackward0"), input, weight, bias)


def _verify_spatial_size(size: Sequence[int]) -> None:
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input: Tensor, running_mean: Tensor | None = None,  # noqa: A002
                  running_var: Tensor | None = None, weight: Tensor | None = None, bias: Tensor | None = None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims, as torch's: ``batch_norm`` of the input viewed as
    (1, N * C, *spatial) with weight, bias and running statistics repeated N times; the running statistics
    (``use_input_stats``) become the mean over the batch of the repeated ones."""
    if use_input_stats:
        _verify_spatial_size(input.size())  # torch's AttributeError for a non-tensor
    _need("instance_norm", input)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    b, c = input.shape[0], input.shape[1]

    def rep(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.repeat(b)

    rm = None if running_mean is None else Tensor(np.tile(running_mean._data, b))
    rv = None if running_var is None else Tensor(np.tile(running_var._data, b))
    shape = list(input.shape)
    out = batch_norm(input.reshape([1, b * c] + shape[2:]), rm, rv, rep(weight), rep(bias), use_input_stats,
                     momentum, eps)
    if use_input_stats:
        for buf, new in ((running_mean, rm), (running_var, rv)):
            if buf is not None:
                avg = new.view(b, c).mean(0)
                buf._data[...] = avg._data
                buf._version.v += 1
    return out.view(shape)
