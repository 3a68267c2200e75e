"""kernels.memory: a new program's large outputs find the heap grown and faulted in on its later calls."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from symgrad.core import dtypes
from symgrad.kernels import memory

pytestmark = pytest.mark.skipif(not memory.GLIBC, reason="keep_pages acts on glibc's malloc only")

_CHECK = r"""
import ctypes, json
import numpy as np
from symgrad.kernels import memory
libc = ctypes.CDLL(None)
libc.sbrk.restype = ctypes.c_void_p
libc.sbrk.argtypes = [ctypes.c_ssize_t]
n = 1_234_567                          # two 9.9 MB outputs, as W2's at 10**6
kept = memory.keep_pages([(np.float64, (n,)), (np.float64, (n,))])
moved = []
for _ in range(3):                     # a call's outputs, made and dropped: does the program break move?
    brk = libc.sbrk(0)
    outs = [np.ones(n) for _ in range(2)]
    grown = libc.sbrk(0) != brk
    del outs
    moved.append([grown, libc.sbrk(0) != brk])
print(json.dumps({"kept": kept, "moved": moved}))
"""


def test_outputs_of_kept_sizes_neither_grow_nor_trim_the_heap():
    """In a new process (a long-lived one's heap is anyone's): the outputs come from the kept pages."""
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res == {"kept": True, "moved": [[False, False]] * 3}, res


def test_sizes_outside_the_threshold_range_or_unknown_are_left_alone():
    assert not memory.keep_pages([(np.float64, (10,))])                  # small: malloc's bins
    assert not memory.keep_pages([(np.float64, (5_000_000,))])           # 40 MB: always mapped
    assert not memory.keep_pages([(np.float64, ("n",))])                 # no concrete size
    assert memory.output_bytes([(dtypes.float32, (2, 3)), (np.int64, ())]) == [24, 8]


def test_the_process_keeps_at_most_keep_max(monkeypatch):
    monkeypatch.setattr(memory, "_kept", memory.KEEP_MAX - 1000)
    assert not memory.keep_pages([(np.float64, (100_000,))])
    assert memory._kept == memory.KEEP_MAX - 1000
