"""``Optimizer``: torch.optim's base class (param groups, state, state_dict, hooks, zero_grad)."""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

import numpy as np

from ..core import dtypes as _dtypes
from ..eager.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..eager.hooks import RemovableHandle
from ..eager.tensor import Tensor

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]

StateDict = dict[str, Any]
ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]


class _RequiredParameter:
    """Singleton marking an optimization option without a default."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def typename(obj: Any) -> str:
    """``torch.typename``: ``torch.FloatTensor`` for a float32 tensor, ``int`` for 3, ..."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in {"", "builtins"}:
        return qualname
    return f"{module}.{qualname}"


def _hook_step(func: Callable) -> Callable:
    """Run the global and per-optimizer step pre/post hooks around ``step`` (torch's ``profile_hook_step``)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        out = func(*args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out
    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


def _use_grad(func: Callable) -> Callable:
    """Run ``step`` with grad mode set to the ``differentiable`` default (off), as torch does."""
    @functools.wraps(func)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        prev = is_grad_enabled()
        try:
            set_grad_enabled(bool(self.defaults.get("differentiable", False)))
            return func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)
    return wrapper


def _run_closure(closure: Callable[[], Any] | None) -> Any:
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _scalar_dtype() -> np.dtype:
    """The dtype of the ``step`` counters: float64 when that is the default dtype, else float32."""
    return np.dtype(np.float64) if _dtypes.get_default_dtype() is _dtypes.float64 else np.dtype(np.float32)


def _step_tensor(value: float = 0.0) -> Tensor:
    return Tensor(np.array(value, dtype=_scalar_dtype()))


def _zeros_like(p: Tensor, fill: float = 0.0) -> Tensor:
    return Tensor(np.full(p._data.shape, fill, dtype=p._data.dtype))


def _increment(step_t: Tensor) -> float:
    """``step_t += 1`` in place; the new count as a Python float (``_get_value``)."""
    a = step_t._data
    a[()] = float(a) + 1.0  # one rounding to the counter's dtype, as torch's float32 ``step_t += 1``
    step_t._version.v += 1
    return float(a)


def _hyper(x: Any) -> float:
    """A hyperparameter (a float or a one-element tensor) as a Python float."""
    return float(x.item()) if isinstance(x, Tensor) else x


def _check_adam_hypers(lr: Any, eps: float, betas: tuple[float, float], weight_decay: float) -> None:
    """torch's checks (and messages) of the Adam family's hyperparameters."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
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


class _Writable:
    """A flat C-contiguous array over a tensor's values; ``close()`` writes it back and bumps the version."""

    __slots__ = ("t", "flat", "copied")

    def __init__(self, t: Tensor) -> None:
        a = t._data
        self.t = t
        if a.dtype not in (np.float32, np.float64):
            raise TypeError(f"symgrad.optim supports float32 and float64 parameters and states, got {a.dtype}")
        self.copied = not (a.flags.c_contiguous and a.flags.writeable)
        self.flat = a.flatten() if self.copied else a.reshape(-1)

    def close(self) -> None:
        if self.copied:
            self.t._data[...] = self.flat.reshape(self.t._data.shape)
        self.t._version.v += 1


def _grad_array(p: Tensor) -> np.ndarray:
    g = p.grad._data  # type: ignore[union-attr]
    if g.dtype != p._data.dtype:
        g = g.astype(p._data.dtype)
    return np.ascontiguousarray(g).reshape(-1)


class Optimizer:
    """Base class of all optimizers.

    ``params``: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter groups
    with their own options); ``defaults``: the options a group doesn't set.
    """

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if defaults.get("differentiable"):
            raise NotImplementedError("symgrad.optim: differentiable=True is not supported (steps update the "
                                      "parameters' arrays in place, outside the graph)")
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + typename(params))
        self.state: defaultdict[Any, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hook_step(step)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ pickling, repr
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ------------------------------------------------------------------ hooks
    def _register(self, hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before ``step``; it may return new ``(args, kwargs)``."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` after ``state_dict``; it may return a new state dict."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` before ``load_state_dict``; it may return a new state dict."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------------ state dict
    def state_dict(self) -> StateDict:
        """``{'state': {index: per-parameter state}, 'param_groups': [options with 'params': [indices]]}``.

        The state's tensors are the optimizer's own (not copies), as in torch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Tensor, param_id: Any,
                                                 param_groups: list[dict[str, Any]], key: Any = None) -> Tensor:
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            return value.to(dtype=_dtypes.float32) if (capturable or fused) else value
        if param.is_floating_point():
            return value.to(dtype=param.dtype)
        return value

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a ``state_dict()``: its options, and its per-parameter state matched to the parameters in order."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param: Tensor, value: Any, param_id: Any = None, param_groups: Any = None, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups)
                                   for v in value)  # type: ignore[call-arg]
            return value

        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------------ gradients, steps, groups
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' ``.grad``: to ``None`` (default) or, with ``set_to_none=False``, to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step (``closure`` re-evaluates the loss and returns it)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the defaults fill in the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set: set[Tensor] = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ helpers for the subclasses
    def _params_with_grad(self, group: dict[str, Any]) -> list[Tensor]:
        return [p for p in group["params"] if p.grad is not None]

    def _group_defaults(self, **defaults: Any) -> None:
        """After ``__setstate__``: the options torch added later, at their defaults, in every group; step counts
        as tensors."""
        for group in self.param_groups:
            for key, value in defaults.items():
                group.setdefault(key, value)
        self._step_states_to_tensors()

    def _step_states_to_tensors(self, fused_or_capturable: Callable[[dict], bool] | None = None) -> None:
        """``__setstate__`` support: a saved Python-number ``step`` becomes a tensor again."""
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    use32 = fused_or_capturable is not None and fused_or_capturable(group)
                    p_state["step"] = Tensor(np.array(float(p_state["step"]),
                                                      dtype=np.float32 if use32 else _scalar_dtype()))
