"""The one kernel pipeline: a derived graph -> simplified -> lowered -> generated numpy code (the first tier) ->
the fused numba kernel of the same IR once the program is hot.

Eager ``backward()`` (one program per graph structure), ``@sg.compile`` (one per signature) and the derivative
transforms (one per sweep batch) all build a ``Program``; they differ only in how they call it.

Tiers: a hot program asks ``kernel_for(args)`` for its numba kernel. In the default background mode
(``kernels.background``) the first hot call queues the compile and runs the numpy kernel, as do later calls
until the numba kernel is ready; then ``kernel_for`` returns it (one attribute read: the switch is atomic).
``SYMGRAD_COMPILE=sync`` compiles on the hot call itself. A failed background compile leaves the numpy kernel
with one warning; IR the numba emitter refuses keeps the numpy kernel quietly (the reason in the debug log).
"""
from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from codegen import emit_numpy, emitted, load_kernel, runtime

from ..core.graph import Node, toposort
from ..derive.simplify import simplify_graph
from ..ops import source as _src
from . import background, llvm_tier, memory
from . import stats as _stats
from .loops import share_histories
from .lower import lower

log = logging.getLogger("symgrad")

#: "numba" (the fused kernels once hot) or "numpy" (the generated numpy code only); ``SYMGRAD_BACKEND``
BACKEND = os.environ.get("SYMGRAD_BACKEND", "numba")
#: calls of a compiled signature before its numba kernel takes over
HOT_CALLS = 2
#: backward() calls over one eager graph structure before it moves to a numba kernel (0: never)
EAGER_JIT_AFTER = int(os.environ.get("SYMGRAD_EAGER_JIT_AFTER", "50")) or 1 << 62


def set_backend(name: str) -> None:
    """Choose what runs hot programs: ``"numba"`` (default) or ``"numpy"`` (the generated numpy code only)."""
    global BACKEND
    if name not in ("numba", "numpy"):
        raise ValueError(f"backend must be 'numba' or 'numpy', not {name!r}")
    BACKEND = name


def get_backend() -> str:
    return BACKEND


class _Tier:
    """One numba kernel of a program: the plain one (``out_params`` empty), or the variant writing those outputs
    into extra arguments (``out=``). ``live`` is the dispatcher once it is compiled and may be called."""

    __slots__ = ("out_params", "jit", "path", "source", "error", "live", "state", "failure", "switched", "gen", "ir",
                 "key", "prefetch_s")

    def __init__(self, out_params: tuple[int, ...]) -> None:
        self.out_params = out_params
        self.jit: Any = None             # the dispatcher once emitted (maybe not compiled yet)
        self.path: Path | None = None
        self.source = ""
        self.error: str | None = None    # why the numba emitter refused the IR
        self.live: Any = None            # the dispatcher, compiled: calls may use it
        self.state: str | None = None    # None, "pending", "refused", "failed", "ready"
        self.failure: str | None = None  # a failed compile's error, until it is warned about
        self.switched = False            # the tier switch has been counted and logged
        self.gen = 0                     # background.GENERATION when its compile was queued
        self.ir: bytes | None = None     # the IR as ``codegen.emitted.ir_blob`` (what the helper emits from)
        self.key: str | None = None      # its emitted source's key (``codegen.emitted``); None: not remembered
        self.prefetch_s = 0.0            # seconds the worker spent loading it before the hot call


class Program:
    """Generated code computing ``outs`` from the parameter nodes ``params``.

    ``params`` are ``(node, group, index)`` triples: the kernel reads ``arrays[group][index]``. With
    ``const_group``, the constant nodes the outputs read become further parameters of that group (their values
    in ``consts``), so the kernel text carries no data. ``fn`` is the numpy kernel (it takes one list per group);
    ``kernel_for(args)`` the numba kernel of the same IR once compiled (``None`` before, or if numba refuses the
    IR: the numpy kernel then stays in use, and ``numba_error`` says why).

    ``what`` / ``signature`` / ``reason`` / ``times`` (seconds the caller spent tracing and deriving) only feed the
    compile log (``SYMGRAD_LOG=compiles``) and ``sg.jit_stats()``.
    """

    def __init__(self, name: str, params: Sequence[tuple[Node, str, int]], outs: Sequence[Node], *, doc: str,
                 prefix: str, groups: tuple[str, ...] = ("v",), const_group: str | None = "v",
                 simplify: bool = True, hot_after: int | None = None, what: str | None = None,
                 signature: str = "", reason: str = "", times: dict[str, float] | None = None,
                 torch_order: bool = False) -> None:
        t0 = time.perf_counter()
        outs = simplify_graph(list(outs)) if simplify else list(outs)
        outs = share_histories(outs)
        params = list(params)
        self.consts: list[np.ndarray] = []
        if const_group is not None:
            pids = {p.id for p, _, _ in params}
            start = sum(1 for _, g, _ in params if g == const_group)
            consts = [n for n in toposort(outs, stop=lambda n: n.id in pids) if n.op is _src.const]
            params += [(c, const_group, start + k) for k, c in enumerate(consts)]
            self.consts = [np.asarray(c.value) for c in consts]
        self.outs = outs
        self.kernel, self.reads = lower(name, params, outs, doc=doc, groups=groups)
        t1 = time.perf_counter()
        self.source = emit_numpy(self.kernel, torch_order=torch_order)  # eager: torch's summation order
        self.fn, self.path = load_kernel(self.source, self.kernel.name, prefix=prefix)
        t2 = time.perf_counter()
        self.specs = [(o.dtype, o.shape) for o in outs]
        memory.keep_pages(self.specs)       # the later calls' outputs: no page faults
        self.hot_after = HOT_CALLS if hot_after is None else hot_after
        if torch_order and runtime.rounds_otherwise_in_numba(self.kernel):
            self.hot_after = 1 << 62  # eager numbers follow torch's: the numba kernel would round otherwise
        llvm_tier.early(self, HOT_CALLS)  # a loop the LLVM backend takes: compiled on the first call
        self.calls = 0
        self.jit: Callable | None = None
        self.jit_source = ""
        self.numba_error: str | None = None
        self.what = what or self.kernel.name
        self.signature = signature
        self._tiers: dict[tuple[int, ...], _Tier] = {}
        self._lock = threading.Lock()
        self.build_s = t2 - t0
        self.times = {**(times or {}), "lower": t1 - t0, "emit": t2 - t1}
        _stats.count("programs")
        _stats.add_time("lower", t1 - t0)
        _stats.add_time("emit", t2 - t1)
        _stats.log_line(f"compile {self.label} [{reason or 'new program'}]: {_stats.fmt_times(self.times)}")
        if BACKEND == "numba" and self.hot_after <= HOT_CALLS and not background.is_sync():
            background.submit(self._prefetch)

    def _prefetch(self) -> None:
        """The worker's job for a new program that gets hot after a call or two: a numba kernel an earlier process
        emitted and compiled (its source remembered, its machine code on disk) is loaded and its cached
        signatures linked now, while the first call runs, so the hot call finds it ready and runs it."""
        tier = self._tier(())
        if tier.state is not None or tier.jit is not None:
            return
        src = self._remembered(tier)
        if src is None or not background.on_disk(src, self.kernel.name, "numba"):
            background.warm_helper()       # the hot call will queue a compile: its helper starts meanwhile
            return
        t0 = time.perf_counter()
        jit, path = load_kernel(src, self.kernel.name, prefix="numba")
        if getattr(type(jit), "link_cached", None) is not None:
            jit.link_cached()
        with self._lock:
            if tier.jit is None and tier.state is None:
                tier.prefetch_s = time.perf_counter() - t0
                self._loaded(tier, src, jit, path)

    @property
    def label(self) -> str:
        return f"{self.what} {self.signature}".strip()

    # ------------------------------------------------------------------ tiers
    def hot(self) -> bool:
        """Count a call; whether it should run the numba kernel (hot, and the numba backend chosen)."""
        self.calls += 1
        return self.calls >= self.hot_after and BACKEND == "numba"

    def _tier(self, out_params: tuple[int, ...]) -> _Tier:
        tier = self._tiers.get(out_params)
        if tier is None:
            with self._lock:
                tier = self._tiers.setdefault(out_params, _Tier(out_params))
        return tier

    def numba(self, out_params: Sequence[int] = ()) -> Callable | None:
        """The numba kernel (emitted and loaded on first use; numba compiles it on its first call); None where the
        numba emitter refuses this IR. ``out_params``: the variant writing those outputs into extra arguments."""
        tier = self._tier(tuple(out_params))
        if tier.jit is None and tier.error is None:
            self._emit(tier)
            if not tier.out_params and tier.jit is not None:
                self.jit = tier.jit
        return tier.jit

    def _emit(self, tier: _Tier) -> None:
        """Emit and load the tier's numba kernel (sync mode: the caller's thread)."""
        t0 = time.perf_counter()
        src = self._remembered(tier) or self._emit_source(tier)
        if src is None:
            return
        jit, path = load_kernel(src, self.kernel.name, prefix="numba")
        _stats.add_time("emit", time.perf_counter() - t0)
        self._loaded(tier, src, jit, path)

    def _remembered(self, tier: _Tier) -> str | None:
        """The tier's numba source as an earlier process emitted it (``codegen.emitted``), or None; computes the
        tier's IR blob and key (None where the IR refers to code the key cannot cover)."""
        if tier.key is None:
            try:
                tier.ir = emitted.ir_blob(self.kernel, tier.out_params)
            except Exception as exc:  # noqa: BLE001 - unpicklable or untrusted IR: emitted here, not remembered
                log.debug("numba source of %s not remembered (%s)", self.kernel.name, exc)
                return None
            tier.key = emitted.source_key(tier.ir)
        return emitted.lookup(tier.key)

    def _emit_source(self, tier: _Tier) -> str | None:
        """The tier's numba source (emitted here); None (and the reason kept) where the numba emitter refuses the
        IR."""
        from codegen.numba import emit_numba  # deferred: the numba emitter only once a program is hot
        try:
            src = emit_numba(self.kernel, out_params=tier.out_params) if tier.out_params else emit_numba(self.kernel)
        except Exception as exc:  # noqa: BLE001 - the numpy kernel stays in use, loudly in the log
            self._refused(tier, str(exc))
            return None
        if tier.key is not None:
            emitted.remember(tier.key, src)
        return src

    def _refused(self, tier: _Tier, why: str) -> None:
        tier.error = why
        tier.state = "refused"
        if not tier.out_params:
            self.numba_error = tier.error
            self.jit_source = f"# numba backend unavailable: {why}"
        _stats.count("numba_refused")
        log.debug("numba kernel for %s not available (%s); the numpy kernel stays in use", self.kernel.name, why)
        _stats.log_line(f"numba refuses {self.label}: the numpy kernel stays ({why.splitlines()[0] if why else ''})")

    def _loaded(self, tier: _Tier, src: str, jit: Any, path: Path) -> None:
        tier.jit, tier.path, tier.source = jit, path, src
        if not tier.out_params:
            self.jit_source = src
        log.debug("numba kernel %s after %d calls: %s", self.kernel.name, self.calls, path)

    def kernel_for(self, args: Sequence[Any], out_params: Sequence[int] = ()) -> Callable | None:
        """The numba kernel to run this call's (kernel-order) arguments with, or None: the numpy kernel runs it.

        Sync mode compiles the kernel now; background mode queues its compile on the first hot call and returns
        None until it is ready. Call it only when ``hot()``. A kernel that is ready takes every later call (a new
        argument layout is then numba's to compile on the call, as a dispatcher does)."""
        tier = self._tiers.get(tuple(out_params)) or self._tier(tuple(out_params))
        live = tier.live
        if live is not None:
            if not tier.switched:
                self._switched(tier)
            return live
        state = tier.state
        if state == "pending" and tier.gen != background.GENERATION:
            state = tier.state = None      # queued before this process was forked: the parent's job
        if state is None:
            took = llvm_tier.take(self, tier)  # small-state loops: llvmlite compiles them in milliseconds, here
            if took or took is None:           # None: an early try refused; numba's tier starts when hot as before
                return tier.live
            return self._compile_now(tier, args) if background.is_sync() else self._queue(tier, args)
        if state == "failed" and tier.failure is not None:
            msg, tier.failure = tier.failure, None
            warnings.warn(f"symgrad: the numba kernel of {self.label} failed to compile ({msg}); its numpy kernel "
                          "stays in use", RuntimeWarning, stacklevel=3)
        return None

    def compiled(self, out_params: Sequence[int] = ()) -> Callable | None:
        """The numba kernel (or its ``out_params`` variant) once compiled and in use; None before."""
        tier = self._tiers.get(tuple(out_params))
        return None if tier is None else tier.live

    def _switched(self, tier: _Tier) -> None:
        tier.switched = True
        _stats.count("tier_switches")
        variant = " (out= variant)" if tier.out_params else ""
        _stats.log_line(f"tier switch {self.label}{variant}: numpy -> numba kernel after {self.calls} calls")

    def _compile_now(self, tier: _Tier, args: Sequence[Any]) -> Callable | None:
        """Sync mode: emit and compile on this call (numba's errors raise here, as from the kernel's first call)."""
        jit = self.numba(tier.out_params)
        if jit is None:
            return None
        sig = tuple(jit.typeof_pyval(a) for a in args)
        before = _events(jit)
        with _stats.compiling(self.label):
            t0 = time.perf_counter()
            jit.compile(sig)
            dt = time.perf_counter() - t0
        events = _events(jit)
        info = dict(events[-1]) if len(events) > len(before) else {"event": "reuse"}
        self._compiled(tier, {**info, "how": "sync"}, dt, f"hot: {self.calls} calls")
        tier.state = "ready"
        tier.live = jit
        self._switched(tier)
        return jit

    def _compiled(self, tier: _Tier, info: dict, dt: float, reason: str) -> None:
        _stats.add_time("numba", dt)
        hit = info.get("event") in ("load", "reuse")
        _stats.count("cache_hits" if hit else "numba_compiles")
        what = {"load": "loaded from numba's disk cache", "reuse": "already compiled (same kernel text)"}.get(
            info.get("event", ""), "compiled")
        stages = f" [{info['stages']}]" if info.get("stages") and not hit else ""
        variant = " (out= variant)" if tier.out_params else ""
        if "helper_s" in info:             # compiled by the helper process, then loaded here
            start = f"helper start {1e3 * info['start_s']:.1f} ms, " if info.get("start_s") else ""
            if "helper_emit_s" in info:
                start = f"emitted there in {1e3 * info['helper_emit_s']:.1f} ms, " + start
            timing = (f"{what} in {1e3 * info['helper_s']:.1f} ms{stages}; {start}load {1e3 * info['load_s']:.1f} "
                      f"ms, {1e3 * dt:.1f} ms in all")
        else:
            timing = f"{what} in {1e3 * dt:.1f} ms{stages}"
        _stats.log_line(f"numba {self.label}{variant} [{reason}; {info.get('how', 'sync')}]: {timing}")

    def _queue(self, tier: _Tier, args: Sequence[Any]) -> Callable | None:
        desc = background.describe(args)
        with self._lock:
            if tier.state is not None:
                return None
            if desc is not None and tier.jit is not None and background.ready(tier.jit, desc):
                tier.state = "ready"       # prefetched and linked: this call runs it
                if not tier.out_params:
                    self.jit = tier.jit
                tier.live = tier.jit
        if tier.live is not None:
            self._compiled(tier, {"how": "prefetched", "event": "load"}, tier.prefetch_s, f"hot: {self.calls} calls")
            self._switched(tier)
            return tier.live
        with self._lock:
            if tier.state is not None:
                return None
            if desc is None:               # an argument numba's types can't be read off cheaply: compile here
                tier.state = None
            else:
                tier.state = "pending"
                tier.gen = background.GENERATION
        if desc is None:
            return self._compile_now(tier, args)
        reason = f"hot: {self.calls} calls"
        if not background.submit(lambda: self._compile_background(tier, desc, reason)):
            tier.state = "failed"          # the interpreter is exiting: no compile, no warning
        return None

    def _compile_background(self, tier: _Tier, desc: tuple, reason: str) -> None:
        """The worker thread's job: emit, compile (helper process or this thread), load, publish."""
        with _stats.compiling(f"{self.label} (background)"):
            try:
                t0 = time.perf_counter()
                src = tier.source or (None if tier.error is not None else self._remembered(tier))
                remote = src is None and tier.ir is not None and background.remote_emission()
                if src is None and tier.error is None and not remote:
                    src = self._emit_source(tier)            # emitted here: no helper, or a warm cache folder
                if src is None and tier.error is not None:
                    tier.state = "refused"
                    return
                t1 = time.perf_counter()
                _stats.add_time("emit", t1 - t0)
                try:
                    built = background.build(src, self.kernel.name, "numba", desc, ir=tier.ir if remote else None,
                                             emit=lambda: self._emit_source(tier))
                    if built is None:                        # emitted here after all, and refused
                        tier.state = "refused"
                        return
                    jit, path, info, src = built
                    if tier.key is not None and "helper_emit_s" in info:
                        emitted.remember(tier.key, src)
                except background.Refused as exc:
                    self._refused(tier, str(exc))
                    return
                except Exception as exc:  # noqa: BLE001 - any compile error: the numpy tier stays, one warning
                    tier.state = "failed"
                    if background.closing():
                        return
                    text = str(exc).strip()
                    msg = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
                    tier.failure = msg
                    _stats.count("background_failed")
                    log.debug("background numba compile of %s failed: %s", self.kernel.name, exc)
                    _stats.log_line(f"numba {self.label} [{reason}; background]: failed ({msg}); the numpy kernel "
                                    "stays")
                    return
                self._loaded(tier, src, jit, path)
                self._compiled(tier, info, time.perf_counter() - t1, reason + "; background")
                _stats.count("background_done")
                tier.state = "ready"
                if not tier.out_params:
                    self.jit = jit
                tier.live = jit                # the switch: the next call reads it
            except BaseException:
                if tier.state == "pending":
                    tier.state = "failed"
                raise

    def args(self, groups: dict[str, Sequence[Any]]) -> list[Any]:
        """The numba kernel's positional arguments, picked from the per-group lists."""
        return [groups[q.group][q.index] for q in self.kernel.params]

    def run(self, groups: dict[str, Sequence[Any]]) -> Any:
        """One call: the numpy kernel at first, the numba kernel once hot and compiled (raw kernel results)."""
        if self.hot():
            args = self.args(groups)
            jit = self.kernel_for(args)
            if jit is not None:
                return jit(*args)
        return self.fn(*(groups[g] for g in self.kernel.groups))


def _events(jit: Any) -> list[dict]:
    """The numba cache guard's records of the dispatcher's compiles and loads (``event``, ``stages``)."""
    return list(getattr(getattr(jit, "_cache", None), "events", None) or ())
