"""``SYMGRAD_LOG=compiles`` lines (signature, reason, stage times, the tier switch) and ``sg.jit_stats()`` counts for
compiled functions, transforms and eager backward (sync mode, the session's)."""
from __future__ import annotations

import re
import sys
import uuid

import numpy as np
import pytest

import symgrad as sg
from codegen import cache as cg_cache
from symgrad.kernels import stats


@pytest.fixture
def log(monkeypatch, capsys, tmp_path):
    """Compile logging on, a fresh kernel cache; returns a reader of the lines logged since the last read."""
    monkeypatch.setattr(stats, "LOG_COMPILES", True)
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    cg_cache.reset_cache_dir()
    capsys.readouterr()
    yield lambda: [x for x in capsys.readouterr().err.splitlines() if x.startswith("symgrad: ")]
    cg_cache.reset_cache_dir()


def _loss():
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7      # a kernel text new to this process

    def loss(x, y):
        return (sg.sin(x) * c + x * y).sum()
    return loss


def test_compile_lines_and_stats_of_a_compiled_function(log):
    f = sg.value_and_grad(_loss(), argnums=(0, 1))
    x = np.linspace(0.0, 1.0, 8)
    before = sg.jit_stats()
    f(x, x)
    (line,) = log()
    assert re.fullmatch(r"symgrad: compile value_and_grad of loss \(x: float64\[8\], y: float64\[8\]\) \[first call\]: "
                        r"trace [\d.]+ ms, derive [\d.]+ ms, lower [\d.]+ ms, emit [\d.]+ ms", line), line
    f(x, x)                                          # hot: numba compiles (sync) and runs
    numba_line, switch = log()
    assert numba_line.startswith("symgrad: numba value_and_grad of loss (x: float64[8], y: float64[8]) "
                                 "[hot: 2 calls; sync]: compiled in "), numba_line
    assert "typing" in numba_line                    # numba's own stage times
    assert switch == ("symgrad: tier switch value_and_grad of loss (x: float64[8], y: float64[8]): numpy -> numba "
                      "kernel after 2 calls")
    f(x, x)
    assert log() == []                               # nothing new: no line
    f(np.linspace(0.0, 1.0, 5), x[:5])
    assert "[new shape]" in log()[0]
    f(x.astype(np.float32), x.astype(np.float32))
    assert "(x: float32[8], y: float32[8]) [new dtype]" in log()[0]
    f(1.0, 2.0)
    assert "(x: float, y: float) [new shape and argument types]" in log()[0]
    after = sg.jit_stats()
    assert after.traces - before.traces == 4 and after.programs - before.programs == 4
    assert after.numba_compiles - before.numba_compiles == 1 and after.tier_switches - before.tier_switches == 1
    for stage in stats.STAGES:
        if stage != "llvm":                              # loop programs only: tests/codegen/test_llvm.py
            assert after.seconds[stage] > before.seconds[stage], stage
    assert set(after.as_dict()) == {*stats._COUNTS, "seconds"}


def test_numba_cache_hit_is_counted_and_logged(log):
    loss = _loss()
    x = np.linspace(0.0, 1.0, 8)
    f = sg.grad(loss)
    f(x, x)
    f(x, x)
    log()
    e = next(iter(f._entries.values()))
    # a fresh dispatcher over the same kernel file: what a later process finds in numba's disk cache
    sys.modules.pop(e.jit.py_func.__module__)
    g = sg.grad(loss)
    before = sg.jit_stats()
    g(x, x)
    g(x, x)
    lines = log()
    assert any("loaded from numba's disk cache" in ln for ln in lines), lines
    after = sg.jit_stats()
    assert after.cache_hits - before.cache_hits == 1 and after.numba_compiles == before.numba_compiles


def test_transforms_and_eager_backward_log_their_programs(log):
    before = sg.jit_stats()
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7
    jac = sg.jacobian(lambda x: sg.sin(x) * c)
    jac(np.linspace(0.0, 1.0, 3))
    lines = log()
    assert any(ln.startswith("symgrad: compile ") and "[reverse sweeps, batch 3]: derive " in ln for ln in lines), lines
    t = sg.tensor(np.linspace(0.0, 1.0, 4), requires_grad=True)
    (sg.exp(t * c) * t).sum().backward()
    lines = log()
    assert any(re.match(r"symgrad: compile backward \(\d+ nodes\) \[new graph structure\]: derive [\d.]+ ms, lower ",
                        ln) for ln in lines), lines
    after = sg.jit_stats()
    assert after.traces - before.traces == 1 and after.programs - before.programs == 2


def test_set_log_compiles_switches_logging(monkeypatch, capsys):
    monkeypatch.setattr(stats, "LOG_COMPILES", False)
    stats.log_line("hidden")
    sg.kernels.stats.set_log_compiles(True)
    stats.log_line("shown")
    assert capsys.readouterr().err == "symgrad: shown\n"
