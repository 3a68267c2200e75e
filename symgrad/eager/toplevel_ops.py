"""torch's remaining top-level functions, gathered: ``toplevel_core`` (dtype limits, predicates, elementwise,
products, selections, builders) and ``toplevel_stats`` (counts, integrals, covariance, quantiles, renorm), the
exports of ops other modules define (``masked_select masked_scatter scatter scatter_add mode``), and
``ToplevelMethods``, the matching ``Tensor`` mixin."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import dtypes
from .more_ops import _inplace
from .toplevel_core import (
    all,
    any,
    argwhere,
    asarray,
    broadcast_tensors,
    can_cast,
    cartesian_prod,
    clamp_max,
    clamp_min,
    combinations,
    copysign,
    cummax,
    cummin,
    finfo,
    float_power,
    fmax,
    fmin,
    gcd,
    ger,
    heaviside,
    hsplit,
    iinfo,
    index_copy,
    index_fill,
    inner,
    is_floating_point,
    is_nonzero,
    isneginf,
    isposinf,
    isreal,
    lcm,
    logit,
    masked_scatter,
    masked_select,
    mode,
    msort,
    rot90,
    scatter,
    scatter_add,
    signbit,
    take,
    tensordot,
    tril_indices,
    triu_indices,
    unravel_index,
    vander,
    vdot,
    vsplit,
)
from .toplevel_stats import (
    bincount,
    corrcoef,
    cov,
    cumulative_trapezoid,
    isin,
    nanquantile,
    quantile,
    renorm,
    trapezoid,
    unique_consecutive,
)

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["all", "any", "argwhere", "asarray", "bincount", "broadcast_tensors", "can_cast", "cartesian_prod",
           "clamp_max", "clamp_min", "combinations", "copysign", "corrcoef", "cov", "cummax", "cummin",
           "cumulative_trapezoid", "finfo", "float_power", "fmax", "fmin", "gcd", "ger", "heaviside", "hsplit", "iinfo",
           "index_copy", "index_fill", "inner", "is_floating_point", "is_nonzero", "isin", "isneginf", "isposinf",
           "isreal", "lcm", "logit", "masked_scatter", "masked_select", "mode", "msort", "nanquantile", "quantile",
           "renorm", "rot90", "scatter", "scatter_add", "signbit", "take", "tensordot", "trapezoid", "tril_indices",
           "triu_indices", "unique_consecutive", "unravel_index", "vander", "vdot", "vsplit"]

# --------------------------------------------------------------------------- Tensor methods

_METHOD_NAMES = ("float_power", "logit", "heaviside", "fmax", "fmin", "copysign", "gcd", "lcm", "inner", "vdot",
                 "ger", "argwhere", "bincount", "cummax", "cummin", "take", "rot90", "signbit", "isneginf",
                 "isposinf", "isreal", "msort", "unique_consecutive", "hsplit", "vsplit", "index_copy",
                 "index_fill", "cov", "corrcoef", "quantile", "nanquantile", "renorm", "is_nonzero")


class ToplevelMethods:
    """``Tensor`` methods of this module's functions (and their in-place forms where torch has them)."""

    __slots__ = ()


for _name in _METHOD_NAMES:
    setattr(ToplevelMethods, _name, globals()[_name])
for _fn in (clamp_min, clamp_max, logit, heaviside, copysign, gcd, lcm, index_copy, index_fill,
            renorm):
    setattr(ToplevelMethods, _fn.__name__ + "_", _inplace(_fn))


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    if self.dtype != dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {dtypes.torch_type_name(self.dtype)} but the "
                           "operation's result requires dtype Double")
    return _inplace(float_power)(self, exponent)


ToplevelMethods.float_power_ = _float_power_  # type: ignore[attr-defined]

# eager/toplevel_more.py's functions that torch also has as Tensor methods
from .toplevel_more import addbmm as _addbmm  # noqa: E402
from .toplevel_more import frexp as _frexp  # noqa: E402
from .toplevel_more import ldexp as _ldexp  # noqa: E402
from .toplevel_more import logaddexp2 as _logaddexp2  # noqa: E402
from .toplevel_more import nextafter as _nextafter  # noqa: E402

for _fn in (_addbmm, _ldexp, _logaddexp2, _nextafter):
    setattr(ToplevelMethods, _fn.__name__, _fn)


def _frexp_method(self: Tensor) -> Any:
    return _frexp(self)  # frexp is its return type's class: no descriptor, so a method of its own


_frexp_method.__name__ = "frexp"
ToplevelMethods.frexp = _frexp_method  # type: ignore[attr-defined]
for _fn in (_addbmm, _ldexp, _nextafter):
    setattr(ToplevelMethods, _fn.__name__ + "_", _inplace(_fn))
