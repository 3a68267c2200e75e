"""kernels.memory: a new program's large outputs find the heap grown and faulted in on its later calls."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from symgrad.core import dtypes
from symgrad.kernels import background, memory

pytestmark = pytest.mark.skipif(not memory.GLIBC, reason="keep_pages acts on glibc's malloc only")

_libc = ctypes.CDLL(None)
_libc.sbrk.restype = ctypes.c_void_p
_libc.sbrk.argtypes = [ctypes.c_ssize_t]


def _brk() -> int:
    return _libc.sbrk(0)


def test_outputs_of_kept_sizes_neither_grow_nor_trim_the_heap():
    sizes = [(dtypes.float64, (1_234_567,)), (dtypes.float64, (1_234_567,))]   # two 9.9 MB outputs, as W2's
    background.wait(60)                # no compile of an earlier test allocating meanwhile
    assert memory.keep_pages(sizes)
    for _ in range(3):                 # a call's outputs, made and dropped: the program break does not move
        brk = _brk()
        outs = [np.ones(1_234_567) for _ in sizes]
        assert _brk() == brk
        del outs
        assert _brk() == brk


def test_sizes_outside_the_threshold_range_or_unknown_are_left_alone():
    assert not memory.keep_pages([(np.float64, (10,))])                  # small: malloc's bins
    assert not memory.keep_pages([(np.float64, (5_000_000,))])           # 40 MB: always mapped
    assert not memory.keep_pages([(np.float64, ("n",))])                 # no concrete size
    assert memory.output_bytes([(dtypes.float32, (2, 3)), (np.int64, ())]) == [24, 8]


def test_the_process_keeps_at_most_keep_max(monkeypatch):
    monkeypatch.setattr(memory, "_kept", memory.KEEP_MAX - 1000)
    assert not memory.keep_pages([(np.float64, (100_000,))])
    assert memory._kept == memory.KEEP_MAX - 1000
