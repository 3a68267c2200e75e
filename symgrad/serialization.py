"""``torch.save`` / ``torch.load`` for symgrad objects: tensors, parameters, state dicts, whole modules (pickle)."""
from __future__ import annotations

import io
import os
import pickle
from typing import IO, Any


def save(obj: Any, f: str | os.PathLike | IO[bytes], pickle_module: Any = pickle, pickle_protocol: int = 2,
         **_: Any) -> None:
    """Write ``obj`` to the file ``f`` (a path or a binary file object); tensors keep values, dtype and
    ``requires_grad``, not their graph (as torch's)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle_module.dump(obj, fh, protocol=pickle_protocol)
    else:
        pickle_module.dump(obj, f, protocol=pickle_protocol)


def load(f: str | os.PathLike | IO[bytes], map_location: Any = None, pickle_module: Any = pickle,
         weights_only: bool | None = None, **_: Any) -> Any:
    """Read back what ``save`` wrote (``map_location`` may only name the CPU)."""
    if map_location is not None and str(map_location) not in ("cpu", "device(type='cpu')") and \
            not callable(map_location) and not isinstance(map_location, dict):
        raise AssertionError("Torch not compiled with CUDA enabled")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return pickle_module.load(fh)
    if isinstance(f, (bytes, bytearray)):
        f = io.BytesIO(f)
    return pickle_module.load(f)
