"""Compile visibility: the counters and stage times behind ``sg.jit_stats()``, the ``SYMGRAD_LOG=compiles`` lines
and the status line on stderr while a compile runs longer than about a second.

Stages: ``trace`` (running the user's function on tracers), ``derive`` (symbolic differentiation), ``lower``
(simplify and lower to codegen's IR), ``emit`` (printing and loading the numpy or numba source), ``numba``
(numba's compile, or its load from the disk cache). Everything here is thread-safe: background compiles report
from their worker thread.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

STAGES = ("trace", "derive", "lower", "emit", "numba", "llvm")

_LOCK = threading.Lock()
_COUNTS = dict.fromkeys(("traces", "programs", "numba_compiles", "cache_hits", "numba_refused", "background_pending",
                         "background_done", "background_failed", "tier_switches", "llvm_compiles",
                         "llvm_refused"), 0)
_SECONDS = dict.fromkeys(STAGES, 0.0)

#: print one line per compile on stderr (``SYMGRAD_LOG=compiles``, or ``set_log_compiles``)
LOG_COMPILES = "compiles" in {w.strip() for w in os.environ.get("SYMGRAD_LOG", "").lower().split(",")}
#: seconds a compile runs before the status line shows (terminal or notebook only); None: never
STATUS_AFTER: float | None = 1.0


@dataclass(frozen=True)
class JitStats:
    """What this process compiled so far (``sg.jit_stats()``).

    ``traces``: functions traced; ``programs``: kernel programs built (lowered, numpy kernel emitted);
    ``numba_compiles``: numba kernels compiled (here or by the background helper); ``cache_hits``: numba kernels
    loaded from the disk cache instead; ``numba_refused``: programs whose IR the numba emitter does not take (their
    numpy kernel stays); ``background_*``: background compiles waiting or running, finished, failed;
    ``tier_switches``: programs that moved from the numpy kernel to the numba (or LLVM) one; ``llvm_compiles`` /
    ``llvm_refused``: hot programs the LLVM backend compiled / did not take (``kernels.llvm_tier``); ``seconds``:
    total per stage (trace, derive, lower, emit, numba, llvm).
    """

    traces: int = 0
    programs: int = 0
    numba_compiles: int = 0
    cache_hits: int = 0
    numba_refused: int = 0
    background_pending: int = 0
    background_done: int = 0
    background_failed: int = 0
    tier_switches: int = 0
    llvm_compiles: int = 0
    llvm_refused: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    def as_dict(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in _COUNTS}, "seconds": dict(self.seconds)}


def jit_stats() -> JitStats:
    """Counts and total seconds per stage of everything this process compiled (traces, programs, numba compiles,
    disk-cache hits, background compiles pending / done / failed, tier switches)."""
    with _LOCK:
        return JitStats(**_COUNTS, seconds=dict(_SECONDS))


def reset() -> None:
    """Zero the counters (pending background compiles stay counted as pending)."""
    with _LOCK:
        pending = _COUNTS["background_pending"]
        for k in _COUNTS:
            _COUNTS[k] = 0
        _COUNTS["background_pending"] = pending
        for k in _SECONDS:
            _SECONDS[k] = 0.0


def count(name: str, n: int = 1) -> None:
    with _LOCK:
        _COUNTS[name] += n


def add_time(stage: str, seconds: float) -> None:
    with _LOCK:
        _SECONDS[stage] += seconds


def set_log_compiles(on: bool = True) -> None:
    """Print one line per compile on stderr (what ``SYMGRAD_LOG=compiles`` does)."""
    global LOG_COMPILES
    LOG_COMPILES = bool(on)


def fmt_times(times: dict[str, float]) -> str:
    """``trace 1.2 ms, derive 0.4 ms`` for the stages present, in pipeline order."""
    return ", ".join(f"{s} {1e3 * times[s]:.1f} ms" for s in STAGES if s in times)


def log_line(text: str) -> None:
    """One ``SYMGRAD_LOG=compiles`` line on stderr (nothing unless compile logging is on)."""
    if LOG_COMPILES:
        _STATUS.clear()
        try:
            print(f"symgrad: {text}", file=sys.stderr, flush=True)
        except (OSError, ValueError):      # stderr closed (interpreter shutting down)
            pass


# ---------------------------------------------------------------------- status line

def _interactive(stream: TextIO) -> bool:
    """stderr is a terminal, or this runs in a Jupyter kernel."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    return "ipykernel" in sys.modules and type(stream).__module__.startswith("ipykernel")


class _Status:
    """``symgrad: compiling <what> ... 1.3 s`` on stderr, rewritten in place, while any compile has run longer
    than ``STATUS_AFTER``; erased when none has. A daemon ticker thread runs only while compiles do."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, tuple[str, float]] = {}
        self._next = 0
        self._shown = 0            # length of the line on screen (0: none)
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, what: str) -> int:
        with self._lock:
            token = self._next
            self._next += 1
            self._running[token] = (what, time.perf_counter())
            if STATUS_AFTER is not None and self._thread is None and _interactive(sys.stderr):
                self._thread = threading.Thread(target=self._tick, name="symgrad-status", daemon=True)
                self._thread.start()
        return token

    def end(self, token: int) -> None:
        with self._lock:
            self._running.pop(token, None)
        self._wake.set()

    def clear(self) -> None:
        with self._lock:
            self._erase()

    def _erase(self) -> None:
        if self._shown:
            self._write("\r" + " " * self._shown + "\r")
            self._shown = 0

    def _write(self, text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def _tick(self) -> None:
        while True:
            self._wake.wait(0.2)
            self._wake.clear()
            with self._lock:
                if not self._running:
                    self._erase()
                    self._thread = None
                    return
                now = time.perf_counter()
                what, t0 = min(self._running.values(), key=lambda r: r[1])
                if STATUS_AFTER is None or now - t0 < STATUS_AFTER:
                    continue
                more = f" (+{len(self._running) - 1} more)" if len(self._running) > 1 else ""
                line = f"symgrad: compiling {what}{more} ... {now - t0:.1f} s"
                self._write("\r" + line.ljust(self._shown))
                self._shown = max(self._shown, len(line))


_STATUS = _Status()


def _after_fork_in_child() -> None:
    """A forked child starts with fresh locks (another thread may have held them) and no background work."""
    global _LOCK, _STATUS
    _LOCK = threading.Lock()
    _COUNTS["background_pending"] = 0
    _STATUS = _Status()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class compiling:
    """``with compiling(what):`` the status line covers this block once it runs longer than ``STATUS_AFTER``."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> compiling:
        self._token = _STATUS.start(self.what)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STATUS.end(self._token)
