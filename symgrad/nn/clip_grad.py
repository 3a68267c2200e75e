"""``torch.nn.utils``' gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``) and ``parameters_to_vector`` / ``vector_to_parameters``, as torch 2.13 computes them:
one norm per gradient, the norm of those norms, ``grad *= min(max_norm / (total + 1e-6), 1)`` in place."""
from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Iterable
from typing import Any, Callable, TypeVar

import numpy as np

from ..eager import basic, functional
from ..eager.composite import vector_norm
from ..eager.grad_mode import no_grad
from ..eager.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_grad(fn: _F) -> _F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with no_grad():
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _tensors(ts: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [ts] if isinstance(ts, Tensor) else list(ts)


@_no_grad
def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` viewed as one vector (the norm of their norms). ``foreach`` is
    accepted and changes nothing: torch's CPU foreach norm is the per-tensor norm."""
    ts = _tensors(tensors)
    norm_type = float(norm_type)
    if not ts:
        return functional.tensor(0.0)
    norms: list[Tensor] = []
    groups: dict[Any, list[Tensor]] = {}
    for t in ts:  # torch groups by (device, dtype), in first-seen order
        groups.setdefault(t.dtype, []).append(t)
    for group in groups.values():
        norms.extend(vector_norm(t, norm_type) for t in group)
    total = vector_norm(basic.stack(norms), norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


@_no_grad
def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale every ``p.grad`` in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    with np.errstate(invalid="ignore"):  # inf * 0 is NaN, silently, as in torch
        for g in grads:
            g.mul_(coef)


@_no_grad
def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Clip the gradients' total ``norm_type``-norm to ``max_norm`` in place; returns the total norm before
    clipping."""
    if isinstance(parameters, Tensor):
        params = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        params = list(parameters)
        if is_generator and not params:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every ``p.grad`` to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for p in _tensors(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (recorded: ``CatBackward0``)."""
    return basic.cat([p.view(-1) for p in parameters])


def _typename(obj: Any) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ in ("builtins", None) else f"{t.__module__}.{t.__qualname__}"


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters' ``.data``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    pointer = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n

