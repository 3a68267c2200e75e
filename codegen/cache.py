"""Generated source on disk: content-hashed files, atomic writes, imported from the real file."""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType

log = logging.getLogger("symgrad.codegen")

_dir: Path | None = None


def cache_dir() -> Path:
    """``$SYMGRAD_CACHE_DIR``, else the user's cache folder; a temporary one if not writable."""
    global _dir
    if _dir is not None:
        return _dir
    env = os.environ.get("SYMGRAD_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "symgrad"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=base, prefix=".probe", delete=True)
        probe.close()
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"symgrad-{os.getuid() if hasattr(os, 'getuid') else 0}"
        fallback.mkdir(parents=True, exist_ok=True)
        warnings.warn(f"symgrad: cache folder {base} is not writable; using {fallback}", RuntimeWarning,
                      stacklevel=2)
        base = fallback
    _dir = base
    return base


def reset_cache_dir() -> None:
    """Forget the resolved folder (tests change ``SYMGRAD_CACHE_DIR``)."""
    global _dir
    _dir = None


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees either nothing or the whole file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_kernel(source: str, name: str, prefix: str = "k") -> tuple[object, Path]:
    """Write ``source`` under its hash (unless the same file is there) and return ``name`` from it."""
    digest = source_hash(source)
    path = cache_dir() / f"{prefix}_{digest}.py"
    use_disk = not os.environ.get("SYMGRAD_DISABLE_CACHE")
    if use_disk:
        try:
            if not path.exists() or path.read_text() != source:
                write_atomic(path, source)
        except OSError:
            use_disk = False
    if use_disk:
        modname = f"symgrad_gen.{prefix}_{digest}"
        mod = sys.modules.get(modname)
        if mod is None:
            spec = importlib.util.spec_from_file_location(modname, path)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[modname] = mod
    else:
        mod = ModuleType(f"symgrad_gen_{digest}")
        exec(compile(source, f"<symgrad {digest}>", "exec"), mod.__dict__)  # noqa: S102
    return getattr(mod, name), path
