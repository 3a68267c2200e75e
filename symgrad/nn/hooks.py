"""``torch.utils.hooks.RemovableHandle``: the handle ``register_*_hook`` returns."""
from __future__ import annotations

import weakref
from typing import Any

__all__ = ["RemovableHandle"]


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

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
