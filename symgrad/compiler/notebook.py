"""A compiled function in a notebook: its compiled signatures, the kernel running each, and the formulas of the
last one (``CompiledFunction._repr_markdown_``; Jupyter renders the math of the markdown)."""
from __future__ import annotations

import logging
from typing import Any

from ..eager.formula import CompiledFormulas

log = logging.getLogger("symgrad")

__all__ = ["markdown"]

_PY = {"float64": "float", "int64": "int", "bool": "bool", "complex128": "complex"}


def _sig(f: Any, key: tuple) -> str:
    parts = []
    for i, k in enumerate(key):
        if isinstance(k, tuple) and len(k) == 3:
            kind, dtype, shape = k
            if kind == "py":
                parts.append(f"{f._name(i)}: {_PY.get(str(dtype), dtype)}")
                continue
            dims = f"[{', '.join(map(str, shape))}]" if shape else ""
            parts.append(f"{f._name(i)}: {'Tensor ' if kind == 'sg' else ''}{dtype}{dims}")
        else:
            parts.append(f"{f._name(i)}: {k}")
    return ", ".join(parts)


def _formulas(f: Any, e: Any) -> CompiledFormulas | None:
    names = [f._name(i) for i in range(len(f.params) or len(e.leaves))]
    pairs = [(names[i], g) for i, g in zip(f.argnums, e.grads) if g is not None] if f.mode != "fn" else []
    try:
        return CompiledFormulas(e.out, [g for _, g in pairs], [w for w, _ in pairs],
                                getattr(f.fn, "__name__", "f"), names)
    except Exception as exc:  # noqa: BLE001 - a display must not raise: the table alone then
        log.debug("symgrad: no formulas for the notebook display of %r: %s", f, exc)
        return None


def markdown(f: Any) -> str:
    """Markdown showing a ``CompiledFunction``: a table of its compiled signatures (which kernel runs each:
    the numba kernel once it is ready, else the generated numpy code) and the formulas of the last one."""
    head = f"**symgrad.{f.mode}** of `{getattr(f.fn, '__name__', f.fn)}`"
    entries = list(getattr(f, "_entries", {}).items())
    if not entries:
        return head + ": no signature compiled yet (it traces on its first call)"
    rows = [head, "", "| signature | kernel |", "|---|---|"]
    for key, e in entries:
        live = e.prog.compiled() if hasattr(e.prog, "compiled") else getattr(e.prog, "jit", None)
        kernel = "numba" if live is not None else "numpy (first tier)"
        rows.append(f"| `({_sig(f, key)})` | {kernel} |")
    formulas = _formulas(f, entries[-1][1])
    if formulas is not None:
        rows += ["", f"Formulas at `{formulas.signature_text()}`:", "", "$$", formulas.latex(), "$$"]
    return "\n".join(rows)
