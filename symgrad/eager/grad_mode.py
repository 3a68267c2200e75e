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


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (and not inside a nested ``inference_mode(False)``)."""
    return getattr(_state, "inference", False)


class inference_mode:  # noqa: N801 - torch's name
    """``no_grad`` that also reports ``is_inference_mode_enabled()``; ``inference_mode(False)`` turns both off
    (grad mode on, as torch). A context manager and a decorator, with or without the call
    (``@inference_mode`` / ``@inference_mode()``). Tensors made inside are inference tensors (``is_inference()``;
    in-place writes into them outside it raise torch's error). Unlike torch, ``enable_grad()`` inside it records
    again, and autograd outside it may save inference tensors for backward (torch refuses)."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self._prev = (is_grad_enabled(), is_inference_mode_enabled())
        _set(not self.mode)
        _state.inference = bool(self.mode)

    def __exit__(self, *exc: Any) -> None:
        _set(self._prev[0])
        _state.inference = self._prev[1]

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper

    def clone(self) -> inference_mode:
        """A fresh context manager with the same mode."""
        return type(self)(self.mode)
