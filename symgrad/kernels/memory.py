"""Keeping the pages of a program's large outputs: the numbers of its second and later calls, not page faults.

glibc's malloc serves a block of 128 KiB to 32 MiB by ``mmap`` until the first such block is freed, which raises its
threshold: later blocks of that size come from the heap. A heap top larger than twice the threshold is returned to
the system when freed, so a program with two 8 MB outputs (W2 at n=10^6) grows the heap, page-faults 16 MB and
trims it on every call: measured, 10-12 ms a call of its numba kernel against 4.5 ms without the faults, and its
second numpy-tier call 1.4-1.6x the later ones where only one output is large.

``keep_pages`` (called once per new program, before its first run) allocates and frees one block of about the
outputs' total size, up to 32 MiB (mapped and unmapped: the threshold rises to its size, and the trim threshold to
twice that), then allocates blocks of the outputs' sizes, which now come from the heap, touches and frees them: the
heap keeps them, faulted in, for the next calls' outputs. This is what a caching allocator does (torch's, XLA's);
the memory kept is what glibc's own thresholds allow, and bounded by ``KEEP_MAX`` of outputs for the process.
Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

#: sizes glibc's dynamic threshold moves between (the smallest block ``mmap`` serves at first, the largest the
#: threshold can rise to: larger blocks are always mapped and unmapped, and keeping them is not ours to do)
MMAP_MIN, MMAP_MAX = 128 << 10, 32 << 20
#: bytes of output blocks kept for the whole process
KEEP_MAX = 256 << 20
#: what the raised threshold exceeds the outputs' total by (the heap's free top, small blocks made meanwhile)
SLACK = 1 << 20

GLIBC = hasattr(os, "confstr") and "CS_GNU_LIBC_VERSION" in os.confstr_names
_kept = 0


def output_bytes(specs: Sequence[tuple[Any, tuple]]) -> list[int]:
    """Bytes of each output in ``specs`` ((dtype, shape) pairs; a dtype may be symgrad's, with ``.np``) whose size
    is concrete."""
    sizes = []
    for dt, shape in specs:
        try:
            sizes.append(int(np.prod(shape, dtype=np.int64)) * np.dtype(getattr(dt, "np", dt)).itemsize)
        except (TypeError, ValueError):
            continue
    return sizes


def keep_pages(specs: Sequence[tuple[Any, tuple]]) -> bool:
    """Leave malloc holding touched pages for outputs of these sizes (see the module's text); whether it did."""
    global _kept
    sizes = [n for n in output_bytes(specs) if MMAP_MIN <= n <= MMAP_MAX]
    total = sum(sizes)
    if not GLIBC or not sizes or total > 2 * MMAP_MAX - SLACK or _kept + total > KEEP_MAX:
        return False
    raise_to = min(MMAP_MAX, total + SLACK)
    block = np.empty(raise_to, np.uint8)
    del block                                      # mapped, then unmapped: the thresholds rise
    blocks = [np.empty(n, np.uint8) for n in sizes]
    for b in blocks:
        b[::4096] = 0                              # from the heap now: faulted in once, here
    del blocks                                     # a free top under the trim threshold: kept
    _kept += total
    return True
