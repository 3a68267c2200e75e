"""codegen.emitted: IR bytes that depend on structure alone, the unevaluated rebuild another process checks, the
emitter fingerprint in the key, and remembered sources that are verified against their hash."""
from __future__ import annotations

import pickle

import pytest
import sympy as sp

from codegen import cache as cg_cache
from codegen import emitted, ir
from codegen.numba import emit_numba

A, B = sp.symbols("v0 v1")


def _kernel(expr: sp.Expr, name: str = "k") -> ir.Kernel:
    params = (ir.Param("v0", 0, (8,), "float64"), ir.Param("v1", 1, (8,), "float64"))
    body = (ir.Elementwise("t0", expr, (8,), "float64"),)
    return ir.Kernel(name, params, body, ("t0",))


# association kept unevaluated, as the lowering keeps torch's order
UNEVALUATED = sp.Mul(sp.Mul(A, 3, evaluate=False), sp.Add(B, 2, evaluate=False), evaluate=False)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
    cg_cache.reset_cache_dir()
    yield tmp_path
    cg_cache.reset_cache_dir()


def test_blob_depends_on_structure_not_on_sharing():
    shared = sp.sin(A)
    k1 = _kernel(shared * shared + 1)
    k2 = _kernel(sp.sin(sp.Symbol("v0")) ** 2 + 1)       # the same expression from distinct objects
    assert emitted.ir_blob(k1) == emitted.ir_blob(_kernel(shared * shared + 1))
    assert emitted.ir_blob(k1) == emitted.ir_blob(k2)
    assert emitted.ir_blob(k1) != emitted.ir_blob(k1, out_params=(0,))
    other = sp.Mul(A, sp.Mul(3, sp.Add(B, 2, evaluate=False), evaluate=False), evaluate=False)
    assert emitted.ir_blob(_kernel(UNEVALUATED)) != emitted.ir_blob(_kernel(other))   # another association


def test_unevaluated_rebuild_emits_the_same_source():
    k = _kernel(UNEVALUATED)
    blob = emitted.ir_blob(k, (0,))
    assert pickle.loads(blob)[0] != k            # an ordinary unpickle evaluates: not the same IR
    got = emitted.load_ir(blob)
    assert got is not None and got == (k, (0,))
    assert emit_numba(got[0]) == emit_numba(k)


def test_rebuild_refuses_bytes_it_cannot_reproduce():
    k = _kernel(UNEVALUATED)
    assert emitted.load_ir(pickle.dumps((k, ()), protocol=5)) is None      # memoised pickle: other bytes


class Custom(sp.Function):
    """Defined outside codegen/sympy/numpy: its code is not in the fingerprint."""


def test_untrusted_classes_are_not_keyed():
    with pytest.raises(emitted.Untrusted, match="Custom"):
        emitted.ir_blob(_kernel(Custom(A) + B))


def test_key_covers_emitter_code(monkeypatch):
    blob = emitted.ir_blob(_kernel(A + B))
    key = emitted.source_key(blob)
    assert key == emitted.source_key(blob) and key != emitted.source_key(blob, "other emitter")
    monkeypatch.setattr(emitted, "_FINGERPRINT", "f" * 64)     # e.g. an edited codegen module
    assert emitted.source_key(blob) != key


def test_remember_and_lookup_verify_the_source(cache, monkeypatch):
    src = "# a numba kernel\nX = 1\n"
    cg_cache.load_kernel(src, "X", prefix="numba")
    key = "ab" * 20
    assert emitted.lookup(key) is None
    emitted.remember(key, src)
    assert emitted.lookup(key) == src
    (path,) = cache.glob("numba_*.py")
    path.write_text(src + "# edited\n")          # no longer the content its name hashes
    assert emitted.lookup(key) is None
    (cache / emitted.FOLDER / f"{key}.ref").write_text("../../etc/passwd\n")
    assert emitted.lookup(key) is None
    monkeypatch.setenv("SYMGRAD_DISABLE_CACHE", "1")
    emitted.remember("cd" * 20, src)
    assert emitted.lookup("cd" * 20) is None and not (cache / emitted.FOLDER / f"{'cd' * 20}.ref").exists()
