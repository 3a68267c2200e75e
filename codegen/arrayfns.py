"""Whole-array numpy functions that ``ir.Call`` statements name: linear algebra (batched over leading dims) and
special functions. Registry ops evaluate through the same functions, so eager values and numpy kernels agree.
scipy is imported only by the functions that need it."""
from __future__ import annotations

import numpy

__all__ = ["cholesky", "det", "eigh", "inv", "qr", "slogdet", "solve", "special", "svd", "svdvals", "tril"]

def inv(a: numpy.ndarray) -> numpy.ndarray:
    """The inverse of each matrix (LAPACK's LU: a singular matrix raises numpy's LinAlgError)."""
    return numpy.linalg.inv(a)

def det(a: numpy.ndarray) -> numpy.ndarray:
    return numpy.asarray(numpy.linalg.det(a), dtype=a.dtype)

def slogdet(a: numpy.ndarray, which: int) -> numpy.ndarray:
    """The sign (``which`` 0) or the log of the absolute determinant (1)."""
    return numpy.asarray(numpy.linalg.slogdet(a)[which], dtype=a.dtype)

def solve(a: numpy.ndarray, b: numpy.ndarray, vector: bool = False, left: bool = True) -> numpy.ndarray:
    """``X`` with ``a @ X = b`` (``left``) or ``X @ a = b``; ``vector``: ``b`` is a (batch of) vector(s)."""
    if not left:
        return numpy.swapaxes(solve(numpy.swapaxes(a, -1, -2), numpy.swapaxes(b, -1, -2)), -1, -2)
    if vector:
        return numpy.linalg.solve(a, b[..., None])[..., 0]
    return numpy.linalg.solve(a, b)

def cholesky(a: numpy.ndarray, upper: bool = False) -> numpy.ndarray:
    low = numpy.linalg.cholesky(a)
    return numpy.swapaxes(low, -1, -2).copy() if upper else low

def eigh(a: numpy.ndarray, which: int, uplo: str = "L") -> numpy.ndarray:
    """Eigenvalues (ascending, ``which`` 0) or eigenvectors (1) of symmetric matrices, from the ``uplo`` triangle."""
    return numpy.linalg.eigh(a, UPLO=uplo)[which]

def svd(a: numpy.ndarray, which: int, full_matrices: bool = True) -> numpy.ndarray:
    """``U`` (0), ``S`` (1) or ``Vh`` (2) of the singular value decomposition."""
    return numpy.linalg.svd(a, full_matrices=full_matrices)[which]

def svdvals(a: numpy.ndarray) -> numpy.ndarray:
    return numpy.linalg.svd(a, compute_uv=False)

def qr(a: numpy.ndarray, which: int, mode: str = "reduced") -> numpy.ndarray:
    """``Q`` (0) or ``R`` (1) of the QR decomposition (``mode`` as numpy's: reduced, complete)."""
    return numpy.linalg.qr(a, mode=mode)[which]

def special(x: numpy.ndarray, name: str, n: int = 0) -> numpy.ndarray:
    """``scipy.special.<name>`` elementwise (``polygamma`` takes its order ``n``), in ``x``'s dtype."""
    import scipy.special  # deferred: scipy is heavy, and only kernels of special functions need it
    with numpy.errstate(all="ignore"):
        if name == "polygamma":
            out = scipy.special.polygamma(n, x)
        else:
            out = getattr(scipy.special, name)(x)
    return numpy.asarray(out, dtype=x.dtype)


def tril(a: numpy.ndarray, k: int = 0) -> numpy.ndarray:
    return numpy.tril(a, k)
