"""``ASGD``: averaged stochastic gradient descent (a decaying rate ``eta`` and a running average ``ax``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..eager.tensor import Tensor
from .optimizer import (
    Optimizer,
    ParamsT,
    _grad_array,
    _hyper,
    _increment,
    _run_closure,
    _scalar_dtype,
    _step_tensor,
    _use_grad,
    _Writable,
    _zeros_like,
)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """torch.optim.ASGD (single-tensor step, bit for bit): ``p = p (1 - lambd eta) - eta grad``; ``ax`` averages
    the parameters from step ``t0`` on (``mu = 1 / max(1, step - t0)``); ``eta = lr / (1 + lambd lr step)^alpha``.
    ``eta`` and ``mu`` are float32 state tensors, as torch's."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0:
                    for key in ("eta", "mu"):
                        if not isinstance(p_state[key], Tensor):
                            p_state[key] = Tensor(np.array(float(p_state[key]), dtype=_scalar_dtype()))
        self._step_states_to_tensors()

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One ASGD step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            lr, lambd = _hyper(group["lr"]), _hyper(group["lambd"])
            alpha, t0 = _hyper(group["alpha"]), _hyper(group["t0"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["eta"] = _step_tensor(lr)
                    state["mu"] = _step_tensor(1.0)
                    state["ax"] = _zeros_like(p)
                step = _increment(state["step"])
                eta_t, mu_t = state["eta"], state["mu"]
                w, ax = _Writable(p), _Writable(state["ax"])
                from . import _kernels  # deferred: imports numba
                _kernels.asgd_update(w.flat, _grad_array(p), ax.flat, maximize=bool(group["maximize"]),
                                     weight_decay=_hyper(group["weight_decay"]), lambd=lambd,
                                     eta=float(eta_t._data), mu=float(mu_t._data))
                for t in (w, ax):
                    t.close()
                eta_t._data[()] = lr / ((1 + lambd * lr * step) ** alpha)  # rounded to the state's dtype
                mu_t._data[()] = 1 / max(1, step - t0)
                eta_t._version.v += 1
                mu_t._version.v += 1
        return loss
