"""``Adam``: adaptive moment estimation (with AMSGrad, L2 or decoupled weight decay, maximize)."""
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

__all__ = ["Adam"]


class Adam(Optimizer):
    """torch.optim.Adam: ``m = lerp(m, g, 1-b1)``, ``v = b2 v + (1-b2) g^2``, ``p -= lr m^ / (sqrt(v^) + eps)``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(b.squeeze() if isinstance(b, Tensor) and b.dim() != 0 else b for b in betas)  # type: ignore
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        if fused:
            raise NotImplementedError(f"symgrad.optim: fused=True (torch's fused CPU {type(self).__name__} kernel, "
                                      "which rounds differently) is not implemented; leave fused unset")

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        self._step_states_to_tensors(lambda g: bool(g["capturable"] or g["fused"]))

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam step over every parameter that has a gradient; returns the closure's loss."""
        loss = _run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (_hyper(b) for b in group["betas"])
            amsgrad = bool(group["amsgrad"])
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_like(p)
                step = _increment(state["step"])
                w, m, v = _Writable(p), _Writable(state["exp_avg"]), _Writable(state["exp_avg_sq"])
                vmax = _Writable(state["max_exp_avg_sq"]) if amsgrad else None
                from . import _kernels  # deferred: imports numba
                _kernels.adam_update(w.flat, _grad_array(p), m.flat, v.flat,
                                     vmax.flat if vmax is not None else None, amsgrad=amsgrad,
                                     maximize=bool(group["maximize"]), weight_decay=_hyper(group["weight_decay"]),
                                     decoupled=bool(group["decoupled_weight_decay"]), lr=_hyper(group["lr"]),
                                     beta1=beta1, beta2=beta2, eps=_hyper(group["eps"]), step=step)
                for t in (w, m, v, vmax):
                    if t is not None:
                        t.close()
        return loss
