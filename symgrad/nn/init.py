"""``torch.nn.init``: in-place initialisers, with torch's fans, gains and bounds (torch's Python float
arithmetic, so that the same generator gives torch's values).

Every random draw goes through ``_uniform`` and ``_normal`` below (``trunc_normal_`` and
``orthogonal_`` are built on them the way torch builds them); they write into the tensor's numpy
buffer under no-grad and bump its version counter. Today they draw from symgrad's numpy generator
(``sg.manual_seed``); pointing them at a torch-exact generator makes every initialiser torch-exact.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from ..eager import random as _random
from ..eager.grad_mode import no_grad
from ..eager.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


# ---------------------------------------------------------------------------- the two draws

def _uniform(tensor: Tensor, a: float, b: float, generator: Any = None) -> Tensor:
    """Fill ``tensor`` with U(a, b) draws in place (torch's ``tensor.uniform_(a, b, generator=...)``)."""
    with no_grad():
        return _random.uniform_(tensor, a, b, generator=generator)


def _normal(tensor: Tensor, mean: float, std: float, generator: Any = None) -> Tensor:
    """Fill ``tensor`` with N(mean, std**2) draws in place (torch's ``tensor.normal_(mean, std, ...)``)."""
    with no_grad():
        return _random.normal_(tensor, mean, std, generator=generator)


def _write(tensor: Tensor, values: Any) -> None:
    """``values`` (cast to the tensor's dtype) into ``tensor``'s buffer, as an untracked in-place write."""
    arr = tensor._data
    if arr.flags.writeable:
        arr[...] = values
    else:
        tensor.data = Tensor(np.array(np.broadcast_to(values, arr.shape), dtype=arr.dtype))
    tensor._version.v += 1


def _empty_like(tensor: Tensor) -> Tensor:
    return Tensor(np.empty(tensor._data.shape, dtype=tensor._data.dtype))


def _trunc_normal(tensor: Tensor, mean: float, std: float, a: float, b: float, generator: Any = None) -> Tensor:
    """N(mean, std**2) truncated to [a, b], by torch 2.13's two samplers: resampling out-of-range normal
    draws when at least 30% of the mass lies in [a, b], else uniform proposals with rejection by the
    normal density; the same draws in the same order as torch, arithmetic in the tensor's dtype."""

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=3)
    dt = tensor._data.dtype
    p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
    if p > 0.3:
        lo, hi = float(dt.type(a)), float(dt.type(b))
        result = np.array(_normal(tensor, mean, std, generator)._data)
        while True:
            mask = (result < lo) | (result > hi)
            if not mask.any():
                break
            fresh = _normal(_empty_like(tensor), mean, std, generator)._data
            result = np.where(mask, fresh, result)
        _write(tensor, result)
        return tensor
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def log_ratio(x: np.ndarray) -> np.ndarray:  # torch's sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
        y = (x - dt.type(mean)) / dt.type(std)
        return (y * y) * dt.type(-0.5) - dt.type(log_peak)

    accept = _empty_like(tensor)
    result = np.array(_uniform(tensor, a, b, generator)._data)
    candidates = log_ratio(result)
    with np.errstate(divide="ignore"):
        pending = np.log(_uniform(accept, 0.0, 1.0, generator)._data) > candidates
    if pending.any():
        proposal = _empty_like(tensor)
        while True:
            _uniform(proposal, a, b, generator)
            result = np.where(pending, proposal._data, result)
            candidates = log_ratio(proposal._data)
            with np.errstate(divide="ignore"):
                pending = np.where(pending, np.log(_uniform(accept, 0.0, 1.0, generator)._data) > candidates,
                                   pending)
            if not pending.any():
                break
        _write(tensor, result)
    return tensor


# ---------------------------------------------------------------------------- fans and gains

def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch's recommended gain for ``nonlinearity`` (``param``: leaky_relu's negative slope)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(size(1), size(0)), each times the product of the dims after the first two."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# ---------------------------------------------------------------------------- initialisers

def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with U(a, b)."""
    return _uniform(tensor, a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std**2)."""
    return _normal(tensor, mean, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Any = None) -> Tensor:
    """Fill with N(mean, std**2) truncated to [a, b]."""
    return _trunc_normal(tensor, mean, std, a, b, generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        _write(tensor, val._data if isinstance(val, Tensor) else val)
    return tensor


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (a 2-d tensor only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        _write(tensor, np.eye(*tensor.shape))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta (identity convolution) for 3-, 4- and 5-d tensors, per group."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    with no_grad():
        _write(tensor, values)
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _uniform(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std**2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _normal(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Any = None) -> Tensor:
    """U(-bound, bound), bound = gain * sqrt(3 / fan) (He et al.)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return _uniform(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Any = None) -> Tensor:
    """N(0, std**2), std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return _normal(tensor, 0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix over the first dim and the rest flattened: the Q of a standard normal
    matrix's QR, its columns' signs fixed by R's diagonal, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = _normal(Tensor(np.empty((rows, cols), dtype=tensor._data.dtype)), 0, 1, generator)._data
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = (q * np.sign(np.diag(r))).astype(tensor._data.dtype)
    if rows < cols:
        q = q.T
    q = q.reshape(tensor.shape) * gain
    with no_grad():
        _write(tensor, q)
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """N(0, std**2) draws, then in each column ``ceil(sparsity * rows)`` entries zeroed at the first rows of a
    ``randperm`` (drawn from the default generator, as torch's)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    _normal(tensor, 0, std, generator)
    values = tensor._data.copy()
    for col_idx in range(cols):
        zero_indices = _random.randperm(rows)._data[:num_zeros]
        values[zero_indices, col_idx] = 0
    with no_grad():
        _write(tensor, values)
    return tensor


def _make_deprecate(meth: Callable[..., Tensor]) -> Callable[..., Tensor]:
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated: use ``nn.init.{new_name}``."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
