"""More of torch's top-level functions: ``logaddexp2``, ``frexp``, ``ldexp``, ``nextafter``, ``addbmm``,
``gradient``, and the process settings ``set_num_threads`` / ``get_num_threads``, ``use_deterministic_algorithms``
/ ``are_deterministic_algorithms_enabled`` / ``is_deterministic_algorithms_warn_only_enabled``,
``set_deterministic_debug_mode`` / ``get_deterministic_debug_mode`` (symgrad's numpy kernels are deterministic
already: the flags are recorded and reported, as torch's)."""
from __future__ import annotations

import builtins
import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import dtypes
from ..core import ranges as _ranges
from .base import TensorBase, make_tensor
from .basic import cat, maximum, where
from .composite import _named

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["logaddexp2", "frexp", "ldexp", "nextafter", "addbmm", "gradient", "set_num_threads", "get_num_threads",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode"]


def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else make_tensor(np.asarray(x, dtype=np.float32 if isinstance(x, float)
                                                                      else None))


def logaddexp2(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """``log2(2**input + 2**other)``, torch's CPU formula ``m + log1p(exp2(-|a - b|)) / ln 2`` (``a`` itself when
    both are the same infinity)."""
    a, b = _t(input), _t(other)
    if not (a.is_floating_point() or b.is_floating_point()):
        a = a.float()
    m = maximum(a, b)
    same_inf = np.isinf(np.asarray(a._data)) & (np.asarray(a._data) == np.asarray(b._data))
    if same_inf.any():  # inf - inf is never formed (no NaN, no numpy warning): those items are m
        mask = make_tensor(same_inf)
        a_f, b_f = where(mask, 0.0, a), where(mask, 0.0, b)
        out = where(mask, m, maximum(a_f, b_f) + (-(a_f - b_f).abs()).exp2().log1p() * (1.0 / math.log(2.0)))
    else:
        out = m + (-(a - b).abs()).exp2().log1p() * (1.0 / math.log(2.0))
    return _named(out, "Logaddexp2Backward0")


class frexp(tuple):  # noqa: N801
    """``torch.return_types.frexp``: ``(mantissa, exponent)``, ``input = mantissa * 2 ** exponent``."""

    __slots__ = ()
    n_fields = n_sequence_fields = 2
    n_unnamed_fields = 0

    def __new__(cls, input: Any, exponent: Any = None) -> frexp:  # noqa: A002
        if exponent is not None:  # the namedtuple form: frexp(mantissa, exponent)
            return super().__new__(cls, (input, exponent))
        t = _t(input)
        if not t.is_floating_point():
            raise RuntimeError("torch.frexp() only supports floating-point dtypes")
        mantissa, exp = np.frexp(np.asarray(t._data))
        return super().__new__(cls, (make_tensor(mantissa.astype(t.dtype.np)),
                                     make_tensor(exp.astype(np.int32))))

    @property
    def mantissa(self) -> Tensor:
        return self[0]

    @property
    def exponent(self) -> Tensor:
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.frexp(\nmantissa={self[0]!r},\nexponent={self[1]!r})"


def ldexp(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """``input * 2 ** other`` (``LdexpBackward0``)."""
    x, e = _t(input), _t(other)
    ex = np.asarray(e._data)
    dt = x.dtype.np if x.is_floating_point() else dtypes.get_default_dtype().np
    out = x * make_tensor(np.power(2.0, ex.astype(np.float64)).astype(dt))
    if out.requires_grad and ex.dtype.kind in "iu" and (ex < 0).any():
        # torch's backward multiplies by ``2 ** other`` in the exponent's integer dtype: 0 where it is negative
        g = x * make_tensor(np.where(ex < 0, 0.0, np.power(2.0, np.maximum(ex, 0).astype(np.float64))).astype(dt))
        out = out.detach() + (g - g.detach())
    return _named(out, "LdexpBackward0")


def nextafter(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """The next floating-point value after ``input`` towards ``other`` (not differentiable, as torch's)."""
    x, y = _t(input), _t(other)
    if x.requires_grad or y.requires_grad:
        raise RuntimeError("the derivative for 'nextafter' is not implemented.")
    return make_tensor(np.nextafter(np.asarray(x._data), np.asarray(y._data, dtype=x.dtype.np)))


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``, the products added in batch order as torch's CPU
    loop of ``addmm_`` (``AddbmmBackward0``)."""
    b1, b2, x = _t(batch1), _t(batch2), _t(input)
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b1.shape[0]} and "
                           f"{b2.shape[0]}")
    if b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and "
                           f"{b2.shape[1]}x{b2.shape[2]})")
    out = x.expand(b1.shape[1], b2.shape[2]) * beta if beta != 0 else None
    for i in range(b1.shape[0]):
        prod = b1[i] @ b2[i]
        prod = prod * alpha if alpha != 1 else prod
        out = prod if out is None else out + prod
    if out is None:
        out = x.new_zeros((b1.shape[1], b2.shape[2]))
    if beta == 0 and x.requires_grad:  # torch's input gets a zero gradient (its values, NaN included, unused)
        out = where(make_tensor(np.zeros(tuple(out.shape), bool)), x.expand(tuple(out.shape)), out)
    return _named(out, "AddbmmBackward0")


def _slice(t: Tensor, dim: int, start: int | None, stop: int | None) -> Tensor:
    idx = [slice(None)] * t.ndim
    idx[dim] = slice(start, stop)
    return t[tuple(idx)]


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple[Tensor, ...]:  # noqa: A002
    """The derivative estimated by central differences in the interior and one- or two-sided ones at the edges,
    along each of ``dim`` (all dims by default); ``spacing`` is a scalar, one scalar per dim, or one coordinate
    tensor per dim. torch's formulas, differentiable."""
    t = _t(input)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(t.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % t.ndim for d in dims]
    if isinstance(spacing, (list, tuple)):
        spacings = list(spacing)
        if len(spacings) != len(dims):
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacings)} and a dim argument of length {len(dims)}.")
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if t.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if not t.is_floating_point():
        t = t.to(dtypes.get_default_dtype())
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, TensorBase) and h.ndim == 1:
            out.append(_gradient_coords(t, d, h.to(t.dtype), edge_order))
            continue
        h = h.item() if isinstance(h, TensorBase) else h
        center = (_slice(t, d, 2, None) - _slice(t, d, 0, -2)) / h
        if edge_order == 1:
            first = (_slice(t, d, 1, 2) - _slice(t, d, 0, 1)) / h
            last = (_slice(t, d, -1, None) - _slice(t, d, -2, -1)) / h
        else:
            first = (_slice(t, d, 0, 1) * -1.5 + _slice(t, d, 1, 2) * 2 - _slice(t, d, 2, 3) * 0.5) / h
            last = (_slice(t, d, -3, -2) * 0.5 + _slice(t, d, -2, -1) * -2 + _slice(t, d, -1, None) * 1.5) / h
        out.append(cat([first, center / 2, last], d))
    return tuple(out)


def _gradient_coords(t: Tensor, d: int, coords: Tensor, edge_order: int) -> Tensor:
    """torch's non-uniform ``gradient`` along ``d`` (second-order interior weights from the coordinate gaps)."""
    shape = [1] * t.ndim
    shape[d] = -1
    dx = coords.diff()
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _slice(t, d, 0, -2) + b * _slice(t, d, 1, -1) + c * _slice(t, d, 2, None)
    if edge_order == 1:
        first = (_slice(t, d, 1, 2) - _slice(t, d, 0, 1)) / dx[0]
        last = (_slice(t, d, -1, None) - _slice(t, d, -2, -1)) / dx[-1]
    else:
        a = -(2.0 * dx[0] + dx[1]) / (dx[0] * (dx[0] + dx[1]))
        b = (dx[0] + dx[1]) / (dx[0] * dx[1])
        c = (-dx[0]) / (dx[1] * (dx[0] + dx[1]))
        first = a * _slice(t, d, 0, 1) + b * _slice(t, d, 1, 2) + c * _slice(t, d, 2, 3)
        a = dx[-1] / (dx[-2] * (dx[-1] + dx[-2]))
        b = -(dx[-1] + dx[-2]) / (dx[-1] * dx[-2])
        c = (2 * dx[-1] + dx[-2]) / (dx[-1] * (dx[-1] + dx[-2]))
        last = a * _slice(t, d, -3, -2) + b * _slice(t, d, -2, -1) + c * _slice(t, d, -1, None)
    return cat([first, center, last], d)


# --------------------------------------------------------------------------- process settings

_STATE: dict[str, Any] = {"threads": None, "deterministic": False, "warn_only": False}


def set_num_threads(int: Any) -> None:  # noqa: A002  (torch's parameter name)
    """Record the number of intra-op threads (what ``get_num_threads`` reports; symgrad's kernels choose their
    threads themselves, see ``codegen/threads.py``)."""
    if not isinstance(int, builtins.int) or isinstance(int, bool) or int <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _STATE["threads"] = int
    _ranges.set_num_threads(int)  # the chunking symgrad reproduces (torch's per-thread partial sums) follows it


def get_num_threads() -> int:
    """The value ``set_num_threads`` set, else the number of CPUs this process may run on."""
    if _STATE["threads"] is not None:
        return _STATE["threads"]
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record torch's deterministic-algorithms flag (symgrad's CPU kernels are deterministic either way)."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    _STATE["deterministic"] = mode
    _STATE["warn_only"] = bool(warn_only) if mode else False


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether it was set with ``warn_only=True``."""
    return _STATE["warn_only"]


def set_deterministic_debug_mode(debug_mode: Any) -> None:
    """``"default"`` / 0, ``"warn"`` / 1 or ``"error"`` / 2: the deterministic flags as one setting."""
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn only) or 2 (on)."""
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["warn_only"] else 2

