"""torch's remaining top-level functions, gathered: ``toplevel_core`` (dtype limits, predicates, elementwise,
products, selections, builders) and ``toplevel_stats`` (counts, integrals, covariance, quantiles, renorm), the
exports of ops other modules define (``masked_select masked_scatter scatter scatter_add mode``), and
``ToplevelMethods``, the matching ``Tensor`` mixin."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


def _inplace(fn: Any) -> Any:
    def m(self: Tensor, *args: Any, **kw: Any) -> Tensor:
        return self.copy_(fn(self, *args, **kw))
    m.__name__ = fn.__name__ + "_"
    return m


class ToplevelMethods:
    """``Tensor`` methods of this module's functions (and their in-place forms where torch has them)."""

    __slots__ = ()


for _name in _METHOD_NAMES:
    setattr(ToplevelMethods, _name, globals()[_name])
for _fn in (clamp_min, clamp_max, float_power, logit, heaviside, copysign, gcd, lcm, index_copy, index_fill,
            renorm):
    setattr(ToplevelMethods, _fn.__name__ + "_", _inplace(_fn))
