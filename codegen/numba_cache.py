"""numba's on-disk cache of a generated kernel, guarded: artefacts checksummed, damage survived, start-up light.

``codegen.cache.load_kernel`` puts the guard on every numba kernel it loads (``instrument``); the
guard runs only when numba compiles or loads a signature, never on a call. Nothing here imports
numba at module level (dispatchers are duck-typed; numba's runtime is imported when a signature loads).

* **Numba artefacts are checksummed.** numba 0.68 neither validates its ``.nbi`` / ``.nbc`` files
  nor survives a damaged one (a garbage or truncated file raises ``UnpicklingError`` /
  ``EOFError`` from the call; a flipped byte inside the object code loads silently). Each kernel's
  dispatcher gets a guard around its cache (``_NumbaCacheGuard``): after numba saves, the sha256 of
  the index and of every data file it names go to ``<index>.sha256``; before numba loads, they
  are checked. A mismatch (or an artefact with no checksum, or any error while numba reads it)
  means: drop the bad files, recompile, save afresh. The guard only runs when numba compiles or
  loads a signature, never on a call.
* **A cache hit skips numba's start-up registries.** numba's own ``load_overload`` first runs
  ``target_context.refresh()``: it imports every typing and lowering registry (``numba.np.arraymath``
  imports ``scipy.linalg`` to find BLAS), which a cache hit never uses. The guard initialises only
  numba's runtime (NRT) and calls numba's ``_load_overload``: 0.3 s less per warm process on an idle
  machine, over a second on a loaded one. On a miss numba's compiler refreshes both contexts itself.

Logging
-------
On logger ``symgrad.codegen`` at debug level: each numba signature, either loaded from the disk
cache (with its verify and load times) or compiled with the reason (no cache entry, stale,
rejected artefact, caching off...) and its stage times (frontend, typing, lowering+LLVM, cache save).

``jit_stats(fn)`` returns a numba kernel's counters (signatures, numba's cache hits and misses, and
the guard's loads, compiles and rejected artefacts); ``jit_stats()`` sums them over every numba
kernel this process loaded through ``load_kernel``.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import pickle
import time
import weakref
from pathlib import Path
from typing import Any

from . import numba_object
from .files import locked as _locked
from .files import unlink, write_atomic

log = logging.getLogger("symgrad.codegen")

__all__ = ["instrument", "jit_stats"]

#: The numba kernels instrumented in this process (weak references), for ``jit_stats()``.
_KERNELS: list[weakref.ref] = []


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _index_overloads(index_bytes: bytes) -> dict:
    """The ``{key: data file name}`` of a numba index (numba's own format: version, then (stamp, overloads))."""
    f = io.BytesIO(index_bytes)
    pickle.load(f)
    _stamp, overloads = pickle.loads(f.read())
    return overloads


def _fmt_sig(sig: Any) -> str:
    try:
        return ", ".join(str(a) for a in sig)
    except TypeError:
        return str(sig)


def _stage_times(cres: Any) -> str:
    """numba's per-pass timings of a compile result, grouped into a few stages (ms)."""
    try:
        passes = cres.metadata["pipeline_times"]["nopython"]
    except (AttributeError, KeyError, TypeError):
        return "stage times unavailable"
    groups = {"frontend": 0.0, "typing": 0.0, "parfors": 0.0, "lowering+LLVM": 0.0, "other": 0.0}
    seen_typing = False
    for pname, t in passes.items():
        dt = t.init + t.run + t.finalize
        if "type_inference" in pname:
            groups["typing"] += dt
            seen_typing = True
        elif "native_lowering" in pname or "native_parfor_lowering" in pname:
            groups["lowering+LLVM"] += dt
        elif "parfor" in pname:
            groups["parfors"] += dt
        elif not seen_typing:
            groups["frontend"] += dt
        else:
            groups["other"] += dt
    return ", ".join(f"{k} {1e3 * v:.1f} ms" for k, v in groups.items() if v >= 1e-4 or k != "parfors")


def _runtime_only_load(cache: Any) -> Any:
    """numba's cache load without its ``target_context.refresh()`` (``Cache._load_overload``), or None."""
    load = getattr(cache, "_load_overload", None)
    return load if callable(load) and hasattr(cache, "_index_key") else None


def _numba_runtime_init(target_context: Any) -> None:
    """What loading cached machine code needs of numba's start-up: its runtime (NRT) in the JIT.

    numba's own ``load_overload`` first refreshes the target context: it imports every typing and
    lowering registry (``numba.np.arraymath`` alone imports ``scipy.linalg`` for BLAS), a second or
    more, which a cache hit does not use: the library is machine code whose external symbols are
    numba's C helpers (registered when numba is imported), libm and the NRT, initialised here;
    parallel kernels start their thread pool through the result's ``reload_init``. A cache miss
    compiles, and numba's compiler refreshes both contexts itself before it starts.
    """
    try:
        from numba.core.runtime import rtsys  # deferred: numba is heavy, and only a loading signature needs it
    except ImportError:
        target_context.refresh()
        return
    rtsys.initialize(target_context)


class _NumbaCacheGuard:
    """Stands in for a numba dispatcher's ``_cache`` (numba calls ``load_overload`` before compiling a
    signature and ``save_overload`` after): verifies artefacts, survives damaged ones, counts and logs.
    Everything else is delegated to numba's cache object."""

    def __init__(self, inner: Any, label: str, objects: Path | None = None) -> None:
        self._inner = inner
        self.label = label
        self.objects = objects if objects is not None and numba_object.enabled() else None
        self.loads = 0
        self.compiles = 0
        self.rejected = 0
        self.events: list[dict] = []
        self._pending: dict[Any, tuple[str, float, float]] = {}

    def __getattr__(self, attr: str) -> Any:
        if attr == "_inner":               # not set yet (copy, unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __repr__(self) -> str:
        return f"<symgrad guard of {self._inner!r}>"

    # ------------------------------------------------------------------ files
    @property
    def _file(self) -> Any:
        return getattr(self._inner, "_cache_file", None)

    def _sum_path(self) -> str:
        return self._file._index_path + ".sha256"

    def _drop(self, names: list[str]) -> None:
        cf = self._file
        for n in names:
            unlink(cf._data_path(n) if n != cf._index_name else cf._index_path)

    def _verify(self) -> str | None:
        """None if the artefacts are absent or intact; else why not (and the bad files are removed)."""
        cf = self._file
        try:
            with open(cf._index_path, "rb") as f:
                index = f.read()
        except FileNotFoundError:
            return None
        try:
            with open(self._sum_path()) as f:
                sums = json.load(f)
        except (OSError, ValueError):
            return "numba cache artefact has no valid checksum"
        if not isinstance(sums, dict) or sums.get(cf._index_name) != hashlib.sha256(index).hexdigest():
            self._drop([cf._index_name])
            return f"numba cache index {cf._index_name} fails its checksum"
        try:
            names = sorted(set(_index_overloads(index).values()))
        except Exception as exc:  # noqa: BLE001 - a checksummed index numba wrote but cannot read back
            self._drop([cf._index_name])
            return f"numba cache index unreadable ({type(exc).__name__})"
        for n in names:
            digest = _sha(cf._data_path(n))
            if digest is not None and sums.get(n) != digest:
                self._drop([n])
                return f"numba cache data {n} fails its checksum"
        return None

    def _write_sums(self) -> None:
        cf = self._file
        try:
            with open(cf._index_path, "rb") as f:
                index = f.read()
            sums = {cf._index_name: hashlib.sha256(index).hexdigest()}
            for n in sorted(set(_index_overloads(index).values())):
                digest = _sha(cf._data_path(n))
                if digest is not None:
                    sums[n] = digest
            write_atomic(Path(self._sum_path()), json.dumps(sums, indent=0, sort_keys=True))
        except Exception as exc:  # noqa: BLE001 - no checksum only means the next process recompiles
            log.debug("numba cache checksum for %s not written: %s", self.label, exc)

    def _why_miss(self, sig: Any, target_context: Any) -> str:
        cf = self._file
        try:
            if not os.path.exists(cf._index_path):
                return "no numba cache entry"
            overloads = cf._load_index()
            if not overloads:
                return "numba cache stale (source file or numba version changed)"
            key = self._inner._index_key(sig, target_context.codegen())
            return "signature not in numba cache" if key not in overloads else "numba cache data file missing"
        except Exception:  # noqa: BLE001
            return "numba cache miss"

    # ------------------------------------------------------------------ numba's interface
    def _lock_path(self) -> str:
        return self._file._index_path + ".lock"

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        t0 = time.perf_counter()
        if self._file is None:                 # NullCache: caching is off for this dispatcher
            t1 = time.perf_counter()
            self._pending[sig] = ("numba caching off (kernel in memory)", t1, 0.0)
            return self._inner.load_overload(sig, target_context)
        load = _runtime_only_load(self._inner)
        if load is None:                       # not the numba we know: its own load, with its full refresh
            target_context.refresh()
            load = self._inner.load_overload
        else:
            _numba_runtime_init(target_context)
        t1 = time.perf_counter()
        reason, cres = None, None
        if os.path.exists(self._file._index_path):
            with _locked(self._lock_path()):   # no writer between the checksum and numba's read
                reason = self._verify()
                if reason is None:
                    try:
                        cres = self._load(load, sig, target_context)
                    except Exception as exc:  # noqa: BLE001 - a damaged artefact must cost a compile, not the call
                        reason = f"numba cache unreadable ({type(exc).__name__}: {exc})"
                        self._drop([self._file._index_name])
        t2 = time.perf_counter()
        if cres is not None:
            self.loads += 1
            self.events.append({"event": "load", "sig": _fmt_sig(sig), "init_s": t1 - t0, "load_s": t2 - t1})
            log.debug("numba %s(%s): loaded from the disk cache (%s); numba target init %.1f ms, verify+load %.1f ms",
                      self.label, _fmt_sig(sig), self._inner.cache_path, 1e3 * (t1 - t0), 1e3 * (t2 - t1))
            return cres
        if reason is None:
            reason = self._why_miss(sig, target_context)
        else:
            self.rejected += 1
        self._pending[sig] = (reason, time.perf_counter(), t2 - t0)
        return None

    def _load(self, load: Any, sig: Any, target_context: Any) -> Any:
        """numba's load (``load``), keeping what it read for the object cache when that lacks the signature."""
        inner = self._inner
        if self.objects is None or load != getattr(inner, "_load_overload", None) or not getattr(inner, "_enabled", 0):
            return load(sig, target_context)
        codegen = target_context.codegen()
        data = inner._cache_file.load(inner._index_key(sig, codegen))
        if data is None:
            return None
        cres = inner._impl.rebuild(target_context, data)
        try:
            numba_object.save_loaded(self.objects, data, codegen.magic_tuple())
        except Exception as exc:  # noqa: BLE001 - the object cache is an optimisation: numba's cache stays
            log.debug("numba %s(%s): not put in the object cache: %s", self.label, _fmt_sig(sig), exc)
        return cres

    def save_overload(self, sig: Any, cres: Any) -> None:
        t0 = time.perf_counter()
        reason, t_miss, lookup = self._pending.pop(sig, ("compiled", t0, 0.0))
        if self._file is not None:
            try:
                self._inner._impl.locator.ensure_cache_path()
            except Exception:  # noqa: BLE001 - numba's own save reports an unusable folder
                pass
            with _locked(self._lock_path()):
                for attempt in range(2):
                    try:
                        self._inner.save_overload(sig, cres)
                        break
                    except Exception as exc:  # noqa: BLE001 - e.g. an index numba cannot read back while saving
                        if attempt:
                            log.warning("symgrad: numba kernel %s not saved to the disk cache: %s", self.label, exc)
                        self._drop([self._file._index_name])
                self._write_sums()
            if self.objects is not None:
                try:
                    numba_object.save_compiled(self.objects, sig, cres)
                except Exception as exc:  # noqa: BLE001 - the object cache is an optimisation: numba's cache stays
                    log.debug("numba %s(%s): not put in the object cache: %s", self.label, _fmt_sig(sig), exc)
        else:
            self._inner.save_overload(sig, cres)
        t1 = time.perf_counter()
        self.compiles += 1
        stages = _stage_times(cres)
        self.events.append({"event": "compile", "sig": _fmt_sig(sig), "reason": reason, "lookup_s": lookup,
                            "compile_s": t0 - t_miss, "save_s": t1 - t0, "stages": stages})
        log.debug("numba %s(%s): compiled (%s) in %.1f ms [%s]; cache lookup %.1f ms (incl. numba target init), "
                  "cache save %.1f ms", self.label, _fmt_sig(sig), reason, 1e3 * (t0 - t_miss), stages,
                  1e3 * lookup, 1e3 * (t1 - t0))


def instrument(dispatcher: Any, label: str | None = None, objects: Path | None = None, count: bool = True) -> Any:
    """Put the cache guard on a numba dispatcher (``load_kernel`` does it for every numba kernel); with
    ``objects`` (``numba_object.object_file`` of the kernel) it also fills the object cache. ``count``: the
    dispatcher counts in ``jit_stats()`` (not when a ``LightKernel`` that counts it made it)."""
    cache = getattr(dispatcher, "_cache", None)
    if cache is not None and not isinstance(cache, _NumbaCacheGuard):
        guard = _NumbaCacheGuard(cache, label or getattr(dispatcher, "__qualname__", repr(dispatcher)), objects)
        dispatcher._cache = guard
        if count:
            _KERNELS.append(weakref.ref(dispatcher))
    return dispatcher


def register(kernel: Any) -> Any:
    """Count a ``LightKernel`` in ``jit_stats()``."""
    _KERNELS.append(weakref.ref(kernel))
    return kernel


def jit_stats(fn: Any = None) -> dict:
    """Counters of a numba kernel, or summed over every numba kernel ``load_kernel`` loaded (``fn=None``).

    ``signatures``: compiled or loaded signatures; ``cache_hits`` / ``cache_misses``: numba's own
    counters; ``loads`` / ``compiles``: signatures loaded from disk / compiled by this process;
    ``rejected``: damaged numba artefacts thrown away. A plain function (no numba) gives ``numba: False``.
    """
    keys = ("signatures", "cache_hits", "cache_misses", "loads", "compiles", "rejected")
    if fn is None:
        total = dict.fromkeys(keys, 0)
        kernels = [k for k in (r() for r in _KERNELS) if k is not None]
        total["kernels"] = len(kernels)
        for k in kernels:
            d = jit_stats(k)
            for name in keys:
                total[name] += d[name]
        return total
    if isinstance(fn, numba_object.LightKernel):
        return _light_stats(fn, keys)
    guard = getattr(fn, "_cache", None)
    if guard is None or not hasattr(fn, "stats"):
        return {"numba": False, **dict.fromkeys(keys, 0)}
    stats = fn.stats
    out = {"numba": True, "signatures": len(fn.signatures), "cache_hits": sum(stats.cache_hits.values()),
           "cache_misses": sum(stats.cache_misses.values()), "cache_path": stats.cache_path}
    if isinstance(guard, _NumbaCacheGuard):
        out.update(loads=guard.loads, compiles=guard.compiles, rejected=guard.rejected, events=list(guard.events))
    else:
        out.update(loads=out["cache_hits"], compiles=out["cache_misses"], rejected=0, events=[])
    return out


def _light_stats(fn: numba_object.LightKernel, keys: tuple[str, ...]) -> dict:
    """``jit_stats`` of a kernel running from the object cache (and numba's dispatcher once it has one)."""
    light = fn.light_signatures
    out = {"numba": True, **dict.fromkeys(keys, 0), "object_cache_loads": len(light), "events": list(fn._events)}
    d = fn._dispatcher
    sigs = set(light)
    if d is not None:
        inner = jit_stats(d)
        for k in keys:
            out[k] = inner[k]
        out["events"] += inner["events"]
        out["cache_path"] = inner.get("cache_path")
        for s in d.signatures:
            key = tuple(numba_object.numba_key(t) for t in s)
            sigs.add(key if None not in key else s)
    out["signatures"] = len(sigs)
    out["cache_hits"] += len(light)
    out["loads"] += len(light)
    out["rejected"] += fn._rejected
    return out
