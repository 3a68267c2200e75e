"""Pooling, interpolation, pixel shuffles and padding (symgrad/nn/pooling_ops.py, symgrad/nn/padding.py,
symgrad/nn/modules/pooling.py) against torch 2.13: values, gradients, indices, grad_fn names, reprs, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg
import symgrad.nn.functional as F
from symgrad.kernels import program

TF = torch.nn.functional


def _compare(name, shape, dtype=np.float64, exact=False, ties=False, seed=0, exact_grad=True, **kw):
    """``name`` of torch.nn.functional and of symgrad's on the same input: value, shape, grad_fn name, the
    input's gradient for a random cotangent, and the indices when the op returns them. ``exact``: bit for bit
    (the gradient too unless ``exact_grad`` is False: overlapping windows may add up in another order);
    ``ties``: small integers as input (many equal maxima)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    a = (np.round(a * 1.5) if ties else a).astype(dtype)
    xt, xs = torch.tensor(a, requires_grad=True), sg.tensor(a, requires_grad=True)
    yt, ys = getattr(TF, name)(xt, **kw), getattr(F, name)(xs, **kw)
    if isinstance(yt, tuple):
        (yt, it), (ys, is_) = yt, ys
        assert is_.dtype == sg.int64 and np.array_equal(is_.numpy(), it.numpy())
    assert tuple(ys.shape) == tuple(yt.shape)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(g))
    ys.backward(sg.tensor(g))
    rtol, atol = (1e-12, 1e-13) if dtype == np.float64 else (1e-5, 1e-6)
    if exact:
        assert np.array_equal(ys.detach().numpy(), yt.detach().numpy())
        if exact_grad:
            assert np.array_equal(xs.grad.numpy(), xt.grad.numpy())
        else:
            np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol)
        return
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name, shape, kw", [
    ("max_pool2d", (2, 3, 9, 8), dict(kernel_size=2)),
    ("max_pool2d", (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
    ("max_pool2d", (2, 3, 9, 8), dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), padding=1,
                                      return_indices=True)),
    ("max_pool2d", (3, 9, 8), dict(kernel_size=3, return_indices=True)),
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, ceil_mode=True, return_indices=True)),
    ("max_pool3d", (1, 2, 5, 6, 5), dict(kernel_size=2, padding=1, return_indices=True)),
    ("adaptive_max_pool2d", (2, 3, 9, 8), dict(output_size=(4, 5), return_indices=True, exact_grad=False)),
    ("adaptive_max_pool2d", (2, 3, 9, 8), dict(output_size=(None, 3))),
    ("adaptive_max_pool1d", (2, 3, 9), dict(output_size=4, return_indices=True)),
])
def test_max_pooling_with_ties(name, shape, kw):
    """The gradient goes to the first maximum of each window (row by row), as torch's kernel: bit for bit on
    inputs full of ties; indices are flat positions in each input plane."""
    _compare(name, shape, np.float32, exact=True, ties=True, **kw)


@pytest.mark.parametrize("kw", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), divisor_override=5),
])
def test_avg_pool2d_float32_bitwise(kw):
    """The window is added element by element in torch's order, then divided: the same float32 bits."""
    _compare("avg_pool2d", (2, 3, 9, 8), np.float32, exact=True, **kw)


@pytest.mark.parametrize("name, shape, kw", [
    ("avg_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool3d", (1, 2, 5, 6, 5), dict(kernel_size=2, padding=1)),
    ("adaptive_avg_pool2d", (2, 3, 9, 8), dict(output_size=(4, 5))),
    ("adaptive_avg_pool2d", (2, 3, 9, 8), dict(output_size=1)),
    ("adaptive_avg_pool2d", (2, 3, 9, 8), dict(output_size=(None, 3))),
    ("adaptive_avg_pool1d", (2, 3, 9), dict(output_size=4)),
    ("adaptive_avg_pool3d", (2, 3, 5, 6, 7), dict(output_size=(2, None, 4))),
    ("adaptive_avg_pool3d", (2, 3, 5, 6, 7), dict(output_size=1)),
    ("adaptive_max_pool3d", (2, 3, 5, 6, 7), dict(output_size=(2, 3, 4), return_indices=True)),
    ("interpolate", (2, 3, 5, 6, 7), dict(size=(2, 3, 4), mode="area")),
    ("interpolate", (2, 3, 6, 4), dict(scale_factor=1.7)),
    ("interpolate", (2, 3, 6, 4), dict(size=(13, 5), mode="bilinear")),
    ("interpolate", (2, 3, 6, 4), dict(size=(13, 5), mode="bilinear", align_corners=True)),
    ("interpolate", (2, 3, 6, 4), dict(scale_factor=(0.5, 3), mode="bilinear")),
    ("interpolate", (2, 3, 6, 4), dict(size=(5, 7), mode="nearest-exact")),
    ("interpolate", (2, 3, 6, 4), dict(size=(3, 4), mode="area")),
    ("interpolate", (2, 3, 6, 4), dict(size=(13, 5), mode="bicubic")),
    ("interpolate", (2, 3, 6, 4), dict(scale_factor=(0.5, 1.7), mode="bicubic", align_corners=True)),
    ("interpolate", (2, 3, 6), dict(scale_factor=2.2, mode="linear")),
    ("interpolate", (1, 2, 3, 4, 3), dict(scale_factor=1.5, mode="trilinear")),
    ("lp_pool2d", (2, 3, 7, 6), dict(norm_type=2, kernel_size=3, stride=2)),
    ("lp_pool2d", (2, 3, 7, 6), dict(norm_type=float("inf"), kernel_size=(2, 3), ceil_mode=True)),
    ("lp_pool1d", (2, 3, 9), dict(norm_type=2.0, kernel_size=3)),
    ("pixel_shuffle", (2, 12, 3, 4), dict(upscale_factor=2)),
    ("pixel_unshuffle", (2, 3, 4, 6), dict(downscale_factor=2)),
])
def test_pooling_and_interpolation_float64(name, shape, kw):
    _compare(name, shape, **kw)


@pytest.mark.parametrize("kw", [dict(size=(13, 5), mode="bilinear"), dict(scale_factor=2), dict(size=(5, 7)),
                                dict(size=(13, 5), mode="bicubic")])
def test_interpolate_float32(kw):
    _compare("interpolate", (2, 3, 6, 4), np.float32, **kw)


@pytest.mark.parametrize("mode, shape, pad", [
    ("reflect", (2, 3, 4, 5), (1, 2, 3, 1)),
    ("reflect", (3, 6), (2, 3)),
    ("replicate", (2, 3, 6), (0, 2)),
    ("replicate", (1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2)),
    ("circular", (2, 3, 4, 5), (1, 2, 3, 1)),
])
def test_pad_modes(mode, shape, pad):
    _compare("pad", shape, pad=pad, mode=mode)


MODULES = [
    "MaxPool2d(2)", "MaxPool2d(3, 2, 1, dilation=2, return_indices=True, ceil_mode=True)", "MaxPool1d(3)",
    "AvgPool2d(2)", "AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=2)",
    "AvgPool1d(3)", "AdaptiveAvgPool2d((5, 7))", "AdaptiveAvgPool2d((None, 7))", "AdaptiveAvgPool1d(3)",
    "AdaptiveMaxPool2d(2)", "Upsample(scale_factor=2)", "Upsample(size=(4, 5), mode='bilinear', align_corners=True)",
    "UpsamplingBilinear2d(scale_factor=2)", "UpsamplingNearest2d(size=3)", "PixelShuffle(2)", "PixelUnshuffle(2)",
    "Fold((4, 5), 2)", "Unfold(3, padding=1)", "ZeroPad2d((1, 2, 0, 1))", "ConstantPad1d(2, 3.5)",
    "ReflectionPad2d(1)", "ReplicationPad1d((1, 2))", "CircularPad2d(1)", "LPPool2d(2, 3, stride=2)",
    "LPPool1d(1.5, 3)", "MaxUnpool2d(2)", "MaxUnpool1d(3, stride=2, padding=1)", "AdaptiveAvgPool3d((2, None, 3))",
    "AdaptiveMaxPool3d(2)", "ReflectionPad3d(1)", "ZeroPad3d((1, 2, 0, 1, 1, 1))", "ConstantPad3d(1, 2.0)",
    "ReplicationPad3d(1)", "CircularPad3d(1)",
]


@pytest.mark.parametrize("spec", MODULES)
def test_module_reprs(spec):
    assert repr(eval("sg.nn." + spec)) == repr(eval("torch.nn." + spec))


def test_modules_forward():
    x = np.random.default_rng(0).standard_normal((2, 4, 6, 6)).astype(np.float32)
    for spec in ["MaxPool2d(3, 2, 1, return_indices=True)", "AvgPool2d(2)", "AdaptiveAvgPool2d((2, 3))",
                 "Upsample(scale_factor=2, mode='bilinear')", "PixelShuffle(2)", "ReflectionPad2d((1, 2, 0, 1))",
                 "ReplicationPad3d((1, 0, 2, 1, 0, 1))", "CircularPad3d(1)", "ConstantPad3d(1, 2.0)"]:
        yt, ys = eval("torch.nn." + spec)(torch.tensor(x)), eval("sg.nn." + spec)(sg.tensor(x))
        for a, b in zip(yt if isinstance(yt, tuple) else (yt,), ys if isinstance(ys, tuple) else (ys,)):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-6)


def _errors(lib, case):
    nnf = lib.nn.functional
    x = lib.zeros(2, 3, 4, 5)
    cases = {
        "max_rank": lambda: nnf.max_pool2d(lib.zeros(8), 2),
        "max1d_rank": lambda: nnf.max_pool1d(x, 2),
        "max_pad": lambda: nnf.max_pool2d(x, 3, padding=2),
        "max_stride": lambda: nnf.max_pool2d(x, 2, stride=0),
        "max_small": lambda: nnf.max_pool2d(lib.zeros(1, 1, 2, 2), 3),
        "avg_rank": lambda: nnf.avg_pool2d(lib.zeros(2, 3, 4, 5, 6), 2),
        "avg1d_rank": lambda: nnf.avg_pool1d(x, 2),
        "avg_pad": lambda: nnf.avg_pool2d(x, 2, padding=2),
        "avg_small": lambda: nnf.avg_pool2d(lib.zeros(1, 1, 2, 2), 3),
        "adaptive_rank": lambda: nnf.adaptive_avg_pool2d(lib.zeros(4), 2),
        "adaptive1d_rank": lambda: nnf.adaptive_avg_pool1d(x, 2),
        "adaptive_max_rank": lambda: nnf.adaptive_max_pool2d(lib.zeros(4, 5), 2),
        "adaptive3d_rank": lambda: nnf.adaptive_avg_pool3d(lib.zeros(4, 5), 2),
        "adaptive_max3d_rank": lambda: nnf.adaptive_max_pool3d(lib.zeros(4, 5), 2),
        "interp_align": lambda: nnf.interpolate(x, scale_factor=2, align_corners=True),
        "interp_mode": lambda: nnf.interpolate(x, mode="foo", scale_factor=2),
        "interp_linear_rank": lambda: nnf.interpolate(x, mode="linear", scale_factor=2),
        "interp_bicubic_rank": lambda: nnf.interpolate(lib.zeros(1, 2, 3), mode="bicubic", scale_factor=2),
        "interp_none": lambda: nnf.interpolate(x),
        "interp_both": lambda: nnf.interpolate(x, size=(2, 3), scale_factor=2),
        "shuffle": lambda: nnf.pixel_shuffle(x, 2),
        "pad_size": lambda: nnf.pad(x, (3, 3), mode="reflect"),
        "pad_reflect": lambda: nnf.pad(x, (0, 0, 4, 0), mode="reflect"),
        "pad_mode": lambda: nnf.pad(x, (1, 1), mode="foo"),
        "pad_value": lambda: nnf.pad(x, (1, 1, 1, 1), mode="replicate", value=2),
    }
    try:
        cases[case]()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", [
    "max_rank", "max1d_rank", "max_pad", "max_stride", "max_small", "avg_rank", "avg1d_rank", "avg_pad",
    "avg_small", "adaptive_rank", "adaptive1d_rank", "adaptive_max_rank", "adaptive3d_rank", "adaptive_max3d_rank",
    "interp_align", "interp_mode",
    "interp_linear_rank", "interp_bicubic_rank", "interp_none", "interp_both", "shuffle", "pad_size",
    "pad_reflect", "pad_mode", "pad_value"])
def test_errors_match_torch(case):
    expected = _errors(torch, case)
    assert expected is not None
    assert _errors(sg, case) == expected


def test_compiled_pooling_indices_and_gradient(monkeypatch):
    """Under ``sg.compile`` the indices are traced (a lookup of each tap's position), not the first call's values
    (the numpy tier: a numba compile of this kernel takes ~20 s)."""
    monkeypatch.setattr(program, "BACKEND", "numpy")

    @sg.compile
    def f(x):
        v, i = F.max_pool2d(x, 3, 2, 1, return_indices=True, ceil_mode=True)
        w, j = F.adaptive_max_pool2d(x, (4, 3), return_indices=True)
        return v.sum() + w.sum(), i, j

    grad = sg.grad(lambda x: (F.max_pool2d(x, 2) ** 2).sum() + F.interpolate(x, scale_factor=2, mode="bilinear").sum())
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((2, 2, 7, 6))
        _, i, j = f(x)
        xt = torch.tensor(x, requires_grad=True)
        assert np.array_equal(i, TF.max_pool2d(xt, 3, 2, 1, return_indices=True, ceil_mode=True)[1].numpy())
        assert np.array_equal(j, TF.adaptive_max_pool2d(xt, (4, 3), return_indices=True)[1].numpy())
        ((TF.max_pool2d(xt, 2) ** 2).sum() + TF.interpolate(xt, scale_factor=2, mode="bilinear").sum()).backward()
        np.testing.assert_allclose(grad(x), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, kw", [("upsample", dict(scale_factor=2, mode="bilinear")),
                                      ("upsample_nearest", dict(size=(3, 5))),
                                      ("upsample_bilinear", dict(scale_factor=2))])
def test_deprecated_upsample_helpers(name, kw):
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4))
    outs = []
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            outs.append(getattr(lib.nn.functional, name)(lib.tensor(x), **kw).numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12)


@pytest.mark.parametrize("nd, shape, kw", [(2, (2, 3, 6, 7), dict(kernel_size=2)),
                                           (2, (2, 3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
                                           (1, (2, 3, 9), dict(kernel_size=3, stride=2)),
                                           (2, (3, 6, 6), dict(kernel_size=2))])
def test_max_unpool(nd, shape, kw):
    """Values at torch's positions (overlapping windows repeat an index: the value is written once), gradients
    gathered back, torch's grad_fn names."""
    a = np.round(np.random.default_rng(0).standard_normal(shape) * 1.5)
    res = []
    for lib in (torch, sg):
        x = lib.tensor(a, requires_grad=True)
        y, i = getattr(lib.nn.functional, f"max_pool{nd}d")(x, return_indices=True, **kw)
        u = getattr(lib.nn.functional, f"max_unpool{nd}d")(y, i, **kw, output_size=list(x.shape[-nd:]))
        (u * lib.tensor(np.arange(u.numel()).reshape(u.shape) * 1.0)).sum().backward()
        res.append((u.detach().numpy(), x.grad.numpy(), type(u.grad_fn).__name__))
    assert np.array_equal(res[1][0], res[0][0]) and np.array_equal(res[1][1], res[0][1]) and res[1][2] == res[0][2]


def test_max_unpool_output_size_error():
    msgs = []
    for lib in (torch, sg):
        y, i = lib.nn.functional.max_pool2d(lib.randn(1, 1, 4, 4), 2, return_indices=True)
        assert tuple(lib.nn.MaxUnpool2d(2)(y, i).shape) == (1, 1, 4, 4)
        with pytest.raises(ValueError) as e:
            lib.nn.functional.max_unpool2d(y, i, 2, output_size=(9, 9))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("name, kw", [("max_pool2d", dict(kernel_size=2)),
                                      ("max_pool2d", dict(kernel_size=3, stride=1, padding=1)),
                                      ("adaptive_max_pool2d", dict(output_size=3))])
def test_max_pooling_nan_takes_the_last_nan(name, kw):
    """torch's kernels update the maximum at every NaN: the index (and gradient) of a NaN window is its last NaN."""
    a = np.array([[[[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, np.nan, 1.0], [0.0, 1.0, 2.0, 3.0], [9.0, 9.0, 1.0, 1.0]]]])
    res = []
    for lib in (torch, sg):
        x = lib.tensor(a, requires_grad=True)
        v, i = getattr(lib.nn.functional, name)(x, return_indices=True, **kw)
        (v * lib.tensor(np.arange(v.numel()).reshape(v.shape) + 1.0)).sum().backward()
        res.append((np.isnan(v.detach().numpy()), i.numpy(), x.grad.numpy()))
    for p, q in zip(res[0], res[1]):
        assert np.array_equal(q, p)
