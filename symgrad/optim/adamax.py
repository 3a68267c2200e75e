"""``Adamax``: Adam with the infinity norm of past gradients in place of the second moment."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..eager.tensor import Tensor
from .optimizer import (
    Optimizer,
    ParamsT,
    _check_adam_hypers,
    _grad_array,
    _hyper,
    _increment,
    _run_closure,
    _step_tensor,
    _use_grad,
    _Writable,
    _zeros_like,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """torch.optim.Adamax (single-tensor step, bit for bit): ``u = max(beta2 u, |g| + eps)``;
    ``p -= lr / (1 - beta1^t) * m / u``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_adam_hypers(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None, maximize=False, differentiable=False, capturable=False)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adamax step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (_hyper(b) for b in group["betas"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_inf"] = _zeros_like(p)
                step = _increment(state["step"])
                w, m, u = _Writable(p), _Writable(state["exp_avg"]), _Writable(state["exp_inf"])
                from . import _kernels  # deferred: imports numba
                _kernels.adamax_update(w.flat, _grad_array(p), m.flat, u.flat, maximize=bool(group["maximize"]),
                                       weight_decay=_hyper(group["weight_decay"]), lr=_hyper(group["lr"]),
                                       beta1=beta1, beta2=beta2, eps=_hyper(group["eps"]), step=step)
                for t in (w, m, u):
                    t.close()
        return loss
