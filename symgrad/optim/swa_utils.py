"""torch.optim.swa_utils: ``AveragedModel`` (SWA / EMA averages of a model's parameters, and buffers with
``use_buffers``), the averaging functions (``get_swa_avg_fn``, ``get_ema_avg_fn`` and their ``multi_`` forms),
``SWALR`` (anneal every group's rate to ``swa_lr``) and ``update_bn`` (recompute BatchNorm statistics).

The in-place ``multi`` updates are torch's CPU ``lerp_`` (``fma(coeff, end - start, base)``, coefficient ``w`` or
``w - 1`` by whether ``|w| < 0.5``), so averaged float32 weights are torch's to the bit."""
from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import numpy as np

from ..core import dtypes
from ..eager import functional
from ..eager.grad_mode import no_grad
from ..eager.tensor import Tensor
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_base import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]

PARAM_LIST = tuple[Tensor, ...] | list[Tensor]


def _lerp_inplace(start: Tensor, end: Tensor, weight: float) -> None:
    """``start.lerp_(end, weight)`` with a Python weight, as torch's CPU kernel rounds it (one fused multiply-add;
    float32 through float64, where the product is exact)."""
    a = start._data
    b = np.asarray(end._data, dtype=a.dtype)
    w = a.dtype.type(weight)
    small = abs(w) < 0.5
    coeff = w if small else w - a.dtype.type(1)
    base = a if small else b
    diff = b - a
    if a.dtype == np.float32:
        res = (np.float64(coeff) * diff.astype(np.float64) + base.astype(np.float64)).astype(np.float32)
    else:
        res = coeff * diff + base
    a[...] = res
    start._version.v += 1


def _is_float(t: Tensor) -> bool:
    return t.is_floating_point()  # symgrad has no complex dtypes


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[PARAM_LIST, PARAM_LIST, Any], None]:
    """The in-place EMA update of lists of parameters: ``ema.lerp_(model, 1 - decay)``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @no_grad()
    def ema_update(ema_param_list: PARAM_LIST, current_param_list: PARAM_LIST, _: Any) -> None:
        if _is_float(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                _lerp_inplace(p_ema, p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable[[PARAM_LIST, PARAM_LIST, Any], None]:
    """The in-place equal-weight (SWA) update of lists of parameters: ``avg.lerp_(model, 1 / (n + 1))``."""

    @no_grad()
    def swa_update(averaged_param_list: PARAM_LIST, current_param_list: PARAM_LIST, num_averaged: Any) -> None:
        if _is_float(averaged_param_list[0]):
            w = 1 / (num_averaged + 1)
            w = float(w) if isinstance(w, Tensor) else w
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                _lerp_inplace(p_avg, p_model, w)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """The EMA of one parameter: ``decay * ema + (1 - decay) * model``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """The equal-weight running average of one parameter: ``avg + (model - avg) / (n + 1)``."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are a running average of the
    models passed to ``update_parameters``: equal weights by default (SWA), or ``avg_fn`` / ``multi_avg_fn``
    (e.g. ``get_ema_multi_avg_fn(0.9)``). ``n_averaged`` is a long buffer in its ``state_dict``."""

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None,
                 avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[[PARAM_LIST, PARAM_LIST, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", functional.tensor(0, dtype=dtypes.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The averaged copy's forward."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers
                      else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers()) if self.use_buffers
                       else model.parameters())
        self_detached: list[Tensor] = []
        model_detached: list[Tensor] = []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param, strict=False):
            p_model_ = p_model.detach()
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups: dict[Any, tuple[list[Tensor], list[Tensor]]] = {}
                for a, m in zip(self_detached, model_detached):  # torch groups by (device, dtype)
                    ga, gm = groups.setdefault(a.dtype, ([], []))
                    ga.append(a)
                    gm.append(m)
                for self_params, model_params in groups.values():
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, self.n_averaged.clone())
                    else:  # CPU has no foreach kernels: torch takes the per-tensor function
                        avg = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params, strict=True):
                            p_averaged.copy_(avg(p_averaged, p_model, self.n_averaged))
            else:
                for p_averaged, p_model in zip(self_detached, model_detached, strict=True):
                    p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, self.n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach())
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """One pass over ``loader`` (tensors, or lists / tuples whose first item is the input) in training mode with
    every BatchNorm's running statistics reset and ``momentum=None`` (a cumulative average)."""
    momenta: dict[Module, Any] = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:  # noqa: A001
        if isinstance(input, (list, tuple)):
            input = input[0]  # noqa: A001
        if device is not None:
            input = input.to(device)  # noqa: A001
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate from its current value to ``swa_lr`` over ``anneal_epochs`` epochs (``"cos"`` or
    ``"linear"``), then hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: Any, swa_lr: Any, alpha: float) -> Any:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        """The rates of the next step: between the group's rate and ``swa_lr`` by the annealing function."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the annealing function."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (the annealing function from its strategy)."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

