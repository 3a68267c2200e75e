"""``sg.linalg``: torch.linalg (the functions live in ``eager/linalg_ops.py``, where ``Tensor``'s methods reach
them too)."""
from __future__ import annotations

from .eager.linalg_ops import (  # noqa: F401
    LinAlgError,
    cholesky,
    cross,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
    vecdot,
    vector_norm,
)

__all__ = ["LinAlgError", "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_exp",
           "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_triangular", "svd", "svdvals", "vecdot", "vector_norm"]
