"""``RMSprop``: gradient scaled by a running RMS (optionally centered, with momentum)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..eager.tensor import Tensor
from .optimizer import (
    Optimizer,
    ParamsT,
    _grad_array,
    _hyper,
    _increment,
    _run_closure,
    _step_tensor,
    _use_grad,
    _Writable,
    _zeros_like,
)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """torch.optim.RMSprop: ``v = alpha v + (1-alpha) g^2``; ``p -= lr g / (sqrt(v) + eps)``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        self._step_states_to_tensors()

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One RMSprop step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            momentum = _hyper(group["momentum"])
            centered = bool(group["centered"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                _increment(state["step"])
                w, sq = _Writable(p), _Writable(state["square_avg"])
                ga = _Writable(state["grad_avg"]) if centered else None
                buf = _Writable(state["momentum_buffer"]) if momentum > 0 else None
                from . import _kernels  # deferred: imports numba
                _kernels.rmsprop_update(w.flat, _grad_array(p), sq.flat, ga.flat if ga is not None else None,
                                        buf.flat if buf is not None else None, maximize=bool(group["maximize"]),
                                        weight_decay=_hyper(group["weight_decay"]), alpha=_hyper(group["alpha"]),
                                        centered=centered, eps=_hyper(group["eps"]), momentum=momentum,
                                        lr=_hyper(group["lr"]))
                for t in (w, sq, ga, buf):
                    if t is not None:
                        t.close()
        return loss
