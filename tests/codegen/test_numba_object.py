"""``codegen.numba_object``: numba kernels' object code cached and run through llvmlite alone.

* ``arg_key`` types arguments as numba's dispatcher does (checked against ``numba.typeof``), and the cheap
  per-call keys of different signatures never collide.
* The guard writes an entry when numba compiles a signature; a ``LightKernel`` over it gives bit-identical
  results, raises the kernel's exceptions, answers a dispatcher's ``typeof_pyval`` / ``overloads`` /
  ``compile``, and sends signatures it does not hold to numba's dispatcher.
* A damaged file, or one written for another numba / CPU, is not used.
* In a fresh process the cached serial, raising and parallel kernels run without importing numba; a new
  signature imports numba afterwards, and numba's own parallel kernels still run there.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from codegen import cache as cg_cache
from codegen import numba_object as no
from codegen.cache import load_kernel
from codegen.numba_cache import jit_stats

ROOT = Path(__file__).resolve().parents[2]

SRC = '''
import numba
import numpy


@numba.njit(cache=True)
def serial(x, y):
    if x.shape[0] != y.shape[0]:
        raise ValueError("x and y differ in length")
    out = numpy.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = numpy.sin(x[i]) * numpy.exp(-y[i] * y[i]) + numpy.log1p(x[i] * x[i]) * numpy.tanh(y[i])
        s += out[i]
    return s, out


@numba.njit(cache=True, parallel=True)
def par(x, a):
    s = 0.0
    for i in numba.prange(x.shape[0]):
        s += numpy.log1p(x[i] * x[i]) * a
    return s
'''

X = np.linspace(-2.0, 3.0, 4001)
Y = np.cos(X)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The kernels compiled once in this process (numba imported) into a fresh cache folder."""
    folder = tmp_path_factory.mktemp("symgrad-objects")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYMGRAD_CACHE_DIR", str(folder))
        mp.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
        mp.delenv("SYMGRAD_NUMBA_OBJECTS", raising=False)
        cg_cache.reset_cache_dir()
        serial, path = load_kernel(SRC, "serial", prefix="t_obj")
        par, _ = load_kernel(SRC, "par", prefix="t_obj")
        want = {"serial": serial(X, Y), "par": par(X, 0.5)}
        yield {"folder": folder, "path": path, "serial": serial, "par": par, "want": want}
    cg_cache.reset_cache_dir()


def _light(compiled: dict, name: str) -> no.LightKernel:
    kernel = no.open_kernel(compiled["path"], name, f"symgrad_gen.{compiled['path'].stem}", f"test.{name}",
                            lambda: compiled[name])
    assert kernel is not None
    return kernel


# =========================================================================== argument types

def _values() -> list:
    base = np.arange(24.0).reshape(4, 6)
    unaligned = np.frombuffer(b"\0" + np.arange(5.0).tobytes(), dtype=np.float64, offset=1)
    ro = np.ones(3)
    ro.flags.writeable = False
    return [np.ones(3), np.ones(3, np.float32), np.arange(3), np.ones(3, bool), np.ones(3, np.complex128),
            np.float64(2.0), base, base.T, base[:, ::2], base[::2], np.ones((1, 5)), np.ones((5, 1)),
            np.array(3.0), ro, unaligned, np.ones(0), base[:, :1], 1.5, 3, -(2 ** 63), True, 2j,
            np.float32(1), np.int32(4), np.bool_(True), np.uint8(3)]


def test_arg_key_is_numbas_typeof():
    keys = []
    for v in _values():
        key = no.arg_key(v)
        assert key is not None, v
        assert no.numba_key(numba.typeof(v)) == key, (v, numba.typeof(v))
        assert no._fast_key(v) in {f[0] for f in no._expand((key,))}, v
        keys.append(key)
    # the cheap keys of different signatures never collide (a call cannot run another signature's code)
    seen: dict = {}
    for key in set(keys):
        for fast in no._expand((key,)):
            assert seen.setdefault(fast, key) == key, (fast, key, seen[fast])


class _Sub(np.ndarray):
    pass


@pytest.mark.parametrize("value", [np.ones(3, ">f8"), np.zeros(2, [("a", "f8")]), np.ones(2).view(_Sub), 2 ** 63,
                                   "text", None, (1.0, 2.0), np.ones(2, "M8[s]")],
                         ids=["big-endian", "record", "subclass", "uint64-int", "str", "None", "tuple", "datetime"])
def test_arg_key_refuses_what_it_does_not_mirror(value):
    assert no.arg_key(value) is None


# =========================================================================== in this process

def test_compile_writes_entries_with_what_linking_needs(compiled):
    content = no._read(no.object_file(compiled["path"], "serial"))
    assert content is not None and content["abi"] == no.abi_tag()
    (key, entry), = content["entries"].items()
    assert key == (no.arg_key(X), no.arg_key(Y))
    assert not entry["parallel"] and entry["wrapper"].startswith("_ZN7cpython")
    assert {"NRT_adapt_ndarray_from_python", "NRT_adapt_ndarray_to_python_acqref"} <= set(entry["undefined"])
    par, = no._read(no.object_file(compiled["path"], "par"))["entries"].values()
    assert par["parallel"] and "numba_parallel_for" in par["undefined"]


def test_light_kernel_runs_the_cached_code(compiled):
    serial = _light(compiled, "serial")
    s, out = serial(X, Y)
    s0, out0 = compiled["want"]["serial"]
    assert s == s0 and np.array_equal(out, out0) and out.flags.writeable and out.base is not X
    with pytest.raises(ValueError, match="x and y differ in length"):
        serial(X, Y[:-1])
    assert serial._dispatcher is None, "a cached signature went to numba"
    par = _light(compiled, "par")
    assert par(X, 0.5) == pytest.approx(compiled["want"]["par"], rel=1e-13)
    stats = jit_stats(serial)
    assert (stats["loads"], stats["compiles"], stats["signatures"], stats["object_cache_loads"]) == (1, 0, 1, 1)


def test_light_kernel_answers_as_a_dispatcher(compiled):
    serial = _light(compiled, "serial")
    sig = tuple(serial.typeof_pyval(a) for a in (X, Y))
    assert sig == (no.arg_key(X), no.arg_key(Y))
    assert sig in serial.overloads
    entry = serial.overloads[sig].entry_point
    assert entry(X, Y)[0] == compiled["want"]["serial"][0]
    numba_sig = (numba.typeof(X), numba.typeof(Y))
    assert serial.overloads[numba_sig].entry_point is entry and serial.compile(numba_sig) is entry
    assert serial.cached([("a", X.dtype.str, 1, "C", False), ("a", Y.dtype.str, 1, "C", False)])
    assert serial._cache.events[-1]["event"] == "load" and serial._dispatcher is None


def test_light_kernel_links_its_cached_signatures_ahead(compiled):
    serial = _light(compiled, "serial")
    desc = [("a", X.dtype.str, 1, "C", False), ("a", Y.dtype.str, 1, "C", False)]
    assert not serial.ready(desc)
    assert serial.link_cached() == 1
    assert serial.ready(desc) and not serial.ready([("a", "<f4", 1, "C", False)] * 2)
    assert serial(X, Y)[0] == compiled["want"]["serial"][0] and serial._dispatcher is None


def test_other_signatures_go_to_numba(compiled):
    serial = _light(compiled, "serial")
    ro = X.copy()
    ro.flags.writeable = False                  # another numba signature: readonly array
    s, out = serial(ro, Y)
    assert serial._dispatcher is compiled["serial"]
    assert s == compiled["want"]["serial"][0] and np.array_equal(out, compiled["want"]["serial"][1])
    xf = X.astype(np.float32)
    assert serial(xf, xf)[0] == pytest.approx(float(np.sum(compiled["serial"](xf, xf)[1], dtype=np.float64)),
                                              rel=1e-5)
    assert serial.signatures                    # introspection delegates to the dispatcher


def test_damaged_or_foreign_file_is_not_used(compiled, tmp_path):
    src = no.object_file(compiled["path"], "serial")
    kernel_path = tmp_path / compiled["path"].name
    kernel_path.write_text(SRC)
    dst = no.object_file(kernel_path, "serial")
    dst.parent.mkdir()
    raw = bytearray(src.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    dst.write_bytes(bytes(raw))
    assert no.open_kernel(kernel_path, "serial", "m", "t", lambda: None) is None
    assert not dst.exists(), "a damaged object cache file was kept"
    content = no._read(src)
    no._write(dst, {**content, "abi": content["abi"] + "|another numba"})
    assert no.open_kernel(kernel_path, "serial", "m", "t", lambda: None) is None
    no._write(dst, {**content, "magic": ("x86_64-unknown-linux-gnu", "another-cpu", "")})
    assert no.open_kernel(kernel_path, "serial", "m", "t", lambda: None) is None
    no._write(dst, content)
    assert no.open_kernel(kernel_path, "serial", "m", "t", lambda: None) is not None


def test_switched_off_by_environment(monkeypatch):
    assert no.enabled()
    for var, value in (("SYMGRAD_NUMBA_OBJECTS", "0"), ("NUMBA_DISABLE_JIT", "1"), ("NUMBA_CPU_NAME", "generic")):
        with monkeypatch.context() as mp:
            mp.setenv(var, value)
            assert not no.enabled(), var


# =========================================================================== a fresh process

FRESH = r"""
import json, sys
import numpy as np
from codegen.cache import load_kernel
from codegen.numba_cache import jit_stats
src = open(sys.argv[1]).read()
x = np.linspace(-2.0, 3.0, 4001)
y = np.cos(x)
serial, _ = load_kernel(src, "serial", prefix="t_obj")
par, _ = load_kernel(src, "par", prefix="t_obj")
res = {"kinds": [type(serial).__name__, type(par).__name__]}
s, out = serial(x, y)
res["serial"] = [s, out.tolist()]
res["par"] = par(x, 0.5)
try:
    serial(x, y[:-1])
except ValueError as exc:
    res["raised"] = str(exc)
res["numba_imported"] = "numba" in sys.modules
res["stats"] = {k: {n: v for n, v in jit_stats(f).items() if n != "events"} for k, f in (("serial", serial),
                                                                                        ("par", par))}
res["strided"] = serial(x[::2], y[::2])[0]              # a new signature (layout A): numba's dispatcher
res["numba_after_new_signature"] = "numba" in sys.modules
res["serial_again"] = serial(x, y)[0]
import numba
@numba.njit(parallel=True)
def own(v):
    t = 0.0
    for i in numba.prange(v.shape[0]):
        t += v[i]
    return t
res["numba_parallel"] = own(x)
res["par_again"] = par(x, 0.5)
print("RESULT" + json.dumps(res))
"""


def test_fresh_process_runs_cached_kernels_without_numba(compiled, tmp_path):
    src = tmp_path / "src.py"
    src.write_text(SRC)
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(compiled["folder"]))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    for k in ("SYMGRAD_DISABLE_CACHE", "SYMGRAD_NUMBA_OBJECTS", "NUMBA_DISABLE_JIT"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, "-c", FRESH, str(src)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert res["kinds"] == ["LightKernel", "LightKernel"]
    assert not res["numba_imported"], "a cached signature imported numba"
    s0, out0 = compiled["want"]["serial"]
    assert res["serial"][0] == s0 and res["serial"][1] == out0.tolist()
    assert res["par"] == pytest.approx(compiled["want"]["par"], rel=1e-13)
    assert res["raised"] == "x and y differ in length"
    for name in ("serial", "par"):
        st = res["stats"][name]
        assert (st["loads"], st["compiles"], st["rejected"], st["signatures"]) == (1, 0, 0, 1), (name, st)
    assert res["numba_after_new_signature"] and res["serial_again"] == s0
    assert res["strided"] == compiled["serial"](X[::2], Y[::2])[0]
    assert res["numba_parallel"] == pytest.approx(float(X.sum()), rel=1e-12)
    assert res["par_again"] == res["par"]
