"""Lowering: a set of DAG nodes to a codegen ``Kernel``, fusing single-use elementwise chains."""
from __future__ import annotations

from typing import Sequence

import sympy as sp

from codegen import ir
from codegen.cse import rebuild
from codegen.names import comment

from ..core.graph import Node, toposort
from ..ops import A


def _note(node: Node, names: dict[int, str]) -> str:
    """The node as a comment: op, input names, dtype and rank (no sizes or global ids, so the
    same graph gives the same source at any size and in any process)."""
    ins = ", ".join(names.get(i.id, "?") for i in node.inputs)
    return comment(f"{node.op.name}({ins}) -> {node.dtype.name} {node.ndim}-d")


def _substitute(e: sp.Basic, m: dict) -> sp.Basic:
    """``e.xreplace(m)`` without re-evaluating the rebuilt nodes: an op's form is canonical already, and
    SymPy's flattening and assumption queries on every fused expression dominated lowering."""
    if e in m:
        return m[e]
    if not e.args:
        return e
    return rebuild(e, tuple(_substitute(a, m) for a in e.args))


#: the most nodes fused into one elementwise expression (keeps lowering and CSE linear in depth)
MAX_INLINE = 32


def lower(name: str, params: Sequence[tuple[Node, str, int]], outputs: Sequence[Node],
          doc: str = "", groups: tuple[str, ...] = ("v",)) -> tuple[ir.Kernel, list[int]]:
    """A kernel computing ``outputs`` from ``params`` (node, group, index).

    Returns the kernel and the list of (group "v") param indices it actually reads.
    """
    pmap = {n.id: (g, i) for n, g, i in params}
    order = toposort(outputs, stop=lambda n: n.id in pmap)
    uses: dict[int, int] = {}
    fusable_user: dict[int, bool] = {}
    for n in order:
        if n.id in pmap:
            continue
        for i in n.inputs:
            uses[i.id] = uses.get(i.id, 0) + 1
            fusable_user[i.id] = n.op.family == "elementwise"
    out_ids = {o.id for o in outputs}
    names: dict[int, str] = {}
    exprs: dict[int, sp.Expr] = {}
    size: dict[int, int] = {}
    used_params: list[ir.Param] = []
    body: list = []
    counter = 0

    def sym(n: Node) -> sp.Expr:
        return exprs[n.id] if n.id in exprs else sp.Symbol(names[n.id], real=True)

    for n in order:
        if n.id in pmap:
            g, i = pmap[n.id]
            names[n.id] = f"{g}{i}"
            used_params.append(ir.Param(names[n.id], i, n.shape, n.dtype.np.name, g))
            continue
        if n.op.name == "scalar":
            exprs[n.id] = sp.sympify(n.attr("value"))
            names[n.id] = repr(n.attr("value"))
            continue
        target = f"t{counter}"
        counter += 1
        names[n.id] = target
        if n.op.family == "elementwise":
            form = n.op.scalar_form(len(n.inputs), n.attrs)
            e = _substitute(form, {A[k]: sym(x) for k, x in enumerate(n.inputs)})
            casts = any(x.dtype != n.dtype for x in n.inputs if x.op.name != "scalar")
            size[n.id] = 1 + sum(size.get(x.id, 0) for x in n.inputs if x.id in exprs)
            # inline single-use values, but bound the fused expression so lowering stays linear
            if (uses.get(n.id, 0) == 1 and n.id not in out_ids and fusable_user.get(n.id) and not casts
                    and size[n.id] <= MAX_INLINE):
                exprs[n.id] = e
                continue
            body.append(ir.Elementwise(target, e, n.shape, n.dtype.np.name, _note(n, names)))
        else:
            for x in n.inputs:
                if x.id in exprs and x.op.name != "scalar":
                    raise AssertionError("an inlined value reached a non-elementwise op")
            args = [names[x.id] if x.op.name != "scalar" else f"numpy.asarray({names[x.id]})" for x in n.inputs]
            stmts = n.op.lower(n, target, args)
            body.extend(stmts[:-1])
            last = stmts[-1]
            body.append(type(last)(**{**last.__dict__, "note": _note(n, names)}))
    result = []
    for o in outputs:
        if o.id in exprs:
            t = f"t{counter}"
            counter += 1
            body.append(ir.Elementwise(t, exprs[o.id], o.shape, o.dtype.np.name, _note(o, names)))
            result.append(t)
        else:
            result.append(names[o.id])
    kernel = ir.Kernel(name, tuple(used_params), tuple(body), tuple(result), doc, groups)
    return kernel, [p.index for p in used_params if p.group == "v"]
