"""``RNN`` / ``GRU`` / ``LSTM`` and their cells against torch 2.13: seeded parameters bit-identical (names, order,
initialisation), outputs and final states, gradients of the input, the initial states and every parameter
(float64 to rtol 1e-12; float32 to the conftest tolerance: torch's CPU LSTM runs oneDNN's kernel), grad_fn
names, reprs, inter-layer dropout masks, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(2)
X = RNG.standard_normal((4, 2, 3))   # (time, batch, features)


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-12, "atol": 1e-13} if dtype == "float64" else {}


def _seeded(make, dtype: str):
    torch.manual_seed(0)
    tm = make(torch.nn)
    sg.manual_seed(0)
    sm = make(sg.nn)
    names = [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in sm.named_parameters()] == names
    for (n, tp), (_, sp) in zip(tm.named_parameters(), sm.named_parameters()):
        assert_close(sp, tp, rtol=0, atol=0, what=f"init {n}")  # torch's RNG stream, bit for bit
    assert repr(sm) == repr(tm)
    return tm.to(getattr(torch, dtype)), sm.to(getattr(sg, dtype))


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(tm, sm, args: list, dtype: str, what: str) -> None:
    targs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) if a is not None else None
             for a in args]
    sargs = [sg.tensor(a, dtype=getattr(sg, dtype), requires_grad=True) if a is not None else None for a in args]
    if len(args) == 3:  # LSTM-style (x, (h0, c0))
        to, so = tm(targs[0], (targs[1], targs[2])), sm(sargs[0], (sargs[1], sargs[2]))
    else:
        to, so = tm(*targs), sm(*sargs)
    tflat, sflat = _flat(to), _flat(so)
    assert len(tflat) == len(sflat)
    for k, (t, s) in enumerate(zip(tflat, sflat)):
        assert_close(s, t, what=f"{what} output {k}", **_tol(dtype))
        assert s.grad_fn.name() == t.grad_fn.name(), f"{what} output {k}"
    ups = [RNG.standard_normal(tuple(t.shape)) for t in tflat]
    torch.autograd.backward(tflat, [torch.tensor(u, dtype=t.dtype) for u, t in zip(ups, tflat)])
    sg.autograd.backward(sflat, [sg.tensor(u, dtype=s.dtype) for u, s in zip(ups, sflat)])
    for k, (t, s) in enumerate(zip(targs, sargs)):
        if t is not None:
            assert_close(s.grad, t.grad, what=f"{what} arg {k} grad", **_tol(dtype))
    for (n, tp), (_, sp) in zip(tm.named_parameters(), sm.named_parameters()):
        assert_close(sp.grad, tp.grad, what=f"{what} {n}.grad", **_tol(dtype))


H = {1: RNG.standard_normal((1, 2, 4)), 2: RNG.standard_normal((2, 2, 4)), 4: RNG.standard_normal((4, 2, 4))}

CASES = [
    ("RNN", lambda nn: nn.RNN(3, 4), [X]),
    ("RNN relu 2 layers h0", lambda nn: nn.RNN(3, 4, 2, nonlinearity="relu"), [X, H[2]]),
    ("RNN batch_first no bias", lambda nn: nn.RNN(3, 4, bias=False, batch_first=True), [X]),
    ("GRU", lambda nn: nn.GRU(3, 4), [X, H[1]]),
    ("GRU bidirectional 2 layers", lambda nn: nn.GRU(3, 4, num_layers=2, bidirectional=True), [X, H[4]]),
    ("LSTM", lambda nn: nn.LSTM(3, 4), [X, H[1], H[1] * 0.5]),
    ("LSTM 2 layers batch_first", lambda nn: nn.LSTM(3, 4, 2, batch_first=True), [X]),
    ("LSTM bidirectional", lambda nn: nn.LSTM(3, 4, bidirectional=True), [X, H[2], H[2] * 0.3]),
    ("LSTM proj", lambda nn: nn.LSTM(3, 4, proj_size=2), [X, H[1][..., :2], H[1]]),
    ("LSTM proj bidirectional 2 layers", lambda nn: nn.LSTM(3, 4, 2, bidirectional=True, proj_size=3), [X]),
    ("RNN unbatched", lambda nn: nn.RNN(3, 4), [X[:, 0], H[1][:, 0]]),
    ("LSTM unbatched", lambda nn: nn.LSTM(3, 4, batch_first=True), [X[:, 0], H[1][:, 0], H[1][:, 1]]),
]


@pytest.mark.parametrize("name,make,args", CASES, ids=[c[0] for c in CASES])
def test_rnn_matches_torch(name, make, args):
    tm, sm = _seeded(make, "float64")
    _compare(tm, sm, args, "float64", name)


CELLS = [
    ("RNNCell", lambda nn: nn.RNNCell(3, 4), [X[0], H[1][0]]),
    ("RNNCell relu no bias", lambda nn: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), [X[0]]),
    ("GRUCell", lambda nn: nn.GRUCell(3, 4), [X[0], H[1][0]]),
    ("GRUCell unbatched", lambda nn: nn.GRUCell(3, 4), [X[0, 0]]),
    ("LSTMCell", lambda nn: nn.LSTMCell(3, 4), [X[0], H[1][0], H[2][1]]),
    ("LSTMCell unbatched", lambda nn: nn.LSTMCell(3, 4), [X[0, 1], H[1][0, 0], H[2][1, 1]]),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,make,args", CELLS, ids=[c[0] for c in CELLS])
def test_cells_match_torch(name, make, args, dtype):
    tm, sm = _seeded(make, dtype)
    _compare(tm, sm, args, dtype, name)


def test_float32_lstm_and_gru():
    for make in (lambda nn: nn.LSTM(3, 4, 2), lambda nn: nn.GRU(3, 4, batch_first=True)):
        tm, sm = _seeded(make, "float32")
        _compare(tm, sm, [X], "float32", "float32")


def test_inter_layer_dropout_masks_match_torch():
    """Training with dropout between layers draws torch's masks from the same generator state; eval does not
    drop."""
    def make(nn):
        return nn.LSTM(3, 4, num_layers=3, dropout=0.4)
    tm, sm = _seeded(make, "float32")
    x = X.astype(np.float32)
    torch.manual_seed(5)
    sg.manual_seed(5)
    to, so = tm(torch.tensor(x)), sm(sg.tensor(x))
    for t, s in zip(_flat(to), _flat(so)):
        assert_close(s, t)
    tm.eval()
    sm.eval()
    for t, s in zip(_flat(tm(torch.tensor(x))), _flat(sm(sg.tensor(x)))):
        assert_close(s, t)


def test_module_surface():
    tm, sm = _seeded(lambda nn: nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2), "float32")
    assert [[tuple(p.shape) for p in ws] for ws in sm.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in tm.all_weights]
    assert list(sm.state_dict()) == list(tm.state_dict())
    sm.flatten_parameters()
    sd = {k: sg.tensor(v.numpy() * 2) for k, v in tm.state_dict().items()}
    assert repr(sm.load_state_dict(sd)) == "<All keys matched successfully>"
    for lib in (torch, sg):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.RNN(3, 4, dropout=0.5)
        assert "non-zero dropout expects num_layers greater than 1" in str(w[0].message)
    for make in (lambda nn: nn.RNN(3, 4, 2, "relu", False, True, 0.5, True), lambda nn: nn.GRU(2, 3, dropout=0.0),
                 lambda nn: nn.RNNCell(3, 4, nonlinearity="relu", bias=False), lambda nn: nn.LSTMCell(2, 2)):
        assert repr(make(sg.nn)) == repr(make(torch.nn))


def _o(t, *shape, dtype=None):
    return t.ones(*shape, dtype=dtype)


@pytest.mark.parametrize("fn", [
    lambda t: t.nn.RNNCell(3, 4)(_o(t, 2, 5)),
    lambda t: t.nn.RNNCell(3, 4)(_o(t, 2, 3), _o(t, 3, 4)),
    lambda t: t.nn.GRUCell(3, 4)(_o(t, 2, 3), _o(t, 2, 5)),
    lambda t: t.nn.LSTMCell(3, 4)(_o(t, 2, 3), (_o(t, 2, 4), _o(t, 1, 4))),
    lambda t: t.nn.RNNCell(3, 4, nonlinearity="x")(_o(t, 3)),
    lambda t: t.nn.GRUCell(3, 4)(_o(t, 2, 3, 1)),
    lambda t: t.nn.LSTM(3, 4)(_o(t, 5, 2, 3), (_o(t, 1, 2, 4), _o(t, 1, 3, 4))),
    lambda t: t.nn.GRU(3, 4)(_o(t, 5, 2, 3), _o(t, 2, 2, 4)),
    lambda t: t.nn.RNN(3, 4)(_o(t, 5, 2, 3, 1)),
    lambda t: t.nn.RNN(3, 4)(_o(t, 5, 2, 2)),
    lambda t: t.nn.RNN(3, 4)(_o(t, 5, 2, 3, dtype=t.float64)),
    lambda t: t.nn.RNN(3, 4)(_o(t, 5, 3), _o(t, 1, 1, 4)),
    lambda t: t.nn.LSTM(3, 4)(_o(t, 5, 3), (_o(t, 1, 1, 4), _o(t, 1, 4))),
    lambda t: t.nn.GRU(3, 4, proj_size=2),
    lambda t: t.nn.RNN(3, 4, nonlinearity="x"),
    lambda t: t.nn.LSTM(3, 4, proj_size=4),
    lambda t: t.nn.RNN(3, 4, dropout=2),
    lambda t: t.nn.RNN(3, 0),
    lambda t: t.nn.LSTM(3, 4, bias=1),
])
def test_errors_match_torch(fn):
    assert_same_error(lambda: fn(sg), lambda: fn(torch))


def test_compiled_lstm_matches_eager():
    """The time loop unrolls under ``sg.value_and_grad`` (through ``functional_call``): value and parameter
    gradients are the eager ones (one call: the numpy tier)."""
    from symgrad.nn.utils import functional_call
    sg.manual_seed(1)
    lstm = sg.nn.LSTM(3, 4, batch_first=True)
    x = X.astype(np.float32)
    params = {k: p.detach().numpy() for k, p in lstm.named_parameters()}

    def loss_fn(p, xb):
        out, (h, c) = functional_call(lstm, p, (xb,))
        return (out ** 2).sum() + c.sum()

    value, grads = sg.value_and_grad(loss_fn)(params, x)
    out, (h, c) = lstm(sg.tensor(x))
    loss = (out ** 2).sum() + c.sum()
    loss.backward()
    assert_close(value, loss.detach().numpy(), rtol=1e-6)
    for k, p in lstm.named_parameters():
        assert_close(grads[k], p.grad.numpy(), rtol=1e-5, atol=1e-6, what=k)


LENGTHS = [2, 4, 1]
PACKED = [
    ("LSTM", lambda nn: nn.LSTM(3, 4, batch_first=True), False),
    ("GRU 2 layers h0", lambda nn: nn.GRU(3, 4, 2, batch_first=True), True),
    ("RNN relu bidirectional", lambda nn: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True, batch_first=True),
     False),
    ("LSTM bidirectional 2 layers h0", lambda nn: nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True), True),
    ("LSTM proj", lambda nn: nn.LSTM(3, 4, proj_size=2, batch_first=True), False),
]


@pytest.mark.parametrize("sort", [False, True], ids=["unsorted", "sorted"])
@pytest.mark.parametrize("name,make,with_h0", PACKED, ids=[c[0] for c in PACKED])
def test_packed_sequence_input_matches_torch(name, make, with_h0, sort):
    """A ``PackedSequence`` (sorted by ``pack_padded_sequence`` or given in decreasing length) runs as torch's
    packed layers: packed outputs, final states in the batch's order, grad_fn names, every gradient."""
    tm, sm = _seeded(make, "float64")
    lengths = sorted(LENGTHS, reverse=True) if sort else LENGTHS
    x = RNG.standard_normal((3, 4, 3))
    tx, sx = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, torch.tensor(lengths), batch_first=True, enforce_sorted=sort)
    sp = sg.nn.utils.rnn.pack_padded_sequence(sx, sg.tensor(lengths), batch_first=True, enforce_sorted=sort)
    targs, sargs = [tp], [sp]
    if with_h0:
        dirs = tm.num_layers * (2 if tm.bidirectional else 1)
        hs = [RNG.standard_normal((dirs, 3, 4)) for _ in range(2 if name.startswith("LSTM") else 1)]
        th = [torch.tensor(h, requires_grad=True) for h in hs]
        shs = [sg.tensor(h, requires_grad=True) for h in hs]
        targs.append(tuple(th) if len(hs) == 2 else th[0])
        sargs.append(tuple(shs) if len(hs) == 2 else shs[0])
    to, so = tm(*targs), sm(*sargs)
    assert type(so[0]).__name__ == "PackedSequence"
    assert so[0].batch_sizes.tolist() == to[0].batch_sizes.tolist()
    assert repr(so[0].sorted_indices) == repr(to[0].sorted_indices)
    tflat = [to[0].data, *_flat(to[1])]
    sflat = [so[0].data, *_flat(so[1])]
    for k, (t, s) in enumerate(zip(tflat, sflat)):
        assert_close(s, t, what=f"{name} output {k}", **_tol("float64"))
        assert s.grad_fn.name() == t.grad_fn.name(), f"{name} output {k}"
    ups = [RNG.standard_normal(tuple(t.shape)) for t in tflat]
    torch.autograd.backward(tflat, [torch.tensor(u) for u in ups])
    sg.autograd.backward(sflat, [sg.tensor(u) for u in ups])
    assert_close(sx.grad, tx.grad, what=f"{name} input grad", **_tol("float64"))
    if with_h0:
        for s, t in zip(shs, th):
            assert_close(s.grad, t.grad, what=f"{name} h0 grad", **_tol("float64"))
    for (n, tparam), (_, sparam) in zip(tm.named_parameters(), sm.named_parameters()):
        assert_close(sparam.grad, tparam.grad, what=f"{name} {n}.grad", **_tol("float64"))
    padded_t, lens_t = torch.nn.utils.rnn.pad_packed_sequence(to[0], batch_first=True)
    padded_s, lens_s = sg.nn.utils.rnn.pad_packed_sequence(so[0], batch_first=True)
    assert_close(padded_s, padded_t.detach(), **_tol("float64"))
    assert lens_s.tolist() == lens_t.tolist() == lengths


def test_packed_sequence_errors_match_torch():
    def run(t):
        rnn = t.nn.GRU(3, 4)
        packed = t.nn.utils.rnn.pack_sequence([t.ones(3, 3), t.ones(2, 3)])
        return rnn(packed, t.zeros(1, 3, 4))
    assert_same_error(lambda: run(sg), lambda: run(torch))


def test_float32_lstm_packed_equal_lengths_runs_as_padded():
    """torch's float32 LSTM runs a packed batch without padding through oneDNN (packed data a view of the padded
    output); unequal lengths take the packed layers (CatBackward0)."""
    for lengths in ([3, 3], [3, 2]):
        def run(t, lengths=lengths):
            t.manual_seed(0)
            lstm = t.nn.LSTM(3, 4, num_layers=2)
            seqs = [t.ones(n, 3) * (k + 1) * 0.3 for k, n in enumerate(lengths)]
            out, (h, c) = lstm(t.nn.utils.rnn.pack_sequence(seqs))
            (out.data.sum() + c.sum()).backward()
            return out.data, h, c, lstm.weight_ih_l0.grad
        got, ref = run(sg), run(torch)
        for s, t in zip(got, ref):
            assert_close(s, t.detach())
        for s, t in zip(got[:3], ref[:3]):
            assert s.grad_fn.name() == t.grad_fn.name(), lengths
