"""``Tensor``'s methods: view, reshape, permute, expand, split and friends."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...core.dtypes import DType
from ...ops import REGISTRY, normalize_dims
from .. import composite as _composite
from .. import saved_attrs as _saved_attrs
from ..base import _infer_shape, _shape_args, _viewable
from ..basic import _multi_views, _pieces, _reshape
from ..record import _apply

if TYPE_CHECKING:
    from ..tensor import Tensor


class ShapeMethods:
    """``Tensor``'s view, reshape, permute, expand, split and friends."""

    __slots__ = ()

    def view(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], DType):
            raise NotImplementedError("view(dtype) is not supported")
        new = _infer_shape(_shape_args(shape), self.numel())
        if not _viewable(self._data, new):
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.")
        return _reshape(self, new, "ViewBackward0")

    def reshape(self, *shape: Any) -> Tensor:
        new = _infer_shape(_shape_args(shape), self.numel())
        # torch's reshape: a view of a contiguous tensor, an alias of a strided one where the strides
        # allow it, else a copy behind ``UnsafeViewBackward0``
        if not _viewable(self._data, new):
            fn = "UnsafeViewBackward0"
        else:
            fn = "ViewBackward0" if self._data.flags.c_contiguous else "ReshapeAliasBackward0"
        return _reshape(self, new, fn)

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def ravel(self) -> Tensor:
        """The elements as a 1-d tensor: a view of a contiguous tensor, else of a contiguous copy."""
        return self.contiguous().view(-1)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return _reshape(self, (1,), "ViewBackward0")
        s, e = normalize_dims(start_dim, self.ndim)[0], normalize_dims(end_dim, self.ndim)[0]
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        sh = self.shape
        return self.reshape(sh[:s] + (math.prod(sh[s:e + 1]),) + sh[e + 1:])

    def squeeze(self, dim: Any = None) -> Tensor:
        sh = self.shape
        if dim is None:
            fn, dims = "SqueezeBackward0", tuple(i for i, s in enumerate(sh) if s == 1)
        else:
            fn = "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"
            dims = tuple(d for d in normalize_dims(dim, self.ndim) if self.ndim and sh[d] == 1)
        return _reshape(self, tuple(s for i, s in enumerate(sh) if i not in dims), fn)

    def unsqueeze(self, dim: int) -> Tensor:
        d = normalize_dims(dim, self.ndim + 1)[0]
        sh = list(self.shape)
        sh.insert(d, 1)
        out = _reshape(self, tuple(sh), "UnsqueezeBackward0")
        if out._node is not None and (dim < 0 or (d > 0 and sh[d - 1] == 1)):  # the dim as torch's grad_fn shows
            _saved_attrs.note(out, dim=dim)
        return out

    def permute(self, *dims: Any) -> Tensor:
        dims = _shape_args(dims)
        if len(dims) != self.ndim:
            raise RuntimeError(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                f"desired ordering of dimensions i.e. input.dim() = {self.ndim} is not equal to len(dims) = "
                f"{len(dims)}")
        nd = tuple(normalize_dims(d, self.ndim)[0] for d in dims)
        if len(set(nd)) != len(nd):
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return _apply(REGISTRY["permute"], self, dims=nd, fn="PermuteBackward0")

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        if self.ndim == 0:
            return _apply(REGISTRY["permute"], self, dims=(), fn="TransposeBackward0")
        d0, d1 = normalize_dims(dim0, self.ndim)[0], normalize_dims(dim1, self.ndim)[0]
        dims = list(range(self.ndim))
        dims[d0], dims[d1] = dims[d1], dims[d0]
        return _apply(REGISTRY["permute"], self, dims=tuple(dims), fn="TransposeBackward0")

    swapaxes = transpose

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return _apply(REGISTRY["permute"], self, dims=tuple(reversed(range(self.ndim))), fn="TBackward0")

    @property
    def T(self) -> Tensor:  # noqa: N802
        return _apply(REGISTRY["permute"], self, dims=tuple(reversed(range(self.ndim))), fn="PermuteBackward0")

    @property
    def mT(self) -> Tensor:  # noqa: N802
        if self.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self) -> Tensor:  # noqa: N802
        """The conjugate transpose of a matrix (symgrad's dtypes are real: its transpose)."""
        if self.ndim != 2:
            raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.ndim}-D tensor." + (" For batches of matrices, consider using tensor.mH"
                                                          if self.ndim > 2 else ""))
        return self.transpose(0, 1)

    @property
    def mH(self) -> Tensor:  # noqa: N802
        """The conjugate transpose of the last two dims (symgrad's dtypes are real: ``mT``)."""
        if self.ndim < 2:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    def expand(self, *sizes: Any) -> Tensor:
        sizes = _shape_args(sizes)
        if len(sizes) < self.ndim:
            raise RuntimeError(
                f"expand(torch.FloatTensor{{{list(self.shape)}}}, size={list(sizes)}): the number of sizes provided "
                f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({self.ndim})")
        lead = len(sizes) - self.ndim
        out = []
        for i, s in enumerate(sizes):
            cur = self.shape[i - lead] if i >= lead else 1
            if s == -1:
                if i < lead:
                    raise RuntimeError("The expanded size of the tensor (-1) isn't allowed in a leading, "
                                       "non-existing dimension 0")
                s = cur
            if cur != 1 and cur != s:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at non-singleton "
                    f"dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(self.shape)}")
            out.append(s)
        return _apply(REGISTRY["expand"], self, shape=tuple(out))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        return self.expand(*shape)

    def repeat(self, *sizes: Any) -> Tensor:
        """Tile the tensor ``sizes[i]`` times along dim ``i`` (new leading dims first), a copy."""
        reps = _shape_args(sizes)
        if len(reps) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                               "tensor")
        padded = (1,) * (len(reps) - self.ndim) + tuple(self.shape)
        out = [s * r for s, r in zip(padded, reps)]
        if any(r < 0 for r in reps):
            bad = next(o for o in out if o < 0)
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {out}")
        return _apply(REGISTRY["repeat"], self, repeats=reps)

    def split(self, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
        """Views of consecutive pieces along ``dim``: of ``split_size`` each (the last may be shorter),
        or of the given sizes."""
        if self.ndim == 0:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        d = normalize_dims(dim, self.ndim)[0]
        n = self.shape[d]
        if isinstance(split_size_or_sections, (builtins.int, np.integer)):
            size = builtins.int(split_size_or_sections)
            if size < 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
            if size == 0 and n != 0:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            sizes = [0] if size == 0 else [builtins.min(size, n - i) for i in range(0, builtins.max(n, 1), size)]
            return _pieces(self, d, sizes, "SplitBackward0")
        sizes = [builtins.int(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
        return _pieces(self, d, sizes, "SplitWithSizesBackward0")

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """At most ``chunks`` views of ``ceil(size / chunks)`` elements along ``dim``."""
        if self.ndim == 0:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        d = normalize_dims(dim, self.ndim)[0]
        n = self.shape[d]
        size = -(-n // chunks)
        if n == 0:
            return _pieces(self, d, [0] * chunks, "SplitWithSizesBackward0")
        return self.split(size, d)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """The views ``self.select(dim, i)`` for each ``i``."""
        if self.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        d = normalize_dims(dim, self.ndim)[0]
        lead = (("s", None, None, None),) * d
        return _multi_views([_apply(REGISTRY["index"], self, index=lead + (("i", i),), fn="UnbindBackward0")
                             for i in range(self.shape[d])], "UnbindBackward0")

    # composites of registry ops (``eager/composite.py``), as methods
    flip = _composite.flip
    fliplr = _composite.fliplr
    flipud = _composite.flipud
    roll = _composite.roll
    tril = _composite.tril
    triu = _composite.triu
    diagonal = _composite.diagonal
    diag = _composite.diag
    trace = _composite.trace
    movedim = _composite.movedim
    moveaxis = _composite.moveaxis
    swapdims = _composite.swapdims
    tile = _composite.tile
    unflatten = _composite.unflatten
    bmm = _composite.bmm
