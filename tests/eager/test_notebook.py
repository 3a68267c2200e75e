"""Notebook display, in a real Jupyter kernel (nbclient + ipykernel): formulas as LaTeX in SymPy's convention
(``$\\displaystyle ...$``), a compiled function's formulas with the signature they were derived at (markdown
around the math), a compiled function itself (its signatures, kernels and formulas), a tensor as its repr."""
from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    "import numpy as np\nimport symgrad as sg\nx = sg.tensor([1.0, 2.0], requires_grad=True)\nx",
    "out = (3 * (x + 2) ** 2).mean()\nsg.formula(out)",
    "sg.grad_formula(out, x)",
    "f = sg.value_and_grad(lambda a, b: (sg.sin(a) * b).sum(), argnums=(0, 1))\nf.formulas(np.ones(3), np.ones(3))",
    "f(np.ones(3), np.ones(3))\nf",
    "sg.ones(2, 3)",
]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Each cell's display data, the notebook run once in a fresh kernel started in the repository."""
    tmp = tmp_path_factory.mktemp("notebook")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYMGRAD_CACHE_DIR", str(tmp / "cache"))
        mp.setenv("IPYTHONDIR", str(tmp / "ipython"))
        mp.setenv("JUPYTER_RUNTIME_DIR", str(tmp / "runtime"))
        mp.setenv("PYTHONPATH", str(ROOT))
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": str(ROOT)}})
        client.execute()
    data = []
    for cell in nb.cells:
        results = [o for o in cell.outputs if o.output_type == "execute_result"]
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, errors
        assert len(results) == 1, cell.outputs
        data.append(results[0].data)
    return data


def test_tensor_shows_its_repr(outputs):
    assert outputs[0] == {"text/plain": "tensor([1., 2.], requires_grad=True)"}
    assert outputs[5]["text/plain"] == "tensor([[1., 1., 1.],\n        [1., 1., 1.]])"
    assert set(outputs[5]) == {"text/plain"}


def test_formulas_show_as_latex_in_sympys_convention(outputs):
    f, g = outputs[1], outputs[2]
    assert f["text/plain"] == "mean(3*(x + 2)**2)"
    assert f["text/latex"] == r"$\displaystyle \operatorname{mean}\left(3 \left(x + 2\right)^{2}\right)$"
    assert g["text/plain"] == "3*x + 6"
    assert g["text/latex"] == r"$\displaystyle 3 x + 6$"


def test_compiled_formulas_show_math_and_signature(outputs):
    d = outputs[3]
    assert d["text/plain"].splitlines()[0] == "<lambda>(a, b) = sum(b*sin(a))"
    assert d["text/latex"].startswith(r"$\displaystyle \begin{aligned}") and d["text/latex"].endswith("$")
    for part in (r"f(a, b) &= \operatorname{sum}", r"\frac{\partial f}{\partial a} &= b \cos{\left(a \right)}",
                 r"\frac{\partial f}{\partial b} &= \sin{\left(a \right)}"):
        assert part in d["text/latex"], part
    assert d["text/markdown"].startswith("`<lambda>(a: float64[3], b: float64[3]) -> float64`")
    assert r"\frac{\partial f}{\partial a}" in d["text/markdown"]


def test_compiled_function_shows_signatures_kernels_and_formulas(outputs):
    d = outputs[4]
    assert d["text/plain"] == "<symgrad.value_and_grad of <lambda>>"
    md = d["text/markdown"]
    assert md.startswith("**symgrad.value_and_grad** of `<lambda>`")
    assert "| `(a: float64[3], b: float64[3])` | numpy (first tier) |" in md
    assert r"\frac{\partial f}{\partial b} &= \sin{\left(a \right)}" in md
