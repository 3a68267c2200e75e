"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..eager.tensor import Tensor
from .optimizer import Optimizer, ParamsT, _grad_array, _hyper, _run_closure, _use_grad, _Writable, _zeros_like

__all__ = ["SGD"]


class SGD(Optimizer):
    """torch.optim.SGD: ``buf = momentum * buf + (1 - dampening) * g``; ``p -= lr * buf`` (or Nesterov's)."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float | Tensor = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One SGD step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            momentum = _hyper(group["momentum"])
            for p in self._params_with_grad(group):
                buf = None
                if momentum != 0:
                    buf = self.state[p].get("momentum_buffer")
                first = buf is None
                if first and momentum != 0:
                    buf = _zeros_like(p)
                w = _Writable(p)
                bw = _Writable(buf) if buf is not None else None
                from . import _kernels  # deferred: imports numba
                _kernels.sgd_update(w.flat, _grad_array(p), bw.flat if bw is not None else None,
                                    first, maximize=bool(group["maximize"]),
                                    weight_decay=_hyper(group["weight_decay"]), momentum=momentum,
                                    dampening=_hyper(group["dampening"]), nesterov=bool(group["nesterov"]),
                                    lr=_hyper(group["lr"]))
                w.close()
                if bw is not None:
                    bw.close()
                    self.state[p]["momentum_buffer"] = buf
        return loss
