"""A parallel kernel run on all of numba's threads or on the calling thread alone, whichever has been faster lately.

On a machine whose cores other processes keep busy, a ``prange`` kernel waits for the thread the scheduler put
aside: on the 2-core development machine at load 7, W1 at 10**6 took 22 ms a call (median) on two threads and
0.9 ms on one, where an idle machine gives 0.12 ms on two and 0.24 ms on one. ``Adaptive(fn, controls)`` wraps
such a kernel: it times every call, runs the setting whose last ``WINDOW`` calls have the lower median, one
thread only when ``MARGIN`` times faster (switching as soon as the chosen one's median passes the other's, or
``MARGIN`` times one thread's; the other's samples then start afresh), and now and then (after ``FIRST``
calls, then at doubling intervals up to ``MAX_EVERY`` while the choice holds) runs the other one to see
whether the machine changed. The first all-thread call after one-thread calls wakes the sleeping workers and
is not timed (a look at all threads times the call after it). One thread is ``set_num_threads(1)`` around the
call (numba's setting is per calling thread, restored after, also on an exception).

The numba emitter's kernels give the same result on any number of threads (float sums add their
chunk partials in chunk order, ``render``), so the choice changes no value. ``SYMGRAD_ADAPTIVE_THREADS=0``
keeps every call on all threads. This module imports neither numba nor symgrad.
"""
from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable
from typing import Any

#: Calls per setting whose median decides.
WINDOW = 5
#: The first look at the other setting is after this many calls; the interval doubles while the
#: choice holds, up to ``MAX_EVERY`` calls, and starts again at ``FIRST`` when it changes.
FIRST = 4
MAX_EVERY = 64
#: How much faster (median) one thread must be to be chosen over all; all threads are chosen back as soon
#: as they are faster. A virtual machine's call times spread widely at no load (W1 at 10**6 on the 2-core
#: development machine: 0.12-1.4 ms on two threads, median 0.2, against 0.4 on one), so a median of a few
#: all-thread calls often passes one-thread calls' for a moment, and so do the first calls after a pause (the
#: workers wake up: 0.3-0.7 ms for W1's first three); a busy machine's difference is 10-25x.
MARGIN = 3.0
#: After the first look at one thread, a look while all threads are chosen happens only when their median has
#: passed this many times the fastest all-thread call seen (a look costs a one-thread call and wakes the
#: workers again: W1's next calls 1.5-3x slower for a few calls; an idle virtual machine's medians pass 1.5x
#: the fastest call often, and 3x in the first calls after a pause, while a busy machine's are 10-25x it).
SUSPECT = 5.0

Controls = tuple[Callable[[], int], Callable[[int], None]]


def enabled() -> bool:
    """Whether parallel kernels may run on one thread (``SYMGRAD_ADAPTIVE_THREADS``, default on)."""
    return os.environ.get("SYMGRAD_ADAPTIVE_THREADS", "1").strip() not in ("0", "false", "no", "off")


def controls() -> Controls | None:
    """(get_num_threads, set_num_threads) of the threading layer parallel kernels run on, once started:
    numba's, or the one ``codegen.numba_object`` started without numba; None when none is started."""
    par = sys.modules.get("numba.np.ufunc.parallel")
    if par is not None and getattr(par, "_is_initialized", False):
        return par._get_num_threads, par._set_num_threads
    obj = sys.modules.get("codegen.numba_object")
    runtime = getattr(obj, "_RUNTIME", None) if obj is not None else None
    if runtime is not None and getattr(runtime, "threads", None):
        ll = runtime.ll         # the layer's functions, registered with llvmlite when it started them
        get, put = ll.address_of_symbol("get_num_threads"), ll.address_of_symbol("set_num_threads")
        if get and put:
            return ctypes.CFUNCTYPE(ctypes.c_int)(get), ctypes.CFUNCTYPE(None, ctypes.c_int)(put)
    return None


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class Adaptive:
    """``fn`` (a parallel kernel) called on all threads or on one, by the recent timings (module docstring)."""

    __slots__ = ("fn", "get", "put", "clock", "samples", "choice", "calls", "every", "next", "last", "pending",
                 "best", "looked", "limit", "below")

    def __init__(self, fn: Callable[..., Any], controls: Controls,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.fn = fn
        self.get, self.put = controls
        self.clock = clock
        self.samples: tuple[list[float], list[float]] = ([], [])   # seconds: all threads, one thread
        self.choice = 0                                             # 0: all threads, 1: one
        self.calls = 0
        self.every = FIRST
        self.next = FIRST
        self.last = 0           # the setting of the previous call
        self.pending = False    # a look at all threads goes on for one more call
        self.best = float("inf")  # the fastest all-thread call seen
        self.looked = False     # a look at one thread has been taken
        # the median the chosen setting's must not pass (None: to compute from the other's samples), and whether
        # it was below at the last check: a call no slower than the limit then keeps it below (of the window's
        # samples, the ones under the limit stay a majority), so most calls sort no samples
        self.limit: float | None = None
        self.below = False

    def __call__(self, *args: Any) -> Any:
        full = self.get()
        if full <= 1:
            return self.fn(*args)
        self.calls += 1
        if self.pending:
            look, k, self.pending = True, 0, False
        else:
            look = self.calls >= self.next
            if look and self.choice == 0 and self.looked and not self._suspect():
                look = False    # all-thread calls as fast as they have been: the machine did not change
                self._hold()
            k = 1 - self.choice if look else self.choice
        t0 = self.clock()
        if k:
            self.put(1)
            try:
                r = self.fn(*args)
            finally:
                self.put(full)
        else:
            r = self.fn(*args)
        dt = self.clock() - t0
        cold, self.last = k == 0 and self.last == 1, k
        if cold:                # the other threads slept through one-thread calls: this one woke them, its time
            if look:            # says little; a look at all threads times the next call instead
                self.pending = True
            return r
        s = self.samples[k]
        s.append(dt)
        if len(s) > WINDOW:
            del s[0]
        if k == 0 and dt < self.best:
            self.best = dt
        if look:
            self.looked = self.looked or k == 1
            self.limit = None
            self._decide()
            return r
        limit = self.limit
        if limit is None:
            other = self.samples[1 - k]
            limit = self.limit = (MARGIN if k == 0 else 1.0) * _median(other) if other else float("inf")
            self.below = False
        if dt > limit or not self.below:
            if _median(s) > limit:
                # the chosen setting got slower than the other was: switch now, and time the other afresh (its
                # samples may be from a luckier moment)
                self.samples[1 - k].clear()
                self._switch(1 - k)
            else:
                self.below = True
        return r

    def _decide(self) -> None:
        a, b = self.samples
        best = self.choice
        if a and b:
            ma, mb = _median(a), _median(b)
            if best == 0 and ma > MARGIN * mb:
                best = 1
            elif best == 1 and mb > ma:
                best = 0
        if best != self.choice:
            self._switch(best)
        else:
            self._hold()

    def _suspect(self) -> bool:
        """All-thread calls have got slower than the fastest seen by ``SUSPECT``: worth a look at one thread."""
        a = self.samples[0]
        return not a or _median(a) > SUSPECT * self.best

    def _hold(self) -> None:
        self.every = min(2 * self.every, MAX_EVERY)
        self.next = self.calls + self.every

    def _switch(self, k: int) -> None:
        self.choice, self.every, self.limit = k, FIRST, None
        self.next = self.calls + FIRST

    @property
    def threads(self) -> str:
        """``"all"`` or ``"one"``: the setting calls run on now (diagnostics)."""
        return "one" if self.choice else "all"


def adaptive(fn: Callable[..., Any], source: str) -> Callable[..., Any] | None:
    """``fn`` wrapped in ``Adaptive`` when its kernel ``source`` has a ``prange`` loop and adaptivity is on;
    else ``fn`` itself; None while no threading layer is started (before the kernel's first call: ask again)."""
    if "numba.prange" not in source or not enabled():
        return fn
    c = controls()
    return None if c is None else Adaptive(fn, c)
