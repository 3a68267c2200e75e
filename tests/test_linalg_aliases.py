"""torch's top-level linear algebra and the torch.linalg composites (``eager/linalg_ops.py``) against torch 2.13:
values, gradients, grad_fn names, return types and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(7)
A_NP = RNG.standard_normal((3, 3))
SPD_NP = A_NP @ A_NP.T + 3 * np.eye(3)
B_NP = RNG.standard_normal((3, 2))
BATCH_NP = RNG.standard_normal((2, 3, 3))


def _pair(*arrays: np.ndarray) -> tuple[list, list]:
    return ([sg.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays])


def _check(fn_sg, fn_torch, *arrays: np.ndarray, grad: bool = True, name: bool = True) -> None:
    xs, ts = _pair(*arrays)
    out, ref = fn_sg(*xs), fn_torch(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    if name:
        assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__
    if grad:
        w = RNG.standard_normal(tuple(ref.shape))
        (out * sg.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        for x, t in zip(xs, ts):
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)


CASES = [
    ("det", lambda m: m.det(), A_NP),
    ("inverse", lambda m: m.inverse(), A_NP),
    ("logdet", lambda m: m.logdet(), SPD_NP),
    ("pinverse", lambda m: m.pinverse(), A_NP[:, :2]),
    ("matrix_power0", lambda m: m.matrix_power(0), A_NP),
    ("matrix_power1", lambda m: m.matrix_power(1), A_NP),
    ("matrix_power3", lambda m: m.matrix_power(3), A_NP),
    ("matrix_power5", lambda m: m.matrix_power(5), A_NP),
    ("matrix_power-2", lambda m: m.matrix_power(-2), A_NP),
    ("matrix_power-1", lambda m: m.matrix_power(-1), A_NP),
    ("matrix_exp", lambda m: m.matrix_exp(), A_NP),
    ("matrix_exp_big", lambda m: (4 * m).matrix_exp(), A_NP),
    ("matrix_exp_batch", lambda m: m.matrix_exp(), BATCH_NP),
    ("diag_embed", lambda m: m.diag_embed(), A_NP),
    ("diag_embed_off", lambda m: m.diag_embed(offset=-1, dim1=0, dim2=2), A_NP),
    ("cholesky_inverse", lambda m: m.cholesky_inverse(), np.linalg.cholesky(SPD_NP)),
    ("cholesky_inverse_upper", lambda m: m.cholesky_inverse(upper=True), np.linalg.cholesky(SPD_NP).T),
]


@pytest.mark.parametrize("name,fn,a", CASES, ids=[c[0] for c in CASES])
def test_unary(name, fn, a):
    _check(fn, fn, a)


def test_functions():
    L = np.linalg.cholesky(SPD_NP)
    _check(lambda b, f: sg.cholesky_solve(b, f), lambda b, f: torch.cholesky_solve(b, f), B_NP, L)
    _check(lambda b, f: sg.cholesky_solve(b, f, upper=True), lambda b, f: torch.cholesky_solve(b, f, upper=True),
           B_NP, L.T)
    for upper in (False, True):
        for unit in (False, True):
            for left in (False, True):
                b = B_NP if left else B_NP.T
                kw = {"upper": upper, "left": left, "unitriangular": unit}
                _check(lambda a, x, kw=kw: sg.linalg.solve_triangular(a, x, **kw),
                       lambda a, x, kw=kw: torch.linalg.solve_triangular(a, x, **kw), A_NP + 3 * np.eye(3), b)
    v = RNG.standard_normal(3)
    c = RNG.standard_normal((2, 4))
    _check(lambda *m: sg.linalg.multi_dot(m), lambda *m: torch.linalg.multi_dot(m), A_NP, B_NP, c)
    _check(lambda *m: sg.linalg.multi_dot(m), lambda *m: torch.linalg.multi_dot(m), v, A_NP, v)
    _check(lambda *m: sg.linalg.multi_dot(m), lambda *m: torch.linalg.multi_dot(m), v, A_NP)
    _check(sg.linalg.vecdot, torch.linalg.vecdot, A_NP, v)
    _check(lambda m: sg.linalg.matrix_power(m, 4), lambda m: torch.linalg.matrix_power(m, 4), BATCH_NP, name=False)
    _check(sg.linalg.matrix_exp, torch.linalg.matrix_exp, A_NP)
    _check(lambda a, b, c: sg.block_diag(a, b, c), lambda a, b, c: torch.block_diag(a, b, c), A_NP, v, c)
    _check(sg.det, torch.det, BATCH_NP)


def test_values_and_types():
    sign = sg.slogdet(sg.tensor(A_NP))
    ref = torch.slogdet(torch.tensor(A_NP))
    assert repr(sign) == repr(ref)
    assert repr(sg.logdet(-sg.eye(3))) == repr(torch.logdet(-torch.eye(3)))
    assert repr(sg.logdet(sg.zeros(2, 2))) == repr(torch.logdet(torch.zeros(2, 2)))
    mix = (sg.ones(2), sg.tensor(3.0), sg.ones(1, 2, dtype=sg.int64))
    assert repr(sg.block_diag(*mix)) == repr(torch.block_diag(torch.ones(2), torch.tensor(3.0),
                                                               torch.ones(1, 2, dtype=torch.int64)))
    assert repr(sg.block_diag()) == repr(torch.block_diag())
    ints = np.array([[1, 2], [3, 4]])
    assert repr(sg.matrix_power(sg.tensor(ints), 3)) == repr(torch.matrix_power(torch.tensor(ints), 3))
    assert repr(sg.diag_embed(sg.tensor([1, 2]), 1)) == repr(torch.diag_embed(torch.tensor([1, 2]), 1))
    assert repr(sg.matrix_exp(sg.zeros(0, 0))) == repr(torch.matrix_exp(torch.zeros(0, 0)))


def test_cholesky_deprecated():
    from symgrad.eager import linalg_ops
    linalg_ops._CHOLESKY_WARNED[0] = False
    spd_s, spd_t = _pair(SPD_NP)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = sg.cholesky(spd_s[0])
        out2 = sg.cholesky(spd_s[0], upper=True)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        ref = torch.cholesky(spd_t[0])
    assert len(got) == 1 and got[0].category is UserWarning      # once per process, as TORCH_WARN_ONCE
    assert str(got[0].message).startswith("torch.cholesky is deprecated in favor of torch.linalg.cholesky")
    if want:                                                     # torch's own once-flag may be spent already
        assert str(want[0].message).split(" (Triggered")[0] == str(got[0].message)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(out2.detach().numpy(), ref.detach().numpy().T, rtol=1e-12)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__ == "CholeskyBackward0"


def _err(fn_sg, fn_torch) -> None:
    with pytest.raises(Exception) as want:
        fn_torch()
    with pytest.raises(type(want.value)) as got:
        fn_sg()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("lib_call", [
    lambda m: m.matrix_power(m.ones(3), 2),
    lambda m: m.matrix_power(m.ones(2, 3), 2),
    lambda m: m.matrix_power(m.ones(2, 2), 2.0),
    lambda m: m.matrix_exp(m.ones(2, 3)),
    lambda m: m.matrix_exp(m.ones(2, 2, dtype=m.int64)),
    lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3), upper=False),
    lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(2, 2), upper=False),
    lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3, 2), upper=False, left=False),
    lambda m: m.linalg.multi_dot([m.eye(3)]),
    lambda m: m.linalg.multi_dot([m.eye(3), m.ones(2, 2)]),
    lambda m: m.linalg.multi_dot([m.eye(3), m.ones(2, 2, 2)]),
    lambda m: m.cholesky_solve(m.ones(3), m.eye(3)),
    lambda m: m.cholesky_inverse(m.ones(3)),
    lambda m: m.diag_embed(m.ones(2, 3), dim1=1, dim2=1),
    lambda m: m.block_diag(m.ones(2, 2, 2)),
    lambda m: m.logdet(m.ones(2, 3)),
    lambda m: m.inverse(m.ones(3)),
])
def test_errors(lib_call):
    _err(lambda: lib_call(sg), lambda: lib_call(torch))
