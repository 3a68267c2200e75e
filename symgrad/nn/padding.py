"""``F.pad``'s non-constant modes (``reflect``, ``replicate``, ``circular``): one static integer-array index
per padded dim (``ops/index.py``), so the gradient is the index's scatter-add (repeats summing, as torch)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..eager.composite import _ALL, _arr, _index, _named
from ..eager.tensor import Tensor

__all__ = ["pad_mode"]

_NAMES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0"}


def _support_error(n: int, ndim: int) -> NotImplementedError:
    return NotImplementedError(
        f"Padding size {n} is not supported for {ndim}D input tensor.\n"
        "Supported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _positions(mode: str, n: int, before: int, after: int) -> np.ndarray:
    """The source position of each output position along a dim of size ``n`` padded by (before, after)."""
    i = np.arange(-before, n + after)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i > n - 1, 2 * (n - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    return i % n


def pad_mode(input: Tensor, pad: Sequence[int], mode: str, value: float | None = None) -> Tensor:  # noqa: A002
    """``F.pad(input, pad, mode)`` for ``mode`` in reflect / replicate / circular (torch's checks and texts)."""
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    pad = [int(p) for p in pad]
    k = len(pad) // 2
    if len(pad) % 2 or k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise _support_error(len(pad), input.ndim)
    shape = tuple(input.shape)
    spec: list = [_ALL] * input.ndim
    out = input
    for j in range(k):
        d = input.ndim - 1 - j
        before, after = pad[2 * j], pad[2 * j + 1]
        n = shape[d]
        if mode == "reflect" and (before >= n or after >= n):
            arg = {1: 4, 2: 6, 3: 8}[k]
            raise RuntimeError(f"Argument #{arg}: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {d} of input {list(shape)}")
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if before or after:
            spec[d] = _arr(_positions(mode, n, before, after))
    # one index per dim (numpy would broadcast several array entries against each other)
    for d, e in enumerate(spec):
        if e is not _ALL:
            out = _index(out, [_ALL] * d + [e], "IndexBackward0")
    if not out.requires_grad:
        return out if out is not input else input.clone()
    if mode == "circular":
        return _named(out, "CopySlices")
    return _named(out, _NAMES[mode].format(k))
