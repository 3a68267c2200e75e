"""``Distribution``: batch and event shapes, ``validate_args`` (torch's default: on), the checks of parameters and
values with torch's texts, and the repr; ``Constraint`` the few supports the distributions here need."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..core import dtypes
from ..eager.base import Size, TensorBase, make_tensor
from ..eager.grad_mode import no_grad

_DEFAULT_VALIDATE = True


class Constraint:
    """A named predicate on values (``check`` returns a bool array); printed as torch prints its constraint."""

    def __init__(self, text: str, check: Callable[[np.ndarray], np.ndarray], event_dim: int = 0) -> None:
        self.text, self._check, self.event_dim = text, check, event_dim

    def check(self, value: Any) -> np.ndarray:
        data = value.detach()._data if isinstance(value, TensorBase) else np.asarray(value)
        ok = self._check(data)
        return ok.all(axis=-1) if self.event_dim and ok.ndim else ok

    def __repr__(self) -> str:
        return self.text


real = Constraint("Real()", lambda x: x == x)                     # noqa: PLR0124  (NaN is not real)
positive = Constraint("GreaterThan(lower_bound=0.0)", lambda x: x > 0)
unit_interval = Constraint("Interval(lower_bound=0.0, upper_bound=1.0)", lambda x: (x >= 0) & (x <= 1))
boolean = Constraint("Boolean()", lambda x: (x == 0) | (x == 1))
real_vector = Constraint("IndependentConstraint(Real(), 1)", lambda x: x == x, event_dim=1)  # noqa: PLR0124


def simplex_check(x: np.ndarray) -> np.ndarray:
    return np.all(x >= 0, axis=-1) & (np.abs(x.sum(-1) - 1) < 1e-6)


simplex = Constraint("Simplex()", simplex_check)


def interval(low: Any, high: Any, *, half_open: bool = False) -> Constraint:
    lo, hi = (np.asarray(v.detach()._data if isinstance(v, TensorBase) else v) for v in (low, high))
    name = "HalfOpenInterval" if half_open else "Interval"
    text = f"{name}(lower_bound={_num(low)}, upper_bound={_num(high)})"
    return Constraint(text, (lambda x: (lo <= x) & (x < hi)) if half_open else (lambda x: (lo <= x) & (x <= hi)))


def integer_interval(low: int, high: int) -> Constraint:
    return Constraint(f"IntegerInterval(lower_bound={low}, upper_bound={high})",
                      lambda x: (x % 1 == 0) & (low <= x) & (x <= high))


def _num(v: Any) -> str:
    return repr(float(v)) if not isinstance(v, TensorBase) else (f"{v}" if v.numel() == 1 else repr(v))


class Distribution:
    """The base of the distributions: shapes, validation, ``sample`` through ``rsample`` without gradient."""

    has_rsample = False
    arg_constraints: dict[str, Constraint] = {}
    support: Any = None

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None) -> None:
        self._batch_shape, self._event_shape = Size(tuple(batch_shape)), Size(tuple(event_shape))
        self._validate_args = _DEFAULT_VALIDATE if validate_args is None else validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if param not in self.__dict__:
                    continue
                value = self.__dict__[param]
                if not bool(np.all(constraint.check(value))):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        global _DEFAULT_VALIDATE
        if value not in (True, False):
            raise ValueError
        _DEFAULT_VALIDATE = value

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    @property
    def stddev(self) -> Any:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Any:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Any:
        raise NotImplementedError

    def sample_n(self, n: int) -> Any:
        return self.sample((n,))

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        """torch's helper for ``expand``: a bare instance of ``type(self)`` (``_instance`` if given)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return type(self).__new__(type(self)) if _instance is None else _instance

    def _expand_params(self, cls: type, batch_shape: Any, names: tuple[str, ...], _instance: Any = None) -> Any:
        """``expand`` for a distribution whose parameters ``names`` all have its batch shape."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(tuple(batch_shape))
        for name in names:
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(*batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def perplexity(self) -> Any:
        return self.entropy().exp()

    def _support(self) -> Constraint:
        return self.support

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, TensorBase):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.ndim - len(self._event_shape)
        if tuple(value.shape[start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{tuple(self._event_shape)}.")
        actual, expected = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        support = self._support()
        if not bool(np.all(support.check(value))):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].shape}"
                         for p in names)
        return f"{type(self).__name__}({args})"


def broadcast_all(*values: Any, dtype: Any = None) -> list[Any]:
    """Tensors and numbers broadcast to one shape (numbers as tensors of the tensors' dtype, else the default)."""
    ts = [v for v in values if isinstance(v, TensorBase)]
    like = ts[0] if ts else None
    out = []
    for v in values:
        if isinstance(v, TensorBase):
            out.append(v)
        else:
            if not isinstance(v, (int, float, np.number)):
                raise ValueError(f"Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                                 f"implementing __torch_function__. Got {type(v).__name__}")
            dt = like._data.dtype if like is not None else None
            np_dt = dt if dt is not None else dtypes.get_default_dtype().np
            out.append(make_tensor(np.asarray(float(v), dtype=np_dt)))
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in out))
    return [t if tuple(t.shape) == shape else t.expand(*shape) for t in out]


LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class LocScale(Distribution):
    """A real-valued family with a location and a positive scale, broadcast together (Normal, Laplace)."""

    arg_constraints = {"loc": real, "scale": positive}
    support = real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        numbers = not isinstance(loc, TensorBase) and not isinstance(scale, TensorBase)
        super().__init__(Size(()) if numbers else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        return self._expand_params(type(self), batch_shape, ("loc", "scale"), _instance)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc
