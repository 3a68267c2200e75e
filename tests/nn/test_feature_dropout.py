"""Channel-wise dropout (symgrad/nn/feature_dropout.py, nn.Dropout1d/2d/3d) against torch 2.13: the same masks
from the same seed, the generator left where torch leaves it, gradients, grad_fn names, warnings and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg


@pytest.mark.parametrize("fn, shape", [("dropout2d", (4, 6, 3, 3)), ("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)),
                                       ("dropout3d", (2, 3, 2, 2, 2)), ("dropout3d", (3, 2, 2, 2)),
                                       ("dropout2d", (4, 6, 5))])
def test_masks_values_gradients(fn, shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    torch.manual_seed(3)
    sg.manual_seed(3)
    xt, xs = torch.tensor(a, requires_grad=True), sg.tensor(a, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt, ys = getattr(torch.nn.functional, fn)(xt, 0.4), getattr(sg.nn.functional, fn)(xs, 0.4)
    (yt * 2).sum().backward()
    (ys * 2).sum().backward()
    assert np.array_equal(ys.detach().numpy(), yt.detach().numpy())
    assert np.array_equal(xs.grad.numpy(), xt.grad.numpy())
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    assert np.array_equal(sg.rand(3).numpy(), torch.rand(3).numpy())  # the same draws were consumed


def test_modules_inplace_eval_and_messages():
    x = np.random.default_rng(0).standard_normal((4, 6, 3, 3)).astype(np.float32)
    for p in (0.3, 0.0, 1.0):
        torch.manual_seed(0)
        sg.manual_seed(0)
        mt, ms = torch.nn.Dropout2d(p), sg.nn.Dropout2d(p)
        assert repr(ms) == repr(mt)
        assert np.array_equal(ms(sg.tensor(x)).numpy(), mt(torch.tensor(x)).numpy())
        assert np.array_equal(ms.eval()(sg.tensor(x)).numpy(), mt.eval()(torch.tensor(x)).numpy())
    torch.manual_seed(0)
    sg.manual_seed(0)
    at, as_ = torch.tensor(x[0, :, 0]), sg.tensor(x[0, :, 0])
    torch.nn.functional.dropout1d(at, 0.5, inplace=True)
    sg.nn.functional.dropout1d(as_, 0.5, inplace=True)
    assert np.array_equal(as_.numpy(), at.numpy())
    assert repr(sg.nn.Dropout3d(0.2, inplace=True)) == repr(torch.nn.Dropout3d(0.2, inplace=True))
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout"):
            lib.nn.functional.dropout2d(lib.zeros(2, 3, 4))
    msgs = []
    for lib in (torch, sg):
        with pytest.raises(RuntimeError) as e:
            lib.nn.functional.dropout1d(lib.zeros(2, 3, 4, 5))
        with pytest.raises(ValueError) as v:
            lib.nn.functional.dropout2d(lib.zeros(2, 3, 4, 5), 1.5)
        msgs.append((str(e.value), str(v.value)))
    assert msgs[0] == msgs[1]
