"""``F.affine_grid`` and ``F.grid_sample`` (2-d; bilinear / nearest, zeros / border / reflection padding) as
registry-op compositions.

The sample coordinates are computed from the grid with tensor ops, so the gradient reaches the grid through the
bilinear weights (torch's ``w = x - floor(x)``, ``nw = (1 - n) * (1 - w)``, ...); the corner positions
(``floor``) are read from the grid's values and gather ``input`` through a static integer-array index, whose
scatter-add is the input's gradient. A traced grid has no values: ``grid_sample`` then raises a
``TracingError`` (call it eagerly)."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from ..eager import functional as _functional
from ..eager.base import is_traced
from ..eager.basic import stack
from ..eager.composite import _arr, _index, _named
from ..eager.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _base(n: int, align_corners: bool, dtype: Any) -> Tensor:
    """torch's ``linspace_from_neg_one``."""
    if n <= 1:
        return Tensor(np.zeros(max(n, 1), dtype=dtype.np))
    r = _functional.linspace(-1, 1, n, dtype=dtype)
    return r if align_corners else r * (n - 1) / n


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid ``(N, H, W, 2)`` (``(N, D, H, W, 3)``) of the affine maps ``theta`` over ``size``."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(v) for v in size]
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, nd = size[0], len(spatial)
    # base grid (..., x, y[, z], 1): the last spatial dim varies fastest and is the first coordinate
    axes = [_base(s, align_corners, theta.dtype) for s in spatial]
    cols = []
    for j in range(nd):
        shape = [1] * nd
        shape[j] = spatial[j]
        cols.append(axes[j].reshape(*shape).expand(*spatial))
    base = stack([*reversed(cols), _functional.ones(tuple(spatial), dtype=theta.dtype)], -1)
    grid = base.reshape(1, -1, nd + 1).expand(n, -1, nd + 1) @ theta.transpose(1, 2)
    out = grid.reshape(n, *spatial, nd)
    return _named(out, "AffineGridGeneratorBackward0") if out.requires_grad else out


def _unnormalize(g: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (g + 1) * ((size - 1) / 2)
    return (g + 1) * (size / 2) - 0.5


def _reflect(c: Tensor, size: int, align_corners: bool) -> Tensor:
    """torch's ``reflect_coordinates`` then ``clip_coordinates``: the flip count is read from the values."""
    lo, span = (0.0, float(size - 1)) if align_corners else (-0.5, float(size))
    if span <= 0:
        return c * 0
    a = (c - lo).abs()
    flips = np.floor(np.asarray(a._data) / span)
    extra = a - Tensor(flips.astype(a.dtype.np) * span)
    even = Tensor((flips % 2 == 0).astype(a.dtype.np))
    out = even * (extra + lo) + (1 - even) * (span - extra + lo)
    return out.clamp(0, size - 1)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",  # noqa: A002
                align_corners: bool | None = None) -> Tensor:
    """``input`` (N, C, H, W) sampled at the normalised positions ``grid`` (N, Ho, Wo, 2) (x first)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if mode == "bicubic" or input.ndim != 4:
        raise NotImplementedError("grid_sample(): symgrad takes 4-d inputs with mode 'bilinear' or 'nearest'")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}" if grid.ndim == 4 and grid.shape[-1] != 2 else
                           f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if is_traced(grid):
        grid._concrete("grid_sample with a traced grid")
    n, c, h, w = input.shape
    x = _unnormalize(grid[..., 0], w, align_corners)
    y = _unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        x, y = x.clamp(0, w - 1), y.clamp(0, h - 1)
    elif padding_mode == "reflection":
        x, y = _reflect(x, w, align_corners), _reflect(y, h, align_corners)
    xd, yd = np.asarray(x._data, dtype=np.float64), np.asarray(y._data, dtype=np.float64)
    batch = np.arange(n).reshape(n, 1, 1)

    def corner(xi: np.ndarray, yi: np.ndarray) -> Tensor:
        """``input[b, :, yi, xi]`` as (N, C, Ho, Wo), zero where (xi, yi) is outside."""
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        xs, ys = np.clip(xi, 0, w - 1).astype(np.int64), np.clip(yi, 0, h - 1).astype(np.int64)
        spec = [_arr(batch), ("s", None, None, None), _arr(ys), _arr(xs)]
        vals = _index(input, spec, "IndexBackward0").permute(0, 3, 1, 2)
        if inside.all():
            return vals
        return vals * Tensor(inside[:, None].astype(input.dtype.np))

    if mode == "nearest":
        out = corner(np.rint(xd), np.rint(yd))
    else:
        x_w, y_n = np.floor(xd), np.floor(yd)
        fw = x - Tensor(x_w.astype(x.dtype.np))
        fn = y - Tensor(y_n.astype(y.dtype.np))
        e, s = 1 - fw, 1 - fn
        nw, ne, sw, se = ((s * e).unsqueeze(1), (s * fw).unsqueeze(1), (fn * e).unsqueeze(1),
                          (fn * fw).unsqueeze(1))
        out = (corner(x_w, y_n) * nw + corner(x_w + 1, y_n) * ne + corner(x_w, y_n + 1) * sw
               + corner(x_w + 1, y_n + 1) * se)
    return _named(out, "GridSampler2DBackward0") if out.requires_grad else out
