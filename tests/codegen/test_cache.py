"""``codegen.cache`` (and ``codegen.numba_cache``): the on-disk cache of generated kernels survives damage,
races and read-only folders.

* Generated ``.py`` files are verified against their hash name before import; damaged ones are rebuilt.
* numba's artefacts (``__pycache__/*.nbi`` / ``*.nbc``) are checksummed by the cache guard: damaged ones
  are dropped and the kernel recompiles (numba 0.68 alone raises ``UnpicklingError`` / ``EOFError``
  from the call, or silently loads a flipped byte in the object code). A "fresh process" is simulated
  in-process by a fresh dispatcher over the same function (``numba.njit(cache=True)(fn.py_func)``),
  which reads numba's disk cache exactly as another process would.
* Real fresh processes: W2's ``value_and_grad`` compiled cold, then loaded with no recompilation
  (counters, not timing); two processes compiling the same kernel at once.
* A cache hit in a fresh process initialises numba's runtime only (not its registries: no
  ``scipy.linalg``) and the loaded serial, parallel and raising kernels work; a later new signature
  compiles with numba's full refresh.
* Read-only folder: tests run as root, where ``chmod`` does not stop writes, so the folder is made
  unusable in a way that binds root too: ``SYMGRAD_CACHE_DIR`` lies *under a regular file*
  (``mkdir`` fails with ``NotADirectoryError``). The ``chmod 0555`` variant runs only where it
  actually stops writes (not root).

Cold / warm figures for W2 are printed (``pytest -s -k w2 tests/codegen/test_cache.py``), not asserted.
"""
from __future__ import annotations

import json
import logging
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from codegen import cache as cg_cache
from codegen.cache import load_kernel, source_hash
from codegen.numba_cache import jit_stats

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """An empty cache folder in ``SYMGRAD_CACHE_DIR``, and a private temporary folder for fallbacks."""
    folder = tmp_path / "cache"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(folder))
    monkeypatch.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    cg_cache.reset_cache_dir()
    yield folder
    cg_cache.reset_cache_dir()


def _py_source() -> str:
    """A numpy-only kernel module, unique per call (a fresh hash, so a fresh module)."""
    return f"# test {uuid.uuid4().hex}\nimport numpy\n\n\ndef k(x):\n    return numpy.sin(x) + 1.0\n"


def _nb_source() -> str:
    """A small numba kernel module with ``cache=True``, unique per call."""
    return (f"# test {uuid.uuid4().hex}\nimport numba\nimport numpy\n\n\n"
            "@numba.njit(cache=True, error_model=\"numpy\")\ndef k(x):\n    s = 0.0\n"
            "    for i in range(x.shape[0]):\n        s += numpy.sin(x[i])\n    return s\n")


def _fresh(fn):
    """Another dispatcher over the same function: it reads numba's disk cache as a new process would."""
    import numba
    return cg_cache.instrument(numba.njit(cache=True, error_model="numpy")(fn.py_func))


X = np.linspace(-2.0, 3.0, 17)


# =========================================================================== generated source files


def _damage_py(path: Path, src: str, kind: str) -> None:
    data = src.encode()
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(b"\xff\xfe\x00" + os.urandom(200))
    elif kind == "wrong content":          # valid Python under the hash name: must not be imported
        path.write_text("def k(x):\n    return 666.0\n")
    elif kind == "raises":
        path.write_text("raise SystemExit('imported a damaged file')\n")
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "empty", "garbage", "wrong content", "raises"])
def test_damaged_source_file_is_rebuilt_not_imported(cache_env, kind, caplog):
    src = _py_source()
    path = cg_cache.cache_dir() / f"t_py_{source_hash(src)}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    _damage_py(path, src, kind)
    with caplog.at_level(logging.DEBUG, logger="symgrad"):
        fn, got = load_kernel(src, "k", prefix="t_py")
    assert got == path and path.read_text() == src
    np.testing.assert_array_equal(fn(X), np.sin(X) + 1.0)
    assert "rebuilt: " in caplog.text and path.name in caplog.text
    assert not list(path.parent.glob(".*.tmp")), "temporary file left behind"


def test_damage_after_import_is_repaired(cache_env, caplog):
    """Already imported in this process: a later load still checks and repairs the file."""
    src = _py_source()
    fn, path = load_kernel(src, "k", prefix="t_py")
    mtime = path.stat().st_mtime_ns
    fn2, _ = load_kernel(src, "k", prefix="t_py")              # intact: reused, not rewritten
    assert fn2 is fn and path.stat().st_mtime_ns == mtime
    path.write_bytes(path.read_bytes()[:10])
    with caplog.at_level(logging.DEBUG, logger="symgrad.codegen"):
        fn3, _ = load_kernel(src, "k", prefix="t_py")
    assert fn3 is fn and path.read_text() == src
    assert "rebuilt: truncated file (10 of" in caplog.text


# =========================================================================== numba artefacts


def _damage_numba(pycache: Path, kind: str) -> None:
    target, how = kind.split("-")
    if target == "sum":
        (f,) = pycache.glob("*.nbi.sha256")
        f.unlink()
        return
    (f,) = pycache.glob(f"*.{target}")
    b = bytearray(f.read_bytes())
    if how == "garbage":
        b = bytearray(os.urandom(len(b)))
    elif how == "truncated":
        b = b[: len(b) // 2]
    elif how == "empty":
        b = bytearray()
    elif how == "flip":                  # inside the payload: numba alone may load it silently
        for i in range(3 * len(b) // 4, min(len(b), 3 * len(b) // 4 + 16)):
            b[i] ^= 0x5A
    f.write_bytes(bytes(b))


@pytest.mark.parametrize("kind", ["nbi-garbage", "nbi-truncated", "nbi-flip", "nbc-garbage", "nbc-truncated",
                                  "nbc-empty", "nbc-flip", "sum-missing"])
def test_damaged_numba_artefact_recompiles(cache_env, kind, caplog):
    fn, path = load_kernel(_nb_source(), "k", prefix="t_nb")
    expected = float(np.sin(X).sum())
    assert fn(X) == pytest.approx(expected, rel=1e-14)
    s = jit_stats(fn)
    assert (s["compiles"], s["loads"], s["cache_misses"]) == (1, 0, 1)
    pycache = path.parent / "__pycache__"
    assert len(list(pycache.glob(f"{path.stem}.*.nbi"))) == 1 and list(pycache.glob("*.nbi.sha256"))

    fresh = _fresh(fn)                                           # intact: loaded, not compiled
    assert fresh(X) == pytest.approx(expected, rel=1e-14)
    assert (jit_stats(fresh)["loads"], jit_stats(fresh)["compiles"]) == (1, 0)

    _damage_numba(pycache, kind)
    fresh = _fresh(fn)
    with caplog.at_level(logging.DEBUG, logger="symgrad.codegen"):
        assert fresh(X) == pytest.approx(expected, rel=1e-14)
    s = jit_stats(fresh)
    assert (s["compiles"], s["loads"], s["rejected"], s["cache_hits"]) == (1, 0, 1, 0), s
    assert "compiled (numba cache" in caplog.text, caplog.text

    fresh = _fresh(fn)                                           # the cache was repaired
    assert fresh(X) == pytest.approx(expected, rel=1e-14)
    s = jit_stats(fresh)
    assert (s["compiles"], s["loads"], s["rejected"], s["cache_hits"]) == (0, 1, 0, 1), s


def test_rebuilt_source_keeps_numba_entry_valid(cache_env, caplog):
    """A damaged kernel file rewritten with its (verified) content: numba's entry for that content stays
    usable. numba 0.68 stamps its index with the source's sha256, so it loads; a numba that stamps with
    the file's mtime would see a stale entry and recompile. Either way: right result, nothing rejected."""
    src = _nb_source()
    fn, path = load_kernel(src, "k", prefix="t_nb")
    fn(X)
    path.write_text("garbage")
    assert cg_cache._ensure_file(path, src.encode()).startswith("rebuilt: ")  # as a new process's load_kernel
    fresh = _fresh(fn)
    with caplog.at_level(logging.DEBUG, logger="symgrad.codegen"):
        assert fresh(X) == pytest.approx(float(np.sin(X).sum()), rel=1e-14)
    s = jit_stats(fresh)
    assert s["loads"] + s["compiles"] == 1 and s["rejected"] == 0, s
    assert s["loads"] == 1 or "numba cache stale" in caplog.text


# =========================================================================== logging, in memory, read-only


def test_compile_and_load_are_logged_with_reason_and_stage_times(cache_env, caplog):
    with caplog.at_level(logging.DEBUG, logger="symgrad"):
        fn, path = load_kernel(_nb_source(), "k", prefix="t_nb")
        fn(X)
        _fresh(fn)(X)
    msgs = [r.getMessage() for r in caplog.records if r.name == "symgrad.codegen" and r.levelno == logging.DEBUG]
    assert any(path.name in m and "written" in m and "import" in m and " ms" in m for m in msgs), msgs
    (comp,) = [m for m in msgs if "compiled (" in m]
    assert "(no numba cache entry)" in comp
    for stage in ("frontend", "typing", "lowering+LLVM", "cache save", "cache lookup"):
        assert stage in comp, comp
    (load,) = [m for m in msgs if "loaded from the disk cache" in m]
    assert "verify+load" in load


def test_disable_cache_keeps_everything_in_memory(cache_env, monkeypatch, caplog):
    monkeypatch.setenv("SYMGRAD_DISABLE_CACHE", "1")
    with caplog.at_level(logging.DEBUG, logger="symgrad"):
        fn, path = load_kernel(_nb_source(), "k", prefix="t_nb")
        assert fn(X) == pytest.approx(float(np.sin(X).sum()), rel=1e-14)
        f = sg.value_and_grad(lambda x: (sg.sin(x) * x).sum())
        x = np.linspace(0.0, 1.0, 50)
        for _ in range(3):                                       # the 2nd call onwards runs numba
            v, g = f(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-12)
    s = jit_stats(fn)
    assert s["compiles"] == 1 and s["cache_path"] is None and str(path).startswith("<memory>")
    in_memory = [r for r in caplog.records if "compiled (numba caching off" in r.getMessage()]
    assert len(in_memory) == 2, caplog.text             # this kernel and value_and_grad's fused kernel
    assert not cache_env.exists(), "something was written to SYMGRAD_CACHE_DIR"
    assert not list(Path(tempfile.gettempdir()).iterdir()), "something was written to the temporary folder"
    assert "kept in memory" in caplog.text and "numba caching off" in caplog.text
    monkeypatch.setenv("SYMGRAD_DISABLE_CACHE", "0")                # "0" means enabled
    assert not cg_cache.cache_disabled()


def _check_fallback(folder: Path, tmp: Path) -> None:
    with pytest.warns(RuntimeWarning, match="not writable"):
        d = cg_cache.cache_dir()
    assert d != folder and d.parent == tmp and stat.S_IMODE(d.stat().st_mode) == 0o700
    fn, path = load_kernel(_py_source(), "k", prefix="t_py")
    assert path.parent == d and path.exists()
    np.testing.assert_array_equal(fn(X), np.sin(X) + 1.0)
    cg_cache.cache_dir()                          # resolved once: no second warning (warnings are errors below)


@pytest.mark.filterwarnings("error")
def test_unusable_folder_falls_back_even_as_root(cache_env, tmp_path, monkeypatch):
    """A cache folder under a regular file cannot be created, whoever runs (root included)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "cache"
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(folder))
    _check_fallback(folder, tmp_path / "tmp")


def test_fallback_refuses_a_shared_folder_it_does_not_own(cache_env, tmp_path):
    """``$TMPDIR/symgrad-<uid>`` open to others (or a symlink) is not used: a fresh private folder is."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    shared = tmp_path / "tmp" / f"symgrad-{uid}"
    shared.mkdir()
    shared.chmod(0o777)
    d = cg_cache._fallback_dir()
    assert d != shared and d.parent == tmp_path / "tmp" and stat.S_IMODE(d.stat().st_mode) == 0o700
    shared.rmdir()
    shared.symlink_to(tmp_path)
    assert cg_cache._fallback_dir() not in (shared, tmp_path)


# =========================================================================== cache hits skip numba's refresh

LIGHT_SRC = '''import numba
import numpy


@numba.njit(cache=True, error_model="numpy")
def serial(x, y):
    if x.shape[0] != y.shape[0]:
        raise ValueError("x and y differ in length")
    out = numpy.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = numpy.sin(x[i]) * numpy.exp(-y[i] * y[i])
        s += out[i]
    return s, out


@numba.njit(cache=True, parallel=True)
def par(x):
    s = 0.0
    for i in numba.prange(x.shape[0]):
        s += numpy.log1p(x[i] * x[i])
    return s
'''

LIGHT_SCRIPT = r"""
import json, sys
import numpy as np
from codegen.cache import load_kernel
from codegen.numba_cache import jit_stats
src = open(sys.argv[1]).read()
serial, _ = load_kernel(src, "serial", prefix="t_light")
par, _ = load_kernel(src, "par", prefix="t_light")
x = np.linspace(-2.0, 3.0, 300001)
res = {"serial": serial(x, x)[0], "par": par(x)}
res["arraymath_after_calls"] = "numba.np.arraymath" in sys.modules
try:
    serial(x, x[:-1])
except ValueError as exc:                        # a raise from cached code (numba's pickled exception)
    res["raised"] = str(exc)
res["stats"] = {k: jit_stats(f) for k, f in (("serial", serial), ("par", par))}
for f in res["stats"].values():
    f.pop("events")
if len(sys.argv) > 2:                            # a new signature: numba's compiler, full refresh
    xf = x.astype(np.float32)
    res["f32"] = serial(xf, xf)[0]
    res["arraymath_after_compile"] = "numba.np.arraymath" in sys.modules
print("RESULT" + json.dumps(res))
"""


def _light_run(folder: Path, src: Path, *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", LIGHT_SCRIPT, str(src), *extra], env=_w2_env(folder), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("RESULT", 1)[1])


def test_cache_hit_loads_without_numba_refresh_and_later_compiles_refresh(tmp_path):
    """A cached kernel loads with numba's runtime only (not its registries: no ``numba.np.arraymath``,
    hence no ``scipy.linalg``) and runs: serial, parallel, raising; a new signature of the same
    dispatcher afterwards compiles through numba's compiler, which refreshes the registries itself."""
    x = np.linspace(-2.0, 3.0, 300001)
    xf = x.astype(np.float32)
    src = tmp_path / "light.py"
    src.write_text(LIGHT_SRC)
    folder = tmp_path / "cache"
    cold = _light_run(folder, src)
    assert {k: (v["compiles"], v["loads"]) for k, v in cold["stats"].items()} == {"serial": (1, 0), "par": (1, 0)}
    warm = _light_run(folder, src, "new signature")
    assert {k: (v["compiles"], v["loads"], v["rejected"]) for k, v in warm["stats"].items()} == {
        "serial": (0, 1, 0), "par": (0, 1, 0)}
    assert not warm["arraymath_after_calls"], "a cache hit ran numba's full refresh"
    assert warm["arraymath_after_compile"]
    assert warm["f32"] == pytest.approx(float(np.sum(np.sin(xf) * np.exp(-xf * xf), dtype=np.float64)), rel=1e-4)
    for r in (cold, warm):
        assert r["serial"] == pytest.approx(float(np.sum(np.sin(x) * np.exp(-x * x))), rel=1e-12)
        assert r["par"] == pytest.approx(float(np.sum(np.log1p(x * x))), rel=1e-12)
        assert r["raised"] == "x and y differ in length"


# =========================================================================== fresh processes (W2)

W2_SCRIPT = r"""
import json, logging, os, sys, time
t_start = time.perf_counter()
records = []
class _H(logging.Handler):
    def emit(self, r):
        records.append(r.getMessage())
lg = logging.getLogger("symgrad")
lg.setLevel(logging.DEBUG)
lg.addHandler(_H())
import numpy as np
import symgrad as sg
from codegen.numba_cache import jit_stats
t_import = time.perf_counter()
barrier = os.environ.get("SG_BARRIER")
if barrier:                       # start compiling together with the other process
    open(os.path.join(barrier, str(os.getpid())), "w").close()
    deadline = time.time() + 60
    while len(os.listdir(barrier)) < 2 and time.time() < deadline:
        time.sleep(0.002)
numba_before = "numba" in sys.modules
f = sg.value_and_grad(lambda x, y: (sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2) * sg.tanh(y)).sum(), argnums=(0, 1))
rng = np.random.default_rng(0)
x, y = rng.standard_normal(1000), rng.standard_normal(1000)
t0 = time.perf_counter()
f(x, y)
t1 = time.perf_counter()
v, (gx, gy) = f(x, y)
t2 = time.perf_counter()
ev, ty = np.exp(-y**2), np.tanh(y)
want = [(v, np.sum(np.sin(x) * ev + np.log1p(x**2) * ty)),
        (gx, np.cos(x) * ev + 2 * x / (1 + x**2) * ty),
        (gy, -2 * y * np.sin(x) * ev + np.log1p(x**2) * (1 - ty**2))]
err = max(float(np.max(np.abs(a - b) / (1e-300 + np.abs(b)))) for a, b in want)
print("RESULT" + json.dumps({"stats": jit_stats(), "import_s": t_import - t_start, "call1_s": t1 - t0,
                             "call2_s": t2 - t1, "numba_before": numba_before, "err": err,
                             "log": records}))
"""


def _w2_env(folder: Path, **extra: str) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(folder), **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    for k in ("SYMGRAD_DISABLE_CACHE", "NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "SYMGRAD_BACKEND"):
        env.pop(k, None)
    return env


def _w2_start(folder: Path, **extra: str) -> tuple[subprocess.Popen, float]:
    proc = subprocess.Popen([sys.executable, "-c", W2_SCRIPT], env=_w2_env(folder, **extra), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, time.perf_counter()


def _w2_result(proc: subprocess.Popen, t0: float) -> dict:
    out, err = proc.communicate(timeout=180)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, err[-3000:]
    res = json.loads(out.split("RESULT", 1)[1])
    res["wall_s"] = wall
    assert res["err"] < 1e-10, res["err"]
    assert not res["numba_before"], "numba was imported before the first compile: start-up not measured"
    assert res["stats"]["kernels"] == 1, res["stats"]
    return res


def _w2_run(folder: Path) -> dict:
    return _w2_result(*_w2_start(folder))


def _figures(tag: str, r: dict) -> str:
    """The figures, with the parts of the 2nd call the debug log attributes (numba's import and start-up)."""
    log = "\n".join(r["log"])
    parts = []
    m = re.search(r"kernel numba_\w+\.py: [^;]*; check\+write [\d.]+ ms, import ([\d.]+) ms", log)
    if m:
        parts.append(f"import numba+module {m[1]} ms")
    m = re.search(r"numba target init ([\d.]+) ms, verify\+load ([\d.]+) ms", log)
    if m:
        parts.append(f"numba target init {m[1]} ms, verify+load {m[2]} ms")
    m = re.search(r"compiled \(.*?\) in ([\d.]+) ms \[.*?\]; cache lookup ([\d.]+) ms.*cache save ([\d.]+) ms", log)
    if m:
        parts.append(f"numba target init+lookup {m[2]} ms, compile {m[1]} ms, save {m[3]} ms")
    return (f"W2 {tag}: call1 (trace+derive+numpy) {r['call1_s']:.3f} s, call2 (numba "
            f"{'compile' if tag == 'cold' else 'cache load'}) {r['call2_s']:.3f} s [{'; '.join(parts)}], "
            f"both calls {r['call1_s'] + r['call2_s']:.3f} s; import symgrad {r['import_s']:.3f} s; "
            f"process wall {r['wall_s']:.3f} s")


def test_w2_second_process_loads_from_disk_without_recompiling(tmp_path):
    folder = tmp_path / "cache"
    cold = _w2_run(folder)
    s = cold["stats"]
    assert (s["compiles"], s["loads"], s["cache_misses"], s["cache_hits"]) == (1, 0, 1, 0), s
    assert any("compiled (no numba cache entry)" in m for m in cold["log"]), cold["log"]

    warm = _w2_run(folder)
    s = warm["stats"]
    # no recompilation, by numba's own counters and by the guard's
    assert (s["cache_hits"], s["cache_misses"], s["loads"], s["compiles"], s["rejected"]) == (1, 0, 1, 0, 0), s
    assert s["signatures"] == 1
    assert not any("compiled (" in m for m in warm["log"]), warm["log"]
    assert any("loaded from the disk cache" in m for m in warm["log"]), warm["log"]
    assert any("reused" in m and "numba_" in m for m in warm["log"]), warm["log"]
    print()
    print(_figures("cold", cold))
    print(_figures("warm", warm))


def test_two_processes_compiling_at_once_both_succeed(tmp_path):
    folder = tmp_path / "cache"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    started = [_w2_start(folder, SG_BARRIER=str(barrier)) for _ in range(2)]
    results = [_w2_result(p, t0) for p, t0 in started]
    for r in results:
        s = r["stats"]
        assert s["compiles"] + s["loads"] == 1 and s["rejected"] == 0, s
    py = sorted(p.name for p in folder.glob("*.py"))
    assert len(py) == 2 and not list(folder.glob(".*.tmp")), list(folder.iterdir())
    # what they left behind is consistent: a third process loads it and compiles nothing
    s = _w2_run(folder)["stats"]
    assert (s["loads"], s["compiles"], s["rejected"], s["cache_misses"]) == (1, 0, 0, 0), s
