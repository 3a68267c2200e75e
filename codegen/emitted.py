"""Emitted numba sources remembered across processes, and kernels sent to another process to be emitted there.

A hot program's numba source is a pure function of its IR kernel, the emitter's arguments and the emitter's code.
``ir_blob`` serialises the first two without pickle's memo (so equal structures give equal bytes, however their
objects are shared), ``source_key`` adds ``emitter_fingerprint()`` (the bytes of every module of ``codegen``, the
SymPy, numpy and Python versions) and hashes it. ``remember(key, source)`` keeps a small reference file in the cache
folder naming the source's own content-hashed file; ``lookup(key)`` returns that source, verified against its hash,
so a later process loads the numba kernel without importing or running the emitter. Any change to the IR, the
arguments or codegen's code gives another key: a reference can be missing, never stale.

``load_ir(blob)`` is the other process's side (the compile helper): the kernel rebuilt without SymPy's automatic
evaluation (the IR's expressions are unevaluated where their association matters), accepted only when it
serialises back to the same bytes, so the source emitted there is the one this process would emit.
"""
from __future__ import annotations

import hashlib
import io
import logging
import pickle
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import sympy
from sympy.core.parameters import evaluate

from .cache import cache_dir, cache_disabled, source_hash
from .files import write_atomic

log = logging.getLogger("symgrad.codegen")

__all__ = ["emitter_fingerprint", "ir_blob", "load_ir", "lookup", "remember", "source_key"]

_FINGERPRINT: str | None = None
#: the reference files' folder inside the cache folder
FOLDER = "emitted"
_STEM = re.compile(r"[a-z]+_[0-9a-f]{24}")


#: where the classes and functions an IR pickle refers to by name may come from: modules whose code the
#: fingerprint covers (a class pickled by reference from anywhere else could change without changing the key)
TRUSTED = frozenset({"codegen", "sympy", "mpmath", "numpy", "builtins", "copyreg", "_codecs", "collections"})


class Untrusted(pickle.PicklingError):
    """The IR refers to a class or function whose code the emitter fingerprint does not cover."""


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
            root = (getattr(obj, "__module__", None) or "").partition(".")[0]
            if root not in TRUSTED:
                raise Untrusted(f"{getattr(obj, '__qualname__', obj)!r} of module {root!r}")
        return NotImplemented


def ir_blob(kernel: Any, out_params: Sequence[int] = ()) -> bytes:
    """``(kernel, out_params)`` pickled without the memo: the bytes are a function of the structure alone.
    Raises ``Untrusted`` (a ``PicklingError``) for IR naming a class or function from outside ``TRUSTED``."""
    buf = io.BytesIO()
    p = _Pickler(buf, protocol=5)
    p.fast = True                   # no memo: shared and equal-but-distinct objects give the same bytes
    p.dump((kernel, tuple(out_params)))
    return buf.getvalue()


def load_ir(blob: bytes) -> tuple[Any, tuple[int, ...]] | None:
    """The ``(kernel, out_params)`` of ``ir_blob``, rebuilt unevaluated; None unless it serialises back to ``blob``."""
    with evaluate(False):
        kernel, out_params = pickle.loads(blob)  # noqa: S301 - our own process's bytes, over a private pipe
    return (kernel, out_params) if ir_blob(kernel, out_params) == blob else None


def emitter_fingerprint() -> str:
    """A hash of what emission depends on besides its arguments: codegen's modules, SymPy, numpy, Python."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256(f"{sys.version_info[:2]} sympy {sympy.__version__} numpy {np.__version__}".encode())
        for p in sorted(root.rglob("*.py")):
            h.update(b"\0" + str(p.relative_to(root)).encode() + b"\0")
            h.update(p.read_bytes())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def source_key(blob: bytes, emitter: str = "numba") -> str:
    """The key of the source ``emitter`` emits for the IR of ``blob``."""
    h = hashlib.sha256(f"{emitter}\0{emitter_fingerprint()}\0".encode())
    h.update(blob)
    return h.hexdigest()[:40]


def _ref(key: str) -> Path:
    return cache_dir() / FOLDER / f"{key}.ref"


def remember(key: str, source: str, prefix: str = "numba") -> None:
    """Note that ``key``'s source is ``source`` (kept by ``load_kernel`` under ``prefix``); best effort."""
    if cache_disabled():
        return
    try:
        path = _ref(key)
        path.parent.mkdir(exist_ok=True)
        write_atomic(path, f"{prefix}_{source_hash(source)}\n")
    except OSError as exc:
        log.debug("emitted source reference %s not written: %s", key, exc)


def lookup(key: str) -> str | None:
    """The source remembered for ``key``, read from its content-hashed file and verified; None if unknown."""
    if cache_disabled():
        return None
    try:
        stem = _ref(key).read_text().strip()
        folder = cache_dir()
        if not _STEM.fullmatch(stem):
            return None
        source = (folder / f"{stem}.py").read_bytes()
    except (OSError, ValueError):
        return None
    if stem.rpartition("_")[2] != source_hash(source):
        log.debug("emitted source %s does not match its hash: emitting again", stem)
        return None
    return source.decode()
