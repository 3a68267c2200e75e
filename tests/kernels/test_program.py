"""Program's tiers: background compiles (helper process and worker thread) while the numpy kernel keeps running,
the atomic switch, a failed compile's one warning, eager structures and ``out=`` in the background, the status line,
and an interpreter that exits while a compile runs. The session compiles synchronously (conftest); these tests
switch the mode per test."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from codegen import cache as cg_cache
from codegen import emitted
from symgrad.compiler.function import CompiledFunction
from symgrad.eager import autograd
from symgrad.kernels import background, stats
from symgrad.kernels.program import Program

ROOT = Path(__file__).resolve().parents[2]
X = np.linspace(-1.0, 2.0, 64)
Y = np.cos(X)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty kernel cache: numba compiles what the test builds."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
    cg_cache.reset_cache_dir()
    yield tmp_path / "cache"
    assert background.wait(120), "a background compile did not finish"
    cg_cache.reset_cache_dir()


@pytest.fixture
def mode(monkeypatch):
    """Set the compile mode for one test (the session's sync mode comes back after it)."""
    return lambda m: monkeypatch.setattr(background, "MODE", m)


def _unique_vg():
    """``value_and_grad`` of a small W2-like loss whose kernel text is new to this process (a fresh literal)."""
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7

    def loss(x, y):
        return (sg.sin(x) * sg.exp(-y ** 2) * c + sg.log1p(x ** 2) * sg.tanh(y)).sum()
    return sg.value_and_grad(loss, argnums=(0, 1)), c


def _same(a, b):
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
    for u, v in zip(a[1], b[1]):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("where", ["process", "thread"])
def test_background_compile_keeps_the_numpy_tier_then_switches(fresh_cache, mode, where, monkeypatch, capsys):
    mode(where)
    monkeypatch.setattr(stats, "LOG_COMPILES", True)
    emitted_here = []
    real_emit = Program._emit_source
    monkeypatch.setattr(Program, "_emit_source", lambda self, tier: emitted_here.append(1) or real_emit(self, tier))
    f, _ = _unique_vg()
    before = sg.jit_stats()
    first = f(X, Y)
    e = next(iter(f._entries.values()))
    second = f(X, Y)                      # hot: the compile is queued, this call ran the numpy kernel
    assert e.prog.compiled() is None and e.jit is None
    assert type(f) is CompiledFunction    # no fast path before the numba kernel is in use
    assert background.pending() >= 1 and sg.jit_stats().background_pending >= 1
    assert background.wait(120)
    third = f(X, Y)                       # the switch
    assert e.jit is not None and e.prog.compiled() is e.jit
    assert type(f) is not CompiledFunction, "the array fast path installs once the numba kernel runs"
    fourth = f(X, Y)                      # through the fast path
    for r in (second, third, fourth):
        _same(r, first)
    after = sg.jit_stats()
    assert after.background_done - before.background_done == 1
    assert after.numba_compiles - before.numba_compiles == 1
    assert after.tier_switches - before.tier_switches == 1
    assert after.background_failed == before.background_failed
    assert after.background_pending == 0 and after.seconds["numba"] > before.seconds["numba"]
    events = [ev["event"] for ev in e.jit._cache.events]
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("symgrad: numba ")]
    assert len(lines) == 1 and "[hot: 2 calls; background; " in lines[0], lines
    if where == "process":               # emitted and compiled by the helper; this process loaded machine code
        assert events == ["load"], events
        assert "; helper process]: compiled in " in lines[0] and " ms in all" in lines[0], lines
        assert "emitted there in " in lines[0] and not emitted_here, lines
        assert background._HELPER.proc is not None and background._HELPER.proc.poll() is None
        assert list(fresh_cache.glob("__pycache__/numba_*.nbi"))
    else:                                # compiled here, once: the calls found the compiled signature
        assert events == ["compile"], events
        assert "; thread]: compiled in " in lines[0], lines
        assert emitted_here == [1]


def test_a_later_program_reuses_the_remembered_numba_source(fresh_cache, mode, monkeypatch):
    mode("sync")
    f, _ = _unique_vg()
    ref = f(X, Y)
    f(X, Y)                               # hot: emitted here, compiled, the source remembered
    src = next(iter(f._entries.values())).jit_source
    assert list(fresh_cache.glob(f"{emitted.FOLDER}/*.ref"))
    calls = []
    real_emit = Program._emit_source
    monkeypatch.setattr(Program, "_emit_source", lambda self, tier: calls.append(1) or real_emit(self, tier))
    g = CompiledFunction(f.fn, mode="value_and_grad", argnums=(0, 1))    # a new program of the same IR
    g(X, Y)
    _same(g(X, Y), ref)
    e = next(iter(g._entries.values()))
    assert e.jit is not None and e.jit_source == src and calls == []
    monkeypatch.setattr(emitted, "_FINGERPRINT", "0" * 64)     # the emitter's code changed: emitted again
    h = CompiledFunction(f.fn, mode="value_and_grad", argnums=(0, 1))
    h(X, Y)
    _same(h(X, Y), ref)
    assert calls == [1]


def test_a_kernel_compiled_before_is_prefetched_and_runs_on_the_hot_call(fresh_cache, mode, monkeypatch, capsys):
    mode("sync")
    f, _ = _unique_vg()
    ref = f(X, Y)
    f(X, Y)                               # compiled, its source remembered, machine code on disk
    mode("background")
    monkeypatch.setattr(stats, "LOG_COMPILES", True)
    g = CompiledFunction(f.fn, mode="value_and_grad", argnums=(0, 1))
    first = g(X, Y)                       # the new program queues the prefetch
    assert background.wait(120)
    e = next(iter(g._entries.values()))
    assert e.prog.compiled() is None and e.prog._tiers[()].jit is not None    # loaded, not in use yet
    before = sg.jit_stats()
    hot = g(X, Y)                         # runs the prefetched kernel at once: no compile queued
    assert e.prog.compiled() is not None and background.pending() == 0
    after = sg.jit_stats()
    assert after.cache_hits - before.cache_hits == 1 and after.tier_switches - before.tier_switches == 1
    assert "; prefetched]: loaded from" in capsys.readouterr().err
    _same(first, ref)
    _same(hot, ref)
    h = CompiledFunction(lambda x, y: (sg.cos(x) * y * 1.25).sum(), mode="value_and_grad", argnums=(0, 1))
    h(X, Y)                               # nothing remembered for this one: the prefetch leaves it alone
    assert background.wait(120)
    assert next(iter(h._entries.values())).prog._tiers[()].jit is None


def test_helper_refuses_ir_the_numba_emitter_does_not_take(fresh_cache, mode):
    mode("process")
    a, b = np.linspace(0, 1, 24).reshape(2, 3, 4), np.linspace(1, 2, 40).reshape(2, 4, 5)
    f = sg.value_and_grad(lambda p, q: (sg.sin(p @ q) * (1.0 + uuid.uuid4().int % 1000)).sum(), argnums=(0, 1))
    ref = f(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # refused IR is quiet: the numpy kernel stays
        f(a, b)
        assert background.wait(120)
        got = f(a, b)
    e = next(iter(f._entries.values()))
    assert e.prog.compiled() is None and e.prog._tiers[()].state == "refused" and e.prog.numba_error
    _same(got, ref)


def test_helper_that_cannot_rebuild_the_ir_gets_the_source_emitted_here(fresh_cache, mode):
    import pickle
    mode("process")
    f, _ = _unique_vg()
    f(X, Y)
    prog = next(iter(f._entries.values())).prog
    from codegen.numba import emit_numba
    src = emit_numba(prog.kernel)
    memoised = pickle.dumps((prog.kernel, ()), protocol=5)     # not ir_blob's bytes: the helper refuses to rebuild
    asked = []
    args = prog.args({"v": [X, Y, *prog.consts]})
    built = background.build(None, prog.kernel.name, "numba", background.describe(args), ir=memoised,
                             emit=lambda: asked.append(1) or src)
    assert built is not None and asked == [1]
    jit, _, info, got_src = built
    assert got_src == src and info["how"] == "helper process" and "helper_emit_s" not in info
    _same(jit(*args), prog.fn([X, Y, *prog.consts]))


def test_float_fast_path_installs_once_the_background_kernel_runs(fresh_cache, mode):
    mode("background")
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7
    f = sg.value_and_grad(lambda a, b: a * b * c + sg.sin(a), argnums=(0, 1))
    ref = f(0.5, 2.0)
    assert f(0.5, 2.0) == ref and type(f) is CompiledFunction     # hot, queued: still the general path
    assert background.wait(120)
    v, g = f(0.5, 2.0)                                             # the switch, then the fast path installed
    assert (v, *g) == pytest.approx((ref[0], *ref[1]), rel=1e-15)
    assert type(f) is not CompiledFunction and f._fast is not None
    v, (ga, gb) = f(0.25, 3.0)
    assert (v, ga, gb) == pytest.approx((0.75 * c + np.sin(0.25), 3.0 * c + np.cos(0.25), 0.25 * c), rel=1e-15)


def test_out_variant_and_new_layout_in_background(fresh_cache, mode):
    mode("thread")
    f, _ = _unique_vg()
    gx, gy = np.empty_like(X), np.empty_like(Y)
    ref = f(X, Y)
    e = next(iter(f._entries.values()))
    for _ in range(2):                    # the second call is hot: the out= variant is queued
        v, (ox, oy) = f(X, Y, out=(gx, gy))
        assert ox is gx and oy is gy
        _same((v, (gx.copy(), gy.copy())), ref)
    assert e.jit_out is None
    assert background.wait(120)
    gx[:] = gy[:] = 0
    v, _ = f(X, Y, out=(gx, gy))
    assert e.jit_out is not None
    _same((v, (gx, gy)), ref)
    assert e.prog.compiled() is None      # the plain kernel was never asked for


def test_failed_background_compile_keeps_numpy_tier_with_one_warning(fresh_cache, mode, monkeypatch):
    mode("process")
    # arguments typed as 1-character strings: a real numba typing error, raised in the helper process
    monkeypatch.setattr(background, "describe", lambda args: tuple(("s", "<U1") for _ in args))
    f, _ = _unique_vg()
    before = sg.jit_stats()
    ref = f(X, Y)
    f(X, Y)
    assert background.wait(120)
    with pytest.warns(RuntimeWarning, match="failed to compile") as caught:
        got = f(X, Y)
    assert sum("failed to compile" in str(w.message) for w in caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # one warning only: later calls are quiet
        again = f(X, Y)
    _same(got, ref)
    _same(again, ref)
    e = next(iter(f._entries.values()))
    assert e.prog.compiled() is None and e.jit is None
    after = sg.jit_stats()
    assert after.background_failed - before.background_failed == 1
    assert after.background_done == before.background_done


def test_eager_structure_moves_to_numba_in_the_background(fresh_cache, mode, monkeypatch):
    mode("background")
    monkeypatch.setattr(autograd, "EAGER_JIT_AFTER", 2)
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7
    x = sg.tensor(X.copy(), requires_grad=True)
    y = sg.tensor(Y.copy(), requires_grad=True)

    def step():
        x.grad = y.grad = None
        ((sg.sin(x) * sg.exp(-y ** 2) * c + sg.log1p(x ** 2) * sg.tanh(y)).sum()).backward()
        return x.grad.numpy().copy(), y.grad.numpy().copy()

    ref = step()
    prog = list(autograd._PROGRAMS.values())[-1].program
    hot = step()                          # the compile is queued; this backward ran the numpy program
    assert prog.compiled() is None
    assert background.wait(120)
    moved = step()
    assert prog.compiled() is not None and prog.jit is prog.compiled()
    for got in (hot, moved):
        for u, v in zip(got, ref):
            np.testing.assert_allclose(u, v, rtol=1e-12)


def test_forked_child_queues_the_parents_pending_compile_again(fresh_cache, mode):
    mode("process")
    f, _ = _unique_vg()
    ref = f(X, Y)
    f(X, Y)                               # queued in the parent (its helper compiles for seconds)
    e = next(iter(f._entries.values()))
    pid = os.fork()
    if pid == 0:                          # the child: the parent's job is not its own
        code = 3
        try:
            background.MODE = "thread"
            code = 4 if background.pending() or e.prog._tiers[()].state != "pending" else code
            f(X, Y)                       # queued again, on the child's own worker
            if code == 3 and background.pending() == 1 and background.wait(60):
                got = f(X, Y)
                code = 0 if e.prog.compiled() is not None and np.allclose(got[0], ref[0], rtol=1e-12) else 5
        finally:
            os._exit(code)
    deadline = time.monotonic() + 90
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done and os.waitstatus_to_exitcode(status) == 0
    assert background.wait(120)
    f(X, Y)
    assert e.prog.compiled() is not None  # the parent's own compile finished too


def test_argument_descriptions_type_as_numba_does():
    import numba
    a = np.arange(12.0).reshape(3, 4)
    ro = np.arange(3.0)
    ro.flags.writeable = False
    args = [a, a.T, a[:, ::2], ro, np.asarray(2.5), 1.5, 3, True, np.float32(1), np.arange(4, dtype=np.int32)]
    assert background.numba_signature(background.describe(args)) == tuple(numba.typeof(v) for v in args)
    assert background.describe([object()]) is None


def test_compile_modes_switch_and_validate(monkeypatch):
    monkeypatch.setattr(background, "MODE", background.MODE)
    sg.set_compile_mode("thread")
    assert sg.get_compile_mode() == "thread" and not background.is_sync()
    sg.set_compile_mode("sync")
    assert background.is_sync()
    with pytest.raises(ValueError, match="compile mode"):
        sg.set_compile_mode("later")
    monkeypatch.setenv("SYMGRAD_COMPILE", " Process ")
    assert background._mode_from_env() == "process"
    monkeypatch.setenv("SYMGRAD_COMPILE", "eventually")
    assert background._mode_from_env() == "background"


def test_sync_mode_runs_numba_on_the_hot_call(fresh_cache, mode):
    mode("sync")
    f, _ = _unique_vg()
    ref = f(X, Y)
    e = next(iter(f._entries.values()))
    hot = f(X, Y)
    assert e.prog.compiled() is not None and e.jit is e.prog.compiled()
    assert background.pending() == 0
    _same(hot, ref)


def test_status_line_shows_while_a_compile_runs_long(monkeypatch, capsys):
    monkeypatch.setattr(stats, "_interactive", lambda stream: True)
    monkeypatch.setattr(stats, "STATUS_AFTER", 0.05)
    with stats.compiling("demo kernel"):
        time.sleep(0.6)
    deadline = time.monotonic() + 5
    while stats._STATUS._thread is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    err = capsys.readouterr().err
    assert "\rsymgrad: compiling demo kernel ... " in err and " s" in err
    assert err.endswith("\r") and err.rstrip("\r").endswith(" ")   # erased once the compile ended
    monkeypatch.setattr(stats, "_interactive", lambda stream: False)
    with stats.compiling("quiet"):
        time.sleep(0.3)
    assert capsys.readouterr().err == ""


def test_quick_compiles_show_no_status_line(monkeypatch, capsys):
    monkeypatch.setattr(stats, "_interactive", lambda stream: True)
    with stats.compiling("fast"):
        pass
    time.sleep(0.3)
    assert "compiling" not in capsys.readouterr().err


_EXIT_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    import symgrad as sg
    from symgrad.kernels import background

    def loss(x, y):
        return (sg.sin(x) * sg.exp(-y ** 2) + sg.log1p(x ** 2) * sg.tanh(y) + sg.cos(x * y) ** 2).sum()

    f = sg.value_and_grad(loss, argnums=(0, 1))
    x = np.linspace(0.0, 1.0, 300_000)        # a parallel kernel: seconds of numba compile
    f(x, x)
    f(x, x)
    t0 = time.monotonic()
    while (background.MODE == "process" and background._HELPER.proc is None and background.pending()
           and time.monotonic() - t0 < 60):
        time.sleep(0.005)                      # until the helper process runs the compile
    proc = background._HELPER.proc
    print("HELPER", proc.pid if proc is not None else 0, background.pending(), flush=True)
    time.sleep(0.2)                            # well inside the compile
""")


def test_exit_while_compiling_leaves_no_process_behind(tmp_path):
    """Two interpreters (helper process, worker thread; run side by side) end while their compile runs."""
    procs = {}
    t0 = time.monotonic()
    for where in ("process", "thread"):
        env = dict(os.environ, SYMGRAD_CACHE_DIR=str(tmp_path / where), SYMGRAD_COMPILE=where, SYMGRAD_LOG="compiles",
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        procs[where] = subprocess.Popen([sys.executable, "-c", _EXIT_SCRIPT], env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
    for where, p in procs.items():
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr[-3000:]
        line = next(x for x in stdout.splitlines() if x.startswith("HELPER"))
        _, pid, pending = line.split()
        assert int(pending) >= 1, "the compile was still running when the script ended"  # (and the helper starting)
        if where == "process":
            assert int(pid) > 0
            with pytest.raises(ProcessLookupError):
                os.kill(int(pid), 0)           # terminated and reaped at exit
        else:
            assert int(pid) == 0
        assert ("symgrad: compile value_and_grad of loss (x: float64[300000], y: float64[300000]) [first call]: "
                "trace") in stderr             # SYMGRAD_LOG=compiles, read at import
        assert "failed" not in stderr and "Traceback" not in stderr, stderr[-3000:]
        assert "tier switch" not in stderr
    assert time.monotonic() - t0 < 90


def test_program_counts_and_logs_its_own_build(monkeypatch, capsys):
    monkeypatch.setattr(stats, "LOG_COMPILES", True)
    before = sg.jit_stats()
    from symgrad.core import dtypes
    from symgrad.core.graph import Node
    from symgrad.ops import A, apply, source
    x = Node(source.leaf, (), (), (3,), dtypes.float64, name="x")
    y = apply("sum", apply("fused", x, expr=A[0] * 2, dtype=dtypes.float64), dims=(0,), keepdim=False, full=True)
    prog = Program("demo", [(x, "v", 0)], [y], doc="demo", prefix="compiled", what="demo", signature="(x)",
                   reason="a test")
    assert prog.run({"v": [np.arange(3.0)]})[0] == 6.0
    err = capsys.readouterr().err
    assert "symgrad: compile demo (x) [a test]: lower " in err and ", emit " in err
    after = sg.jit_stats()
    assert after.programs - before.programs == 1
    assert after.seconds["lower"] > before.seconds["lower"] and after.seconds["emit"] > before.seconds["emit"]
