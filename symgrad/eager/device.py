"""``torch.device`` and the default device: symgrad runs on the CPU only, and refuses CUDA and MPS as a CPU-only
torch build does (``AssertionError: Torch not compiled with CUDA enabled``)."""
from __future__ import annotations

from typing import Any

_NO_CUDA = "Torch not compiled with CUDA enabled"
_TYPES = ("cpu", "cuda", "mps", "meta", "xpu", "xla", "hip", "ipu", "mkldnn", "opengl", "opencl", "ideep", "vulkan",
          "ve", "fpga", "maia", "mtia", "privateuseone", "lazy", "hpu")


class device:  # noqa: N801 - torch's name
    """A device: ``device("cpu")``, ``device("cuda", 0)``, ``device("cuda:1")``. Only the CPU runs tensors."""

    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if isinstance(type, int):
            raise RuntimeError(f"Expected one of cpu, cuda, ... device type at start of device string: {type}")
        name, _, idx = str(type).partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: "
                                   f"{type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        self.type = name
        self.index = index

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __enter__(self) -> device:
        check(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


CPU = device("cpu")
_default = CPU


def check(dev: Any) -> device:
    """The device ``dev`` names, which must be the CPU: CUDA and MPS raise torch's CPU-build error."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda":
        raise AssertionError(_NO_CUDA)
    if d.type == "mps":
        raise RuntimeError("PyTorch is not linked with support for mps devices")
    if d.type != "cpu":
        raise RuntimeError(f"Could not run this operation on the '{d.type}' backend: symgrad runs on the CPU only")
    return d


def check_optional(dev: Any) -> None:
    """Check a ``device=`` argument (None: the default device)."""
    if dev is not None:
        check(dev)


def set_default_device(dev: Any) -> None:
    """``torch.set_default_device``: CPU only (None resets it)."""
    global _default
    _default = CPU if dev is None else device(dev)


def get_default_device() -> device:
    check(_default)  # a CUDA default fails at the first creation in torch; here when asked
    return _default


def default_device_check() -> None:
    """Creation functions fail as torch's do once the default device is one this build lacks."""
    if _default is not CPU and _default.type != "cpu":
        check(_default)
