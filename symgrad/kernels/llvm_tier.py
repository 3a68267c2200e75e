"""The LLVM tier: a hot program whose IR ``codegen.llvm`` takes (small-state loops and the scalar code around them)
is compiled by llvmlite in milliseconds, synchronously, where its numba compile would start; the numba kernel is
then never built. IR outside that class (``ir.Unsupported``) keeps the numba path. ``SYMGRAD_LLVM=0`` (or
``set_enabled(False)``) turns the tier off.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any

from codegen import ir

from . import stats as _stats

log = logging.getLogger("symgrad")

#: whether hot programs try the LLVM backend first (``SYMGRAD_LLVM``, default on)
ENABLED = os.environ.get("SYMGRAD_LLVM", "1").strip().lower() not in ("0", "false", "no", "off")


def set_enabled(on: bool) -> None:
    """Turn the LLVM tier on or off for programs that become hot from now on."""
    global ENABLED
    ENABLED = bool(on)


#: loop steps (all loops of a program, nested ones multiplied) from which the LLVM compile happens on the first call:
#: the numpy tier runs a Python loop over the steps, about 2.5 us per step and statement of the step (Lorenz RK4's
#: gradient: 0.25 ms per step), and the compile costs about 0.4 ms per statement, so from about 160 steps the first
#: call is faster compiled; shorter loops run the numpy kernel first and compile at ``HOT_CALLS``
EARLY_STEPS = 128


def steps(kernel: ir.Kernel) -> int:
    """The steps ``kernel``'s loops run (a while loop counts as ``EARLY_STEPS``)."""
    total = 0
    for st in kernel.body:
        if isinstance(st, ir.Scan):
            n = EARLY_STEPS if st.length is None else st.length
            total += n * max(1, steps(st.body))
    return total


def early(prog: Any, hot_calls: int) -> None:
    """A program whose loops run at least ``EARLY_STEPS`` steps and that becomes hot after ``hot_calls`` calls (a
    compiled function's) tries the LLVM backend on its first call instead of running the numpy tier's Python loop.
    Where the backend refuses it, ``take`` restores the threshold (numba's tier starts as before)."""
    if ENABLED and prog.hot_after == hot_calls > 1 and steps(prog.kernel) >= EARLY_STEPS:
        prog._llvm_early = prog.hot_after
        prog.hot_after = 1


def take(prog: Any, tier: Any) -> bool | None:
    """Compile ``prog``'s kernel (the ``tier``'s variant) with the LLVM backend and make it the tier's live kernel:
    True. False (nothing changed) where the tier is off, the kernel holds no loop, or the backend refuses the IR or
    fails; None where that happened on an early try (``early``): the threshold is restored and this call runs the
    numpy kernel."""
    if not ENABLED or not any(isinstance(st, ir.Scan) for st in prog.kernel.body):
        return False
    refused = prog.__dict__.setdefault("_llvm_refused", set())
    if tier.out_params in refused:
        return False
    took = _compile(prog, tier, refused)
    early = prog.__dict__.pop("_llvm_early", None)
    if not took and early is not None:
        prog.hot_after = early
        return None
    return took


def _compile(prog: Any, tier: Any, refused: set) -> bool:
    t0 = time.perf_counter()
    try:
        from codegen.llvm import load  # deferred: llvmlite (and codegen.numba's scalar printer), once hot
        ti = time.perf_counter()
        kernel, module, emit_s = load.compile_kernel(prog.kernel, tier.out_params)
        t1 = ti + emit_s
    except ir.Unsupported as exc:
        refused.add(tier.out_params)
        _stats.count("llvm_refused")
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.debug("llvm kernel for %s not available (%s)", prog.kernel.name, why)
        _stats.log_line(f"llvm refuses {prog.label}: numba's path instead ({why})")
        return False
    except Exception as exc:  # noqa: BLE001 - llvmlite missing or failing: numba's path, loudly in the log
        refused.add(tier.out_params)
        _stats.count("llvm_refused")
        log.debug("llvm compile of %s failed: %r", prog.kernel.name, exc)
        _stats.log_line(f"llvm fails on {prog.label}: numba's path instead ({type(exc).__name__}: {exc})")
        return False
    t2 = time.perf_counter()
    _stats.count("llvm_compiles")
    _stats.add_time("llvm", t2 - t0)
    variant = " (out= variant)" if tier.out_params else ""
    first = f"import {1e3 * (ti - t0):.1f} ms, " if ti - t0 > 1e-3 else ""     # llvmlite, in the first compile
    _stats.log_line(f"llvm {prog.label}{variant} [hot: {prog.calls} calls]: compiled in {1e3 * (t2 - t0):.1f} ms "
                    f"[{first}emit {1e3 * (t1 - ti):.1f} ms, LLVM {1e3 * (t2 - t1):.1f} ms]")
    if not tier.out_params:
        prog.jit, prog.jit_source = kernel, module.text
    tier.live = kernel
    tier.state = "ready"
    tier.switched = True
    _stats.count("tier_switches")
    _stats.log_line(f"tier switch {prog.label}{variant}: numpy -> llvm kernel after {prog.calls} calls")
    return True
