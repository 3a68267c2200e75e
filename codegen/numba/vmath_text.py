"""The text side of ``vmath``: what a kernel inlines (``inline``), its module-level ``PRELUDE`` and the helper
of each function (``NAMES``), read from ``vmath.py``'s source without importing it (which jits the helpers,
hence imports numba): emitting a numba kernel needs no numba, and a warm process may then never import it
(``codegen.numba_object``)."""
from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from pathlib import Path

__all__ = ["NAMES", "PRELUDE", "inline"]

#: SymPy function name -> the helper that computes it (float64 arguments).
NAMES = {"exp": "_vm_exp", "log": "_vm_log", "log1p": "_vm_log1p", "sin": "_vm_sin", "cos": "_vm_cos",
         "tanh": "_vm_tanh"}

_TEXT = Path(__file__).with_name("vmath.py").read_text()

#: What a kernel that inlines the helpers needs at module level (the bit casts and two constants),
#: copied from this file (after the kernel's ``import numba``, ``import numpy``).
PRELUDE = _TEXT[_TEXT.index("# ----- kernel prelude: begin"):_TEXT.index("# ----- kernel prelude: end")].rstrip() + "\n"

_FUNCS = {f.name: f for f in ast.parse(_TEXT).body
          if isinstance(f, ast.FunctionDef) and f.name.startswith("_vm_") and f.name not in ("_vm_bits", "_vm_float")}
_GLOBALS = frozenset({"_vm_bits", "_vm_float", "_VM_SHIFT", "_VM_NAN", "numpy", "abs"})


def inline(name: str, arg: str, fresh: Callable[[str], str], prefix: str) -> tuple[list[str], str]:
    """Straight-line statements computing helper ``name`` (``"_vm_sin"``...) of the code ``arg``:
    the helper's body with the helpers it calls inlined, every local named
    ``fresh(f"{prefix}_{local}")`` (``{prefix}_{callee}_{local}`` for a callee's).
    Returns (lines, the expression of the result). A kernel inlines them rather than calling the
    jitted helpers: numba would compile each helper as a function of its own (typing, lowering and a
    Python wrapper each), which costs more than the kernel itself."""
    lines: list[str] = []
    x = fresh(f"{prefix}_x")
    lines.append(f"{x} = numpy.float64({arg})")
    return lines, _inline(name, [x], fresh, prefix, lines)


def _inline(name: str, args: list[str], fresh: Callable[[str], str], prefix: str, lines: list[str]) -> str:
    fn = _FUNCS[name]
    env = dict(zip((a.arg for a in fn.args.args), args))

    class Rename(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
                callee = node.func.id
                vals = []
                for a in node.args:
                    code = ast.unparse(a)
                    if not isinstance(a, (ast.Name, ast.Constant)):
                        tmp = fresh(f"{prefix}_{callee[4:]}_arg")
                        lines.append(f"{tmp} = {code}")
                        code = tmp
                    vals.append(code)
                return ast.Name(_inline(callee, vals, fresh, f"{prefix}_{callee[4:]}", lines), ast.Load())
            return node

        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in _GLOBALS or node.id in _FUNCS:
                return node
            if node.id not in env:
                env[node.id] = fresh(f"{prefix}_{node.id}")
            return ast.Name(env[node.id], node.ctx)

    body = copy.deepcopy(fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body)   # transformed in place
    for st in body[:-1]:
        if not isinstance(st, ast.Assign):
            raise AssertionError(f"{name}: only assignments before the return can be inlined")  # pragma: no cover
        value = Rename().visit(st.value)          # the value first: a target may be a new name
        targets = [Rename().visit(t) for t in st.targets]
        lines.append(f"{' = '.join(ast.unparse(t) for t in targets)} = {ast.unparse(value)}")
    ret = body[-1]
    if not isinstance(ret, ast.Return):
        raise AssertionError(f"{name}: must end with its return")  # pragma: no cover
    out = fresh(f"{prefix}_r")
    lines.append(f"{out} = {ast.unparse(Rename().visit(ret.value))}")
    return out
