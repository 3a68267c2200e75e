"""``torch.save`` / ``torch.load`` through a BytesIO, against torch 2.13: values, classes, shared storages."""
from __future__ import annotations

import io

import torch

import symgrad as sg


def _roundtrip(lib, obj, **kw):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **kw)


def _views_probe(lib):
    x = lib.arange(12.0).reshape(3, 4)
    whole, col, rows, xt, strided = _roundtrip(lib, [x, x[:, 1], x[1:], x.t(), x[::2, ::3]])
    shapes = [(tuple(t.shape), t.stride(), t.is_contiguous()) for t in (col, rows, xt, strided)]
    rows.mul_(-1)  # the views still share one storage after the load
    return shapes, whole.tolist(), col.tolist(), xt.tolist(), strided.tolist()


def test_views_share_their_storage_after_load():
    assert _views_probe(sg) == _views_probe(torch)


def _parameters_probe(lib):
    lin = lib.nn.Linear(3, 2)
    other = lib.nn.Linear(2, 3)
    other.weight = lib.nn.Parameter(lin.weight.t())  # tied (transposed) weights
    m = _roundtrip(lib, lib.nn.ModuleList([lin, other]), weights_only=False)
    with lib.no_grad():
        m[0].weight[0, 1] = 9.0
    sep = _roundtrip(lib, [lib.tensor([1.0, 2.0]), lib.tensor(3.5), lib.ones(2).expand(3, 2), lib.zeros(0)])
    return (m[1].weight[1, 0].item(), type(m[1].weight).__name__, m[1].weight.requires_grad,
            [(t.tolist(), str(t.dtype)) for t in sep])


def test_tied_parameters_stay_tied_and_other_tensors_round_trip():
    assert _parameters_probe(sg) == _parameters_probe(torch)
