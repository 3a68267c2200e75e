"""Generated source on disk: content-hashed files, verified on load, written atomically, imported from the real file.

Layout
------
``load_kernel(source, name, prefix)`` keeps ``source`` in ``cache_dir()/<prefix>_<sha256[:24]>.py``
and returns ``name`` from it. The folder is ``$SYMGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/symgrad``
(``~/.cache/symgrad``). A ``numba.njit(cache=True)`` kernel imported from such a file gets numba's
on-disk cache next to it (``__pycache__/<file stem>.<function>-<line>.pyXY.nbi`` / ``.N.nbc``), so a
later process loads the machine code instead of compiling it.

Robustness
----------
* **Verify on load.** The file's name is the hash of its content; before importing, the bytes on
  disk are compared with ``source``. A missing, truncated, empty or foreign file is (re)written
  and the reason logged; the module is compiled from the verified bytes (with the real path as
  its file name, so tracebacks, ``inspect`` and numba's cache locator see the real file), never
  from whatever the file holds by then, and no ``.pyc`` is involved.
* **Atomic, first writer wins.** A new file is written to a temporary name in the same folder and
  hard-linked into place (``os.link`` fails if another process got there first, whose identical
  file is then kept, so numbas that stamp their cache with the file's mtime, rather than with its
  sha256 as 0.68 does, see one stamp). A corrupt file is replaced with ``os.replace``. Readers see
  either nothing or a whole file.
* **Concurrent processes** compiling the same kernel both succeed: every file (ours and numba's)
  is replaced atomically; the worst a race costs is one extra compilation later.
* **Read-only folder.** If the folder cannot be created or written (probed by creating a file in
  it), a private temporary folder (``$TMPDIR/symgrad-<uid>``, mode 0700, owned by this user, else
  a fresh ``mkdtemp``) is used with a ``RuntimeWarning``. Same if a write fails later.
* ``SYMGRAD_DISABLE_CACHE=1`` keeps everything in memory: nothing is written, the module is
  executed from a string and numba kernels are built with ``cache=False``.

Logging
-------
On logger ``symgrad.codegen`` at debug level: each kernel file (reused, written, or rebuilt with the
reason) with its check / write / import times.

A numba kernel (a dispatcher, duck-typed: this module never imports numba) gets the guard of
``codegen.numba_cache`` on its cache when ``load_kernel`` returns it: numba's artefacts are
checksummed, a cache hit skips numba's start-up registries, and ``jit_stats`` counts.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import stat
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from . import numba_object
from .files import tmp_beside, unlink
from .numba_cache import instrument, register

log = logging.getLogger("symgrad.codegen")

__all__ = ["cache_dir", "reset_cache_dir", "cache_disabled", "source_hash", "load_kernel"]

#: (the environment the folder was resolved from, the folder)
_resolved: tuple[tuple, Path] | None = None

_FALSE = ("", "0", "false", "no", "off")

_IMPORT_LOCK = threading.RLock()
#: kernel modules being executed by ``_import`` in this thread (a kernel loaded from another's module
#: level must be numba's dispatcher: numba code calls it)
_NESTED = threading.local()
#: the ``LightKernel`` of each (module, function), so loading the same text twice gives the same kernel
_LIGHT: dict[tuple[str, str], Any] = {}


def cache_disabled() -> bool:
    """``SYMGRAD_DISABLE_CACHE`` is set to something other than ``""``, ``0``, ``false``, ``no``, ``off``."""
    return os.environ.get("SYMGRAD_DISABLE_CACHE", "").strip().lower() not in _FALSE


def _writable(folder: Path) -> None:
    """Raise ``OSError`` unless a file can be created (and removed) in ``folder``."""
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe")
    os.close(fd)
    os.unlink(probe)


def _fallback_dir() -> Path:
    """A private temporary folder: ``$TMPDIR/symgrad-<uid>`` if it is ours and closed to others, else a new one."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    shared = Path(tempfile.gettempdir()) / f"symgrad-{uid if uid is not None else 'user'}"
    try:
        shared.mkdir(mode=0o700, exist_ok=True)
        st = shared.lstat()        # not stat(): a symlink planted there is refused
        if stat.S_ISDIR(st.st_mode) and (uid is None or st.st_uid == uid) and not st.st_mode & 0o022:
            _writable(shared)
            return shared
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="symgrad-"))


def _fall_back(base: Path, why: str) -> Path:
    global _resolved
    fallback = _fallback_dir()
    msg = f"symgrad: cache folder {base} is not writable ({why}); using {fallback}"
    log.warning(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)
    _resolved = (_env_key(), fallback)
    return fallback


def _env_key() -> tuple:
    return (os.environ.get("SYMGRAD_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))


def cache_dir() -> Path:
    """``$SYMGRAD_CACHE_DIR``, else the user's cache folder; a temporary one (with a warning) if not writable.

    Resolved once per value of the environment variables (``reset_cache_dir()`` forces it again).
    """
    global _resolved
    key = _env_key()
    if _resolved is not None and _resolved[0] == key:
        return _resolved[1]
    env, xdg = key
    base = Path(env) if env else Path(xdg or Path.home() / ".cache") / "symgrad"
    try:
        base.mkdir(parents=True, exist_ok=True)
        _writable(base)
    except OSError as exc:
        return _fall_back(base, f"{type(exc).__name__}: {exc}")
    _resolved = (key, base)
    return base


def reset_cache_dir() -> None:
    """Forget the resolved folder (tests change ``SYMGRAD_CACHE_DIR``)."""
    global _resolved
    _resolved = None


def source_hash(source: str | bytes) -> str:
    data = source.encode() if isinstance(source, str) else source
    return hashlib.sha256(data).hexdigest()[:24]


def _what_is_wrong(old: bytes, new: bytes) -> str:
    if not old:
        return "empty file"
    if new.startswith(old):
        return f"truncated file ({len(old)} of {len(new)} bytes)"
    return f"content does not match its hash name ({len(old)} bytes, sha256 {source_hash(old)}...)"


def _ensure_file(path: Path, data: bytes) -> str:
    """Make ``path`` hold exactly ``data``; return what was done (``reused``, ``written``, ``rebuilt: why``)."""
    try:
        with open(path, "rb") as f:
            old: bytes | None = f.read(len(data) + 1)
    except FileNotFoundError:
        old = None
    except OSError as exc:             # e.g. a folder in the way: replacing it fails below, loudly
        old, why = b"", f"unreadable ({type(exc).__name__})"
    else:
        if old == data:
            return "reused"
        why = _what_is_wrong(old, data)
    tmp = tmp_beside(path, data)
    try:
        if old is None:
            try:
                os.link(tmp, path)     # fails if another process created it meanwhile
                return "written"
            except FileExistsError:
                with open(path, "rb") as f:
                    if f.read(len(data) + 1) == data:
                        return "reused (written by another process)"
                why = "another process wrote different content"
            except OSError:            # no hard links on this file system: plain atomic replace
                os.replace(tmp, path)
                return "written"
        os.replace(tmp, path)
        return f"rebuilt: {why}"
    finally:
        unlink(tmp)


_NJIT_CACHE = re.compile(r"(?m)^(\s*@numba\.n?jit\(.*?)\bcache=True\b")


def _in_memory(source: str, digest: str, prefix: str) -> ModuleType:
    mod = ModuleType(f"symgrad_gen_{prefix}_{digest}")
    src = _NJIT_CACHE.sub(r"\1cache=False", source)     # numba cannot cache a function with no file
    exec(compile(src, f"<symgrad {prefix}_{digest}>", "exec", dont_inherit=True), mod.__dict__)  # noqa: S102
    return mod


def _import(path: Path, data: bytes, modname: str) -> ModuleType:
    """Execute the verified bytes as module ``modname`` whose file is ``path``."""
    code = compile(data, str(path), "exec", dont_inherit=True)
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod          # numba's cache rebuilds environments with import_module(modname)
    _NESTED.depth = getattr(_NESTED, "depth", 0) + 1
    try:
        exec(code, mod.__dict__)  # noqa: S102
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    finally:
        _NESTED.depth -= 1
    return mod


def _dispatcher(path: Path, data: bytes, modname: str, name: str, label: str, count: bool = True) -> Any:
    """Function ``name`` of the kernel module (imported once), a numba dispatcher getting the cache guard."""
    with _IMPORT_LOCK:
        mod = sys.modules.get(modname)
        if mod is None:
            mod = _import(path, data, modname)
    fn = getattr(mod, name)
    if hasattr(fn, "_cache") and hasattr(fn, "stats"):      # a numba dispatcher (duck-typed: no numba import)
        instrument(fn, label=label, objects=numba_object.object_file(path, name), count=count)
    return fn


def _light(path: Path, data: bytes, modname: str, name: str, label: str) -> Any:
    """The ``LightKernel`` of function ``name`` if the object cache serves it here (numba not imported yet)."""
    key = (modname, name)
    kernel = _LIGHT.get(key)
    if kernel is None and "numba" not in sys.modules and modname not in sys.modules and numba_object.enabled():
        with _IMPORT_LOCK:
            kernel = _LIGHT.get(key)
            if kernel is None:
                kernel = numba_object.open_kernel(
                    path, name, modname, label, lambda: _dispatcher(path, data, modname, name, label, count=False))
                if kernel is not None:
                    _LIGHT[key] = register(kernel)
    return kernel


def load_kernel(source: str, name: str, prefix: str = "k", light: bool = True) -> tuple[Any, Path]:
    """Keep ``source`` under its hash in the cache folder (verified, rebuilt if damaged) and return
    (``name`` from it, the file's path). In memory only under ``SYMGRAD_DISABLE_CACHE``.

    A numba kernel whose object code is cached (``codegen.numba_object``) comes as a ``LightKernel``, which
    runs it without importing numba, unless ``light`` is false, numba is imported already, or the kernel is
    loaded while another kernel module executes (numba code calls it): then numba's dispatcher."""
    t0 = time.perf_counter()
    data = source.encode()
    digest = source_hash(data)
    fname = f"{prefix}_{digest}.py"
    path = Path(f"<memory>/{fname}")
    what = "kept in memory (SYMGRAD_DISABLE_CACHE)"
    in_memory = cache_disabled()
    if not in_memory:
        for attempt in range(2):
            folder = cache_dir()
            try:
                what = _ensure_file(folder / fname, data)
                path = folder / fname
                break
            except OSError as exc:
                if attempt == 0:
                    _fall_back(folder, f"writing {fname}: {type(exc).__name__}: {exc}")
                    continue
                what = f"kept in memory (cannot write {folder / fname}: {exc})"
                log.warning("symgrad: %s", what)
                in_memory = True
    t1 = time.perf_counter()
    label = f"{prefix}_{digest}.{name}"
    if in_memory:
        fn = getattr(_in_memory(source, digest, prefix), name)
        if hasattr(fn, "_cache") and hasattr(fn, "stats"):  # a numba dispatcher (duck-typed: no numba import)
            instrument(fn, label=label)
    else:
        modname = f"symgrad_gen.{prefix}_{digest}"
        fn = None
        if light and not getattr(_NESTED, "depth", 0):
            fn = _light(path, data, modname, name, label)
            if fn is not None:
                what += ", object code cached (numba not imported)"
        if fn is None:
            if modname in sys.modules:
                what += ", module already imported"
            fn = _dispatcher(path, data, modname, name, label)
    t2 = time.perf_counter()
    log.debug("kernel %s: %s; check+write %.1f ms, import %.1f ms (%s)", fname, what, 1e3 * (t1 - t0),
              1e3 * (t2 - t1), path)
    return fn, path
