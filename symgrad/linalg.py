"""``sg.linalg``: torch.linalg's norms (composites of registry ops) and its decompositions and solvers (the ops of
``ops/decomp.py``: ``inv det slogdet solve cholesky qr eigh eigvalsh svd svdvals``; ``pinv lstsq matrix_rank``
and the nuclear / spectral norms built on them), with torch's checks, error texts and return types."""
from __future__ import annotations

import builtins
import warnings
from typing import Any

import numpy as np

from .core import dtypes
from .eager.base import TensorBase, make_tensor
from .eager.composite import _float_input, _matrix_norm, _named, linalg_norm, vector_norm
from .eager.more_ops import _cross
from .eager.record import _apply
from .eager.tensor import Tensor
from .ops import REGISTRY

__all__ = ["LinAlgError", "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm",
           "matrix_rank", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm"]


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a matrix the factorization cannot take (singular, not positive-definite)."""


def _named_tuple(name: str, fields: tuple[str, ...]) -> type:
    def new(cls: type, *values: Any) -> Any:
        if len(values) == 1 and len(fields) > 1:
            values = tuple(values[0])
        return tuple.__new__(cls, values)

    def rep(self: tuple) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"

    ns: dict[str, Any] = {"__slots__": (), "__new__": new, "__repr__": rep, "n_fields": len(fields),
                          "n_sequence_fields": len(fields), "n_unnamed_fields": 0,
                          "__reduce__": lambda self: (type(self), tuple(self))}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: self[i])
    return type(name, (tuple,), ns)


_SLOGDET = _named_tuple("linalg_slogdet", ("sign", "logabsdet"))
_QR = _named_tuple("linalg_qr", ("Q", "R"))
_EIGH = _named_tuple("linalg_eigh", ("eigenvalues", "eigenvectors"))
_SVD = _named_tuple("linalg_svd", ("U", "S", "Vh"))
_LSTSQ = _named_tuple("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


# --------------------------------------------------------------------------- checks

def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else make_tensor(np.asarray(x))


def _matrix(a: Any, who: str, square: bool = True) -> Tensor:
    a = _t(a)
    if a.ndim < 2:
        raise RuntimeError(f"{who}: The input tensor A must have at least 2 dimensions.")
    if not a.is_floating_point():
        raise RuntimeError(f"{who}: Expected a floating point or complex tensor as input. Got "
                           f"{dtypes.torch_type_name(a.dtype)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{who}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    return a


def _first_singular(a: np.ndarray) -> int:
    """The 1-based index of the first zero diagonal element of ``a``'s LU factor (LAPACK's ``info``)."""
    import scipy.linalg  # deferred: scipy is heavy, and only this error text needs it
    for m in a.reshape(-1, *a.shape[-2:]):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")          # scipy's LinAlgWarning: the singularity we report
            lu = scipy.linalg.lu_factor(m, check_finite=False)[0]
        zero = np.flatnonzero(np.diagonal(lu) == 0)
        if zero.size:
            return int(zero[0]) + 1
    return 1


def _not_pd(a: np.ndarray) -> int:
    """The order of the first leading minor of ``a`` that is not positive-definite."""
    for m in a.reshape(-1, *a.shape[-2:]):
        for k in builtins.range(1, m.shape[-1] + 1):
            try:
                np.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                return k
    return 1


def _run(op: str, *xs: Tensor, **attrs: Any) -> Tensor:
    try:
        return _apply(REGISTRY[op], *xs, **attrs)
    except np.linalg.LinAlgError:
        who = {"linalg_inv": "linalg.inv", "linalg_solve": "linalg.solve"}.get(op)
        if who is not None:
            raise LinAlgError(f"{who}: The diagonal element {_first_singular(xs[0]._data)} is zero, the "
                              f"{'inversion' if op == 'linalg_inv' else 'solve'} could not be completed because "
                              "the input matrix is singular.") from None
        if op == "linalg_cholesky":
            raise LinAlgError(f"linalg.cholesky: The factorization could not be completed because the input is not "
                              f"positive-definite (the leading minor of order {_not_pd(xs[0]._data)} is not "
                              "positive-definite).") from None
        raise LinAlgError(f"{op.replace('_', '.', 1)}: The algorithm failed to converge.") from None


# --------------------------------------------------------------------------- inverses, determinants, solves

def inv(A: Any) -> Tensor:  # noqa: N803
    """The inverse of each square matrix (``LinAlgError`` for a singular one)."""
    return _run("linalg_inv", _matrix(A, "linalg.inv"))


def det(A: Any) -> Tensor:  # noqa: N803
    """The determinant of each square matrix; its gradient is ``g * det * inv(A)^T``."""
    return _run("linalg_det", _matrix(A, "linalg.det"))


def slogdet(A: Any) -> Any:  # noqa: N803
    """``(sign, logabsdet)`` of each square matrix (a ``torch.return_types.linalg_slogdet``)."""
    a = _matrix(A, "linalg.slogdet")
    return _SLOGDET(_run("linalg_slogdet", a, which=0), _run("linalg_slogdet", a, which=1))


def solve(A: Any, B: Any, *, left: bool = True) -> Tensor:  # noqa: N803
    """``X`` with ``A @ X = B`` (``left=False``: ``X @ A = B``); ``B`` may be a (batch of) vector(s)."""
    a, b = _matrix(A, "linalg.solve"), _t(B)
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{dtypes.torch_type_name(a.dtype)} and B of type {dtypes.torch_type_name(b.dtype)} instead")
    n = a.shape[-1]
    vector = left and (b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]))
    rows = b.shape[-1] if vector else b.shape[-2] if left else b.shape[-1]
    if b.ndim < 1 or rows != n:
        shape_b = f"{b.shape[-1] if b.ndim else 1}x1" if vector or b.ndim == 1 else f"{b.shape[-2]}x{b.shape[-1]}"
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{shape_b})")
    return _run("linalg_solve", a, b, vector=vector, left=left)


def cholesky(A: Any, *, upper: bool = False) -> Tensor:  # noqa: N803
    """The Cholesky factor ``L`` (``upper``: ``L^T``) of each symmetric positive-definite matrix."""
    return _run("linalg_cholesky", _matrix(A, "linalg.cholesky"), upper=upper)


def qr(A: Any, mode: str = "reduced") -> Any:  # noqa: N803
    """``(Q, R)`` (a ``torch.return_types.linalg_qr``); ``mode`` 'reduced', 'complete' or 'r' (Q empty)."""
    a = _matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    if mode == "r":
        return _QR(make_tensor(np.zeros((0,), a._data.dtype)), _run("linalg_qr", a, which=1, mode="reduced"))
    return _QR(_run("linalg_qr", a, which=0, mode=mode), _run("linalg_qr", a, which=1, mode=mode))


def _uplo(UPLO: str) -> str:  # noqa: N803
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A: Any, UPLO: str = "L") -> Any:  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, read from the ``UPLO`` triangle."""
    a, u = _matrix(A, "linalg.eigh"), _uplo(UPLO)
    return _EIGH(_run("linalg_eigh", a, which=0, uplo=u), _run("linalg_eigh", a, which=1, uplo=u))


def eigvalsh(A: Any, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of symmetric matrices."""
    return _run("linalg_eigh", _matrix(A, "linalg.eigvalsh"), which=0, uplo=_uplo(UPLO))


def svd(A: Any, full_matrices: bool = True, *, driver: Any = None) -> Any:  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh`` (``full_matrices``: square ``U`` and ``Vh``)."""
    a = _matrix(A, "linalg.svd", square=False)
    return _SVD(*(_run("linalg_svd", a, which=w, full_matrices=builtins.bool(full_matrices)) for w in (0, 1, 2)))


def svdvals(A: Any, *, driver: Any = None) -> Tensor:  # noqa: N803
    """The singular values, descending."""
    return _run("linalg_svd", _matrix(A, "linalg.svdvals", square=False), which=1, full_matrices=False)


def _cutoff(s: Tensor, m: int, n: int, atol: Any, rtol: Any) -> np.ndarray:
    smax = s._data.max(axis=-1, keepdims=True, initial=0.0)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else builtins.max(m, n) * np.finfo(s._data.dtype).eps
    return np.maximum(0.0 if atol is None else atol, rtol * smax)


def pinv(A: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The pseudo-inverse ``V diag(1/s) U^T`` over the singular values above the cutoff (torch's rtol default:
    ``max(m, n) * eps``); its gradient runs through the SVD's."""
    a = _matrix(A, "linalg.pinv", square=False)
    m, n = a.shape[-2:]
    u, s, vh = svd(a, full_matrices=False)
    keep = make_tensor(s._data > _cutoff(s, m, n, atol, rtol))
    inv_s = (keep * (1 / s.where(keep, s.new_ones(()))))
    out = (vh.mT * inv_s.unsqueeze(-2)) @ u.mT
    return _named(out, "LinalgPinvBackward0")


def matrix_rank(A: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The number of singular values above the cutoff (int64, no gradient)."""
    a = _matrix(A, "linalg.matrix_rank", square=False)
    s = svdvals(a.detach())
    return make_tensor(np.asarray((s._data > _cutoff(s, *a.shape[-2:], atol, rtol)).sum(-1), dtype=np.int64))


def lstsq(A: Any, B: Any, rcond: Any = None, *, driver: Any = None) -> Any:  # noqa: N803
    """The least-squares solution ``pinv(A) @ B`` (torch's CPU default driver 'gelsy': residuals and singular
    values empty, the rank computed)."""
    a, b = _matrix(A, "linalg.lstsq", square=False), _t(B)
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {dtypes.torch_type_name(a.dtype)} and other's dtype "
                           f"{dtypes.torch_type_name(b.dtype)}")
    vector = b.ndim == a.ndim - 1
    bb = b.unsqueeze(-1) if vector else b
    if bb.shape[-2] != a.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2). Got {a.shape[-2]} "
                           f"and {bb.shape[-2]}")
    p = pinv(a, rtol=rcond)
    sol = p @ bb
    sol = _named(sol.squeeze(-1) if vector else sol, "LinalgLstsqBackward0")
    empty = make_tensor(np.zeros((0,), a._data.dtype))
    return _LSTSQ(sol, _named(empty, "LinalgLstsqBackward0") if sol.requires_grad else empty,
                  matrix_rank(a, rtol=rcond), empty)


def cross(input: Any, other: Any, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (broadcast)."""
    return _cross(_t(input), _t(other), dim, "linalg.cross")


# --------------------------------------------------------------------------- norms



def _spectral(t: Tensor, ord: Any, dims: tuple[int, int], keepdim: bool) -> Tensor:
    d0, d1 = (d % t.ndim for d in dims)
    rest = [d for d in builtins.range(t.ndim) if d not in (d0, d1)]
    m = t.permute(*rest, d0, d1)
    s = svdvals(m)
    out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,  # noqa: A002, N803
                dtype: Any = None) -> Tensor:
    """The Frobenius (default), nuclear, 1, inf, 2 or -2 norm of the matrices over ``dim``."""
    t = _float_input(A, dtype, "linalg.matrix_norm")
    if ord in ("nuc", 2, -2):
        if t.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        return _spectral(t, ord, tuple(dim), keepdim)
    return _matrix_norm(t, ord, tuple(dim), keepdim)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,  # noqa: A002, N803
         dtype: Any = None) -> Tensor:
    """``torch.linalg.norm``: vector norms (any ``ord``) and matrix norms (Frobenius, nuclear, 1, inf, 2, -2)."""
    if ord in ("nuc", 2, -2) and (isinstance(ord, str) or (dim is not None and not isinstance(dim, int)
                                                           and len(dim) == 2) or (dim is None and A.ndim == 2)):
        return matrix_norm(A, ord, (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
    return linalg_norm(A, ord, dim, keepdim, dtype=dtype)


