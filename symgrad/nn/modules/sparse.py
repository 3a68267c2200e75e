"""``Embedding``: a lookup table of ``num_embeddings`` rows (``padding_idx``, ``max_norm``,
``scale_grad_by_freq``, ``from_pretrained``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...eager import basic, functional
from ...eager.composite import _named
from ...eager.edges import set_edges
from ...eager.grad_mode import no_grad
from ...eager.tensor import Tensor
from .. import init
from ..parameter import Parameter
from .module import Module, _typename

__all__ = ["Embedding", "embedding"]


def _renorm_rows(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: each referenced row whose ``norm_type``-norm exceeds ``max_norm``
    is scaled by ``max_norm / (norm + 1e-7)``, in place and untracked."""
    w = weight._data
    changed = False
    for i in np.unique(idx):
        row = w[i]
        if norm_type == np.inf:
            norm = float(np.max(np.abs(row))) if row.size else 0.0
        elif norm_type == 2:
            norm = float(np.sqrt(np.sum(row * row)))
        else:
            norm = float(np.sum(np.abs(row) ** norm_type) ** (1.0 / norm_type))
        if norm > max_norm:
            row *= max_norm / (norm + 1e-7)
            changed = True
    if changed:
        weight._version.v += 1


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """``weight[input]`` (``EmbeddingBackward0``); no gradient reaches row ``padding_idx``;
    ``scale_grad_by_freq`` divides each row's gradient by its count in ``input``; ``max_norm``
    renormalises the referenced rows of ``weight`` in place first."""
    if sparse:
        raise NotImplementedError("symgrad has no sparse gradients: use Embedding(..., sparse=False)")
    idx = np.asarray(input._data)
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_typename(input)} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        with no_grad():
            _renorm_rows(weight, idx, max_norm, norm_type)
    out = weight[input]
    if not out.requires_grad:
        return out
    if scale_grad_by_freq:
        counts = np.bincount(idx.ravel(), minlength=n)
        scale = 1.0 / counts[idx]
        if padding_idx is not None:
            scale[idx == padding_idx] = 0.0
        held = out.detach()  # the value of ``out``, the gradient scaled: held + s * (out - held)
        out = held + Tensor(scale[..., None].astype(out.dtype.np)) * (out - held)
    elif padding_idx is not None and (idx == padding_idx).any():
        out = basic.where(Tensor(idx[..., None] != padding_idx), out, out.detach())
    return set_edges(_named(out, "EmbeddingBackward0"), weight)


def padding_index(padding_idx: int | None, num_embeddings: int, label: str) -> int | None:
    """``padding_idx`` checked against ``num_embeddings`` as torch's embedding modules check it (``label``: the word
    their message starts with), a negative one counted from the end."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError(f"{label} must be within num_embeddings")
    return num_embeddings + padding_idx if padding_idx < 0 else padding_idx


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked up by index; the weight
    is ``N(0, 1)`` (row ``padding_idx`` zeroed), as torch."""

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_index(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if _weight is None:
            self.weight = Parameter(functional.empty((num_embeddings, embedding_dim), dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        self.sparse = sparse

    def reset_parameters(self) -> None:
        """``N(0, 1)``, then row ``padding_idx`` zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0
            self.weight._version.v += 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """The rows of ``weight`` at ``input`` (shape ``input.shape + (embedding_dim,)``)."""
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s.format(**self.__dict__)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (shared storage; ``freeze``: no gradient)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
