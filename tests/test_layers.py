"""The package imports one way: core <- ops <- derive <- kernels <- eager <- compiler <- the namespaces.

Every import in ``symgrad/`` and ``codegen/`` is scanned (module level and inside functions; ``TYPE_CHECKING``
blocks aside). An import from a lower layer to a higher one fails, so does any cycle between modules, and so
does a function-level import that does not defer a heavy dependency (numba, scipy, or a module of ours that imports
them) with a comment saying so. ``import symgrad`` itself imports neither.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: layer of each package prefix (longest prefix wins); ``codegen`` never imports symgrad
LAYERS = {
    "codegen": 0, "symgrad.core": 0, "symgrad.ops": 1, "symgrad.derive": 2, "symgrad.kernels": 3,
    "symgrad.eager": 4, "symgrad.compiler": 5, "symgrad": 6,
}
HEAVY = ("numba", "scipy", "llvmlite", "dask", "distributed")  # dask: the optional ``dask`` extra


def _modules() -> dict[str, Path]:
    mods = {}
    for base in ("symgrad", "codegen"):
        for p in sorted((ROOT / base).rglob("*.py")):
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = p
    return mods


MODULES = _modules()


def layer(mod: str) -> int:
    parts = mod.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in LAYERS:
            return LAYERS[".".join(parts[:k])]
    raise KeyError(mod)


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@functools.cache
def imports(mod: str) -> list[tuple[str, int, bool, str]]:
    """(imported module, line, inside a function, the source line) for each import in ``mod``."""
    path = MODULES[mod]
    src = path.read_text()
    lines = src.splitlines()
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: list[tuple[str, int, bool, str]] = []

    def visit(node: ast.AST, in_func: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            func = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    found.append((a.name, child.lineno, in_func, lines[child.lineno - 1]))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                subs = [f"{target}.{a.name}" for a in child.names if f"{target}.{a.name}" in MODULES]
                for t in subs if len(subs) == len(child.names) else [target, *subs]:
                    found.append((t, child.lineno, in_func, lines[child.lineno - 1]))
            visit(child, func)

    visit(ast.parse(src), False)
    return found


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, *_ in imports(m) if t in MODULES and t != m} for m in MODULES}


def test_no_upward_imports():
    bad = [f"{m}:{line} ({layer(m)}) imports {t} ({layer(t)}): {text.strip()}"
           for m in MODULES for t, line, _, text in imports(m) if t in MODULES and layer(t) > layer(m)]
    assert not bad, "\n".join(bad)


def test_codegen_never_imports_symgrad():
    bad = [f"{m}:{line}: {text.strip()}" for m in MODULES if m.startswith("codegen")
           for t, line, _, text in imports(m) if t.split(".")[0] == "symgrad"]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def _heavy_modules() -> set[str]:
    """Modules of the package that import numba, scipy or llvmlite when they load: importing one of them
    inside a function defers that dependency."""
    return {m for m in MODULES if any(not in_func and t.split(".")[0] in HEAVY for t, _, in_func, _ in imports(m))}


def test_function_level_imports_defer_only_heavy_dependencies():
    bad = []
    heavy_modules = _heavy_modules()
    for m in MODULES:
        for t, line, in_func, text in imports(m):
            if not in_func:
                continue
            heavy = t.split(".")[0] in HEAVY or t.startswith("codegen.numba") or t in heavy_modules
            if not heavy or "#" not in text:
                bad.append(f"{m}:{line}: {text.strip()}")
    assert not bad, "\n".join(bad)


def test_no_module_named_like_a_public_function():
    import symgrad

    for name in dir(symgrad):
        obj = getattr(symgrad, name)
        if callable(obj) and not isinstance(obj, type):
            assert f"symgrad.{name}" not in MODULES, name


def test_import_symgrad_imports_neither_numba_nor_scipy():
    import subprocess
    import sys

    code = "import sys, symgrad; print(sorted(m for m in ('numba', 'scipy', 'torch', 'dask') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
