"""``Exponential``, ``Laplace``, ``MultivariateNormal`` and ``kl_divergence``: torch.distributions' formulas and
random calls (``exponential_``, ``uniform_``, ``normal_``), so seeded samples are torch's."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..eager.base import Size, TensorBase, make_tensor
from ..eager.basic import where
from ..eager.functional import empty
from ..eager.grad_mode import no_grad
from ..eager.linalg_ops import cholesky, solve_triangular
from ..eager.tensor import Tensor
from ..nn.functional import softplus
from . import distribution as D
from .distribution import Distribution, LocScale, broadcast_all
from .simple import Bernoulli, Categorical, Normal, Uniform

__all__ = ["Exponential", "Laplace", "MultivariateNormal", "kl_divergence", "register_kl"]


class Exponential(Distribution):
    """The exponential distribution with ``rate``; ``rsample`` is ``exponential_() / rate``."""

    arg_constraints = {"rate": D.positive}
    support = D.Constraint("GreaterThanEq(lower_bound=0.0)", lambda x: x >= 0)
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size(()) if not isinstance(rate, TensorBase) else self.rate.shape,
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Exponential:
        return self._expand_params(Exponential, batch_shape, ("rate",), _instance)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return self.rate * 0

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return empty(*shape, dtype=self.rate.dtype).exponential_() / self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Any) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()


class Laplace(LocScale):
    """The Laplace distribution ``Laplace(loc, scale)``; ``rsample`` inverts the cdf of ``uniform_(eps - 1, 1)``."""

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = float(np.finfo(self.loc.dtype.np).eps)
        u = empty(*shape, dtype=self.loc.dtype).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * (-(value - self.loc).abs() / self.scale).expm1()

    def icdf(self, value: Any) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else make_tensor(np.asarray(x, dtype=np.float32))


def _batch_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*shapes))


class MultivariateNormal(Distribution):
    """``N(loc, Sigma)`` given one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``; kept as the
    lower Cholesky factor ``L`` (``rsample``: ``loc + L @ eps``), ``log_prob`` through a triangular solve."""

    arg_constraints = {"loc": D.real_vector, "covariance_matrix": D.Constraint("PositiveDefinite()", lambda x: x == x),
                       "precision_matrix": D.Constraint("PositiveDefinite()", lambda x: x == x),
                       "scale_tril": D.Constraint("LowerCholesky()", lambda x: x == x)}
    support = D.real_vector
    has_rsample = True

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None) -> None:
        loc = _t(loc)
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        given = _t(given)
        if given.ndim < 2:
            name = "scale_tril" if scale_tril is not None else "covariance_matrix" if covariance_matrix is not None \
                else "precision_matrix"
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch "
                             "dimensions")
        batch = _batch_shape(tuple(given.shape[:-2]), tuple(loc.shape[:-1]))
        k = loc.shape[-1]
        if scale_tril is not None:
            self.scale_tril = given.expand(*batch, -1, -1)
            self._unbroadcasted_scale_tril = given
        elif covariance_matrix is not None:
            self.covariance_matrix = given.expand(*batch, -1, -1)
            self._unbroadcasted_scale_tril = cholesky(given)
        else:
            self.precision_matrix = given.expand(*batch, -1, -1)
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(given)
        self.loc = loc.expand(*batch, -1)
        super().__init__(Size(batch), Size((k,)), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def _cov(self) -> Tensor:
        L = self._unbroadcasted_scale_tril  # noqa: N806
        return L @ L.mT

    def __getattr__(self, name: str) -> Any:
        if name == "covariance_matrix":
            return self._cov().expand(*self._batch_shape, *self._event_shape, *self._event_shape)
        if name == "precision_matrix":
            L = self._unbroadcasted_scale_tril  # noqa: N806
            eye = make_tensor(np.eye(L.shape[-1], dtype=L.dtype.np))
            li = solve_triangular(L, eye, upper=False)
            return (li.mT @ li).expand(*self._batch_shape, *self._event_shape, *self._event_shape)
        if name == "scale_tril":
            return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape,
                                                         *self._event_shape)
        raise AttributeError(name)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = empty(*shape, dtype=self.loc.dtype).normal_()
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril  # noqa: N806
        shape = _batch_shape(tuple(L.shape[:-2]), tuple(diff.shape[:-1]))
        sol = solve_triangular(L.expand(*shape, -1, -1), diff.expand(*shape, -1).unsqueeze(-1), upper=False)
        m = sol.squeeze(-1).pow(2).sum(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h


def _precision_to_scale_tril(p: Tensor) -> Tensor:
    lf = cholesky(p.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).mT
    eye = make_tensor(np.eye(p.shape[-1], dtype=p.dtype.np))
    return solve_triangular(l_inv, eye, upper=False)


# --------------------------------------------------------------------------- KL divergence

_KL: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """A decorator registering ``fn(p, q)`` as ``KL(p || q)`` for those distribution types."""
    def deco(fn: Callable) -> Callable:
        _KL[(type_p, type_q)] = fn
        return fn
    return deco


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)`` for a registered pair of types (the most specific match)."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            fn = _KL.get((tp, tq))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                              f"{type(q).__name__}")


def _inf_where(mask: Any, t: Tensor, value: float) -> Tensor:
    m = mask if isinstance(mask, TensorBase) else make_tensor(np.asarray(mask))
    return where(m, make_tensor(np.asarray(value, t.dtype.np)), t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _inf_where(q.probs == 0, t1, math.inf)
    t1 = _inf_where(p.probs == 0, t1, 0.0)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _inf_where(q.probs == 1, t2, math.inf)
    t2 = _inf_where(p.probs == 1, t2, 0.0)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _inf_where((q.probs == 0).expand_as(t), t, math.inf)
    t = _inf_where((p.probs == 0).expand_as(t), t, 0.0)
    return t.sum(-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result, math.inf)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    shape = _batch_shape(tuple(lp.shape[:-2]), tuple(lq.shape[:-2]), tuple(p.loc.shape[:-1]),
                         tuple(q.loc.shape[:-1]))
    k = p.event_shape[0]
    lq_b = lq.expand(*shape, k, k)
    term2 = solve_triangular(lq_b, lp.expand(*shape, k, k), upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(*shape, k).unsqueeze(-1)
    term3 = solve_triangular(lq_b, diff, upper=False).squeeze(-1).pow(2).sum(-1)
    return half_term1 + 0.5 * (term2 + term3 - k)
