"""``codegen``'s parts talk through public interfaces: no private name of another module imported; and every
emitter takes every IR statement type through its table, failing loudly (``ir.Unsupported``, naming the type)
on one it has no entry for. (No import of symgrad, no cycle, deferred imports only for numba / scipy: the
package-wide ``tests/test_layers.py``.)

Every ``import`` counts, at module level and inside functions, except those under ``if TYPE_CHECKING:``.
A module's package ``__init__`` running first is not an edge (only what a module names is).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
import sympy as sp

from codegen import emit_numba, emit_numpy, ir

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "codegen"

#: what a function-level import may import: heavy dependencies (and the codegen part that imports numba)
DEFERRABLE = ("numba", "scipy", "codegen.numba")


@dataclass(frozen=True)
class Edge:
    source: str          # the importing module
    target: str          # the module imported (a codegen module where it is one)
    names: tuple         # the names taken from it (``from x import a, b``)
    line: int
    in_function: bool
    text: str            # the source line


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    text = path.read_text()
    lines = text.splitlines()
    is_package = path.name == "__init__.py"
    edges: list[Edge] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for x in child.orelse:
                    visit(x, in_function)
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    edges.append(Edge(name, alias.name, (), child.lineno, in_function, lines[child.lineno - 1]))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:       # ``from pkg import module`` names the module
                    sub = f"{target}.{alias.name}"
                    edges.append(Edge(name, sub if sub in modules else target,
                                      () if sub in modules else (alias.name,), child.lineno, in_function,
                                      lines[child.lineno - 1]))
            visit(child, inner)

    visit(ast.parse(text), False)
    return edges


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    modules = _modules()
    assert "codegen.numba.plan" in modules and "codegen.numpy.emit" in modules
    return [e for name, path in modules.items() for e in _imports(name, path, modules)]


def test_no_private_name_of_another_module(edges):
    modules = set(_modules())
    bad = [f"{e.source}:{e.line}: {e.text.strip()}" for e in edges
           if e.target in modules and e.target != e.source
           and any(n.startswith("_") and not n.startswith("__") for n in e.names)]
    assert not bad, "imports of another codegen module's private names:\n" + "\n".join(bad)


# ---------------------------------------------------------------------------- dispatch tables


@dataclass(frozen=True)
class Mystery(ir.Statement):
    """A statement type no emitter knows."""

    target: str
    arg: str
    shape: tuple
    dtype: str
    note: str = ""


def test_every_statement_type_shares_the_base_and_has_an_emission():
    from codegen.numba.emit import STATEMENTS as NUMBA
    from codegen.numpy.emit import EMIT as NUMPY

    for st in ir.STATEMENTS:
        assert issubclass(st, ir.Statement)
        assert {"target", "shape", "dtype", "note"} <= set(st.__dataclass_fields__), st
    assert set(NUMPY) == set(ir.STATEMENTS)
    assert set(NUMBA) == set(ir.STATEMENTS) - set(ir.NUMPY_ONLY)


@pytest.mark.parametrize("emit", [emit_numpy, emit_numba], ids=["numpy", "numba"])
def test_unknown_statement_fails_loudly(emit):
    kernel = ir.Kernel("k", (ir.Param("v0", 0, (4,), "float64"),),
                       (Mystery("t0", "v0", (4,), "float64"),), ("t0",))
    with pytest.raises(ir.Unsupported, match="Mystery"):
        emit(kernel)
    # what callers catch to keep the numpy kernel when numba refuses IR
    assert issubclass(ir.Unsupported, NotImplementedError)


def test_out_params_are_an_emission_option():
    """``out=``: the outputs the kernel allocates are the caller's arrays, the others stay returned."""
    x = ir.Param("v0", 0, (5,), "float64")
    sym = sp.Symbol("v0", real=True)
    kernel = ir.Kernel("k", (x,), (ir.Elementwise("t0", 2 * sym, (5,), "float64"),
                                   ir.Reduce("t1", "sum", "t0", (0,), False, (), "float64")),
                       ("t1", "t0", "v0"))
    src = emit_numba(kernel, out_params=(1, 2))
    assert "def k(v0, out1, out2):" in src and "t0_arr = out1  # the caller's array" in src
    assert "return (numpy.float64(t1), t0_arr, v0)" in src
    assert emit_numba(kernel, out_params=()) == emit_numba(kernel)
    with pytest.raises(ValueError, match="output positions"):
        emit_numba(kernel, out_params=(3,))
