"""``Adadelta``: steps scaled by the ratio of running RMS of updates and of gradients."""
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

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """torch.optim.Adadelta: ``v = rho v + (1-rho) g^2``; ``d = sqrt(u + eps) / sqrt(v + eps) g``;
    ``u = rho u + (1-rho) d^2``; ``p -= lr d`` (torch's single-tensor step, bit for bit)."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None, maximize=False, differentiable=False, capturable=False)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adadelta step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                _increment(state["step"])
                w, sq, acc = _Writable(p), _Writable(state["square_avg"]), _Writable(state["acc_delta"])
                from . import _kernels  # deferred: imports numba
                _kernels.adadelta_update(w.flat, _grad_array(p), sq.flat, acc.flat, maximize=bool(group["maximize"]),
                                         weight_decay=_hyper(group["weight_decay"]), rho=_hyper(group["rho"]),
                                         eps=_hyper(group["eps"]), lr=_hyper(group["lr"]))
                for t in (w, sq, acc):
                    t.close()
        return loss
