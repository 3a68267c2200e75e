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
