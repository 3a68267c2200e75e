"""torch's sampling functions with rejection loops, on tensors: ``_standard_gamma`` (differentiable through
``_standard_gamma_grad``, torch's implicit reparameterisation), ``_sample_dirichlet`` (``_Dirichlet``:
differentiable through ``_dirichlet_grad``), ``poisson`` and ``binomial``. The numbers come from
``core.rng_dist``: torch's CPU algorithms on the shared, torch-identical stream."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from ..core import rng_dist
from ..eager.base import TensorBase, make_tensor
from ..eager.grad_mode import is_grad_enabled
from ..eager.random import Generator, _engine
from ..eager.tensor import Tensor

__all__ = ["_dirichlet_grad", "_sample_dirichlet", "_standard_gamma", "_standard_gamma_grad", "binomial", "poisson"]


def _np(t: Any) -> np.ndarray:
    return np.ascontiguousarray(t.detach()._data)


def _check(t: Any, name: str) -> None:
    if not isinstance(t, TensorBase):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")


class _StandardGamma(Function):
    """``x = _standard_gamma(alpha)``; ``dx/dalpha = _standard_gamma_grad(alpha, x)`` (saved at the draw)."""

    @staticmethod
    def forward(ctx: Any, alpha: Tensor, generator: Generator | None) -> Tensor:
        a = _np(alpha)
        x = rng_dist.standard_gamma(_engine(generator), a)
        ctx.save_for_backward(make_tensor(rng_dist.standard_gamma_grad(a, x)))
        return make_tensor(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (dx,) = ctx.saved_tensors
        return grad * dx, None


def _standard_gamma(alpha: Tensor, generator: Generator | None = None) -> Tensor:
    """``torch._standard_gamma``: Gamma(alpha, 1) draws (at least the dtype's tiny), reparameterised."""
    _check(alpha, "_standard_gamma")
    if alpha.requires_grad and is_grad_enabled():
        return _StandardGamma.apply(alpha, generator)
    return make_tensor(rng_dist.standard_gamma(_engine(generator), _np(alpha)))


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``torch._standard_gamma_grad``: ``-(d/dalpha cdf(x; alpha)) / pdf(x; alpha)``."""
    return make_tensor(rng_dist.standard_gamma_grad(_np(alpha), _np(x)))


def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """``torch._dirichlet_grad``: the Beta-marginal reparameterisation gradient of a Dirichlet draw."""
    return make_tensor(rng_dist.dirichlet_grad(_np(x), _np(alpha), _np(total)))


def _dirichlet_sample_np(alpha: Tensor, generator: Generator | None) -> np.ndarray:
    a = _np(alpha)
    if a.dtype not in (np.float32, np.float64):
        raise RuntimeError("\"dirichlet\" not implemented for 'Long'")
    gammas = rng_dist.dirichlet_gammas(_engine(generator), a)
    g = make_tensor(gammas)
    total = g.sum(-1, keepdim=True)._data     # torch's double sum, in its order
    ret = (gammas / total).astype(a.dtype)
    lo = np.finfo(a.dtype).tiny
    hi = np.nextafter(a.dtype.type(1.0), a.dtype.type(0.0))
    return np.minimum(hi, np.maximum(lo, ret))


def _sample_dirichlet(alpha: Tensor, generator: Generator | None = None) -> Tensor:
    """``torch._sample_dirichlet``: normalised double gammas, clipped into ``(0, 1)``."""
    _check(alpha, "_sample_dirichlet")
    return make_tensor(_dirichlet_sample_np(alpha, generator))


class _Dirichlet(Function):
    """torch.distributions.dirichlet's ``_Dirichlet``: the draw, and ``_Dirichlet_backward`` as its backward."""

    @staticmethod
    def forward(ctx: Any, concentration: Tensor) -> Tensor:
        x = make_tensor(_dirichlet_sample_np(concentration, None))
        total = concentration.sum(-1, True).expand_as(concentration)
        ctx.save_for_backward(x, _dirichlet_grad(x, concentration, total))
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tensor:
        x, grad = ctx.saved_tensors
        return grad * (grad_output - (x * grad_output).sum(-1, True))


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:  # noqa: A002
    """``torch.poisson(rate)``: one Poisson draw per element (float, the rate's dtype)."""
    _check(input, "poisson")
    return make_tensor(rng_dist.poisson(_engine(generator), _np(input)))


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """``torch.binomial(count, prob)``: one Binomial draw per element."""
    _check(count, "binomial")
    return make_tensor(rng_dist.binomial(_engine(generator), _np(count), _np(prob)))
