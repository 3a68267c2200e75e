"""Grad mode: ``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` (context managers and decorators)."""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

_state = threading.local()


def is_grad_enabled() -> bool:
    """True unless inside ``no_grad()`` or ``set_grad_enabled(False)``."""
    return getattr(_state, "enabled", True)


def _set(flag: bool) -> None:
    _state.enabled = bool(flag)


class _GradModeContext:
    _target: bool = True

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set(self._target)

    def __exit__(self, *exc: Any) -> None:
        _set(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):  # noqa: N801 - torch's name
    """Operations inside are not recorded: their results are constants for differentiation.

    >>> import symgrad as sg
    >>> x = sg.ones(2, requires_grad=True)
    >>> with sg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    _target = False


class enable_grad(_GradModeContext):  # noqa: N801
    """Re-enable recording inside a ``no_grad`` block."""

    _target = True


class set_grad_enabled:  # noqa: N801
    """``set_grad_enabled(False)`` turns recording off now; as a context manager, for the block."""

    def __init__(self, mode: bool) -> None:
        self._prev = is_grad_enabled()
        self._mode = bool(mode)
        _set(self._mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _set(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        _set(self._prev)
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper
