"""Files other processes may read while they are written: atomic replacement through a temporary file
in the same folder (readers see the old file or the whole new one, never a part)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on this platform: no cross-process lock (best effort)
    fcntl = None

__all__ = ["locked", "tmp_beside", "unlink", "write_atomic"]


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` across processes (best effort: none where unavailable)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600) if fcntl is not None else None
    except OSError:
        fd = None
    if fd is None:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


def tmp_beside(path: Path, data: bytes) -> str:
    """A new temporary file holding ``data`` in ``path``'s folder (to be renamed or linked onto ``path``)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        unlink(tmp)
        raise
    return tmp


def unlink(path: str | Path) -> None:
    """Remove ``path`` if it can be removed (a missing file is no error)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` so a reader sees either the old file or the whole new one."""
    tmp = tmp_beside(path, text.encode() if isinstance(text, str) else text)
    try:
        os.replace(tmp, path)
    except BaseException:
        unlink(tmp)
        raise
