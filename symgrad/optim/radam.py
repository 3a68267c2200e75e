"""``RAdam``: Adam with the variance of its adaptive learning rate rectified."""
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

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """torch.optim.RAdam (single-tensor step, bit for bit): Adam's step scaled by the rectification term once
    the approximated SMA length exceeds 5, plain bias-corrected momentum before."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_hypers(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None, maximize=False, differentiable=False,
                             decoupled_weight_decay=False, capturable=False)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One RAdam step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (_hyper(b) for b in group["betas"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                step = _increment(state["step"])
                w, m, v = _Writable(p), _Writable(state["exp_avg"]), _Writable(state["exp_avg_sq"])
                from . import _kernels  # deferred: imports numba
                _kernels.radam_update(w.flat, _grad_array(p), m.flat, v.flat, maximize=bool(group["maximize"]),
                                      weight_decay=_hyper(group["weight_decay"]),
                                      decoupled=bool(group["decoupled_weight_decay"]), lr=_hyper(group["lr"]),
                                      beta1=beta1, beta2=beta2, eps=_hyper(group["eps"]), step=step)
                for t in (w, m, v):
                    t.close()
        return loss
