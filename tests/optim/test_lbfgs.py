"""``optim.LBFGS`` against torch 2.13: the iterates, losses, evaluation / iteration counts and state keys of fixed-step
and strong-Wolfe runs, history truncation, errors. torch's ``Tensor.dot`` sums in its BLAS's order, symgrad's in
numpy's, so the iterates agree to rounding (float64 to 1e-10), not bit for bit."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg


def _run(lib, dtype, line_search_fn, steps=3, shape=(4, 3), **kw):
    rng = np.random.default_rng(0)
    target = lib.tensor(rng.standard_normal(shape), dtype=dtype)
    scale = lib.tensor(rng.uniform(0.5, 2, shape), dtype=dtype)
    w = lib.tensor(np.zeros(shape), dtype=dtype, requires_grad=True)
    c = lib.tensor(np.array(0.5), dtype=dtype, requires_grad=True)
    opt = lib.optim.LBFGS([w, c], lr=0.8, line_search_fn=line_search_fn, **kw)

    def closure():
        opt.zero_grad()
        loss = ((w - target).pow(2) * scale).sum() + 0.1 * w.pow(4).sum() + (c - 1).pow(2) * 3 + (w * c).sum()
        loss.backward()
        return loss

    with warnings.catch_warnings():  # float(loss) of a tensor that requires grad: torch's warning, also symgrad's
        warnings.simplefilter("ignore")
        losses = [opt.step(closure).item() for _ in range(steps)]
    st = opt.state[w]
    return (losses, w.detach().numpy(), c.detach().numpy(), float(st["t"]), float(st["H_diag"]),
            (st["func_evals"], st["n_iter"], len(st["old_dirs"]), sorted(st)))


CASES = {"fixed step": (None, {}), "strong wolfe": ("strong_wolfe", {}),
         "short history": (None, {"history_size": 2, "max_iter": 5}),
         "wolfe short history": ("strong_wolfe", {"history_size": 3, "max_iter": 6, "max_eval": 9})}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_lbfgs_matches_torch(case):
    ls, kw = case
    t, s = _run(torch, torch.float64, ls, **kw), _run(sg, sg.float64, ls, **kw)
    for a, b in zip(s[:5], t[:5]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert s[5] == t[5]


def _quadratic_closure(opt, p, shift: float):
    def closure():
        opt.zero_grad()
        loss = (p - shift).pow(2).sum()
        loss.backward()
        return loss
    return closure


def _converged(lib):
    p = lib.zeros(3, requires_grad=True)
    opt = lib.optim.LBFGS([p])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = opt.step(_quadratic_closure(opt, p, 0.0)).item()
    return loss, opt.state[p]["func_evals"], opt.state[p]["n_iter"]


def test_lbfgs_float32_and_converged_step():
    t, s = _run(torch, torch.float32, None, shape=(40,)), _run(sg, sg.float32, None, shape=(40,))
    np.testing.assert_allclose(s[1], t[1], rtol=1e-5, atol=1e-6)
    assert s[1].dtype == np.float32
    assert _converged(sg) == _converged(torch) == (0.0, 1, 0)  # a zero gradient returns at once


def _errors(lib):
    p, q = lib.zeros(2, requires_grad=True), lib.zeros(1, requires_grad=True)
    got = [repr(lib.optim.LBFGS([p], history_size=5))]
    for args, kw in ((([p],), {"lr": -1.0}), (([{"params": [p]}, {"params": [q], "lr": 0.1}],), {}),
                     (([p],), {"lr": lib.tensor([0.1, 0.2])})):
        with pytest.raises(Exception) as e:
            lib.optim.LBFGS(*args, **kw)
        got.append((type(e.value).__name__, str(e.value)))
    opt = lib.optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(RuntimeError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt.step(_quadratic_closure(opt, p, 1.0))
    got.append(str(e.value))
    return got


def test_lbfgs_errors_and_repr():
    assert _errors(sg) == _errors(torch)
