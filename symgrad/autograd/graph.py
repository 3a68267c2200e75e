"""``torch.autograd.graph``: hooks on the tensors the forward saves for backward (``saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks``); the state lives in ``eager/saved_hooks.py``."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Callable

from ..eager import saved_hooks as _state
from ..eager.autograd import GradFn as Node

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class saved_tensors_hooks:  # noqa: N801  (torch's name)
    """Inside the block, ``pack_hook(tensor)`` runs on each tensor an operation saves for backward and its result
    is kept instead; ``unpack_hook(packed)`` runs when the backward needs the tensor and must return it."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _state.DISABLED:
            raise RuntimeError(_state.DISABLED[-1])
        _state.STACK.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *args: object) -> None:
        _state.STACK.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801  (torch's name)
    """Saved tensors are kept on the CPU and moved back to their device for backward (symgrad's tensors are
    all on the CPU: the hooks copy them there and back, as torch's do)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> tuple[Any, Any]:
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed: tuple[Any, Any]) -> Any:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside the block, installing saved-tensor hooks raises ``RuntimeError(error_message)``."""
    if _state.STACK:
        raise RuntimeError(error_message)
    _state.DISABLED.append(error_message)
    try:
        yield
    finally:
        _state.DISABLED.pop()
