"""The ``out=`` form of a generated kernel: outputs written into the caller's arrays.

``with_out_params(source, name, positions)`` returns ``source`` where function ``name`` takes one more
argument per output position in ``positions`` (``out<k>``, after its own arguments). An output the
function allocates itself at the top of its body (``t = numpy.empty(...)`` or ``numpy.zeros(...)``,
assigned nowhere else and returned once) is bound to that argument instead (zeroed first for
``numpy.zeros``), so the kernel writes into it and returns it; any other output (a param returned as
given, a reshaped array, a 0-d value) is returned as before and the caller copies it. The rewrite
is made line by line on the lines ``ast`` locates, so comments and layout stay as generated.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Sequence

__all__ = ["with_out_params"]

_ALLOCATORS = {"numpy.empty": "", "numpy.zeros": "zeros"}


def _fresh(want: str, taken: set[str]) -> str:
    name = want
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def with_out_params(source: str, name: str, positions: Sequence[int]) -> str:
    """``source`` with function ``name`` writing the outputs at ``positions`` into extra arguments."""
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None or not fn.body or not isinstance(fn.body[-1], ast.Return):
        raise ValueError(f"with_out_params: no function {name!r} ending in a return")
    ret = fn.body[-1].value
    elts = ret.elts if isinstance(ret, ast.Tuple) else [ret]
    if any(not 0 <= k < len(elts) for k in positions):
        raise ValueError(f"with_out_params: output positions {tuple(positions)} of {len(elts)} outputs")
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {a.arg for a in fn.args.args}
    stores = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    returned = Counter(e.id for e in elts if isinstance(e, ast.Name))
    allocs: dict[str, ast.Assign] = {}
    for st in fn.body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and isinstance(st.value, ast.Call) and ast.unparse(st.value.func) in _ALLOCATORS
                and st.lineno == st.end_lineno):
            allocs[st.targets[0].id] = st
    lines = source.splitlines(keepends=True)
    params = []
    for k in positions:
        p = _fresh(f"out{k}", taken)
        params.append(p)
        e = elts[k]
        if not isinstance(e, ast.Name) or e.id not in allocs or stores[e.id] != 1 or returned[e.id] != 1:
            continue
        st = allocs[e.id]
        indent = lines[st.lineno - 1][: st.col_offset]
        zero = _ALLOCATORS[ast.unparse(st.value.func)]
        lines[st.lineno - 1] = (f"{indent}{e.id} = {p}  # the caller's array\n"
                                + (f"{indent}{e.id}.fill(0)\n" if zero else ""))
    head = fn.lineno - 1
    def_line = lines[head]
    m = re.fullmatch(rf"(\s*def {re.escape(name)}\()(.*)(\):.*\n?)", def_line, flags=re.S)
    if m is None:
        raise ValueError(f"with_out_params: the def line of {name!r} is not one line")
    args = m.group(2).strip()
    lines[head] = m.group(1) + ", ".join(([args] if args else []) + params) + m.group(3)
    return "".join(lines)
