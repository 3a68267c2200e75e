"""The seed walkthrough prints exactly what PyTorch prints (object addresses masked)."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "seed_walkthrough.py"
ADDR = re.compile(r"0x[0-9a-fA-F]+")


def _run(source: str) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(source, str(EXAMPLE), "exec"), {"__name__": "__main__"})  # noqa: S102
    return ADDR.sub("0xADDR", buf.getvalue())


def _torch_part() -> str:
    text = EXAMPLE.read_text()
    return text[: text.index("# FORMULAS")]


def test_walkthrough_matches_torch_byte_for_byte():
    pytest.importorskip("torch")
    part = _torch_part()
    assert "import symgrad as torch" in part
    ours = _run(part)
    theirs = _run(part.replace("import symgrad as torch", "import torch"))
    assert ours == theirs
    assert "grad_fn=<MeanBackward0>" in ours and "tensor([2.0000, 0.2000, 0.0200, 0.0020])" in ours


def test_walkthrough_prints_formulas():
    out = _run(EXAMPLE.read_text())
    assert "d(out)/dx       = 3*x/2 + 3" in out
    assert "x.grad          = 3*x/2 + 3" in out
    assert "after x.sum().backward(), x.grad = 3*x/2 + 4" in out
    assert "const(y2) + x**2" in out


def test_trust_constr_example_converges_with_the_sparse_hessian():
    import importlib.util
    path = EXAMPLE.parent / "rosenbrock_trust_constr.py"
    spec = importlib.util.spec_from_file_location("rosenbrock_trust_constr", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = mod.main(12)
    assert res.success, res.message
    assert abs(res.x - 1).max() < 1e-6
    assert "34 structural non-zeros" in buf.getvalue()  # tridiagonal: 12 + 2 * 11
