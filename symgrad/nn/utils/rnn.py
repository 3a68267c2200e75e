"""``torch.nn.utils.rnn``: ``pad_sequence`` / ``unpad_sequence`` and ``PackedSequence`` with ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``, ``unpack_sequence`` (writes and index reads, so gradients flow; the
grad_fn names are torch's). The RNN modules take a ``PackedSequence`` as torch's do."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ...eager import functional
from ...eager.base import TensorBase, make_tensor
from ...eager.composite import _named
from ...eager.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
           "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence_(NamedTuple):  # noqa: N801  (torch's name)
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """The time steps of a batch of sequences packed row after row (``batch_sizes[t]`` sequences are still running
    at step ``t``), with the permutation that sorted the batch by length."""

    __slots__ = ()

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def __repr__(self) -> str:
        return (f"PackedSequence(data={self.data!r}, batch_sizes={self.batch_sizes!r}, "
                f"sorted_indices={self.sorted_indices!r}, unsorted_indices={self.unsorted_indices!r})")

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The sequence with ``data`` converted (indices stay int64)."""
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def double(self) -> PackedSequence:
        """The sequence with float64 ``data``."""
        return type(self)(self.data.double(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def float(self) -> PackedSequence:  # noqa: A003
        """The sequence with float32 ``data``."""
        return type(self)(self.data.float(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)


def _ints(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if isinstance(x, TensorBase) else x, dtype=np.int64)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation."""
    if permutation is None:
        return None
    perm = _ints(permutation)
    out = np.empty_like(perm)
    out[perm] = np.arange(perm.size)
    return make_tensor(out)


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """The sequences (``(L_i, *)``) stacked into ``(L_max, B, *)`` (``batch_first``: ``(B, L_max, *)``), padded
    with ``padding_value`` on the ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences.unbind(0) if isinstance(sequences, TensorBase) else sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in seqs)
    rest = tuple(seqs[0].shape[1:])
    shape = (len(seqs), longest, *rest) if batch_first else (longest, len(seqs), *rest)
    out = functional.full(shape, padding_value, dtype=seqs[0].dtype)
    for i, s in enumerate(seqs):
        n = s.shape[0]
        rows = slice(0, n) if padding_side == "right" else slice(longest - n, longest)
        if batch_first:
            out[i, rows] = s
        else:
            out[rows, i] = s
    return out


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a right-padded batch, each cut to its length."""
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    longest = padded.shape[1]
    out = []
    for seq, n in zip(padded.unbind(0), _ints(lengths).tolist()):
        out.append(seq[make_tensor(np.arange(longest) < n)])
    return out


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """A padded batch packed by time step (``enforce_sorted``: ``lengths`` must be decreasing, else the batch is
    sorted by length first)."""
    lens = _ints(lengths)
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                               "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = make_tensor(order.astype(np.int64))
        input = input.index_select(0 if batch_first else 1, sorted_indices)  # noqa: A001
    if lens.size and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    steps = input if not batch_first else input.transpose(0, 1)
    if lens.size and lens[0] > steps.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to {lens[0]} (got "
                           f"{steps.shape[0]})")
    batch_sizes = np.array([(lens > t).sum() for t in range(int(lens[0]) if lens.size else 0)], dtype=np.int64)
    t_idx = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    b_idx = np.concatenate([np.arange(b) for b in batch_sizes]) if batch_sizes.size else np.zeros(0, np.int64)
    data = _named(steps[make_tensor(t_idx), make_tensor(b_idx)], "PackPaddedSequenceBackward0")
    return PackedSequence(data, make_tensor(batch_sizes), sorted_indices, invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The padded batch of a ``PackedSequence`` (in the original order) and the sequence lengths."""
    data, batch_sizes = sequence.data, _ints(sequence.batch_sizes)
    max_len = batch_sizes.size
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    bsz = int(batch_sizes[0]) if batch_sizes.size else 0
    t_idx = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    b_idx = np.concatenate([np.arange(b) for b in batch_sizes]) if batch_sizes.size else np.zeros(0, np.int64)
    out = functional.full((max_len, bsz, *data.shape[1:]), padding_value, dtype=data.dtype)
    out[make_tensor(t_idx), make_tensor(b_idx)] = data
    lengths = np.array([(batch_sizes > b).sum() for b in range(bsz)], dtype=np.int64)
    if batch_first:
        out = out.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        out = out.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[_ints(sequence.unsorted_indices)]
    return out, make_tensor(lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    lengths = make_tensor(np.array([s.shape[0] for s in sequences], dtype=np.int64))
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences of a ``PackedSequence``, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
