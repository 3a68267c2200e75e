"""torch.linalg (``sg.linalg`` re-exports this module) and torch's top-level linear algebra.

Norms are composites of registry ops; the decompositions and solvers are the ops of ``ops/decomp.py`` (``inv det
slogdet solve cholesky qr eigh eigvalsh svd svdvals``), with ``pinv lstsq matrix_rank`` and the nuclear / spectral
norms built on them, torch's checks, error texts and return types. The composites ``matrix_power matrix_exp
solve_triangular multi_dot vecdot`` and the top-level ``logdet inverse pinverse cholesky cholesky_solve
cholesky_inverse diag_embed block_diag`` are built on those; ``LinalgMethods`` is the matching ``Tensor`` mixin.
"""
from __future__ import annotations

import builtins
import math
import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core import dtypes
from ..ops import REGISTRY
from .base import TensorBase, is_traced, make_tensor
from .basic import _cast, cat, where
from .composite import _float_input, _matrix_norm, _named, _triangle, linalg_norm, vector_norm
from .more_ops import _cross
from .record import _apply

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["LinAlgError", "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm",
           "matrix_rank", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm"]


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a matrix the factorization cannot take (singular, not positive-definite)."""


LinAlgError.__module__ = "symgrad.linalg"


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




# --------------------------------------------------------------------------- composites

_SLOGDET_TOP = _named_tuple("slogdet", ("sign", "logabsdet"))


def _square(a: Tensor, who: str, what: str = "A") -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{who}: The input tensor {what} must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{who}: {what} must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


def _eye(a: Tensor, n: int) -> Tensor:
    return make_tensor(np.eye(n, dtype=a.dtype.np))


def matrix_power(A: Any, n: int) -> Tensor:  # noqa: N803
    """``A`` to the integer power ``n`` by repeated squaring, as torch orders the products (``n < 0``: of
    ``inv(A)``; ``n == 0``: identities)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    a = _t(A)
    _square(a, "linalg.matrix_power")
    if n == 0:
        return a.clone().copy_(_eye(a, a.shape[-1]).expand(*a.shape))
    if n < 0:
        a, n = inv(a), -n
        if n == 1:
            return a
    if n == 1:
        return a.clone()
    if n == 2:
        return a @ a
    if n == 3:
        return (a @ a) @ a
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else z @ z
        if bit:
            result = z if result is None else result @ z
    return result


def matrix_exp(A: Any) -> Tensor:  # noqa: N803
    """``exp(A)`` of each square matrix: a degree-18 Taylor polynomial of ``A / 2^s`` (``||A / 2^s||_1 <= 1/2``)
    squared ``s`` times, so its gradient is that of the products (exact to rounding)."""
    a = _matrix(A, "linalg.matrix_exp")
    if is_traced(a):
        a._concrete("linalg.matrix_exp (its scaling is chosen from the matrix's norm)")
    n = a.shape[-1]
    norm = float(np.abs(a._data).sum(-2).max()) if a.numel() else 0.0
    if not math.isfinite(norm):
        norm = 0.0
    s = builtins.max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0 else 0
    x = a / float(2 ** s) if s else a
    eye = _eye(a, n)
    p = eye + x / 18.0
    for k in builtins.range(17, 0, -1):
        p = eye + (x @ p) / float(k)
    for _ in builtins.range(s):
        p = p @ p
    return _named(p, "LinalgMatrixExpBackward0")


def solve_triangular(A: Any, B: Any, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Tensor:
    """``X`` with ``A @ X = B`` (``left=False``: ``X @ A = B``) reading only ``A``'s ``upper`` / lower triangle
    (``unitriangular``: ones on its diagonal); ``A``'s gradient lies in that triangle, as torch's."""
    a, b = _matrix(A, "linalg.solve_triangular"), _t(B)
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type "
                           f"{dtypes.torch_type_name(a.dtype)} and B of type {dtypes.torch_type_name(b.dtype)} "
                           "instead")
    if unitriangular:
        tri = _triangle(a, 1 if upper else -1, not upper) + _eye(a, n)
    else:
        tri = _triangle(a, 0, not upper)
    return _named(_run("linalg_solve", tri, b, vector=False, left=left), "LinalgSolveTriangularBackward0")


def multi_dot(tensors: Sequence[Any]) -> Tensor:
    """The product of a chain of matrices (the first / last may be 1-d) in the order of fewest multiplications."""
    ts = [_t(t) for t in tensors]
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {ts[-1].ndim}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = [ts[0].unsqueeze(0) if first_vec else ts[0], *ts[1:-1], ts[-1].unsqueeze(-1) if last_vec else ts[-1]]
    for i in builtins.range(len(mats) - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    k = len(mats)
    cost = [[0] * k for _ in builtins.range(k)]
    split = [[0] * k for _ in builtins.range(k)]
    for length in builtins.range(1, k):
        for i in builtins.range(k - length):
            j = i + length
            cost[i][j] = -1
            for m in builtins.range(i, j):
                c = cost[i][m] + cost[m + 1][j] + dims[i] * dims[m + 1] * dims[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, m

    def chain(i: int, j: int) -> Tensor:
        if i == j:
            return mats[i]
        m = split[i][j]
        return chain(i, m) @ chain(m + 1, j)

    out = chain(0, k - 1)
    if first_vec and last_vec:
        shape: tuple[int, ...] = ()
    elif first_vec:
        shape = (out.shape[1],)
    elif last_vec:
        shape = (out.shape[0],)
    else:
        shape = tuple(out.shape)
    return _apply(REGISTRY["reshape"], out, shape=shape, fn="ViewBackward0")


def vecdot(x: Any, y: Any, *, dim: int = -1) -> Tensor:
    """The dot product of the vectors along ``dim`` (broadcast)."""
    return (_t(x) * _t(y)).sum(dim)


# --------------------------------------------------------------------------- torch.* aliases

def inverse(input: Any) -> Tensor:  # noqa: A002
    """``torch.inverse``: ``linalg.inv``."""
    return inv(input)


def logdet(input: Any) -> Tensor:  # noqa: A002
    """``log(det(A))``: NaN where the determinant is negative, -inf where it is 0."""
    a = _t(input)
    _square(a, "logdet")
    sign, logabs = slogdet(a)
    return where(sign == -1, make_tensor(np.asarray(np.nan, logabs.dtype.np)), logabs)


def top_slogdet(input: Any) -> Any:  # noqa: A002
    """``torch.slogdet``: ``(sign, logabsdet)`` as a ``torch.return_types.slogdet``."""
    return _SLOGDET_TOP(*slogdet(input))


def pinverse(input: Any, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse``: ``linalg.pinv`` with relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


_CHOLESKY_WARNED = [False]


def top_cholesky(input: Any, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky`` (deprecated, warning once as torch does)."""
    if not _CHOLESKY_WARNED[0]:
        _CHOLESKY_WARNED[0] = True
        warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                      "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)"
                      "\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = "
                      "torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for all valid "
                      "(symmetric positive definite) inputs.", UserWarning, stacklevel=2)
    return _named(_run("linalg_cholesky", _matrix(input, "cholesky"), upper=upper), "CholeskyBackward0")


def _factor(L: Tensor, upper: bool) -> Tensor:  # noqa: N803
    """``L`` whose value is its triangle and whose gradient is the full matrix's (torch reads only the triangle
    but differentiates the full product)."""
    other = _triangle(L, -1 if upper else 1, upper)
    return L - other.detach()


def cholesky_solve(B: Any, L: Any, upper: bool = False) -> Tensor:  # noqa: N803
    """``X`` with ``L L^T X = B`` (``upper``: ``U^T U X = B``) from a Cholesky factor."""
    b, factor = _t(B), _t(L)
    if b.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions instead")
    if factor.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {factor.ndim} dimensions instead")
    f = _factor(factor, upper)
    lower = f.mT if upper else f
    y = _run("linalg_solve", lower, b, vector=False, left=True)
    return _named(_run("linalg_solve", lower.mT, y, vector=False, left=True), "CholeskySolveBackward0")


def cholesky_inverse(L: Any, upper: bool = False) -> Tensor:  # noqa: N803
    """``(L L^T)^-1`` (``upper``: ``(U^T U)^-1``) from a Cholesky factor."""
    factor = _t(L)
    _square(factor, "cholesky_inverse")
    f = _factor(factor, upper)
    lower = f.mT if upper else f
    li = _run("linalg_inv", lower)
    return _named(li.mT @ li, "CholeskyInverseBackward0")


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """A tensor whose diagonals ``offset`` over ``dim1``, ``dim2`` hold the last dim of ``input``, zeros elsewhere."""
    t = _t(input)
    nd = t.ndim + 1
    d1, d2 = (d + nd if d < 0 else d for d in (dim1, dim2))
    for d, given in ((d1, dim1), (d2, dim2)):
        if not 0 <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {given})")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = t.shape[-1] if t.ndim else 1
    m = n + builtins.abs(offset)
    i, j = np.indices((m, m))
    on = (j - i) == offset
    pos = np.clip(i if offset >= 0 else j, 0, builtins.max(n - 1, 0))
    src = t if t.is_floating_point() else _cast(t, dtypes.float64)
    spread = src[..., pos] if n else src.reshape(*src.shape[:-1], 0, 0)
    out = spread * make_tensor(on.astype(src.dtype.np))
    if (d1, d2) != (nd - 2, nd - 1):
        out = out.movedim((nd - 2, nd - 1), (d1, d2))
    out = _named(out, "DiagEmbedBackward0")
    return out if t.is_floating_point() else _cast(out, t.dtype)


def block_diag(*tensors: Any) -> Tensor:
    """The block-diagonal matrix of the given 0-, 1- (a row) or 2-d tensors (dtypes promoted)."""
    ts = [_t(t) for t in tensors]
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in ts]
    dt = dtypes.get_default_dtype()
    if mats:
        dt = mats[0].dtype
        for m in mats[1:]:
            dt = dtypes.promote_types(dt, m.dtype)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, c0 = [], 0
    for m in mats:
        m = m if m.dtype == dt else _cast(m, dt)
        r, c = m.shape
        parts = [make_tensor(np.zeros((r, c0), dt.np)), m, make_tensor(np.zeros((r, cols - c0 - c), dt.np))]
        rows.append(cat(parts, 1))
        c0 += c
    if not rows:
        return make_tensor(np.zeros((1, 0), dt.np))
    out = cat(rows, 0)
    return _named(out, "BlockDiagBackward0")


class LinalgMethods:
    """``Tensor`` methods of torch's linear-algebra functions."""

    __slots__ = ()

    det = det
    inverse = inverse
    logdet = logdet
    slogdet = top_slogdet
    cholesky = top_cholesky
    pinverse = pinverse
    matrix_power = matrix_power
    matrix_exp = matrix_exp
    diag_embed = diag_embed
    cholesky_solve = cholesky_solve
    cholesky_inverse = cholesky_inverse
