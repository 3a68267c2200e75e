"""Composite reductions: ``var``, ``std``, ``var_mean``, ``std_mean`` and the norms (``norm``, ``linalg.vector_norm``,
``linalg.norm`` / ``matrix_norm``, ``dist``), built from registry ops under torch's grad_fn names."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from ..core import dtypes
from ..ops import REGISTRY, A, normalize_dims
from .base import TensorBase
from .basic import _amax, _cast
from .composite_base import _dims, _fused, _named
from .edges import set_edges
from .record import _apply

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["dist", "linalg_norm", "norm", "std", "std_mean", "var", "var_mean", "vector_norm"]


# --------------------------------------------------------------------------- var / std

def _correction(dim: Any, unbiased: Any, correction: Any) -> tuple[Any, float]:
    if isinstance(dim, builtins.bool):  # var(unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("var() received an invalid combination of arguments - got both unbiased and correction")
    if correction is not None:
        return dim, correction
    return dim, 0 if unbiased is False else 1


def _moments(t: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any, fn: str,
             root: bool) -> Tensor:
    dim, c = _correction(dim, unbiased, correction)
    if not t.is_floating_point():
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(t, dim)
    n = math.prod(t.shape[d] for d in dims)
    centered = t - t.mean(dims, keepdim=True)
    s = (centered * centered).sum(dims, keepdim=keepdim)
    div = builtins.max(n - c, 0)
    if div == 0:
        warnings.warn(f"{'std' if root else 'var'}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).", stacklevel=3)
    # N - correction read from the shape at run time (the ``numel`` op, as mean's 1/N): one kernel text
    # for every size
    count = _apply(REGISTRY["numel"], t.detach(), dims=dims)
    denom = sp.Max(A[1] - c, 0)
    if not root:
        return _fused(A[0] / denom, s, count, fn=fn)
    # torch's std backward: grad / (2 * std), zero where std is zero (constant slices)
    # (0/0 stays NaN: a single element with correction 1)
    expr = sp.Piecewise((0, sp.Eq(A[0] / denom, 0)), (sp.sqrt(A[0] / denom), True))
    return _fused(expr, s, count, fn=fn)


def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,  # noqa: A002
        correction: Any = None) -> Tensor:
    """Variance over ``dim`` (all dims for None), divided by ``N - correction`` (default 1; ``unbiased=False``: 0)."""
    return _moments(input, dim, unbiased, keepdim, correction, "VarBackward0", False)


def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,  # noqa: A002
        correction: Any = None) -> Tensor:
    """Standard deviation (``sqrt(var)``); its gradient is zero where it is zero, as torch's."""
    return _moments(input, dim, unbiased, keepdim, correction, "StdBackward0", True)


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,  # noqa: A002
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim``."""
    v = _moments(input, dim, unbiased, keepdim, correction, "VarMeanBackward0", False)
    d, _ = _correction(dim, unbiased, correction)
    return v, _named(input.mean(_dims(input, d), keepdim=keepdim), "VarMeanBackward0")


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,  # noqa: A002
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim``."""
    s = _moments(input, dim, unbiased, keepdim, correction, "StdMeanBackward0", True)
    d, _ = _correction(dim, unbiased, correction)
    return s, _named(input.mean(_dims(input, d), keepdim=keepdim), "StdMeanBackward0")


# --------------------------------------------------------------------------- norms

_VNORM = "LinalgVectorNormBackward0"


def _float_input(t: Tensor, dtype: Any, who: str) -> Tensor:
    if dtype is not None:
        t = _cast(t, dtypes.from_any(dtype))
    if not t.is_floating_point():
        raise RuntimeError(f"{who}: Expected a floating point or complex tensor as input. Got "
                           f"{dtypes.torch_type_name(t.dtype)}")
    return t


def _vector_norm(t: Tensor, p: Any, dims: tuple[int, ...], keepdim: bool, fn: str = _VNORM) -> Tensor:
    """The ``p``-norm over ``dims``: one node ``fn`` over ``t`` as torch shows it (its inner nodes not shown)."""
    return set_edges(_vector_norm_nodes(t, p, dims, keepdim, fn), t)


def _vector_norm_nodes(t: Tensor, p: Any, dims: tuple[int, ...], keepdim: bool, fn: str) -> Tensor:
    p = builtins.float(p)
    if p == 2:
        s = (t * t).sum(dims, keepdim=keepdim)
        return _fused(sp.Piecewise((0, sp.Eq(A[0], 0)), (sp.sqrt(A[0]), True)), s, fn=fn)
    if p == 1:
        return _named(t.abs().sum(dims, keepdim=keepdim), fn)
    if math.isinf(p):
        a = t.abs()
        red = _amax(a, "amax" if p > 0 else "amin", dims if dims else (), keepdim)
        return _named(red, fn)
    if p == 0:
        nz = _fused(sp.Piecewise((0, sp.Eq(A[0], 0)), (1, True)), t)
        return _named(nz.sum(dims, keepdim=keepdim), fn)
    q = sp.Rational(builtins.int(p)) if p.is_integer() else sp.Float(p)
    s = _fused(sp.Abs(A[0]) ** q, t).sum(dims, keepdim=keepdim)
    root = A[0] ** (1 / q)
    return _fused(sp.Piecewise((0, sp.Eq(A[0], 0)), (root, True)) if p > 0 else root, s, fn=fn)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: Any = None) -> Tensor:
    """``sum(|x|**ord) ** (1/ord)`` over ``dim`` (all dims for None); ``ord`` inf / -inf: max / min of ``|x|``."""
    t = _float_input(x, dtype, "linalg.vector_norm")
    return _vector_norm(t, ord, _dims(t, dim), keepdim)


def _matrix_norm(t: Tensor, ord: Any, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    if t.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (normalize_dims(d, t.ndim)[0] for d in dims)
    if ord == "fro":
        return _vector_norm(t, 2, tuple(sorted((d0, d1))), keepdim)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"symgrad's linalg.norm supports vector, Frobenius and 1/inf matrix norms, "
                                  f"not ord={ord!r}")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, over = (d0, d1) if abs(ord) == 1 else (d1, d0)
    s = t.abs().sum(summed, keepdim=keepdim)
    over -= 1 if not keepdim and summed < over else 0
    return _amax(s, "amax" if ord > 0 else "amin", (over,), keepdim)


def linalg_norm(A_: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: Any = None) -> Tensor:
    """``torch.linalg.norm`` for vectors (any ``ord``) and matrices (Frobenius, 1, inf)."""
    t = _float_input(A_, dtype, "linalg.vector_norm")
    if isinstance(dim, (builtins.int, np.integer)):
        dim = (builtins.int(dim),)
    if dim is not None and len(dim) == 2:
        return _matrix_norm(t, "fro" if ord is None else ord, tuple(dim), keepdim)
    if ord is None:
        return _vector_norm(t, 2, _dims(t, dim), keepdim)
    if isinstance(ord, str):  # 'fro' / 'nuc': matrix norms
        return _matrix_norm(t, ord, (-2, -1), keepdim)
    if dim is None:
        if t.ndim == 2:
            return _matrix_norm(t, ord, (-2, -1), keepdim)
        if t.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {t.ndim}D.")
    return _vector_norm(t, ord, _dims(t, dim), keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,  # noqa: A002
         dtype: Any = None) -> Tensor:
    """``Tensor.norm``: the vector ``p``-norm over ``dim`` (``'fro'``: the 2-norm)."""
    if p == "nuc":
        raise NotImplementedError("symgrad's norm does not support the nuclear norm")
    t = _float_input(input, dtype, "linalg.vector_norm")
    return _vector_norm(t, 2 if p == "fro" or p is None else p, _dims(t, dim), keepdim)


def dist(input: Tensor, other: Any, p: Any = 2) -> Tensor:  # noqa: A002
    """``norm(input - other, p)`` (broadcast)."""
    d = input - other
    t = _float_input(d, None, "linalg.vector_norm")
    return set_edges(_vector_norm(t, p, tuple(range(t.ndim)), False, fn="DistBackward0"), input,
                     other if isinstance(other, TensorBase) else None)
