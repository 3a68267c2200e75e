"""Convolutions (symgrad/nn/conv_ops.py, symgrad/nn/modules/conv.py) against torch 2.13: values, input / weight /
bias gradients, grad_fn names, shapes, reprs, seeded initialisation, error texts, a CNN training run and a
compiled forward + gradient."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import symgrad as sg
import symgrad.nn.functional as F
from symgrad.kernels import program

TF = torch.nn.functional


def _compare(tf, sf, shapes, dtype=np.float64, seed=0, **kw):
    """Run ``tf`` (torch) and ``sf`` (symgrad) on the same random inputs; compare value, shape, grad_fn name and
    the gradients of every input for a random cotangent."""
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    ss = [sg.tensor(a, requires_grad=True) for a in arrs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = tf(*ts, **kw)
        ys = sf(*ss, **kw)
    assert tuple(ys.shape) == tuple(yt.shape)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(g))
    ys.backward(sg.tensor(g))
    rtol, atol = (1e-12, 1e-13) if dtype == np.float64 else (2e-5, 2e-6)
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    for a, b in zip(ts, ss):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name, shapes, kw", [
    ("conv2d", [(2, 3, 8, 7), (4, 3, 3, 3), (4,)], {}),
    ("conv2d", [(2, 4, 9, 8), (6, 2, 3, 2), (6,)], dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)),
    ("conv2d", [(2, 4, 9, 8), (6, 2, 2, 3)], dict(padding="same", dilation=(1, 2), groups=2)),
    ("conv2d", [(3, 6, 5), (2, 3, 2, 2)], dict(padding="valid", stride=2)),  # unbatched
    ("conv1d", [(2, 3, 10), (4, 3, 4), (4,)], dict(stride=2, padding=1)),
    ("conv1d", [(3, 10), (4, 3, 4)], dict(padding="same")),
    ("conv3d", [(2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (3,)], dict(stride=(1, 2, 1), padding=1)),
    ("conv_transpose2d", [(2, 4, 5, 6), (4, 3, 3, 2), (6,)], dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("conv_transpose1d", [(2, 4, 5), (4, 3, 3), (3,)], dict(stride=3, padding=2, dilation=2)),
    ("conv_transpose3d", [(1, 2, 3, 4, 3), (2, 3, 2, 2, 3)], dict(stride=2)),
])
def test_conv_float64(name, shapes, kw):
    _compare(getattr(TF, name), getattr(F, name), shapes, **kw)


def test_conv2d_float32():
    """float32 to rtol 2e-5 (torch runs oneDNN, symgrad one BLAS product per image)."""
    _compare(TF.conv2d, F.conv2d, [(4, 3, 10, 10), (5, 3, 3, 3), (5,)], dtype=np.float32, padding=1)


def test_unfold_fold():
    kw = dict(dilation=(1, 2), padding=1, stride=(2, 1))
    _compare(lambda x: TF.unfold(x, (2, 3), **kw), lambda x: F.unfold(x, (2, 3), **kw), [(2, 3, 7, 8)])
    _compare(lambda x: TF.fold(x, (7, 8), (2, 3), **kw), lambda x: F.fold(x, (7, 8), (2, 3), **kw), [(2, 18, 24)])


MODULES = [
    "Conv2d(3, 8, 3)",
    "Conv2d(3, 8, (3, 5), stride=2, padding=1, dilation=2, bias=False, padding_mode='reflect')",
    "Conv1d(3, 6, 3, groups=3, padding='same')",
    "Conv2d(3, 8, 3, padding='valid')",
    "Conv3d(1, 2, 3)",
    "ConvTranspose2d(3, 8, 3, stride=2, output_padding=1)",
    "ConvTranspose1d(4, 2, 3, groups=2, dilation=2)",
]


@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_and_seeded_init(spec):
    torch.manual_seed(0)
    a = eval("torch.nn." + spec)
    sg.manual_seed(0)
    b = eval("sg.nn." + spec)
    assert repr(b) == repr(a)
    pa, pb = list(a.named_parameters()), list(b.named_parameters())
    assert [n for n, _ in pb] == [n for n, _ in pa]
    for (_, x), (_, y) in zip(pa, pb):
        assert y.dtype == sg.float32 and np.array_equal(y.detach().numpy(), x.detach().numpy())


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes(mode):
    torch.manual_seed(1)
    a = torch.nn.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode=mode).double()
    sg.manual_seed(1)
    b = sg.nn.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode=mode).double()
    x = np.random.default_rng(2).standard_normal((2, 2, 5, 6))
    xt, xs = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    yt, ys = a(xt), b(xs)
    (yt ** 2).sum().backward()
    (ys ** 2).sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.weight.grad.numpy(), a.weight.grad.numpy(), rtol=1e-12)


def test_conv_transpose_output_size():
    torch.manual_seed(0)
    a = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    sg.manual_seed(0)
    b = sg.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5)).astype(np.float32)
    yt, ys = a(torch.tensor(x), output_size=[8, 10]), b(sg.tensor(x), output_size=[8, 10])
    assert tuple(ys.shape) == tuple(yt.shape) == (1, 3, 8, 10)
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError) as et:
        a(torch.tensor(x), output_size=[12, 10])
    with pytest.raises(ValueError) as es:
        b(sg.tensor(x), output_size=[12, 10])
    assert str(es.value) == str(et.value)


def _errors(lib, fn):
    x = lib.zeros(1, 2, 5, 5)
    w = lib.zeros(2, 2, 3, 3)
    nnf = lib.nn.functional
    cases = {
        "rank": lambda: nnf.conv2d(lib.zeros(5, 5), w),
        "channels": lambda: nnf.conv2d(lib.zeros(1, 3, 5, 5), w),
        "kernel": lambda: nnf.conv2d(lib.zeros(1, 2, 2, 2), w),
        "conv1d_rank": lambda: nnf.conv1d(x, w[:, :, 0]),
        "stride": lambda: nnf.conv2d(x, w, stride=0),
        "padding": lambda: nnf.conv2d(x, w, padding=-1),
        "same_strided": lambda: nnf.conv2d(x, w, stride=2, padding="same"),
        "bias": lambda: nnf.conv2d(x, w, bias=lib.zeros(3)),
        "groups_w": lambda: nnf.conv2d(x, lib.zeros(3, 1, 3, 3), groups=2),
        "transpose_channels": lambda: nnf.conv_transpose2d(x, lib.zeros(3, 2, 3, 3)),
        "output_padding": lambda: nnf.conv_transpose2d(x, w, output_padding=2),
        "fold_blocks": lambda: nnf.fold(lib.zeros(2, 12, 5), (3, 3), 2),
        "fold_channels": lambda: nnf.fold(lib.zeros(2, 13, 4), (3, 3), 2),
        "module_groups": lambda: lib.nn.Conv2d(3, 8, 3, groups=2),
        "module_out_groups": lambda: lib.nn.Conv2d(4, 6, 3, groups=4),
        "module_same": lambda: lib.nn.Conv2d(3, 8, 3, padding="same", stride=2),
        "module_padding": lambda: lib.nn.Conv2d(3, 8, 3, padding="foo"),
        "module_mode": lambda: lib.nn.Conv2d(3, 8, 3, padding_mode="foo"),
        "dtype_weight": lambda: nnf.conv2d(x.double(), w),
        "dtype_bias": lambda: nnf.conv2d(x, w, lib.zeros(2, dtype=lib.float64)),
        "dtype_module": lambda: lib.nn.Conv2d(2, 3, 3)(x.double()),
        "dtype_transpose": lambda: nnf.conv_transpose2d(x.double(), w),
    }
    try:
        cases[fn]()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, _sets_sorted(str(e))
    return None


def _sets_sorted(message: str) -> str:
    """A message with each printed set of strings in sorted order: torch prints its literal sets (``padding_mode
    must be one of {...}``) in an order that depends on the process's string hashes and its ``.pyc``."""
    def one(m: re.Match) -> str:
        return "{" + ", ".join(sorted(m.group(1).split(", "))) + "}"
    return re.sub(r"\{('[^{}]*')\}", one, message)


@pytest.mark.parametrize("case", ["rank", "channels", "kernel", "conv1d_rank", "stride", "padding", "same_strided",
                                  "bias", "groups_w", "transpose_channels", "output_padding", "fold_blocks",
                                  "fold_channels", "module_groups", "module_out_groups", "module_same",
                                  "module_padding", "module_mode", "dtype_weight", "dtype_bias", "dtype_module",
                                  "dtype_transpose"])
def test_errors_match_torch(case):
    expected = _errors(torch, case)
    assert expected is not None
    assert _errors(sg, case) == expected


def _train(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 3))
    x, y = lib.randn(8, 1, 8, 8), lib.randint(0, 3, (8,))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(f"{loss.item():.4f}")
    return losses, model[0].weight.detach().numpy()


def test_cnn_training_prints_torchs_losses():
    (lt, wt), (ls, ws) = _train(torch), _train(sg)
    assert ls == lt
    np.testing.assert_allclose(ws, wt, rtol=1e-5, atol=1e-6)


def test_compiled_conv_value_and_grad(monkeypatch):
    monkeypatch.setattr(program, "BACKEND", "numpy")  # one call; never a numba compile in this test
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)

    def loss(x, w, b):
        y = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2)
        return (F.avg_pool2d(y, 3, 1, 1) ** 2).sum()

    value, (gw, gb) = sg.value_and_grad(loss, argnums=(1, 2))(x, w, b)
    wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    yt = TF.max_pool2d(TF.relu(TF.conv2d(torch.tensor(x), wt, bt, padding=1)), 2)
    lt = (TF.avg_pool2d(yt, 3, 1, 1) ** 2).sum()
    lt.backward()
    np.testing.assert_allclose(value, lt.item(), rtol=1e-12)
    np.testing.assert_allclose(gw, wt.grad.numpy(), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gb, bt.grad.numpy(), rtol=1e-11, atol=1e-12)


def test_conv_double_backward():
    """The gradient is a graph of registry ops: differentiate it again (create_graph), as torch."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    res = []
    for lib in (torch, sg):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, stride=2, padding=1)
        (gx,) = lib.autograd.grad((y ** 3).sum(), xt, create_graph=True)
        (gw,) = lib.autograd.grad((gx ** 2).sum(), wt)
        res.append(gw.detach().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-11)
