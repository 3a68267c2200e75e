"""``sg.special``: torch.special. Existing ops under torch's special names (``expit`` is ``sigmoid``, ``psi``
``digamma``, ...), fused expressions for ``logit xlog1py entr ndtr``, and the scipy-backed ops of ``ops/special.py``
(``erfinv gammaln digamma polygamma i0 i0e i1 i1e ndtri log_ndtr erfcx``)."""
from __future__ import annotations

from typing import Any

import sympy as sp

from codegen.functions import IsNan

from .eager.composite import _fused
from .eager.functional import log1p, log_softmax, logsumexp, sigmoid, softmax  # noqa: F401
from .eager.math_ops import erf, erfc, exp2, expm1, round, sinc, xlogy  # noqa: F401
from .eager.more_ops import _float, digamma, erfinv, i0, polygamma, special_op
from .eager.more_ops import lgamma as gammaln
from .eager.more_ops import mvlgamma as multigammaln
from .eager.tensor import Tensor

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e",
           "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]

expit = sigmoid
psi = digamma
A0, A1 = sp.Symbol("a0", real=True), sp.Symbol("a1", real=True)


def i0e(input: Any) -> Tensor:  # noqa: A002
    """The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) i0(x)``."""
    return special_op(input, "i0e")


def i1(input: Any) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind, order 1."""
    return special_op(input, "i1")


def i1e(input: Any) -> Tensor:  # noqa: A002
    """``exp(-|x|) i1(x)``."""
    return special_op(input, "i1e")


def ndtri(input: Any) -> Tensor:  # noqa: A002
    """The inverse of the standard normal CDF."""
    return special_op(input, "ndtri")


def log_ndtr(input: Any) -> Tensor:  # noqa: A002
    """``log(ndtr(x))``, accurate in the lower tail."""
    return special_op(input, "log_ndtr")


def erfcx(input: Any) -> Tensor:  # noqa: A002
    """The scaled complementary error function ``exp(x^2) erfc(x)``; its derivative is ``2 x erfcx(x) - 2/sqrt(pi)``."""
    return special_op(input, "erfcx")


def ndtr(input: Any) -> Tensor:  # noqa: A002
    """The standard normal CDF, ``(1 + erf(x / sqrt(2))) / 2`` (as ``erfc(-x / sqrt(2)) / 2``)."""
    return _fused(sp.erfc(-A0 / sp.sqrt(2)) / 2, _float(input), fn="MulBackward1")


def logit(input: Any, eps: float | None = None) -> Tensor:  # noqa: A002
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given (zero gradient outside)."""
    x = _float(input)
    if eps is None:
        return _fused(sp.log(A0 / (1 - A0)), x, fn="LogitBackward0")
    lo, hi = sp.Float(eps), sp.Float(1 - eps)
    clamped = sp.Piecewise((lo, A0 < lo), (hi, A0 > hi), (A0, True))
    return _fused(sp.log(clamped / (1 - clamped)), x, fn="LogitBackward0")


def xlog1py(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
    x, y = _float(input), _float(other)
    expr = sp.Piecewise((0, sp.Eq(A0, 0) & ~IsNan(A1)), (A0 * sp.log(1 + A1), True))
    return _fused(expr, x, y, fn="SpecialXlog1PyBackward0")


def entr(input: Any) -> Tensor:  # noqa: A002
    """``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below (the gradient at 0 is 0 here, torch's is inf)."""
    expr = sp.Piecewise((sp.nan, IsNan(A0)), (-A0 * sp.log(A0), A0 > 0), (0, sp.Eq(A0, 0)), (-sp.oo, True))
    return _fused(expr, _float(input), fn="SpecialEntrBackward0")

