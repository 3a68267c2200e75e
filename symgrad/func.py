"""``torch.func``'s names over symgrad's transforms, so ``torch.func`` code ports by renaming.

Each returns a function of tensors (or numpy arrays / floats) computed by symgrad's compiled
kernels: ``grad``, ``grad_and_value``, ``jacrev``, ``jacfwd``, ``hessian``, ``vjp``, ``jvp``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .compiler.function import CompiledFunction
from .compiler.transforms import DerivativeFunction, jvp, vjp

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]


def _compiled(func: Callable, mode: str, argnums: int | Sequence[int], has_aux: bool = False) -> Any:
    return CompiledFunction(func, mode, argnums, has_aux)


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad``: the gradient of a scalar function w.r.t. ``argnums`` (``(gradient, aux)`` with
    ``has_aux``: ``func`` returns ``(output, aux)``)."""
    return _compiled(func, "grad", argnums, has_aux)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad_and_value``: ``(gradient, value)`` (note torch's order); with ``has_aux``
    ``(gradient, (value, aux))``."""
    vg = _compiled(func, "value_and_grad", argnums, has_aux)

    def grad_and_value_fn(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        value, g = vg(*args, **kwargs)
        return g, value
    return grad_and_value_fn


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0) -> DerivativeFunction:
    """``torch.func.jacrev``: the Jacobian from reverse sweeps (one per output element)."""
    return DerivativeFunction(func, "jacobian", argnums, reverse=True)


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0) -> DerivativeFunction:
    """``torch.func.jacfwd``: the Jacobian from forward sweeps (one per input element)."""
    return DerivativeFunction(func, "jacobian", argnums, reverse=False)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> DerivativeFunction:
    """``torch.func.hessian``."""
    return DerivativeFunction(func, "hessian", argnums)
