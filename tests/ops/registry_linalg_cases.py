"""Registry-matrix rows of the linear-algebra ops (``ops/decomp.py``) and the special functions
(``ops/special.py``): ``extra_cases(Case)`` returns them for ``test_registry.py``'s table.

Inputs are made well posed by their domains (well-conditioned, symmetric positive-definite, near-diagonal symmetric
matrices with distinct eigenvalues). Eigenvector and singular-vector signs are LAPACK's choice: the rows that return
them use shapes and near-diagonal inputs where numpy's LAPACK and torch's agree."""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np
import torch

from symgrad.ops import REGISTRY


def _square(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    n = shape[-1]
    return rng.uniform(-1.0, 1.0, shape) + n * np.eye(n)


def _spd(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    a = rng.uniform(-1.0, 1.0, shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _near_diag(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Symmetric, eigenvalues near 1, 2, ..., n (distinct), eigenvectors near the unit vectors."""
    n = shape[-1]
    e = rng.uniform(-0.1, 0.1, shape)
    return np.diag(np.arange(1.0, n + 1)) + (e + np.swapaxes(e, -1, -2)) / 2


def _general(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Rectangular, singular values apart: a scaled near-identity plus noise."""
    m, n = shape[-2:]
    base = np.zeros(shape)
    k = min(m, n)
    base[..., np.arange(k), np.arange(k)] = np.arange(k, 0, -1) + 1.0
    return base + rng.uniform(-0.1, 0.1, shape)


def _unit(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(-0.9, 0.9, shape)


def _pos(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.5, 3.0, shape)


def _any(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, shape)


def _away0(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


def _large(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Where torch's trigamma (digamma's derivative: a truncated series, ~1e-10 relative below 6) is exact to
    rounding, as scipy's is everywhere."""
    return rng.uniform(10.0, 30.0, shape)


def _prob(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.05, 0.95, shape)


def _sym(a: Any) -> Any:
    return (a + a.mT) / 2


def _tril(lib: Any, x: Any) -> Any:
    if lib is torch:
        return torch.tril(x, -1)
    return sys.modules["symgrad.eager.record"]._apply(REGISTRY["linalg_tril"], x, k=-1)


def extra_cases(Case: Callable) -> list:  # noqa: N803
    sq, rect = [((3, 3),), ((2, 3, 3),)], [((3, 4),)]
    cases = [
        Case("linalg_inv", lambda lib, a: lib.linalg.inv(a), sq, (_square,), "inv"),
        Case("linalg_det", lambda lib, a: lib.linalg.det(a), sq, (_square,), "det"),
        Case("linalg_slogdet", lambda lib, a: lib.linalg.slogdet(a)[1], sq, (_square,), "slogdet logabsdet"),
        Case("linalg_solve", lambda lib, a, b: lib.linalg.solve(a, b), [((3, 3), (3, 2)), ((2, 3, 3), (3, 1))],
             (_square, _any), "solve"),
        Case("linalg_solve", lambda lib, a, b: lib.linalg.solve(a, b), [((3, 3), (3,))], (_square, _any), "vector"),
        Case("linalg_solve", lambda lib, a, b: lib.linalg.solve(a, b, left=False), [((3, 3), (2, 3))],
             (_square, _any), "left=False"),
        # the factorizations of symmetric matrices read one triangle: symmetric inputs, so that finite
        # differences see the function torch's (symmetric) gradient describes
        Case("linalg_cholesky", lambda lib, a: lib.linalg.cholesky(_sym(a)), sq, (_spd,), "cholesky"),
        Case("linalg_cholesky", lambda lib, a: lib.linalg.cholesky(_sym(a), upper=True), [((3, 3),)], (_spd,),
             "upper"),
        Case("linalg_eigh", lambda lib, a: lib.linalg.eigvalsh(_sym(a)), sq, (_near_diag,), "eigvalsh"),
        Case("linalg_eigh", lambda lib, a: lib.linalg.eigh(_sym(a))[1], [((3, 3),)], (_near_diag,), "eigenvectors"),
        Case("linalg_svd", lambda lib, a: lib.linalg.svdvals(a), rect + [((4, 3),)], (_general,), "svdvals"),
        Case("linalg_svd", lambda lib, a: lib.linalg.svd(a, full_matrices=False)[0], rect, (_general,), "U"),
        Case("linalg_svd", lambda lib, a: lib.linalg.svd(a, full_matrices=False)[2], rect, (_general,), "Vh"),
        Case("linalg_qr", lambda lib, a: lib.linalg.qr(a)[0], [((4, 3),), ((3, 3),)], (_general,), "Q"),
        Case("linalg_qr", lambda lib, a: lib.linalg.qr(a)[1], [((4, 3),)], (_general,), "R"),
        Case("linalg_tril", _tril, [((3, 4),)], (_any,), "internal", internal=True),
    ]
    special = [("erfinv", lambda lib, x: lib.erfinv(x), _unit), ("lgamma", lambda lib, x: lib.lgamma(x), _pos),
               ("digamma", lambda lib, x: lib.special.digamma(x), _large),
               ("polygamma", lambda lib, x: lib.special.polygamma(2, x), _pos),
               ("i0", lambda lib, x: lib.special.i0(x), _any), ("i0e", lambda lib, x: lib.special.i0e(x), _away0),
               ("i1", lambda lib, x: lib.special.i1(x), _any), ("i1e", lambda lib, x: lib.special.i1e(x), _away0),
               ("ndtri", lambda lib, x: lib.special.ndtri(x), _prob),
               ("log_ndtr", lambda lib, x: lib.special.log_ndtr(x), _any),
               ("erfcx", lambda lib, x: lib.special.erfcx(x), _any)]
    cases += [Case("special", fn, [((2, 3),), ((),)], (dom,), name) for name, fn, dom in special]
    return cases
