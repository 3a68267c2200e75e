"""``sg.linalg`` against torch 2.13: values, gradients (sign-invariant losses where the factor's signs are LAPACK's
choice), second derivatives, a compiled gradient, return types and errors. The registry rows of these ops are in
``tests/ops/registry_linalg_cases.py``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(3)
SQ = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
SPD = SQ @ np.swapaxes(SQ, -1, -2)
TALL = RNG.standard_normal((5, 3))
W3, W5 = RNG.standard_normal((3, 3)), RNG.standard_normal((5, 3))   # weights no orthogonality makes constant


def _grads(f, *arrays, dtype="float64"):
    ts = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in arrays]
    ss = [sg.tensor(a, dtype=getattr(sg, dtype), requires_grad=True) for a in arrays]
    rt, rs = f(torch, *ts), f(sg, *ss)
    rt.backward()
    rs.backward()
    return rs, rt, [s.grad.numpy() for s in ss], [t.grad.numpy() for t in ts]


LOSSES = {
    # |V| and (U s Vh) do not depend on the signs LAPACK picks
    "eigh vectors squared": (lambda L, a: (L.linalg.eigh(a + a.mT)[1] ** 2 * L.tensor(W3)).sum(), SPD),
    "eigh reconstruct": (lambda L, a: (L.linalg.eigh(a + a.mT)[0].sin()).sum(), SPD),
    "svd tall U squared": (lambda L, a: (L.linalg.svd(a, full_matrices=False)[0] ** 2 * L.tensor(W5)).sum(), TALL),
    "svd tall Vh squared": (lambda L, a: (L.linalg.svd(a)[2] ** 2 * L.tensor(W3)).sum(), TALL),
    "svd full U squared": (lambda L, a: (L.linalg.svd(a, full_matrices=True)[0][:, :3] ** 2 * L.tensor(W5)).sum(),
                           TALL),
    "qr": (lambda L, a: (L.linalg.qr(a)[1].exp()).sum() + (L.linalg.qr(a)[0] * a).sum(), TALL),
    "solve batched": (lambda L, a: L.linalg.solve(a, L.ones(2, 3, 2, dtype=a.dtype)).pow(2).sum(), SQ),
    "slogdet": (lambda L, a: L.linalg.slogdet(a).logabsdet.sum(), SQ),
    "det inv": (lambda L, a: (L.linalg.det(a) * L.linalg.inv(a).sum((-1, -2))).sum(), SQ),
    "cholesky": (lambda L, a: L.linalg.cholesky(a).tanh().sum(), SPD),
    "pinv": (lambda L, a: L.linalg.pinv(a).pow(2).sum(), TALL),
    "lstsq": (lambda L, a: L.linalg.lstsq(a, L.ones(5, 2, dtype=a.dtype)).solution.sum(), TALL),
    "matrix_norm nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), TALL),
    "norm 2": (lambda L, a: L.linalg.norm(a, 2), TALL),
    "matrix_norm -2 keepdim": (lambda L, a: L.linalg.matrix_norm(a, -2, keepdim=True).sum(), SQ),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_and_gradient_match_torch(name, dtype):
    f, a = LOSSES[name]
    rs, rt, gs, gt = _grads(f, a, dtype=dtype)
    rtol = 1e-10 if dtype == "float64" else 2e-4
    np.testing.assert_allclose(rs.item(), rt.item(), rtol=rtol)
    for g, t in zip(gs, gt):
        np.testing.assert_allclose(g, t, rtol=rtol, atol=rtol * np.abs(t).max())


def test_second_derivatives_match_torch():
    def f(L, a):
        return L.linalg.det(a).sum() + L.linalg.inv(a).pow(3).sum() + L.linalg.solve(a, a.sum(-1)).sum()
    xs, xt = sg.tensor(SQ, requires_grad=True), torch.tensor(SQ, requires_grad=True)
    (gs,) = sg.autograd.grad(f(sg, xs), xs, create_graph=True)
    (gt,) = torch.autograd.grad(f(torch, xt), xt, create_graph=True)
    (hs,) = sg.autograd.grad((gs * gs).sum(), xs)
    (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
    np.testing.assert_allclose(hs.numpy(), ht.numpy(), rtol=1e-9, atol=1e-9)


def test_compiled_gradient_matches_torch():
    def f(a):
        return (sg.linalg.inv(a) * a).sum() + sg.linalg.slogdet(a)[1].sum() + sg.linalg.eigvalsh(a @ a.mT).sum()
    value, grad = sg.value_and_grad(f)(SQ)
    t = torch.tensor(SQ, requires_grad=True)
    tv = (torch.linalg.inv(t) * t).sum() + torch.linalg.slogdet(t)[1].sum() + torch.linalg.eigvalsh(t @ t.mT).sum()
    tv.backward()
    np.testing.assert_allclose(value, tv.item(), rtol=1e-12)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_return_types_and_reprs():
    a = sg.tensor([[2.0, 1.0], [1.0, 3.0]])
    r = sg.linalg.slogdet(a)
    t = torch.linalg.slogdet(torch.tensor(a.numpy()))
    assert repr(r) == repr(t)
    assert float(r.logabsdet) == pytest.approx(float(t.logabsdet))
    q = sg.linalg.qr(a)
    assert repr(q).startswith("torch.return_types.linalg_qr(\nQ=") and q.R.shape == (2, 2)
    e = sg.linalg.eigh(a)
    np.testing.assert_allclose(e.eigenvalues.numpy(), torch.linalg.eigh(torch.tensor(a.numpy())).eigenvalues.numpy())
    u, s, vh = sg.linalg.svd(a)
    np.testing.assert_allclose((u * s) @ vh, a.numpy(), atol=1e-6)
    lst = sg.linalg.lstsq(sg.tensor(TALL), sg.ones(5, 2, dtype=sg.float64))
    tl = torch.linalg.lstsq(torch.tensor(TALL), torch.ones(5, 2, dtype=torch.float64))
    assert int(lst.rank) == int(tl.rank) and tuple(lst.residuals.shape) == tuple(tl.residuals.shape) == (0,)
    np.testing.assert_allclose(lst.solution.numpy(), tl.solution.numpy(), rtol=1e-10)
    assert int(sg.linalg.matrix_rank(sg.ones(3, 3))) == int(torch.linalg.matrix_rank(torch.ones(3, 3))) == 1
    assert sg.linalg.qr(a, mode="r").Q.shape == torch.linalg.qr(torch.tensor(a.numpy()), mode="r").Q.shape


@pytest.mark.parametrize(("call", "kind", "match"), [
    (lambda L: L.linalg.inv(L.ones(2, 3)), RuntimeError, "must be batches of square matrices, but they are 2 by 3"),
    (lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.long)), RuntimeError, "Expected a floating point or complex tensor"),
    (lambda L: L.linalg.det(L.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda L: L.linalg.inv(L.zeros(2, 2)), RuntimeError, "The diagonal element 1 is zero"),
    (lambda L: L.linalg.cholesky(-L.eye(2)), RuntimeError, "leading minor of order 1 is not positive-definite"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(3)), RuntimeError, r"equation AX = B \(2x2 and 3x1\)"),
    (lambda L: L.linalg.eigh(L.eye(2), UPLO="X"), RuntimeError, "UPLO"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(2, dtype=L.float64)), RuntimeError, "to have the same dtype"),
])
def test_errors_match_torch(call, kind, match):
    with pytest.raises(kind, match=match):
        call(torch)
    with pytest.raises(kind, match=match):
        call(sg)


def test_linalg_error_is_torch_class_shaped():
    with pytest.raises(sg.linalg.LinAlgError):
        sg.linalg.inv(sg.zeros(3, 3))
    assert issubclass(sg.linalg.LinAlgError, RuntimeError) and issubclass(torch.linalg.LinAlgError, RuntimeError)


def _matmul_dtype_errors(lib) -> list:
    seen = []

    def attempt(fn, *args):
        try:
            out = fn(*args)
            seen.append((tuple(out.shape), str(out.dtype)))
        except (RuntimeError, TypeError, NotImplementedError) as err:
            seen.append((type(err).__name__, str(err)))

    F = lib.nn.functional
    f32, f64 = lib.ones(2, 2), lib.ones(2, 2, dtype=lib.float64)
    others = [lib.ones(2, 2, dtype=d) for d in (lib.int64, lib.int32, lib.int16, lib.int8, lib.uint8, lib.bool,
                                                lib.float16, lib.float64)]
    for o in others:
        for a, b in ((f32, o), (o, f32), (f32[0], o[0]), (f32, o[0]), (f32[0], o), (f32[None], o[None]),
                     (f32[None], o), (f32, o[None]), (o, o), (o[0], o[0]), (o, o[0]), (o[None], o[None])):
            attempt(lib.matmul, a, b)
        attempt(lib.bmm, f32[None], o[None])
        attempt(lib.mm, o, f32)
        attempt(lib.dot, f32[0], o[0])
        attempt(lib.mv, o, f32[0])
    for x, w, b in ((f64, f32, f64), (f32, f64, f32), (f32, f32, f64), (f32, f64, f64), (f64, f32, f32),
                    (f64[0], f32, f32[0]), (lib.ones(3, 2, 2, dtype=lib.float64), f32, f32[0])):
        attempt(F.linear, x, w, b)
        attempt(F.linear, x, w)
        if x.ndim == 2:
            attempt(lib.addmm, b, x, w)
    attempt(lib.nn.Linear(2, 2), f64)
    attempt(lambda: lib.tensordot(f32, f64, dims=1))
    attempt(lib.matmul, lib.ones(2, 3), lib.ones(4, 5, dtype=lib.float64))  # the shapes are checked first
    attempt(lib.matmul, lib.ones(3), lib.ones(4, dtype=lib.float64))  # a dot: the dtypes first
    attempt(lambda: f32 @ 2)
    attempt(lambda: f32 @ [1.0, 2.0])
    attempt(lambda: [1.0, 2.0] @ f32)
    attempt(f32.matmul, [1.0, 2.0])
    attempt(lib.matmul, f32, [1.0, 2.0])
    attempt(lib.matmul, [1.0, 2.0], f32)
    attempt(lambda: f32 @ np.ones((2, 3)))  # numpy's __rmatmul__ in torch: a promoted product
    return seen


def test_matmul_family_refuses_mixed_dtypes_as_torch():
    assert _matmul_dtype_errors(sg) == _matmul_dtype_errors(torch)
