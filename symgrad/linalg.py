"""``sg.linalg``: torch.linalg's vector and matrix norms, as composites of registry ops."""
from __future__ import annotations

from typing import Any

from .eager.composite import _float_input, _matrix_norm, linalg_norm, vector_norm
from .eager.tensor import Tensor

__all__ = ["matrix_norm", "norm", "vector_norm"]

norm = linalg_norm


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,  # noqa: A002, N803
                dtype: Any = None) -> Tensor:
    """The Frobenius (default), 1 or inf norm of the matrices over ``dim``."""
    return _matrix_norm(_float_input(A, dtype, "linalg.matrix_norm"), ord, tuple(dim), keepdim)
