"""``eager/toplevel_more.py`` (``logaddexp2 frexp ldexp nextafter addbmm gradient``, thread and determinism
settings) and ``nn.init.sparse_`` against torch 2.13: values, gradients, grad_fn names, reprs, errors. The functions
are taken from their module (the top-level ``sg.<name>`` spelling is the lead's ``symgrad/__init__.py``)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg
import symgrad.eager.toplevel_more as M

RNG = np.random.default_rng(0)
A = RNG.standard_normal(7).astype(np.float32)
B = RNG.standard_normal(7).astype(np.float32)
A[1] = B[1]
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)


def test_logaddexp2() -> None:
    a, b = A.copy(), B.copy()
    a[0] = b[0] = np.inf
    a[2], b[2] = -np.inf, -np.inf
    res = []
    for lib, f in ((torch, torch.logaddexp2), (sg, M.logaddexp2)):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        o = f(x, y)
        o.sum().backward()
        res.append((o.detach().numpy(), x.grad.numpy(), y.grad.numpy(), type(o.grad_fn).__name__))
    t, s = res
    np.testing.assert_allclose(s[0], t[0], rtol=1e-6)
    finite = np.isfinite(a)  # torch's gradient at two equal infinities is NaN, symgrad's 0.5
    np.testing.assert_allclose(s[1][finite], t[1][finite], rtol=1e-6)
    np.testing.assert_allclose(s[2][finite], t[2][finite], rtol=1e-6)
    assert s[3] == t[3] == "Logaddexp2Backward0"


def test_frexp() -> None:
    x = np.array([1.5, -8.0, 0.0, 3e-40, 1e30], np.float32)
    t, s = torch.frexp(torch.tensor(x)), M.frexp(sg.tensor(x))
    assert repr(t) == repr(s)
    assert np.array_equal(t.mantissa.numpy(), s.mantissa.numpy()) and np.array_equal(t.exponent.numpy(),
                                                                                     s.exponent.numpy())
    m, e = s
    assert str(e.dtype) == "torch.int32"
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point dtypes"):
        M.frexp(sg.tensor([1, 2]))


def test_ldexp_and_nextafter() -> None:
    e = np.array([1, -2, 3, 0, 5, 2, 1])
    out = []
    for lib, ld, na in ((torch, torch.ldexp, torch.nextafter), (sg, M.ldexp, M.nextafter)):
        x = lib.tensor(A, requires_grad=True)
        o = ld(x, lib.tensor(e))
        o.sum().backward()
        out.append((o.detach().numpy(), x.grad.numpy(), type(o.grad_fn).__name__,
                    na(lib.tensor(A), lib.tensor(B)).numpy(), repr(ld(lib.tensor([1.0, 2.0]), lib.tensor([3, 1])))))
    for a, b in zip(*out):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_addbmm() -> None:
    i = RNG.standard_normal((2, 3)).astype(np.float32)
    b1 = RNG.standard_normal((4, 2, 5)).astype(np.float32)
    b2 = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    for kw in (dict(), dict(beta=0.5, alpha=2.0), dict(beta=0)):
        res = []
        for lib, f in ((torch, torch.addbmm), (sg, M.addbmm)):
            ts = [lib.tensor(v, requires_grad=True) for v in (i, b1, b2)]
            o = f(*ts, **kw)
            o.sum().backward()
            res.append((o.detach().numpy(), [t.grad.numpy() for t in ts], type(o.grad_fn).__name__))
        t, s = res
        np.testing.assert_allclose(s[0], t[0], rtol=1e-5, atol=1e-5)  # matmul rounds as numpy's BLAS
        for g, h in zip(s[1], t[1]):
            np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-5)
        assert s[2] == t[2] == "AddbmmBackward0"
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of batches, got 4 and 3"):
        M.addbmm(sg.tensor(i), sg.tensor(b1), sg.tensor(b2[:3]))


@pytest.mark.parametrize("kw", [dict(), dict(spacing=2.0, dim=1), dict(spacing=[0.5, 2.0], dim=(0, 2), edge_order=2),
                                dict(dim=-1, edge_order=2), dict(spacing=[[0.0, 1.0, 3.0, 4.0, 7.0]], dim=2),
                                dict(spacing=[[0.0, 1.0, 3.0, 4.0, 7.0]], dim=2, edge_order=2)])
def test_gradient(kw: dict) -> None:
    kw = dict(kw)
    coords = kw.get("spacing")
    res = []
    for lib, f in ((torch, torch.gradient), (sg, M.gradient)):
        if isinstance(coords, list) and isinstance(coords[0], list):
            kw["spacing"] = [lib.tensor(c) for c in coords]
        x = lib.tensor(X, requires_grad=True)
        outs = f(x, **kw)
        sum(o.sum() * (k + 1) for k, o in enumerate(outs)).backward()
        res.append(([o.detach().numpy() for o in outs], x.grad.numpy()))
    t, s = res
    assert len(t[0]) == len(s[0])
    for a, b in zip(t[0], s[0]):
        np.testing.assert_array_equal(b, a)
    np.testing.assert_allclose(s[1], t[1], rtol=1e-6, atol=1e-6)


def test_gradient_errors_and_ints() -> None:
    x = torch.tensor([1, 4, 9, 16])
    assert np.array_equal(torch.gradient(x)[0].numpy(), M.gradient(sg.tensor([1, 4, 9, 16]))[0].numpy())
    for f, lib in ((torch.gradient, torch), (M.gradient, sg)):
        with pytest.raises(RuntimeError, match="torch.gradient only supports edge_order=1 and edge_order=2."):
            f(lib.tensor([1.0, 2.0, 3.0]), edge_order=3)
        with pytest.raises(RuntimeError, match="expected each dimension size to be at least edge_order\\+1"):
            f(lib.tensor([1.0, 2.0]), edge_order=2)
        with pytest.raises(RuntimeError, match="a spacing argument of length 2 and a dim argument of length 1"):
            f(lib.tensor(X), spacing=[1.0, 2.0], dim=0)


def test_threads_and_determinism() -> None:
    n = M.get_num_threads()
    assert isinstance(n, int) and n >= 1
    try:
        M.set_num_threads(3)
        assert M.get_num_threads() == 3
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            M.set_num_threads(0)
    finally:
        M._STATE["threads"] = None
    try:
        for mod in (torch, M):
            seen = [mod.are_deterministic_algorithms_enabled(), mod.get_deterministic_debug_mode()]
            mod.use_deterministic_algorithms(True, warn_only=True)
            seen += [mod.are_deterministic_algorithms_enabled(), mod.is_deterministic_algorithms_warn_only_enabled(),
                     mod.get_deterministic_debug_mode()]
            mod.set_deterministic_debug_mode("error")
            seen += [mod.get_deterministic_debug_mode(), mod.is_deterministic_algorithms_warn_only_enabled()]
            mod.use_deterministic_algorithms(False)
            seen += [mod.are_deterministic_algorithms_enabled()]
            assert seen == [False, 0, True, True, 1, 2, False, False]
            with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool, not str"):
                mod.use_deterministic_algorithms("x")
    finally:
        torch.use_deterministic_algorithms(False)
        M.use_deterministic_algorithms(False)


def test_init_sparse_draws_torchs_values() -> None:
    out = []
    for lib in (torch, sg):
        lib.manual_seed(3)
        w = lib.empty(6, 4)
        r = lib.nn.init.sparse_(w, 0.5, std=0.1)
        out.append((r is w, w.numpy().copy(), lib.rand(1).item()))
    assert out[0][0] and out[1][0]
    assert np.array_equal(out[0][1], out[1][1]) and out[0][2] == out[1][2]
    assert (out[1][1] == 0).sum(0).tolist() == [3, 3, 3, 3]
    for lib in (torch, sg):
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            lib.nn.init.sparse_(lib.empty(3), 0.1)


def test_tensor_methods() -> None:
    out = []
    for lib in (torch, sg):
        x = lib.tensor([1.5, 2.0, -3.0])
        e = lib.tensor([1, 2, -1])
        y = lib.zeros(2, 2)
        y.addbmm_(lib.ones(3, 2, 4), lib.ones(3, 4, 2), alpha=0.5)
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = w * 1
        v.ldexp_(e)
        v.sum().backward()
        z = x.clone()
        z.nextafter_(lib.zeros(3))
        out.append((repr(x.frexp()), repr(x.ldexp(e)), repr(x.logaddexp2(x)), (x.nextafter(lib.zeros(3)) - x).tolist(),
                    repr(y), repr(v), w.grad.tolist(), z.tolist(),
                    repr(lib.zeros(2, 2).addbmm(lib.ones(3, 2, 4), lib.ones(3, 4, 2)))))
    assert out[0] == out[1]


def test_reachable_at_the_top_level_as_in_torch():
    from symgrad.eager import toplevel_more
    for name in [*toplevel_more.__all__, "pdist", "channel_shuffle", "alpha_dropout", "feature_alpha_dropout"]:
        assert hasattr(torch, name), name
        assert name in sg.__all__ and callable(getattr(sg, name)), name
    x = np.array([[0.0, 1.0], [2.0, 3.0], [5.0, 1.0]])
    np.testing.assert_allclose(sg.pdist(sg.tensor(x)).numpy(), torch.pdist(torch.tensor(x)).numpy(), rtol=1e-15)
