"""Anomaly mode (``torch.autograd.detect_anomaly`` / ``set_detect_anomaly``): the mode flags and the forward
tracebacks recorded while it is on (the backward's NaN check is ``anomaly_check``)."""
from __future__ import annotations

import os
import traceback
import warnings
import weakref
from typing import Any

from ..core.graph import Node

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "set_detect_anomaly"]

_MODE = {"enabled": False, "check_nan": True}

#: node -> the forward call's stack (outermost first), recorded while anomaly mode is on
_TRACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the symgrad package
_ENABLED_MSG = ("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                "enabled for debugging.")


def is_anomaly_enabled() -> bool:
    """``torch.is_anomaly_enabled()``."""
    return _MODE["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """``torch.is_anomaly_check_nan_enabled()``."""
    return _MODE["check_nan"]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """``torch.set_anomaly_enabled``: set both flags now."""
    _MODE["enabled"] = bool(enabled)
    _MODE["check_nan"] = bool(check_nan)


class detect_anomaly:  # noqa: N801 - torch's name
    """Context manager turning anomaly detection on for its block (torch warns when it is created)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn(_ENABLED_MSG, stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Turn anomaly detection on or off now; as a context manager, restore the previous mode after the block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# ----------------------------------------------------------------------------- forward tracebacks

def note_forward(node: Node) -> None:
    """Remember the user's stack for a node recorded in anomaly mode (symgrad's own frames left out)."""
    frames = [f for f in traceback.extract_stack()[:-1] if not os.path.abspath(f.filename).startswith(_PKG)]
    _TRACES[node] = frames


def warn_forward(node: Node, name: str) -> None:
    frames = _TRACES.get(node)
    if frames is None:
        msg = (f"Error detected in {name}. No forward pass information available. Enable detect anomaly during "
               "forward pass for more information. (Triggered internally at "
               "/__w/pytorch/pytorch/torch/csrc/autograd/python_anomaly_mode.cpp:100.)")
    else:
        msg = (f"Error detected in {name}. Traceback of forward call that caused the error:\n"
               + "".join(traceback.format_list(frames))
               + " (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/python_anomaly_mode.cpp:122.)")
    warnings.warn(msg, stacklevel=4)
