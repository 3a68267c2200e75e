"""``Adagrad``: per-coordinate learning rates from the running sum of squared gradients."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import dtypes as _dtypes
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

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """torch.optim.Adagrad: ``s += g^2``; ``p -= clr g / (sqrt(s) + eps)``, ``clr = lr / (1 + (t-1) lr_decay)``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused:
            raise NotImplementedError(f"symgrad.optim: fused=True (torch's fused CPU {type(self).__name__} kernel, "
                                      "which rounds differently) is not implemented; leave fused unset")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        state["step"] = _step_tensor() if not group["fused"] else _step_tensor().to(dtype=_dtypes.float32)
        state["sum"] = _zeros_like(p, self.defaults["initial_accumulator_value"])

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        self._step_states_to_tensors(lambda g: bool(g["fused"]))

    def share_memory(self) -> None:
        """Nothing to do: symgrad tensors live in this process."""

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adagrad step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            lr, lr_decay = _hyper(group["lr"]), _hyper(group["lr_decay"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(p, group)
                step = _increment(state["step"])
                clr = lr / (1 + (step - 1) * lr_decay)
                w, s = _Writable(p), _Writable(state["sum"])
                from . import _kernels  # deferred: imports numba
                _kernels.adagrad_update(w.flat, _grad_array(p), s.flat, maximize=bool(group["maximize"]),
                                        weight_decay=_hyper(group["weight_decay"]), eps=_hyper(group["eps"]),
                                        clr=clr)
                w.close()
                s.close()
        return loss

