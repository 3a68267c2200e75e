"""symgrad.nn.utils.rnn against torch.nn.utils.rnn 2.13: padded / packed values, reprs, gradients, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as trnn

import symgrad as sg
import symgrad.nn.utils.rnn as srnn

RNG = np.random.default_rng(5)
ARRAYS = [RNG.standard_normal((n, 2)) for n in (3, 1, 2)]


def _seqs():
    return ([sg.tensor(a, requires_grad=True) for a in ARRAYS], [torch.tensor(a, requires_grad=True) for a in ARRAYS])


def _grads(out_s, out_t, xs, ts):
    w = RNG.standard_normal(tuple(out_t.shape))
    (out_s * sg.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("kw", [{}, {"batch_first": True, "padding_value": -1.5}, {"padding_side": "left"}])
def test_pad_sequence(kw):
    xs, ts = _seqs()
    out, ref = srnn.pad_sequence(xs, **kw), trnn.pad_sequence(ts, **kw)
    assert repr(out) == repr(ref)
    _grads(out, ref, xs, ts)
    lengths = [3, 1, 2]
    if kw.get("padding_side") != "left":
        bf = kw.get("batch_first", False)
        got = srnn.unpad_sequence(out, sg.tensor(lengths), bf)
        for a, b in zip(got, trnn.unpad_sequence(ref, torch.tensor(lengths), bf)):
            assert repr(a) == repr(b)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_roundtrip(batch_first):
    xs, ts = _seqs()
    ps, pt = srnn.pad_sequence(xs, batch_first), trnn.pad_sequence(ts, batch_first)
    ks = srnn.pack_padded_sequence(ps, [3, 1, 2], batch_first=batch_first, enforce_sorted=False)
    kt = trnn.pack_padded_sequence(pt, [3, 1, 2], batch_first=batch_first, enforce_sorted=False)
    assert repr(ks) == repr(kt)
    out, lens = srnn.pad_packed_sequence(ks, batch_first=batch_first, padding_value=0.5, total_length=4)
    ref, lent = trnn.pad_packed_sequence(kt, batch_first=batch_first, padding_value=0.5, total_length=4)
    assert repr(out) == repr(ref) and repr(lens) == repr(lent)
    _grads(out, ref, xs, ts)
    for a, b in zip(srnn.unpack_sequence(ks), trnn.unpack_sequence(kt)):
        assert repr(a) == repr(b)
    sorted_s = srnn.pack_sequence([xs[0], xs[2], xs[1]])
    sorted_t = trnn.pack_sequence([ts[0], ts[2], ts[1]])
    assert repr(sorted_s) == repr(sorted_t)


def _err(fs, ft):
    with pytest.raises(Exception) as want:
        ft()
    with pytest.raises(type(want.value)) as got:
        fs()
    assert str(got.value) == str(want.value)


def test_errors():
    xs, ts = _seqs()
    _err(lambda: srnn.pad_sequence(xs, padding_side="middle"), lambda: trnn.pad_sequence(ts, padding_side="middle"))
    _err(lambda: srnn.pad_sequence([]), lambda: trnn.pad_sequence([]))
    _err(lambda: srnn.pack_padded_sequence(srnn.pad_sequence(xs), [3, 1, 2]),
         lambda: trnn.pack_padded_sequence(trnn.pad_sequence(ts), [3, 1, 2]))
    ks = srnn.pack_sequence([xs[0], xs[2], xs[1]])
    kt = trnn.pack_sequence([ts[0], ts[2], ts[1]])
    _err(lambda: srnn.pad_packed_sequence(ks, total_length=2), lambda: trnn.pad_packed_sequence(kt, total_length=2))
    assert sg.nn.utils.rnn.PackedSequence is srnn.PackedSequence
