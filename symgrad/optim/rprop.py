"""``Rprop``: resilient backpropagation, a per-element step size grown or shrunk by the sign of the gradient."""
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
    _step_tensor,
    _use_grad,
    _Writable,
    _zeros_like,
)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """torch.optim.Rprop (single-tensor step, bit for bit): the step size is multiplied by ``etaplus`` where the
    gradient kept its sign, by ``etaminus`` where it flipped (that gradient is then zeroed), clamped to
    ``step_sizes``; ``p -= sign(grad) * step_size``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None, maximize=False, differentiable=False, capturable=False)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Rprop step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = (_hyper(e) for e in group["etas"])
            step_size_min, step_size_max = (_hyper(s) for s in group["step_sizes"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["prev"] = _zeros_like(p)
                    state["step_size"] = Tensor(np.full(p._data.shape, _hyper(group["lr"]), dtype=p._data.dtype))
                _increment(state["step"])
                w, prev, ss = _Writable(p), _Writable(state["prev"]), _Writable(state["step_size"])
                from . import _kernels  # deferred: imports numba
                _kernels.rprop_update(w.flat, _grad_array(p), prev.flat, ss.flat, maximize=bool(group["maximize"]),
                                      etaminus=etaminus, etaplus=etaplus, step_size_min=step_size_min,
                                      step_size_max=step_size_max)
                for t in (w, prev, ss):
                    t.close()
        return loss
