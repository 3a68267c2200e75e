"""Background compilation of numba kernels: the caller keeps running the numpy tier meanwhile.

Modes (``SYMGRAD_COMPILE``, or ``sg.set_compile_mode``):

* ``"background"`` (default): a hot program's numba kernel is emitted in a worker thread of this process and
  compiled by a helper process that fills numba's disk cache; the worker then loads the machine code from the
  cache. numba holds the GIL through most of its front end, so compiling in a thread of the caller's process
  slows the caller's numpy calls down (measured: 1.5-2x longer calls during the compile); the helper process
  does not. Where no disk cache is available (``SYMGRAD_DISABLE_CACHE``, no POSIX) the compile runs in the
  worker thread.
* ``"thread"`` / ``"process"``: force one of the two.
* ``"sync"``: the caller compiles the kernel on the call that finds the program hot and runs it at once (the
  blocking behaviour; the test suite uses it where tests check the numba kernel).

One worker thread runs the jobs in order (numba compiles one function at a time anyway); the helper process is
started on the first cache miss, takes one job at a time over a pipe, exits after ``HELPER_IDLE_S`` idle seconds
or when its stdin closes. Both are daemons of this interpreter: at exit queued jobs are dropped, the helper is
terminated and the worker joined (briefly: a compile running in the thread cannot be interrupted and ends with
the interpreter). numba's artefacts are written atomically and checksummed under a file lock
(``codegen.numba_cache``), so a helper killed mid-write costs a compile later, never a bad kernel.
"""
from __future__ import annotations

import atexit
import base64
import collections
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

import codegen
from codegen.cache import cache_dir, cache_disabled, load_kernel, source_hash

from . import stats as _stats

log = logging.getLogger("symgrad")

MODES = ("background", "sync", "thread", "process")
#: seconds the helper process waits for a job before it exits (it is started again when needed)
HELPER_IDLE_S = 120.0
#: the helper process's nice increment: where no core is idle the caller's calls get a little more of the CPU
#: (a large one starves the compile on a busy machine: at 10, 3% of a core under a load of 12 on 2 cores)
HELPER_NICE = 2
#: seconds the exit handler waits for the worker thread
EXIT_JOIN_S = 0.5


def _mode_from_env() -> str:
    mode = os.environ.get("SYMGRAD_COMPILE", "background").strip().lower() or "background"
    if mode not in MODES:
        log.warning("symgrad: SYMGRAD_COMPILE=%r is not one of %s; compiling in the background", mode, MODES)
        return "background"
    return mode


MODE = _mode_from_env()


def set_compile_mode(mode: str) -> None:
    """How hot programs get their numba kernel: ``"background"`` (default: the numpy tier runs until the kernel is
    ready), ``"sync"`` (compile on the call that finds the program hot, blocking it), or ``"thread"`` /
    ``"process"`` (background, forcing where the compile runs). ``SYMGRAD_COMPILE`` sets it at import."""
    global MODE
    if mode not in MODES:
        raise ValueError(f"compile mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
    MODE = mode


def get_compile_mode() -> str:
    return MODE


def is_sync() -> bool:
    return MODE == "sync"


# ---------------------------------------------------------------------- argument types

def describe(args: Sequence[Any]) -> tuple | None:
    """What numba's dispatcher types these arguments as, in plain values (they travel to the helper process):
    ``("a", dtype, ndim, layout, readonly)`` per array, ``("s", dtype)`` per scalar; None if an argument is
    neither."""
    out = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            fl = a.flags
            out.append(("a", a.dtype.str, a.ndim, "C" if fl.c_contiguous else "F" if fl.f_contiguous else "A",
                        not fl.writeable))
        elif t is float:
            out.append(("s", "<f8"))
        elif t is bool:
            out.append(("s", "|b1"))
        elif t is int:
            out.append(("s", "<i8"))
        elif isinstance(a, np.generic) and a.dtype.kind in "biuf":
            out.append(("s", a.dtype.str))
        else:
            return None
    return tuple(out)


def numba_signature(desc: Sequence[tuple]) -> tuple:
    """The numba argument types of a ``describe`` result."""
    import numba  # deferred: only a compiling worker (or the helper process) needs numba
    from numba import types  # deferred: as above

    sig = []
    for d in desc:
        if d[0] == "a":
            sig.append(types.Array(numba.from_dtype(np.dtype(d[1])), d[2], d[3], readonly=d[4]))
        else:
            sig.append(numba.from_dtype(np.dtype(d[1])))
    return tuple(sig)


# ---------------------------------------------------------------------- the helper process

_HELPER_SOURCE = r'''
import json, os, select, signal, sys, time, traceback, warnings
signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's; this process ends with its stdin
os.nice(int(sys.argv[2]))                         # the caller's own work comes first on a busy machine
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)                                     # stray prints must not corrupt the protocol
idle = float(sys.argv[1])
import types
# codegen's modules without its __init__ (which imports the IR, hence SymPy: a second of start-up on a busy machine;
# SymPy and the emitter come in with the first job that sends an IR to emit)
package = types.ModuleType("codegen")
package.__path__ = [sys.argv[3]]
sys.modules["codegen"] = package
import numpy as np
from codegen.cache import load_kernel, reset_cache_dir
import numba
from numba import types

def signature(desc):
    return tuple(types.Array(numba.from_dtype(np.dtype(d[1])), d[2], d[3], readonly=d[4]) if d[0] == "a"
                 else numba.from_dtype(np.dtype(d[1])) for d in desc)

proto.write(json.dumps({"ready": True}) + "\n"); proto.flush()
while True:
    if not select.select([sys.stdin], [], [], idle)[0]:
        break
    line = sys.stdin.readline()
    if not line:
        break
    job = json.loads(line)
    t0 = time.perf_counter()
    try:
        if os.environ.get("SYMGRAD_CACHE_DIR") != job["folder"]:
            os.environ["SYMGRAD_CACHE_DIR"] = job["folder"]
            reset_cache_dir()
        reply = {"ok": True}
        source = job.get("source")
        if source is None:                        # emit here: the caller sent the IR (SymPy is imported now)
            import base64
            from codegen.emitted import load_ir
            from codegen.numba import emit_numba
            got = load_ir(base64.b64decode(job["ir"]))
            if got is None:
                reply = {"ok": False, "retry": "the IR does not rebuild here"}
            else:
                kernel, out_params = got
                try:
                    source = emit_numba(kernel, out_params=out_params) if out_params else emit_numba(kernel)
                except Exception as exc:
                    reply = {"ok": False, "refused": str(exc) or type(exc).__name__}
                else:
                    reply["source"] = source
                    reply["emit_s"] = time.perf_counter() - t0
        if source is not None:
            t1 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                jit, _ = load_kernel(source, job["name"], prefix=job["prefix"], light=False)
                jit.compile(signature(job["sig"]))
            events = getattr(jit._cache, "events", None) or [{}]
            reply.update({"seconds": time.perf_counter() - t1, "event": events[-1].get("event", "compile"),
                          "stages": events[-1].get("stages", ""), "warnings": [str(w.message) for w in caught]})
    except Exception as exc:
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
    proto.write(json.dumps(reply) + "\n")
    proto.flush()
'''


class HelperError(RuntimeError):
    """The helper process could not compile a kernel (the message is its error)."""


class Refused(Exception):
    """The numba emitter (in the helper process) does not take this IR: the numpy kernel stays."""


class _Helper:
    """The compiling helper process: one job at a time, driven by the worker thread; ``close`` (at exit) may come
    from another thread at any moment, so each step works on its own reference to the process."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.unavailable: str | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        folder = Path(codegen.__file__).resolve().parent     # the helper imports codegen from where we did
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(folder.parent), *filter(None, [env.get("PYTHONPATH")])])
        with self._lock:                   # no helper starts once the exit handler has run
            if _CLOSING:
                raise HelperError("interpreter exiting")
            proc = self.proc = subprocess.Popen(
                [sys.executable, "-c", _HELPER_SOURCE, str(HELPER_IDLE_S), str(HELPER_NICE), str(folder)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
                close_fds=True)
        assert proc.stdout is not None
        try:
            first = proc.stdout.readline()
        except (OSError, ValueError):
            first = ""
        if not first.startswith("{"):
            code = proc.wait()
            self.proc = None
            if _CLOSING:
                raise HelperError("interpreter exiting")
            raise OSError(f"the compile helper process exited at start (code {code})")
        return proc

    def warm_up(self) -> None:
        """Start the helper now (from the worker thread), so that its start-up (an interpreter importing numba) runs
        while the caller traces, not during the calls after that; a failure to start is left for ``compile``."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            return
        try:
            self._start()
        except (OSError, HelperError) as exc:
            log.debug("symgrad: the compile helper did not start early (%s)", exc)

    def compile(self, folder: Path, source: str | None, name: str, prefix: str, desc: Sequence[tuple],
                ir: bytes | None = None) -> dict:
        """Compile function ``name`` of the kernel ``source`` (kept in the cache ``folder`` under ``prefix``) for
        ``desc`` in the helper: numba's disk cache (and the object cache) get it. Without ``source`` the helper
        emits it from ``ir`` (``codegen.emitted.ir_blob``) first: the reply's ``source``, or ``refused`` (the
        emitter's reason) or ``retry`` (the IR did not rebuild there: emit here)."""
        job = {"folder": str(folder), "name": name, "prefix": prefix, "sig": [list(d) for d in desc]}
        if source is not None:
            job["source"] = source
        else:
            job["ir"] = base64.b64encode(ir or b"").decode()
        job = json.dumps(job) + "\n"
        start_s = 0.0
        for attempt in range(2):
            proc = self.proc
            if proc is None or proc.poll() is not None:
                t0 = time.perf_counter()
                proc = self._start()
                start_s += time.perf_counter() - t0
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(job)
                proc.stdin.flush()
                line = proc.stdout.readline()
            except (OSError, ValueError):     # a broken or closed pipe: the helper is gone
                line = ""
            if line:
                reply = json.loads(line)
                if not reply.get("ok") and "refused" not in reply and "retry" not in reply:
                    raise HelperError(reply.get("error", "unknown error"))
                reply["start_s"] = start_s
                return reply
            code = proc.wait()
            if self.proc is proc:
                self.proc = None
            if _CLOSING:
                raise HelperError("interpreter exiting")
            if code == 0 and attempt == 0:        # it had just timed out idle: start a new one
                continue
            raise HelperError(f"the compile helper process died (exit code {code})")
        raise HelperError("the compile helper process did not answer")

    def forget(self) -> None:
        """In a forked child: the parent's helper is the parent's (this copy of its pipes closes, nothing else)."""
        self._lock = threading.Lock()
        proc, self.proc = self.proc, None
        if proc is not None:
            for f in (proc.stdin, proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
            proc.returncode = 0            # not this process's child: never waited for here
            _ORPHANS.append(proc)

    def close(self) -> None:
        """Stop the helper (at exit): stdin closed, terminated, reaped."""
        with self._lock:
            proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass


_HELPER = _Helper()
_ORPHANS: list[subprocess.Popen] = []     # a forked child's copies of the parent's helper


def on_disk(source: str, name: str, prefix: str) -> bool:
    """The cache folder holds numba's or the object cache's machine code for some signature of this kernel text."""
    return not cache_disabled() and _on_disk(cache_dir(), source, name, prefix)


def _on_disk(folder: Path, source: str, name: str, prefix: str) -> bool:
    """numba's cache or the object cache has some signature of this kernel text (then this process loads it)."""
    stem = f"{prefix}_{source_hash(source)}"
    try:
        return any(p.suffix in (".nbi", ".sgo") for p in (folder / "__pycache__").glob(f"{stem}.{name}*"))
    except OSError:
        return False


def _cached(jit: Any, sig: tuple) -> bool:
    """numba's disk cache holds this signature of ``jit`` (looked up, nothing loaded or compiled)."""
    cache = getattr(jit, "_cache", None)
    cf = getattr(cache, "_file", None) or getattr(cache, "_cache_file", None)
    try:
        if cf is None or not os.path.exists(cf._index_path):
            return False
        key = cache._index_key(sig, jit.targetctx.codegen())
        return key in cf._load_index()
    except Exception:  # noqa: BLE001 - a numba whose cache looks different: treat as a miss
        return False


def _guard_event(jit: Any) -> dict:
    events = getattr(getattr(jit, "_cache", None), "events", None)
    return events[-1] if events else {}


def _helper_usable() -> bool:
    return MODE != "thread" and os.name == "posix" and _HELPER.unavailable is None and not cache_disabled()


def warm_helper() -> None:
    """From the worker thread, for a new program whose kernel the cache does not hold: start the helper process (if
    it will compile that kernel and is not running), so that the program's hot call does not wait on its start."""
    if _helper_usable() and not _CLOSING:
        _HELPER.warm_up()


def remote_emission() -> bool:
    """Whether a kernel's numba source is best emitted in the helper process (which then compiles it): wherever there
    is one. Emitting here imports and runs the emitter in a thread of this process, which holds the GIL against the
    caller's calls (measured: W1's calls 2-3 at n=10^6 took 5-7x a first-tier call); the helper is started while the
    program's first call runs (``warm_helper``), so sending it the IR waits on no start-up."""
    return _helper_usable()


def build(source: str | None, name: str, prefix: str, desc: Sequence[tuple], ir: bytes | None = None,
          emit: Callable[[], str | None] | None = None) -> tuple[Any, Path, dict, str] | None:
    """From the worker thread: function ``name`` of the numba kernel ``source``, loaded (``load_kernel`` with
    ``prefix``) with its overload for ``desc`` ready to call, how it got there (``{"how": ..., "event":
    "compile" | "load" | "reuse", "stages": ...}``) and the source. A kernel numba's disk cache does not hold yet is
    compiled by the helper process first, so this process only loads machine code (through the object cache,
    without importing numba, where that serves it); in thread mode, or without a disk cache, it compiles here.

    Without ``source``, the helper emits it from ``ir`` (so this process runs no emitter: its calls keep the
    GIL); where it cannot, ``emit()`` emits here (None from it: the emitter refused, and so does ``build``).
    Raises ``Refused`` when the helper's emitter refuses the IR, and what the compile raises."""
    folder = None if cache_disabled() else cache_dir()
    reply = None
    while folder is not None and _helper_usable() and (source is not None or ir is not None):
        if source is not None and _on_disk(folder, source, name, prefix):
            break
        try:
            reply = _HELPER.compile(folder, source, name, prefix, desc, ir=ir if source is None else None)
        except OSError as exc:                       # no helper on this system: threads from now on
            _HELPER.unavailable = str(exc)
            log.debug("symgrad: no compile helper process (%s); compiling in a thread", exc)
            reply = None
            break
        if "refused" in reply:
            raise Refused(reply["refused"])
        if "retry" in reply:                         # the IR did not rebuild there: emit here, compile there
            log.debug("symgrad: %s: %s; emitting in this process", name, reply["retry"])
            reply, ir = None, None
            source = emit() if emit is not None else None
            if source is None:
                return None
            continue
        source = reply.get("source", source)
        for w in reply.get("warnings", ()):
            log.debug("numba (helper process): %s", w)
        break
    if source is None:
        source = emit() if emit is not None else None
        if source is None:
            return None
    t0 = time.perf_counter()
    jit, path = load_kernel(source, name, prefix=prefix)
    info = _ready(jit, desc)
    if reply is not None:
        how = "helper process" if info["event"] in ("load", "reuse") else "helper process, then this thread"
        info = {"how": how, "event": "compile", "stages": reply.get("stages", ""), "helper_s": reply["seconds"],
                "start_s": reply["start_s"], "load_s": time.perf_counter() - t0}
        if "emit_s" in reply:
            info["helper_emit_s"] = reply["emit_s"]
    return jit, path, info, source


def ready(jit: Any, desc: Sequence[tuple]) -> bool:
    """The loaded kernel ``jit`` runs the signature ``desc`` with no more work (linked, or compiled already)."""
    if getattr(type(jit), "ready", None) is not None:      # a ``codegen.numba_object.LightKernel``
        return jit.ready(desc)
    overloads = getattr(jit, "overloads", None)
    try:
        return overloads is not None and numba_signature(desc) in overloads
    except Exception:  # noqa: BLE001 - types numba cannot build: not ready
        return False


def _ready(jit: Any, desc: Sequence[tuple]) -> dict:
    """Give the kernel ``jit`` its overload for ``desc``: from the object cache, already compiled, numba's disk
    cache, or compiled in this thread."""
    if getattr(type(jit), "cached", None) is not None:     # a ``codegen.numba_object.LightKernel``
        if jit.cached(desc):                       # its object cache runs this signature without numba
            return {"how": "object cache", "event": "load", "stages": ""}
        jit = jit.dispatcher                       # numba's dispatcher behind it takes the signature
    sig = numba_signature(desc)
    if sig in jit.overloads:                       # a kernel of the same text, already compiled in this process
        return {"how": "already loaded", "event": "reuse", "stages": ""}
    how = "disk cache" if _cached(jit, sig) else "thread"
    jit.compile(sig)
    ev = _guard_event(jit)
    return {"how": how, "event": ev.get("event", "compile"), "stages": ev.get("stages", "")}


# ---------------------------------------------------------------------- the worker thread

_COND = threading.Condition()
_QUEUE: collections.deque[Callable[[], None]] = collections.deque()
_PENDING = 0
_CLOSING = False
_WORKER: threading.Thread | None = None
#: bumped in a forked child, where jobs queued before the fork (the parent's) never finish
GENERATION = 0


def _after_fork_in_child() -> None:
    global _COND, _QUEUE, _PENDING, _WORKER, GENERATION
    _COND = threading.Condition()
    _QUEUE = collections.deque()
    _PENDING = 0
    _WORKER = None
    GENERATION += 1
    _HELPER.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def submit(task: Callable[[], None]) -> bool:
    """Run ``task`` on the worker thread (started on first use); False when the interpreter is exiting."""
    global _WORKER, _PENDING
    with _COND:
        if _CLOSING:
            return False
        if _WORKER is None or not _WORKER.is_alive():
            _WORKER = threading.Thread(target=_work, name="symgrad-compile", daemon=True)
            _WORKER.start()
            atexit.unregister(_shutdown)
            atexit.register(_shutdown)
        _QUEUE.append(task)
        _PENDING += 1
        _COND.notify_all()
    _stats.count("background_pending")
    return True


def closing() -> bool:
    """The interpreter is exiting: background work is being dropped."""
    return _CLOSING


def pending() -> int:
    """Background jobs queued or running."""
    return _PENDING


def wait(timeout: float | None = None) -> bool:
    """Block until every background compile submitted so far has finished (True), or ``timeout`` seconds passed."""
    end = None if timeout is None else time.monotonic() + timeout
    with _COND:
        while _PENDING:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            _COND.wait(left)
    return True


def _work() -> None:
    global _PENDING
    moved = False
    while True:
        with _COND:
            while not _QUEUE and not _CLOSING:
                _COND.wait()
            if _CLOSING:
                return
            task = _QUEUE.popleft()
        try:
            task()
        except BaseException as exc:  # noqa: BLE001 - tasks report their own failures; never lose the worker
            log.debug("symgrad: background task failed: %r", exc)
        finally:
            _stats.count("background_pending", -1)
            with _COND:
                _PENDING -= 1
                _COND.notify_all()
        if not moved and "numba" in sys.modules:
            # exit handlers run last-registered first: ours before numba's and llvmlite's, now they are imported
            moved = True
            atexit.unregister(_shutdown)
            atexit.register(_shutdown)


def _shutdown() -> None:
    """At exit: drop queued jobs, stop the helper process, give the worker a moment to finish."""
    global _CLOSING, _PENDING
    with _COND:
        _CLOSING = True
        _PENDING -= len(_QUEUE)
        _stats.count("background_pending", -len(_QUEUE))
        _QUEUE.clear()
        _COND.notify_all()
    _HELPER.close()
    worker = _WORKER
    if worker is not None and worker is not threading.current_thread():
        worker.join(EXIT_JOIN_S)
