"""What ``import symgrad`` and emitting a numba kernel load (start-up time): no numba, scipy, torch or llvmlite,
and no ``sympy.tensor`` (SymPy imports it on its first ``Add``: no SymPy arithmetic at module level)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CODE = r"""
import json, sys
heavy = ("numba", "scipy", "torch", "llvmlite", "sympy.tensor.tensor", "sympy.combinatorics")
import symgrad
after_import = sorted(m for m in heavy if m in sys.modules)
from codegen.numba import emit_numba
print(json.dumps({"import": after_import, "emitter": "numba" in sys.modules}))
"""


def test_import_and_numba_emitter_stay_light():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd=ROOT, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res == {"import": [], "emitter": False}, out.stdout + out.stderr


GC_CODE = r"""
import gc, json, sys
was = gc.isenabled()
import symgrad
frozen = gc.get_freeze_count()
class Holder:
    pass
h = Holder()
h.me = h                                   # a cycle made after the import: collected at exit as before
h.f = open(sys.argv[1], "w")
h.f.write("flushed at exit")
print(json.dumps({"enabled": gc.isenabled(), "was": was, "frozen": frozen}))
"""


def _gc_run(tmp_path, **env):
    import os
    out_file = tmp_path / "out.txt"
    out = subprocess.run([sys.executable, "-c", GC_CODE, str(out_file)], capture_output=True, text=True, cwd=ROOT,
                         check=True, env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1]), out_file.read_text()


def test_import_freezes_its_objects_and_leaves_the_collector_on(tmp_path):
    res, written = _gc_run(tmp_path)
    assert res["enabled"] and res["was"] and res["frozen"] > 50_000, res
    assert written == "flushed at exit"      # a later cycle's buffered file is still finalised at exit
    res, written = _gc_run(tmp_path, SYMGRAD_GC_FREEZE="0")
    assert res["enabled"] and res["frozen"] == 0 and written == "flushed at exit", res
