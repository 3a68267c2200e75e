"""Pooling, upsampling and pixel shuffles as registry-op compositions: ``F.max_pool1d/2d/3d`` (``return_indices``,
``ceil_mode``, ``dilation``), ``F.avg_pool1d/2d/3d`` (``count_include_pad``, ``divisor_override``),
``F.adaptive_avg_pool1d/2d`` and ``F.adaptive_max_pool1d/2d``, ``F.interpolate`` (nearest, nearest-exact,
linear / bilinear / trilinear / bicubic with ``align_corners``, area), ``F.pixel_shuffle`` / ``F.pixel_unshuffle``.

Windows are one static ``index`` node (``conv_ops.windows``) of the input padded with ``-inf`` (max) or zeros
(average); a max is ``max(dim)`` over the flattened window, whose gradient goes to the first maximum in
torch's scan order (row by row), as torch's; an average is the window's sum divided by torch's divisor.
Adaptive windows have different lengths: the short ones are filled up with a pad slot (``-inf`` / 0) past the
input's end."""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ..eager.base import is_traced
from ..eager.composite import _ALL, _arr, _index, _named, gather
from ..eager.edges import set_edges
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import REGISTRY
from .conv_ops import _zero_pad, ntuple, strided_taps, strided_windows, windows

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "interpolate", "upsample",
           "upsample_nearest", "upsample_bilinear", "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d",
           "pixel_shuffle", "pixel_unshuffle"]


def _need(who: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _out_size(n: int, k: int, p: int, s: int, d: int, ceil: bool) -> int:
    """torch's ``pooling_output_shape``: windows starting inside the input or its left padding."""
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _pool_args(x: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
               ) -> tuple[tuple[int, ...], ...]:
    k = ntuple(kernel_size, nd)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not len(stride)) else ntuple(stride, nd)
    p, d = ntuple(padding, nd), ntuple(dilation, nd)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for pj, kj, dj in zip(p, k, d):
        if pj > ((kj - 1) * dj + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pj}, "
                               f"kernel_size={kj} and dilation={dj}")
    spatial = x.shape[-nd:]
    o = tuple(_out_size(spatial[j], k[j], p[j], s[j], d[j], ceil_mode) for j in range(nd))
    if any(v <= 0 for v in o):
        lead = x.shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (lead, *spatial)))}). Calculated output size: "
                           f"({'x'.join(map(str, (lead, *o)))}). Output size is too small")
    return k, s, p, d, o


def _pool_windows(x: Tensor, nd: int, k: tuple, s: tuple, p: tuple, d: tuple, o: tuple, fill: float,
                  stacked: bool = True) -> Any:
    """``x``'s pooling windows, flattened: ``(..., K, *o)`` (or the list of the ``K`` taps), padding (and a
    ceil-mode overhang) filled with ``fill``."""
    spatial = x.shape[-nd:]
    if stacked and _tiles(spatial, k, s, p, d, o):
        return _tile_windows(x, nd, k, o)
    pads = [(p[j], max((o[j] - 1) * s[j] + d[j] * (k[j] - 1) + 1 - spatial[j] - p[j], 0)) for j in range(nd)]
    return (strided_windows if stacked else strided_taps)(_zero_pad(x, pads, fill), k, o, s, d)


def _tiles(spatial: Sequence[int], k: tuple, s: tuple, p: tuple, d: tuple, o: tuple) -> bool:
    """Whether the windows tile the input (stride = kernel, no padding or dilation, inside the input)."""
    return k == s and not any(p) and all(v == 1 for v in d) and all(o[j] * k[j] <= spatial[j] for j in range(len(k)))


def _tile_windows(x: Tensor, nd: int, k: tuple, o: tuple) -> Tensor:
    """Tiling windows as a reshape and a permute, ``(..., K, *o)`` in row-major tap order: their adjoint is one
    transpose, not a write per tap."""
    spatial = x.shape[-nd:]
    if any(o[j] * k[j] != spatial[j] for j in range(nd)):
        lead = x.ndim - nd
        x = _index(x, [_ALL] * lead + [("s", 0, o[j] * k[j], None) for j in range(nd)], "SliceBackward0")
    lead = x.ndim - nd
    split = [v for j in range(nd) for v in (o[j], k[j])]
    t = x.reshape(*x.shape[:lead], *split)
    perm = (list(range(lead)) + [lead + 2 * j + 1 for j in range(nd)] + [lead + 2 * j for j in range(nd)])
    return t.permute(*perm).reshape(*x.shape[:lead], math.prod(k), *o)


def _positions(arg: np.ndarray, nd: int, k: tuple, s: tuple, p: tuple, d: tuple, spatial: tuple,
               starts: list[np.ndarray] | None) -> np.ndarray:
    """The flat position in the input plane of the window tap ``arg`` (an integer array ending in the window dims)."""
    taps = np.unravel_index(arg, k)
    pos = []
    for j in range(nd):
        shape = [1] * arg.ndim
        shape[arg.ndim - nd + j] = arg.shape[arg.ndim - nd + j]
        if starts is None:
            start = (np.arange(arg.shape[arg.ndim - nd + j]) * s[j] - p[j]).reshape(shape)
            pos.append(np.clip(start + taps[j] * d[j], 0, spatial[j] - 1))
        else:
            pos.append(np.clip(starts[j].reshape(shape) + taps[j], 0, spatial[j] - 1))
    return np.ravel_multi_index(tuple(pos), spatial).astype(np.int64)


def _flat_indices(arg: Tensor, nd: int, k: tuple, s: tuple, p: tuple, d: tuple, spatial: tuple,
                  starts: list[np.ndarray] | None = None) -> Tensor:
    """torch's pooling indices: each window's argmax as a flat position in its input plane. A traced ``arg`` has
    no values: the positions are then looked up from a constant table of every tap's position (a traced gather)."""
    if not is_traced(arg):
        return Tensor(_positions(np.asarray(arg._data), nd, k, s, p, d, spatial, starts))
    o = tuple(arg.shape[-nd:])
    taps = np.broadcast_to(np.arange(math.prod(k)).reshape((-1,) + (1,) * nd), (math.prod(k), *o))
    table = Tensor(np.ascontiguousarray(_positions(taps, nd, k, s, p, d, spatial, starts)))
    lead = arg.ndim - nd
    table = table.reshape((1,) * lead + tuple(table.shape)).expand(*arg.shape[:lead], *table.shape)
    return gather(table, lead, arg.unsqueeze(lead)).squeeze(lead).long()


def _max_pool(input: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any,  # noqa: A002
              ceil_mode: bool, return_indices: bool, fn: str) -> Any:
    x = input
    k, s, p, d, o = _pool_args(x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    fill = -math.inf if x.is_floating_point() else int(np.iinfo(x.dtype.np).min)
    cols = _pool_windows(x, nd, k, s, p, d, o, fill)
    values, arg = _window_max(cols, x.ndim - nd)
    values = (_named(values, fn) if nd == 1 else set_edges(_named(values, fn), x)) if values.requires_grad else values
    if not return_indices:
        return values
    return values, _flat_indices(arg, nd, k, s, p, d, tuple(x.shape[-nd:]))


def _window_max(cols: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """``cols.max(dim)``, the first maximum of each window; a window holding NaN takes its last NaN, as torch's
    kernel (``val > max || isnan(val)``). Eager only: a traced window keeps the first NaN."""
    values, arg = cols.max(dim)
    if is_traced(cols) or not cols.is_floating_point():
        return values, arg
    nan = np.isnan(np.asarray(values._data))
    if not nan.any():
        return values, arg
    data = np.asarray(cols._data)
    k = data.shape[dim]
    last = k - 1 - np.argmax(np.flip(np.isnan(data), dim), axis=dim)
    idx = np.where(nan, last, np.asarray(arg._data)).astype(np.int64)
    indices = Tensor(idx)
    return _apply(REGISTRY["max"], cols, indices, dims=(dim,), keepdim=False), indices


def _check_max_dims(who: str, input: Tensor, nd: int) -> None:  # noqa: A002
    _need(who, input)
    if input.ndim not in (nd + 1, nd + 2) or any(v == 0 for v in input.shape[-nd - 1:]):
        if nd == 1:
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                               f"input, but got:{list(input.shape)}")
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The maximum over each window of ``input`` (N, C, L) (``return_indices``: also their positions)."""
    _check_max_dims("max_pool1d", input, 1)
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "SqueezeBackward1")


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The maximum over each window of ``input`` (N, C, H, W); indices are flat positions in each H x W plane."""
    _check_max_dims("max_pool2d", input, 2)
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     "MaxPool2DWithIndicesBackward0")


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The maximum over each window of ``input`` (N, C, D, H, W)."""
    _check_max_dims("max_pool3d", input, 3)
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     "MaxPool3DWithIndicesBackward0")


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool1d(..., return_indices=True)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool2d(..., return_indices=True)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_divisor(nd: int, k: tuple, s: tuple, p: tuple, o: tuple, spatial: tuple, count_include_pad: bool,
                 dtype: Any) -> np.ndarray:
    """torch's divisor per output position: the window clipped to the padded input (``count_include_pad``) or
    to the input."""
    div = np.ones(o, dtype=np.int64)
    for j in range(nd):
        start = np.arange(o[j]) * s[j] - p[j]
        end = np.minimum(start + k[j], spatial[j] + p[j])
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, spatial[j])
        shape = [1] * nd
        shape[j] = o[j]
        div = div * (end - start).reshape(shape)
    return div.astype(dtype)


def _avg_pool(input: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,  # noqa: A002
              count_include_pad: bool, divisor_override: Any, fn: str) -> Tensor:
    x = input
    k, s, p, d, o = _pool_args(x, nd, kernel_size, stride, padding, 1, ceil_mode)
    taps = _pool_windows(x, nd, k, s, p, d, o, 0.0, stacked=False)
    total = taps[0]
    for t in taps[1:]:  # torch's kernel adds the window's elements one by one, row by row
        total = total + t
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        out = total / divisor_override
    else:
        out = total / Tensor(_avg_divisor(nd, k, s, p, o, tuple(x.shape[-nd:]), count_include_pad, x.dtype.np))
    if not out.requires_grad:
        return out
    return _named(out, fn) if nd == 1 else set_edges(_named(out, fn), x)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True) -> Tensor:
    """The mean over each window of ``input`` (N, C, L)."""
    _need("avg_pool1d", input)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for avg_pool1d)")
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "SqueezeBackward1")


def _check_avg_dims(input: Tensor, nd: int) -> None:  # noqa: A002
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each window of ``input`` (N, C, H, W) (torch's divisor rules)."""
    _need("avg_pool2d", input)
    _check_avg_dims(input, 2)
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "AvgPool2DBackward0")


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each window of ``input`` (N, C, D, H, W)."""
    _need("avg_pool3d", input)
    _check_avg_dims(input, 3)
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "AvgPool3DBackward0")


# --------------------------------------------------------------------------- adaptive pooling

def _adaptive_sizes(input: Tensor, nd: int, output_size: Any) -> tuple[int, ...]:  # noqa: A002
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * nd
    if len(sizes) != nd:
        raise RuntimeError(f"adaptive_avg_pool{nd}d: output_size must be {nd}")
    return tuple(int(input.shape[input.ndim - nd + j]) if v is None else int(v) for j, v in enumerate(sizes))


def _adaptive_windows(x: Tensor, nd: int, o: tuple, fill: float) -> tuple[Tensor, list[np.ndarray], list]:
    """Adaptive windows ``(..., K, *o)`` (start ``floor(i*n/o)``, end ``ceil((i+1)*n/o)``), the short ones
    filled up with a pad slot at position ``n`` holding ``fill``; also the starts and lengths per dim."""
    idx, starts, counts = [], [], []
    for j in range(nd):
        n = x.shape[x.ndim - nd + j]
        i = np.arange(o[j])
        start, end = (i * n) // o[j], ((i + 1) * n + o[j] - 1) // o[j]
        kmax = int((end - start).max())
        pos = start[None, :] + np.arange(kmax)[:, None]
        idx.append(np.where(pos < end[None, :], pos, n))
        starts.append(start)
        counts.append(end - start)
    padded = _zero_pad(x, [(0, 1)] * nd, fill)
    cols = windows(padded, idx)
    ks = [a.shape[0] for a in idx]
    return cols.reshape(*x.shape[:-nd], math.prod(ks), *o), starts, counts


def _adaptive_avg(input: Tensor, nd: int, output_size: Any, who: str, fn: str) -> Tensor:  # noqa: A002
    _need(who, input)
    if input.ndim not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                               "'self' (while checking arguments for adaptive_avg_pool1d)")
        raise RuntimeError(f"{who}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    o = _adaptive_sizes(input, nd, output_size)
    if all(v == 1 for v in o):  # torch: a mean over the spatial dims
        out = input.mean(tuple(range(input.ndim - nd, input.ndim)), keepdim=True)
        return _named(out, fn) if nd == 1 and out.requires_grad else out
    cols, _, counts = _adaptive_windows(input, nd, o, 0.0)
    out = cols.sum(input.ndim - nd)
    for j in range(nd):  # torch: sum / kh / kw
        shape = [1] * nd
        shape[j] = o[j]
        out = out / Tensor(counts[j].reshape(shape).astype(input.dtype.np))
    return _named(out, fn) if out.requires_grad else out


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """The mean over ``output_size`` adaptive windows of ``input`` (N, C, L)."""
    return _adaptive_avg(input, 1, output_size, "adaptive_avg_pool1d", "SqueezeBackward1")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """The mean over adaptive windows of ``input`` (N, C, H, W); ``None`` in ``output_size`` keeps that size."""
    return _adaptive_avg(input, 2, output_size, "adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0")


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """The mean over adaptive windows of ``input`` (N, C, D, H, W)."""
    return _adaptive_avg(input, 3, output_size, "adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0")


def _adaptive_max(input: Tensor, nd: int, output_size: Any, return_indices: bool, fn: str) -> Any:  # noqa: A002
    who = f"adaptive_max_pool{nd}d"
    _need(who, input)
    if input.ndim not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"{who}(): Expected 2D or 3D tensor, but got: {list(input.shape)}")
        raise RuntimeError(f"{who}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    o = _adaptive_sizes(input, nd, output_size)
    fill = -math.inf if input.is_floating_point() else int(np.iinfo(input.dtype.np).min)
    cols, starts, counts = _adaptive_windows(input, nd, o, fill)
    values, arg = _window_max(cols, input.ndim - nd)
    values = _named(values, fn) if values.requires_grad else values
    if not return_indices:
        return values
    ks = tuple(int(c.max()) for c in counts)
    ind = _flat_indices(arg, nd, ks, (1,) * nd, (0,) * nd, (1,) * nd,
                        tuple(input.shape[-nd:]), starts)
    return values, ind


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    """The maximum over adaptive windows of ``input`` (N, C, L)."""
    return _adaptive_max(input, 1, output_size, return_indices, "SqueezeBackward1")


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    """The maximum over adaptive windows of ``input`` (N, C, H, W)."""
    return _adaptive_max(input, 2, output_size, return_indices, "AdaptiveMaxPool2DBackward0")


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    """The maximum over adaptive windows of ``input`` (N, C, D, H, W)."""
    return _adaptive_max(input, 3, output_size, return_indices, "AdaptiveMaxPool3DBackward0")


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    """``adaptive_max_pool1d(..., return_indices=True)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    """``adaptive_max_pool2d(..., return_indices=True)``."""
    return adaptive_max_pool2d(input, output_size, True)


# --------------------------------------------------------------------------- max unpooling

def _unpool_output_size(input: Tensor, k: tuple, s: tuple, p: tuple, output_size: Any) -> list[int]:  # noqa: A002
    nd = len(k)
    default = [(input.shape[input.ndim - nd + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(nd)]
    if output_size is None:
        return default
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return [int(v) for v in output_size]


def _max_unpool(input: Tensor, indices: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
                output_size: Any, fn: str) -> Tensor:
    """``input``'s values written into zeros at the flat positions ``indices`` of each output plane (the last
    write wins at repeated positions; the gradient gathers at the indices), torch's ``max_unpool``."""
    k = ntuple(kernel_size, nd)
    s = k if stride is None else ntuple(stride, nd)
    p = ntuple(padding, nd)
    size = _unpool_output_size(input, k, s, p, output_size)
    if is_traced(indices):
        indices._concrete("max_unpool with traced indices")
    idx = np.asarray(indices._data).astype(np.int64)
    if tuple(idx.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(idx.shape)}")
    lead = tuple(input.shape[:-nd])
    plane = math.prod(size)
    if idx.size and (idx.min() < 0 or idx.max() >= plane):
        bad = int(idx.max() if idx.max() >= plane else idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    flat = input.reshape(*lead, -1)
    grids = np.indices(lead + (flat.shape[-1],))[:-1] if lead else []
    spec = [_arr(g) for g in grids] + [_arr(idx.reshape(*lead, -1))]
    base = Tensor(np.zeros(lead + (plane,), dtype=input.dtype.np))
    out = base.index_put(tuple(Tensor(np.asarray(a[1], np.int64).reshape(a[2])) for a in spec), flat)
    out = out.reshape(*lead, *size)
    return _named(out, fn) if out.requires_grad else out


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
                 output_size: Any = None) -> Tensor:
    """The partial inverse of ``max_pool1d`` from its indices."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size, "SqueezeBackward1")


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
                 output_size: Any = None) -> Tensor:
    """The partial inverse of ``max_pool2d`` from its indices."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size, "MaxUnpool2DBackward0")


# --------------------------------------------------------------------------- interpolate

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_LINEAR = {"linear": (1, "UpsampleLinear1DBackward0"), "bilinear": (2, "UpsampleBilinear2DBackward0"),
           "trilinear": (3, "UpsampleTrilinear3DBackward0")}


def _scale_value(scale: float | None, n: int, o: int) -> np.float32:
    """torch's ``compute_scales_value<float>``: ``1/scale_factor`` when given, else ``in/out``."""
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(n) / np.float32(o)


def _nearest_positions(n: int, o: int, scale: float | None, exact: bool) -> np.ndarray:
    dst = np.arange(o)
    if exact:
        src = np.floor(((dst + 0.5) * np.float64(_scale_value(scale, n, o))).astype(np.float32))
        return np.minimum(src.astype(np.int64), n - 1)
    if o == n:
        return dst
    if o == 2 * n:
        return dst >> 1
    src = np.floor(dst.astype(np.float32) * _scale_value(scale, n, o))
    return np.minimum(src.astype(np.int64), n - 1)


def _linear_weights(n: int, o: int, scale: float | None, align_corners: bool, dtype: Any,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """torch's ``compute_indices_weights_linear``: (i0, i1, lambda0, lambda1) per output position."""
    f = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    dst = np.arange(o).astype(f)
    if align_corners:
        sc = f(n - 1) / f(o - 1) if o > 1 else f(0)
        src = sc * dst
    else:
        if scale is not None and scale > 0:
            sc = f(1.0 / scale)
        else:
            sc = f(n) / f(o)
        src = sc * (dst + f(0.5)) - f(0.5)
        src = np.where(src < 0, f(0), src).astype(f)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam1 = np.clip(src - i0.astype(f), f(0), f(1)).astype(f)
    i1 = np.where(i0 < n - 1, i0 + 1, i0)
    return i0, i1, (f(1) - lam1).astype(dtype), lam1.astype(dtype)


def _cubic_weights(n: int, o: int, scale: float | None, align_corners: bool, dtype: Any,
                   ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """torch's bicubic taps (A = -0.75): four clamped indices and their weights per output position."""
    f = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    dst = np.arange(o).astype(f)
    if align_corners:
        src = (f(n - 1) / f(o - 1) if o > 1 else f(0)) * dst
    else:
        sc = f(1.0 / scale) if scale is not None and scale > 0 else f(n) / f(o)
        src = (sc * (dst + f(0.5)) - f(0.5)).astype(f)  # no clamp at 0 for cubic
    i0 = np.floor(src).astype(np.int64)
    t = (src - i0.astype(f)).astype(f)
    a = f(-0.75)

    def conv1(x: np.ndarray) -> np.ndarray:
        return (((a + f(2)) * x - (a + f(3))) * x * x + f(1)).astype(f)

    def conv2(x: np.ndarray) -> np.ndarray:
        return (((a * x - f(5) * a) * x + f(8) * a) * x - f(4) * a).astype(f)

    weights = [conv2(t + f(1)), conv1(t), conv1(f(1) - t), conv2(f(1) - t + f(1))]
    index = [np.clip(i0 - 1 + j, 0, n - 1) for j in range(4)]
    return index, [w.astype(dtype) for w in weights]


def _along(x: Tensor, d: int, positions: np.ndarray) -> Tensor:
    return _index(x, [_ALL] * d + [_arr(positions)], "IndexBackward0")


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """``F.interpolate``: nearest / nearest-exact (an index), linear / bilinear / trilinear (two taps per dim,
    the last dim first, as torch's kernel), bicubic (four taps per dim), area (adaptive average pooling)."""
    _need("interpolate", input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 "(o1, o2, ...,oK) format.")
            out_size = [int(v) for v in size]
        else:
            out_size = [int(size)] * nd
        scales: list = [None] * nd
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nd:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 "format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(v) for v in scale_factor]
        else:
            scales = [float(scale_factor)] * nd
        out_size = [int(math.floor(input.shape[2 + j] * scales[j])) for j in range(nd)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = [None] * nd
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported by symgrad")
    if mode == "area" and 1 <= nd <= 3:
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1](input, out_size)
    if mode in ("nearest", "nearest-exact") and 1 <= nd <= 3:
        exact = mode == "nearest-exact"
        spec: list = [_ALL, _ALL]
        for j in range(nd):
            shape = [1] * nd
            shape[j] = out_size[j]
            pos = _nearest_positions(input.shape[2 + j], out_size[j], scales[j], exact)
            spec.append(_arr(pos.reshape(shape)))
        name = f"Upsample{'NearestExact' if exact else 'Nearest'}{nd}DBackward0"
        out = _index(input, spec, "IndexBackward0")
        return set_edges(_named(out, name), input) if out.requires_grad else out
    if mode in _LINEAR and _LINEAR[mode][0] == nd:
        x = input
        for j in reversed(range(nd)):
            d = 2 + j
            i0, i1, l0, l1 = _linear_weights(input.shape[d], out_size[j], scales[j], bool(align_corners),
                                             input.dtype.np)
            shape = [1] * (nd - j)
            shape[0] = out_size[j]
            x = _along(x, d, i0) * Tensor(l0.reshape(shape)) + _along(x, d, i1) * Tensor(l1.reshape(shape))
        return _named(x, _LINEAR[mode][1]) if x.requires_grad else x
    if mode == "bicubic" and nd == 2:
        x = input
        for j in (1, 0):  # the last dim first, four taps each, added in order (torch's kernel)
            d = 2 + j
            index, weights = _cubic_weights(input.shape[d], out_size[j], scales[j], bool(align_corners),
                                            input.dtype.np)
            shape = [1] * (nd - j)
            shape[0] = out_size[j]
            acc = _along(x, d, index[0]) * Tensor(weights[0].reshape(shape))
            for i, w in zip(index[1:], weights[1:]):
                acc = acc + _along(x, d, i) * Tensor(w.reshape(shape))
            x = acc
        return _named(x, "UpsampleBicubic2DBackward0") if x.requires_grad else x
    if mode in _LINEAR and 1 <= nd <= 3:
        expect = {1: "3D", 2: "4D", 3: "5D"}
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {expect[_LINEAR[mode][0]]} input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the "
                              f"modes: {_MODES} (got {mode})")


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
             align_corners: bool | None = None) -> Tensor:
    """The deprecated ``F.upsample``: ``interpolate`` (with torch's warning)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:  # noqa: A002
    """The deprecated ``F.upsample_nearest``: ``interpolate(mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:  # noqa: A002
    """The deprecated ``F.upsample_bilinear``: ``interpolate(mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --------------------------------------------------------------------------- power-average pooling

def _lp_pool(input: Tensor, nd: int, norm_type: float, kernel_size: Any, stride: Any,  # noqa: A002
             ceil_mode: bool) -> Tensor:
    """torch's composite: ``(sign(avg) * relu(|avg|) * K) ** (1/p)`` with ``avg`` the window mean of ``x ** p``;
    ``p = +-inf`` is a max pooling of ``|x|``."""
    k = ntuple(kernel_size, nd)
    maxp = max_pool1d if nd == 1 else max_pool2d
    if norm_type == math.inf:
        return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    avg = avg_pool1d if nd == 1 else avg_pool2d
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, L): ``(sum over the window of x**p) ** (1/p)``."""
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, H, W)."""
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode)


# --------------------------------------------------------------------------- pixel shuffle

def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    _need("pixel_shuffle", input)
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nl = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    perm = list(range(nl)) + [nl, nl + 3, nl + 1, nl + 4, nl + 2]
    out = x.permute(*perm).reshape(*lead, c // (r * r), h * r, w * r)
    return _named(out, "PixelShuffleBackward0") if out.requires_grad else out


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    _need("pixel_unshuffle", input)
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    nl = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    perm = list(range(nl)) + [nl, nl + 2, nl + 4, nl + 1, nl + 3]
    out = x.permute(*perm).reshape(*lead, c * r * r, h // r, w // r)
    return _named(out, "PixelUnshuffleBackward0") if out.requires_grad else out
