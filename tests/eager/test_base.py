"""``torch.tensor``'s dtype inference from numbers, numpy scalars and tensors in sequences, against torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

CASES = [
    [np.float64(1.5)], [np.int16(3), np.int16(4)], [np.float32(1), 2.0], [np.float64(1), 2], [1, np.float64(2)],
    [[np.int32(1)], [np.int32(2)]], [np.bool_(True)], [np.float16(1)], (np.int64(3),), [np.uint8(3)],
    [np.float64(1), np.float32(2)], [np.int16(1), 2.5], [np.int64(2), np.float16(1)], [np.uint8(1), np.int8(1)],
    [True, np.int8(3)], [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)], np.int16(3),
    np.float32(2), np.bool_(False), [1.0, 2], [[1, 2], [3, 4]], [], [[True, False]],
]


@pytest.mark.parametrize("data", CASES, ids=[repr(c) for c in CASES])
def test_tensor_infers_torchs_dtype(data):
    want, got = torch.tensor(data), sg.tensor(data)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert str(sg.as_tensor(data).dtype) == str(torch.as_tensor(data).dtype)


def test_sequences_of_tensors_keep_their_dtype():
    assert sg.tensor([sg.tensor(1.0, dtype=sg.float64), sg.tensor(2.0)]).dtype is sg.float64
    assert sg.tensor([sg.tensor(1, dtype=sg.int16)]).dtype is sg.int16
    with _default(sg.float64):
        assert sg.tensor([1.0, np.float32(2)]).dtype is sg.float64


class _default:
    def __init__(self, dt):
        self.dt = dt

    def __enter__(self):
        self.old = sg.get_default_dtype()
        sg.set_default_dtype(self.dt)

    def __exit__(self, *exc):
        sg.set_default_dtype(self.old)


def _version_and_base_probe(lib):
    a = lib.zeros(4)
    b = a[1:]
    c = b.view(3, 1)
    before = (repr(a._version), a._version == 0, a._version + 1, f"{a._version:2d}", a._version < 1)
    b.add_(1)
    c[0] = 2
    x = lib.ones(2, 3, requires_grad=True)
    bases = (b._base is a, c._base is a, a._base, a.clone()._base, b._is_view(), a._is_view(),
             a.detach()._base, x[0]._base is x, x.T._base is x, x.contiguous()._base)
    return before, (str(a._version), int(c._version), b._version == 2, b._version != 2), bases


def test_version_reads_as_an_int_and_views_know_their_base():
    assert _version_and_base_probe(sg) == _version_and_base_probe(torch)
