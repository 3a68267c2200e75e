"""``torch.nn.functional``'s layer helpers on symgrad tensors: ``linear``, ``dropout``, ``normalize``,
``cosine_similarity``, ``pad`` (constant) and ``one_hot``, built from registry ops (so they compile,
differentiate and print like the rest)."""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from ..eager import basic, functional
from ..eager import random as _random
from ..eager import saved_hooks as _saved_hooks
from ..eager.composite import _fused, _named, vector_norm
from ..eager.edges import set_edges
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import REGISTRY, A
from ..ops.linalg import check_addmm_dtypes
from .padding import pad_mode

__all__ = ["linear", "dropout", "normalize", "cosine_similarity", "pad", "one_hot"]



@functools.cache
def _add() -> Any:
    """``A[0] + A[1]``, built on first use: SymPy's first ``Add`` imports ``sympy.tensor`` (25 ms), which a
    program that never differentiates need not pay at ``import symgrad``."""
    return A[0] + A[1]


def _need(name: str, arg: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not {type(x).__name__}")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``, recorded as torch 2.13's ``linear`` records it: a contiguous input with a bias
    is viewed as a matrix for one ``AddmmBackward0`` (bias, input, ``weight.t()``) and viewed back; without a bias
    ``MmBackward0`` (a vector unsqueezed and squeezed back, a batch viewed as a matrix and back)."""
    _need("linear", "input", input)
    if isinstance(bias, Tensor) and isinstance(weight, Tensor):
        check_addmm_dtypes(bias.dtype, input.dtype, weight.dtype)  # torch's addmm, with the bias as ``self``
    if _saved_hooks.STACK and bias is not None and input.ndim == 2:
        return _linear_packed(input, weight, bias)
    wt = weight.t()
    lead = tuple(input.shape[:-1])
    if bias is None:
        if input.ndim == 1:
            return _view(input.unsqueeze(0) @ wt, (weight.shape[0],), "SqueezeBackward4")
        if input.ndim == 2:
            return input @ wt
        out = input.reshape(-1, input.shape[-1]) @ wt
        return _view(out, (*lead, out.shape[-1]), "UnsafeViewBackward0")
    if input.ndim != 2 and not input.is_contiguous():
        return input @ wt + bias           # torch: matmul, then the bias added
    flat = input if input.ndim == 2 else input.reshape(-1, input.shape[-1])
    prod = flat @ wt
    if prod.is_floating_point() and isinstance(bias, Tensor) and bias.is_floating_point():
        out = set_edges(_fused(_add(), prod, bias, fn="AddmmBackward0"), bias, flat, wt)  # one node, torch's inputs
    else:
        out = _named(prod + bias, "AddmmBackward0")
    return out if input.ndim == 2 else out.reshape(*lead, out.shape[-1])


def _view(t: Tensor, shape: tuple, fn: str) -> Tensor:
    """``t.reshape(shape)`` recorded under torch's name ``fn``."""
    return _apply(REGISTRY["reshape"], t, shape=tuple(shape), fn=fn)


def _linear_packed(input: Tensor, weight: Tensor, bias: Tensor) -> Tensor:  # noqa: A002
    """``linear`` under saved-tensor hooks: packs as torch's ``AddmmBackward0`` does (``input`` when the weight
    needs a gradient, then ``weight.T`` when the input does), not as its inner product would."""
    with _saved_hooks.suspended():
        y = linear(input, weight, bias)
    node = y._node
    if node is not None and len(node.inputs) == 2 and len(node.inputs[0].inputs) == 2:
        mat1, mat2 = node.inputs[0].inputs
        _saved_hooks.pack_tensors(node, ((input, mat1, weight.requires_grad), (weight.T, mat2, input.requires_grad)))
    return y


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` while ``training``; the mask is
    torch's CPU mask for the same generator state."""
    _need("dropout", "input", input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    order = _memory_order(input)      # torch draws the mask in the input's memory order (empty_like keeps strides)
    shape = tuple(input.shape[d] for d in order)
    mask = Tensor(np.transpose(_random.dropout_mask(shape, input.dtype.np, p), np.argsort(order)))
    return input.mul_(mask) if inplace else input * mask


def _memory_order(t: Tensor) -> tuple[int, ...]:
    """The dims of an eager tensor from outermost to innermost in memory (its own order unless its buffer is a
    dense permuted view, as a transpose gives)."""
    arr = getattr(t, "_data", None)
    if not isinstance(arr, np.ndarray) or arr.flags.c_contiguous or arr.ndim < 2:
        return tuple(range(t.ndim))
    order = tuple(sorted(range(arr.ndim), key=lambda d: (-arr.strides[d], d)))
    return order if np.transpose(arr, order).flags.c_contiguous else tuple(range(t.ndim))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:  # noqa: A002
    """``input / max(||input||_p over dim, eps)``."""
    _need("normalize", "input", input)
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (each normalised by its norm,
    floored at ``eps``, then their dot product; broadcasting as torch)."""
    _need("cosine_similarity", "x1", x1)
    # torch: linalg_vector_norm, clamped in place under no_grad (its graph shows a CloneBackward0 there)
    n1, n2 = (vector_norm(x, 2, dim, True) for x in (x1, x2))
    c1, c2 = (set_edges(_named(n.clamp_min(eps), "CloneBackward0"), n) for n in (n1, n2))
    return ((x1 / c1) * (x2 / c2)).sum(dim)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Padding (constant; reflect / replicate / circular in ``nn/padding.py``): ``pad`` gives (before, after)
    counts from the last dim backwards; negative counts crop."""
    _need("pad", "input", input)
    if mode != "constant":
        return pad_mode(input, pad, mode, value)  # reflect / replicate / circular: symgrad/nn/padding.py
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length must be divisible by 2" if len(pad) % 2 else
                           "Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    out = input
    for k in range(len(pad) // 2):
        d = input.ndim - 1 - k
        before, after = int(pad[2 * k]), int(pad[2 * k + 1])
        if before < 0:
            out = out.narrow(d, -before, out.shape[d] + before)
        if after < 0:
            out = out.narrow(d, 0, out.shape[d] + after)
        parts = []
        for n in (max(before, 0), None, max(after, 0)):
            if n is None:
                parts.append(out)
            elif n:
                shape = list(out.shape)
                shape[d] = n
                parts.append(functional.full(shape, 0.0 if value is None else value, dtype=out.dtype))
        out = basic.cat(parts, d) if len(parts) > 1 else out
    return _named(out, "ConstantPadNdBackward0") if out.requires_grad else out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot rows of the class indices in ``tensor`` (``num_classes`` -1: the largest index + 1)."""
    _need("one_hot", "tensor", tensor)
    idx = np.asarray(tensor._data)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if idx.size and idx.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    n = int(idx.max()) + 1 if num_classes == -1 and idx.size else num_classes
    if idx.size and idx.max() >= n:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor((idx[..., None] == np.arange(n)).astype(np.int64))
