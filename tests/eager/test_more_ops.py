"""``eager/more_ops.py`` against torch 2.13: values, dtypes, shapes, grad_fn names, gradients (float64 and float32),
errors and warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
V = RNG.standard_normal(3)


def _both(arrays, dtype):
    ts = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=np.asarray(a).dtype.kind == "f") for a in arrays]
    ss = [sg.tensor(a, dtype=getattr(sg, dtype), requires_grad=np.asarray(a).dtype.kind == "f") for a in arrays]
    return ts, ss


def _first(r):
    return r[0] if isinstance(r, (tuple, list)) else r


CASES = {
    "hstack": (lambda L, x, v: L.hstack([x, x]), [X, V]),
    "hstack 1d": (lambda L, x, v: L.hstack([v, v * 2]), [X, V]),
    "vstack": (lambda L, x, v: L.vstack([x, v]), [X, V]),
    "row_stack": (lambda L, x, v: L.row_stack([v, v]), [X, V]),
    "dstack": (lambda L, x, v: L.dstack([x, x]), [X, V]),
    "dstack 1d": (lambda L, x, v: L.dstack([v, v]), [X, V]),
    "column_stack": (lambda L, x, v: L.column_stack([v, x.T]), [X, V]),
    "atleast_3d": (lambda L, x, v: L.atleast_3d(v), [X, V]),
    "atleast_3d 2d": (lambda L, x, v: L.atleast_3d(x), [X, V]),
    "atleast_2d": (lambda L, x, v: L.atleast_2d(v), [X, V]),
    "meshgrid ij": (lambda L, x, v: L.meshgrid(v, x[:, 0], indexing="ij")[1], [X, V]),
    "meshgrid xy": (lambda L, x, v: L.meshgrid(v, x[:, 0], indexing="xy")[0], [X, V]),
    "diff": (lambda L, x, v: L.diff(x), [X, V]),
    "diff n=2 dim=0": (lambda L, x, v: L.diff(x, n=2, dim=0), [X, V]),
    "diff prepend append": (lambda L, x, v: L.diff(v, prepend=v[:1], append=v * 3), [X, V]),
    "repeat_interleave": (lambda L, x, v: L.repeat_interleave(x, 2), [X, V]),
    "repeat_interleave dim": (lambda L, x, v: x.repeat_interleave(3, dim=0), [X, V]),
    "repeat_interleave tensor": (lambda L, x, v: L.repeat_interleave(x, L.tensor([1, 0, 2]), dim=1), [X, V]),
    "tensor_split sections": (lambda L, x, v: L.tensor_split(x, 3)[1], [X, V]),
    "tensor_split indices": (lambda L, x, v: x.tensor_split([1, 5], dim=0)[1], [X, V]),
    "kron": (lambda L, x, v: L.kron(x, x[:2]), [X, V]),
    "kron 1d 2d": (lambda L, x, v: L.kron(v, x), [X, V]),
    "cross": (lambda L, x, v: L.cross(x, x.flip(0), dim=1), [X, V]),
    "linalg.cross broadcast": (lambda L, x, v: L.linalg.cross(x, v.unsqueeze(0)), [X, V]),
    "addmm": (lambda L, x, v: L.addmm(v, x, x.T[:, :3], beta=0.5, alpha=2.0), [X, V]),
    "addmm beta=0": (lambda L, x, v: x.addmm(x, x.T @ x, beta=0), [X, V]),
    "addmv": (lambda L, x, v: L.addmv(x[:, 0], x, v, alpha=-1.5), [X, V]),
    "baddbmm": (lambda L, x, v: L.baddbmm(x, x.unsqueeze(0), (x.T @ x).unsqueeze(0), beta=2), [X, V]),
    "erfinv": (lambda L, x, v: (x * 0.3).erfinv(), [X, V]),
    "median": (lambda L, x, v: L.median(x), [X, V]),
    "median dim": (lambda L, x, v: x.median(0)[0], [X, V]),
    "median dim keepdim": (lambda L, x, v: L.median(x, 1, keepdim=True).values, [X, V]),
    "nanmedian": (lambda L, x, v: L.nanmedian(x), [X, V]),
    "kthvalue": (lambda L, x, v: L.kthvalue(x, 2, 0)[0], [X, V]),
    "kthvalue keepdim": (lambda L, x, v: x.kthvalue(3, keepdim=True).values, [X, V]),
    "cdist": (lambda L, x, v: L.cdist(x, x[:2] * 2), [X, V]),
    "cdist p=1": (lambda L, x, v: L.cdist(x, x[:2] - 1, p=1), [X, V]),
    "cdist batched": (lambda L, x, v: L.cdist(x.unsqueeze(0), x.unsqueeze(0) + 1), [X, V]),
    "nan_to_num": (lambda L, x, v: L.nan_to_num(L.log(x), nan=0.5, neginf=-7.0), [X, V]),
    "lgamma": (lambda L, x, v: (x.abs() + 0.5).lgamma(), [X, V]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name, dtype):
    fn, arrays = CASES[name]
    ts, ss = _both(arrays, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt, rs = _first(fn(torch, *ts)), _first(fn(sg, *ss))
    assert tuple(rs.shape) == tuple(rt.shape) and str(rs.dtype) == str(rt.dtype)
    rtol = 1e-10 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(rs.detach().numpy(), rt.detach().numpy(), rtol=rtol, atol=rtol)
    assert type(rs.grad_fn).__name__ == type(rt.grad_fn).__name__
    w = RNG.standard_normal(tuple(rt.shape))
    (rt * torch.tensor(w, dtype=rt.dtype)).sum().backward()
    (rs * sg.tensor(w, dtype=rs.dtype)).sum().backward()
    for s, t in zip(ss, ts):
        if t.grad is None:
            assert s.grad is None or not np.any(s.grad.numpy())
        else:
            np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=rtol * 10)


def test_nan_to_num_defaults_and_integers():
    data = [np.nan, np.inf, -np.inf, 1.5]
    for dt in ("float32", "float64"):
        got = sg.nan_to_num(sg.tensor(data, dtype=getattr(sg, dt))).numpy()
        np.testing.assert_array_equal(got, torch.nan_to_num(torch.tensor(data, dtype=getattr(torch, dt))).numpy())
    x = sg.tensor(data, requires_grad=True)
    sg.nan_to_num(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 1])
    assert sg.nan_to_num(sg.arange(3)).dtype == sg.int64


def test_median_picks_lower_middle_and_propagates_nan():
    for data in ([3.0, 1.0, 4.0, 2.0], [5.0, np.nan, 1.0], [2.0, 2.0, 1.0]):
        a, b = sg.median(sg.tensor(data)), torch.median(torch.tensor(data))
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        a, b = sg.median(sg.tensor([data, data]), 1), torch.median(torch.tensor([data, data]), 1)
        np.testing.assert_array_equal(a.values.numpy(), b.values.numpy())
    x = sg.tensor([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    t = torch.tensor(x.numpy())
    np.testing.assert_array_equal(sg.nanmedian(x, 1).values.numpy(), torch.nanmedian(t, 1).values.numpy())
    np.testing.assert_array_equal(sg.nanmedian(x).numpy(), torch.nanmedian(t).numpy())
    r = sg.kthvalue(sg.tensor([3.0, 1.0, 2.0]), 2)
    assert repr(r).startswith("torch.return_types.kthvalue(") and int(r.indices) == 2


@pytest.mark.parametrize("data", [[1, 1, 2, 2], [2, 2, 1, 1], [3, 1, 3, 1, 2], [5.0, 5.0, np.nan, np.nan],
                                  [0.0, -0.0, 1.0], [7], [[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]], [[4, 4], [1, 2]]])
def test_mode_picks_smallest_most_frequent_and_its_last_index(data):
    for dim in range(-np.ndim(data), np.ndim(data)):
        for keepdim in (False, True):
            a = sg.tensor(data).mode(dim, keepdim=keepdim)
            b = torch.tensor(data).mode(dim, keepdim=keepdim)
            np.testing.assert_array_equal(a.values.numpy(), b.values.numpy())
            np.testing.assert_array_equal(np.signbit(a.values.numpy()), np.signbit(b.values.numpy()))
            np.testing.assert_array_equal(a.indices.numpy(), b.indices.numpy())
            assert repr(a).startswith("torch.return_types.mode(") and str(a.values.dtype) == str(b.values.dtype)
    xs = [lib.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]], requires_grad=True) for lib in (sg, torch)]
    outs = [x.mode(1) for x in xs]
    assert type(outs[0].values.grad_fn).__name__ == type(outs[1].values.grad_fn).__name__ == "ModeBackward0"
    for out, w in zip(outs, (sg.tensor([2.0, -1.0]), torch.tensor([2.0, -1.0]))):
        (out.values * w).sum().backward()
    np.testing.assert_array_equal(xs[0].grad.numpy(), xs[1].grad.numpy())


def test_unique_bucketize_searchsorted_histc():
    data = np.array([[3, 1, 2], [3, 3, 0]])
    for kw in ({}, {"return_inverse": True}, {"return_counts": True}, {"return_inverse": True, "return_counts": True},
               {"dim": 0}, {"dim": 1, "return_inverse": True}):
        got, want = sg.unique(sg.tensor(data), **kw), torch.unique(torch.tensor(data), **kw)
        got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert str(a.dtype) == str(b.dtype)
    bounds, vals = [1.0, 3.0, 5.0, 7.0], [[0.5, 3.0, 9.0], [5.0, 6.0, 1.0]]
    for right in (False, True):
        for out_int32 in (False, True):
            a = sg.bucketize(sg.tensor(vals), sg.tensor(bounds), right=right, out_int32=out_int32)
            b = torch.bucketize(torch.tensor(vals), torch.tensor(bounds), right=right, out_int32=out_int32)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert str(a.dtype) == str(b.dtype)
            a = sg.searchsorted(sg.tensor([bounds, bounds]), sg.tensor(vals), right=right)
            b = torch.searchsorted(torch.tensor([bounds, bounds]), torch.tensor(vals), right=right)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(sg.searchsorted(sg.tensor(bounds), 4.0).numpy(),
                                  torch.searchsorted(torch.tensor(bounds), 4.0).numpy())
    x = RNG.standard_normal(200)
    for dt in ("float32", "float64"):
        for kw in ({"bins": 7}, {"bins": 4, "min": -1, "max": 1}):
            a = sg.histc(sg.tensor(x, dtype=getattr(sg, dt)), **kw)
            b = torch.histc(torch.tensor(x, dtype=getattr(torch, dt)), **kw)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert str(a.dtype) == str(b.dtype)
    np.testing.assert_array_equal(sg.repeat_interleave(sg.tensor([2, 0, 1])).numpy(), [0, 0, 2])


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="indexing argument"):
        a, b = sg.meshgrid(sg.arange(2), sg.arange(3))
    assert tuple(a.shape) == (2, 3) and b.dtype == sg.int64


@pytest.mark.parametrize(("call", "match"), [
    (lambda L: L.diff(L.tensor(1.0)), "at least one-dimensional"),
    (lambda L: L.kthvalue(L.ones(3), 4), "out of range"),
    (lambda L: L.linalg.cross(L.ones(2, 2), L.ones(2, 2)), "must have length 3"),
    (lambda L: L.addmm(L.ones(3), L.ones(3), L.ones(3)), "mat1 must be a matrix"),
    (lambda L: L.cdist(L.ones(3, 2), L.ones(2)), "at least 2D"),
    (lambda L: L.tensor_split(L.ones(3), 0), "larger than 0"),
    (lambda L: L.hstack([]), "non-empty"),
])
def test_errors_match_torch(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(torch)
    with pytest.raises(RuntimeError, match=match):
        call(sg)


def test_inplace_methods_report_torch_grad_fn_and_gradients():
    reprs, grads = [], []
    for lib in (sg, torch):
        w = lib.tensor([0.25, -0.5, 2.0], requires_grad=True)
        a, b, c = w * 1, w * 0.5, w + 3
        a.nan_to_num_()
        b.erfinv_()
        c.lgamma_()
        reprs.append([repr(t) for t in (a, b, c)])
        (a + b * 2 + c * 3).sum().backward()
        grads.append(w.grad.numpy())
    assert reprs[0] == reprs[1]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_addmm_input_expands_to_the_product_as_torch():
    """addmm expands ``input`` to the product's shape (not a mutual broadcast): torch's expand errors."""
    def run(t) -> list:
        a, b = t.ones(4, 3), t.ones(3, 4)
        out = []
        for shape in ((5,), (3, 1), (1, 4), (2, 4, 4)):
            try:
                out.append(tuple(t.addmm(t.zeros(*shape), a, b).shape))
            except RuntimeError as e:
                out.append(str(e))
        return out

    assert run(sg) == run(torch)
