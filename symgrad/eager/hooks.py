"""``torch.utils.hooks.RemovableHandle`` (what every ``register_*_hook`` returns) and the tensor hooks' checks.

It lives in the eager layer because tensors' ``register_hook`` returns one; ``symgrad.nn.hooks`` re-exports it.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable

from ..core import dtypes

__all__ = ["RemovableHandle", "check_hook_result", "hook_name"]


class RemovableHandle:
    """Removes the hook with key ``id`` from ``hooks_dict`` (and from each of ``extra_dict``) on ``remove()``.

    The dicts are held by weak reference, so a handle does not keep a module's hooks alive; it is a
    context manager that removes its hook on exit.
    """

    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        """Remove the hook (a no-op when it is already gone)."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self) -> tuple:
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state: tuple) -> None:
        # a dict gone before pickling gives a dead reference, as in torch
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = () if len(state) < 3 or state[2] is None else tuple(weakref.ref(d) for d in state[2])

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<torch.utils.hooks.RemovableHandle object at {id(self):#x}>"


def hook_name(fn: Callable) -> str:
    """How torch names a hook in its errors: its ``__name__`` (``<lambda>``)."""
    return getattr(fn, "__name__", None) or type(fn).__name__


def _type_name(t: Any) -> str:
    return f"torch.{dtypes.torch_type_name(t.dtype)}Tensor"


def check_hook_result(fn: Callable, old: Any, new: Any, tensor_type: type) -> None:
    """torch's checks of what a tensor hook returned in place of the gradient ``old``."""
    if not isinstance(new, tensor_type):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(f"hook '{hook_name(fn)}' has changed the size of value")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{hook_name(fn)}' has changed the type of value (was {_type_name(old)} got "
                           f"{_type_name(new)})")
