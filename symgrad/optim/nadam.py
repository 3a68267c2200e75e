"""``NAdam``: Adam with Nesterov momentum and a momentum schedule (``momentum_decay``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """torch.optim.NAdam (single-tensor step, bit for bit): ``mu_t = beta1 (1 - 0.5 * 0.96^(t psi))``, the
    parameter moved by the gradient and the first moment weighted by ``mu_t`` and ``mu_{t+1}``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_hypers(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(maximize=False, foreach=None, capturable=False, differentiable=False,
                             decoupled_weight_decay=False)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One NAdam step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (_hyper(b) for b in group["betas"])
            lr, psi = _hyper(group["lr"]), _hyper(group["momentum_decay"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["mu_product"] = _step_tensor(1.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                step = _increment(state["step"])
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
                prod = state["mu_product"]._data
                prod[()] = prod * prod.dtype.type(mu)  # mu_product *= mu, in the state's float32
                state["mu_product"]._version.v += 1
                w, m, v = _Writable(p), _Writable(state["exp_avg"]), _Writable(state["exp_avg_sq"])
                from . import _kernels  # deferred: imports numba
                _kernels.nadam_update(w.flat, _grad_array(p), m.flat, v.flat, maximize=bool(group["maximize"]),
                                      weight_decay=_hyper(group["weight_decay"]),
                                      decoupled=bool(group["decoupled_weight_decay"]), lr=lr, beta1=beta1,
                                      beta2=beta2, eps=_hyper(group["eps"]), step=step, mu=mu, mu_next=mu_next,
                                      mu_product=float(np.asarray(prod)))
                for t in (w, m, v):
                    t.close()
        return loss
