"""``sg.nn.utils``: running a module with other parameters (``functional_call``, as ``torch.func.functional_call``)
and the names its parameters print with in formulas.

``functional_call`` is how a module's parameters become arguments of a compiled function: the dict of
parameters is an argument of ``sg.compile`` / ``sg.value_and_grad`` (each entry a leaf, named by its key), and
inside the traced function the module runs on those leaves::

    params = {k: p.detach().numpy() for k, p in model.named_parameters()}
    step = sg.value_and_grad(lambda p, x, y: loss_fn(functional_call(model, p, (x,)), y))
    loss, grads = step(params, x, y)        # grads: a dict with the keys of params

Formulas (``sg.formula``, ``sg.grad_formula``) name a parameter or buffer of a module that a calling frame
holds by its qualified name (``0.weight``, ``fc1.bias``), as ``named_parameters`` gives it.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ...eager import formula as _formula
from ...eager.base import make_tensor
from ...eager.tensor import Tensor
from ..clip_grad import (  # noqa: F401
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from ..modules.module import Module
from . import parametrizations, parametrize, rnn  # noqa: F401  (torch.nn.utils.rnn, ...)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["functional_call", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters"]

_MISSING = object()


def _as_tensor(value: Any) -> Any:
    """Tensors (and the tracers of a compiled function) as they are; arrays and numbers as tensors."""
    if isinstance(value, Tensor):
        return value
    return make_tensor(np.asarray(value))


def _merged(parameter_and_buffer_dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    if isinstance(parameter_and_buffer_dicts, Mapping):
        return dict(parameter_and_buffer_dicts)
    out: dict[str, Any] = {}
    repeated: list[str] = []
    for d in parameter_and_buffer_dicts:
        for k, v in d.items():
            if k in out:
                repeated.append(k)
            out[k] = v
    if repeated:
        raise ValueError(f"{sorted(set(repeated))} appeared in multiple dictionaries; behavior of functional call "
                         "is ambiguous")
    return out


def _owner(module: Module, name: str) -> tuple[Module, str]:
    path, _, leaf = name.rpartition(".")
    return module.get_submodule(path), leaf


@contextlib.contextmanager
def _reparametrized(module: Module, values: dict[str, Any], tie_weights: bool, strict: bool) -> Iterator[None]:
    """``module`` with the parameters and buffers named in ``values`` replaced for the duration of the block."""
    members = [(n, t, "_parameters") for n, t in module.named_parameters(remove_duplicate=False)]
    members += [(n, t, "_buffers") for n, t in module.named_buffers(remove_duplicate=False)]
    known = {n for n, _, _ in members}
    if strict:
        missing = sorted(known - set(values))
        unexpected = sorted(set(values) - known)
        if missing or unexpected:
            lines = ([f"\tUnexpected key(s): {', '.join(repr(k) for k in unexpected)}."] if unexpected else []) + \
                    ([f"\tMissing key(s): {', '.join(repr(k) for k in missing)}."] if missing else [])
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n" + "\n".join(lines))
    if tie_weights:  # a tensor registered under several names: giving one of them replaces it everywhere
        by_tensor: dict[int, list[str]] = {}
        for n, t, _ in members:
            by_tensor.setdefault(id(t), []).append(n)
        for names in by_tensor.values():
            given = [n for n in names if n in values]
            if len(given) > 1:
                raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. Consider "
                                 "using tie_weights=False")
            if given:
                for n in names:
                    values.setdefault(n, values[given[0]])
    table = {n: kind for n, _, kind in members}
    saved: list[tuple[Module, str, str | None, Any]] = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            kind = table.get(name)
            if kind is None:  # not a parameter or buffer: an attribute for the call (torch sets it too)
                saved.append((owner, leaf, None, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = _as_tensor(value)
            else:
                store = getattr(owner, kind)
                saved.append((owner, leaf, kind, store[leaf]))
                store[leaf] = _as_tensor(value)
        yield
    finally:
        for owner, leaf, kind, old in reversed(saved):
            if kind is not None:
                getattr(owner, kind)[leaf] = old
            elif old is _MISSING:
                owner.__dict__.pop(leaf, None)
            else:
                owner.__dict__[leaf] = old


def functional_call(module: Module, parameter_and_buffer_dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the dict's values (keys are
    qualified names, as ``named_parameters`` gives them), as ``torch.func.functional_call``; the module is
    left as it was. Values may be tensors, numpy arrays or (inside ``sg.compile``) traced arguments.

    >>> import symgrad as sg
    >>> from symgrad.nn.utils import functional_call
    >>> lin = sg.nn.Linear(2, 1)
    >>> functional_call(lin, {"weight": sg.ones(1, 2), "bias": sg.zeros(1)}, (sg.tensor([[1.0, 2.0]]),))
    tensor([[3.]])
    """
    if not isinstance(module, Module):
        raise TypeError(f"functional_call expects a Module, got {type(module).__name__}")
    values = _merged(parameter_and_buffer_dicts)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def _module_names(value: Any) -> Iterator[tuple[Any, str]] | None:
    """The formula names a module gives its parameters and buffers: their qualified names."""
    if not isinstance(value, Module):
        return None
    return ((t, n) for named in (value.named_parameters(), value.named_buffers()) for n, t in named)


_formula.NAME_SOURCES.append(_module_names)
