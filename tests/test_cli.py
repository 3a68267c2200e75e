"""The symgrad command."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from symgrad.cli import main


def test_grad_expression(capsys):
    assert main(["grad", "mean(3*(x+2)**2)", "--wrt", "x", "--shape", "x=2,2", "--latex"]) == 0
    out = capsys.readouterr().out
    assert "d f/d x = 3*x/2 + 3" in out
    assert r"\frac{3 x}{2} + 3" in out


def test_grad_two_variables(capsys):
    main(["grad", "sum(sin(x)*exp(-y**2))", "--shape", "x=3", "--shape", "y=3"])
    out = capsys.readouterr().out
    assert "d f/d x = exp(-y**2)*cos(x)" in out
    assert "d f/d y = -2*y*exp(-y**2)*sin(x)" in out


def test_grad_takes_any_symgrad_function_and_refuses_unknown_ones(capsys):
    main(["grad", "sum(erf(x)*atan(y))", "--shape", "x=3", "--shape", "y=3"])
    out = capsys.readouterr().out
    assert "d f/d x = 2*exp(-x**2)*atan(y)/sqrt(pi)" in out
    assert "d f/d y = erf(x)/(y**2 + 1)" in out
    import pytest
    with pytest.raises(SystemExit, match="unknown function 'foo'"):
        main(["grad", "foo(x)"])


def test_explain_function(tmp_path: Path, capsys):
    src = tmp_path / "model.py"
    src.write_text("import symgrad as sg\n\ndef energy(q, p):\n    return (p**2 / 2 + 1 - sg.cos(q)).sum()\n")
    assert main(["explain", f"{src}:energy", "--shape", "q=3", "--shape", "p=3", "--source"]) == 0
    out = capsys.readouterr().out
    assert "denergy/dq = sin(q)" in out
    assert "denergy/dp = p" in out
    assert "def value_and_grad" in out


def test_tour_runs():
    r = subprocess.run([sys.executable, "-m", "symgrad.cli", "tour"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "3*x/2 + 3" in r.stdout and "gradients match the hand-derived ones: True" in r.stdout
