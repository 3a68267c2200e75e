"""``Normal``, ``Uniform``, ``Bernoulli``, ``Categorical``: torch.distributions' formulas and random calls."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..eager import random as _random
from ..eager.base import Size, TensorBase, make_tensor
from ..eager.basic import where
from ..eager.functional import empty, full, log, softmax
from ..eager.grad_mode import enable_grad, no_grad
from ..eager.more_ops import erfinv
from ..eager.tensor import Tensor
from ..nn.losses import binary_cross_entropy_with_logits
from . import distribution as D
from .distribution import LOG_SQRT_2PI, Distribution, LocScale, broadcast_all


class Normal(LocScale):
    """The normal distribution ``N(loc, scale^2)``; ``rsample`` is reparameterised (``loc + eps * scale``)."""

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return _random.normal(self.loc.expand(*shape), self.scale.expand(*shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = empty(*shape, dtype=self.loc.dtype).normal_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Any) -> Tensor:
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + log(self.scale)


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``; ``rsample`` is ``low + rand * (high - low)``."""

    arg_constraints = {"low": D.Constraint("Dependent(bounds)", lambda x: x == x),  # noqa: PLR0124
                       "high": D.Constraint("Dependent(bounds)", lambda x: x == x)}  # noqa: PLR0124
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        numbers = not isinstance(low, TensorBase) and not isinstance(high, TensorBase)
        super().__init__(Size(()) if numbers else self.low.shape, validate_args=validate_args)
        if self._validate_args and not bool(np.all(self.low.detach()._data < self.high.detach()._data)):
            raise ValueError("Uniform is not defined when low>= high")

    def _support(self) -> D.Constraint:
        return D.interval(self.low, self.high, half_open=False)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Uniform:
        return self._expand_params(Uniform, batch_shape, ("low", "high"), _instance)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        rand = _random.rand(*shape, dtype=self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return log(lb.mul(ub)) - log(self.high - self.low)

    def cdf(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Any) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return log(self.high - self.low)


def _clamp_probs(p: Tensor) -> Tensor:
    eps = float(np.finfo(p.dtype.np).eps)
    return p.clamp(min=eps, max=1 - eps)


class Bernoulli(Distribution):
    """A coin with ``probs`` (or ``logits``) of 1; samples are floats 0 / 1 (``torch.bernoulli``)."""

    arg_constraints = {"probs": D.unit_interval, "logits": D.real}
    support = D.boolean

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        param = probs if probs is not None else logits
        (t,) = broadcast_all(param)
        if probs is not None:
            self.probs = t
        else:
            self.logits = t
        self._param = t
        super().__init__(Size(()) if not isinstance(param, TensorBase) else t.shape, validate_args=validate_args)

    def __getattr__(self, name: str) -> Any:
        if name not in ("probs", "logits"):
            raise AttributeError(name)
        with enable_grad():   # a lazy property: differentiable even when first read under no_grad (sample)
            if name == "probs":
                value = self.logits.sigmoid()
            else:
                p = _clamp_probs(self.probs)
                value = p.log() - (-p).log1p()
        self.__dict__[name] = value
        return value

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        new = self._expand_params(Bernoulli, batch_shape, ("probs", "logits"), _instance)
        new._param = new.__dict__["probs" if self._param is self.__dict__.get("probs") else "logits"]
        return new

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return where(self.probs == 0.5, full(tuple(m.shape), float("nan"), dtype=m.dtype), m)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return _random.bernoulli(self.probs.expand(*shape))

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = make_tensor(np.arange(2, dtype=self._param.dtype.np)).reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(2, *self._batch_shape) if expand else values


class Categorical(Distribution):
    """One of ``K`` categories with ``probs`` (normalised) or ``logits`` over the last dim (``torch.multinomial``)."""

    arg_constraints = {"probs": D.simplex, "logits": D.real_vector}

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self._param = self.probs
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self._param = self.logits
        self._num_events = self._param.shape[-1]
        batch = self._param.shape[:-1] if self._param.ndim > 1 else Size(())
        super().__init__(batch, validate_args=validate_args)

    def __getattr__(self, name: str) -> Any:
        if name not in ("probs", "logits"):
            raise AttributeError(name)
        with enable_grad():
            value = softmax(self.logits, -1) if name == "probs" else _clamp_probs(self.probs).log()
        self.__dict__[name] = value
        return value

    def _support(self) -> D.Constraint:
        return D.integer_interval(0, self._num_events - 1)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(tuple(batch_shape))
        shape = (*batch_shape, self._num_events)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(*shape)
                new._param = new.__dict__[name]
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = Size(tuple(sample_shape))
        n = int(np.prod(tuple(shape), dtype=np.int64))
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = _random.multinomial(probs_2d, n, True).T
            return samples_2d.reshape(*self._extended_shape(sample_shape))

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape[:-1]) + (1,))
        value = value.expand(*shape)
        log_pmf = self.logits.expand(*shape[:-1], self._num_events)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = float(np.finfo(self.logits.dtype.np).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = make_tensor(np.arange(self._num_events, dtype=np.int64)).reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values


