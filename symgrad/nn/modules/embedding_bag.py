"""``EmbeddingBag`` and ``F.embedding_bag``: sums, means or maxima of bags of embedding rows (``offsets`` or a
2-D batch of fixed-length bags, ``per_sample_weights``, ``padding_idx``, ``include_last_offset``, ``max_norm``,
``scale_grad_by_freq``), composed of a gather, a mask and a reduction over the bag dim.

The bags are padded to the longest one: ``weight[P]`` of shape ``(B, L, D)``, the padding masked out; the bag's rows are
added one at a time in their order and in the weight's dtype, as torch's CPU kernel does (``sum`` and ``cumsum``
round otherwise)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...core import dtypes
from ...eager import basic, functional
from ...eager.composite import _named
from ...eager.grad_mode import no_grad
from ...eager.tensor import Tensor
from .. import init
from ..parameter import Parameter
from .module import Module
from .sparse import _renorm_rows, padding_index

__all__ = ["EmbeddingBag", "embedding_bag"]

_MODES = ("sum", "mean", "max")


def _bags(idx: np.ndarray, offsets: np.ndarray, include_last_offset: bool, padding_idx: int | None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The padded bag matrix ``(B, L)`` of positions into ``idx`` (0 where padded), its mask and the bag sizes."""
    n = idx.shape[0]
    if offsets.size and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(offsets[0])}")
    if offsets.size and offsets[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n}, but got {int(offsets[-1])}")
    starts = offsets[:-1] if include_last_offset else offsets
    ends = np.append(offsets[1:], n) if not include_last_offset else offsets[1:]
    positions = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        p = np.arange(a, max(a, b))
        if padding_idx is not None:
            p = p[idx[p] != padding_idx]
        positions.append(p)
    width = max([len(p) for p in positions] + [1])
    pos = np.zeros((len(positions), width), np.int64)
    mask = np.zeros((len(positions), width), bool)
    for i, p in enumerate(positions):
        pos[i, :len(p)] = p
        mask[i, :len(p)] = True
    return pos, mask, mask.sum(1)


def _bag_sums(w: np.ndarray, gathered: np.ndarray, mask: np.ndarray, sizes: np.ndarray, psw: np.ndarray | None,
              mode: str) -> np.ndarray:
    """torch's CPU forward of the sum / mean modes: each bag's rows added one at a time in the weight's dtype
    (``out = fma(psw, row, out)`` with per-sample weights), a mean divided by the bag size."""
    out = np.zeros((gathered.shape[0], w.shape[1]), w.dtype)
    for k in range(gathered.shape[1]):
        rows = np.where(mask[:, k, None], w[gathered[:, k]], w.dtype.type(0))
        if psw is None:
            out = out + rows
        else:
            wide = np.float64 if w.dtype == np.float32 else w.dtype
            p = np.where(mask[:, k], psw[:, k], 0).astype(wide)[:, None]
            out = (p * rows.astype(wide) + out.astype(wide)).astype(w.dtype)
    if mode == "mean":
        out = out / np.maximum(sizes, 1)[:, None].astype(w.dtype)
    return out


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """torch.nn.functional.embedding_bag: one ``(B, D)`` row per bag, the ``sum``, ``mean`` or ``max`` of its
    embedding rows (empty bags give zeros; ``padding_idx`` entries are left out of their bag)."""
    if weight.dtype in (dtypes.int64,) and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight  # noqa: A001
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    idx = np.asarray(input._data)
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        off = np.arange(0, idx.size, idx.shape[1]) if idx.shape[1] else np.zeros(idx.shape[0], np.int64)
        include_last_offset = False
        idx = idx.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        off = np.asarray(offsets._data).astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("symgrad has no sparse gradients: use EmbeddingBag(..., sparse=False)")
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError("expected scalar type Long but found " + dtypes.torch_type_name(input.dtype))
    n = weight.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    if max_norm is not None:
        with no_grad():
            _renorm_rows(weight, idx, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    pos, mask, sizes = _bags(idx, off, include_last_offset, padding_idx)
    gathered = idx[pos] if idx.size else np.zeros_like(pos)
    rows = weight[Tensor(gathered)]  # (B, L, D)
    keep = Tensor(mask[..., None])
    if mode == "max":
        best = basic.where(keep, rows, float("-inf")).max(1)[0]
        return _named(basic.where(Tensor(sizes[:, None] > 0), best, 0.0), "EmbeddingBagBackward0")
    psw = None
    if per_sample_weights is not None:
        psw = per_sample_weights[Tensor(pos)] if idx.size else per_sample_weights.new_zeros(pos.shape)
    held = Tensor(_bag_sums(weight._data, gathered, mask, sizes, None if psw is None else psw._data, mode))
    if not (rows.requires_grad or (psw is not None and psw.requires_grad)):
        return held
    # the gradient: each row's cotangent times torch's backward scale (1 / bag size in mean mode; with
    # scale_grad_by_freq 1 / count, where torch's kernel reads the count of the i-th *sorted* index for the i-th
    # smallest distinct index, which it reproduces); the value stays the exact forward ``held``
    scale = np.ones(pos.shape)
    if scale_grad_by_freq and idx.size:
        counts = np.bincount(idx, minlength=n)
        uniq = np.unique(idx)
        per_row = np.ones(n)
        per_row[uniq] = counts[np.sort(idx)[:len(uniq)]]
        scale = scale / per_row[gathered]
    if mode == "mean":
        scale = scale / np.maximum(sizes, 1)[:, None]
    grad_rows = rows
    if mode == "mean" or scale_grad_by_freq:  # the weight's path only: per-sample weights get dot(g, row)
        grad_rows = grad_rows * Tensor(scale[..., None].astype(rows.dtype.np))
    if psw is not None:
        grad_rows = grad_rows * psw.detach().unsqueeze(-1) + rows.detach() * psw.unsqueeze(-1)
    comp = basic.where(keep, grad_rows, 0.0).sum(1)
    out = held + (comp - comp.detach())
    return _named(out, "EmbeddingBagBackward0")


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without materialising the ``(B, L, D)`` lookups in the
    caller; the weight is ``N(0, 1)`` (row ``padding_idx`` zeroed), as torch."""

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                     "sparse", "include_last_offset", "padding_idx"]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = padding_index(padding_idx, num_embeddings, "padding_idx")
        if _weight is None:
            self.weight = Parameter(functional.empty((num_embeddings, embedding_dim), dtype=dtype))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """``N(0, 1)``, then row ``padding_idx`` zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor, offsets: Tensor | None = None,  # noqa: A002
                per_sample_weights: Tensor | None = None) -> Tensor:
        """One row per bag: ``(B, embedding_dim)``."""
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                             self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = "{num_embeddings}, {embedding_dim}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        s += ", mode={mode}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        return s.format(**{k: repr(v) for k, v in self.__dict__.items()})

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (``freeze``: no gradient)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
