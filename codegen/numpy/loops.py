"""Emission of ``ir.Scan`` as numpy source: the step kernel as a nested function, the loop a Python ``for``."""
from __future__ import annotations

from collections.abc import Callable

from .. import ir


def emit_scan(st: ir.Scan, emit_kernel: Callable[[ir.Kernel], str]) -> list[str]:
    """The lines (indented for a kernel body) computing ``st.target``; ``emit_kernel`` prints the step."""
    t = st.target
    step = emit_kernel(st.body)
    step = step[step.index("def "):]          # the nested function, without the module header
    lines = ["    " + line if line else "" for line in step.rstrip("\n").split("\n")]
    groups = {"carry": f"({t}_c,)", "row": f"({st.xs}[{t}_k],)" if st.xs is not None else "()",
              "step": f"(numpy.int64({st.start} + {t}_k),)" if st.cond is None else "()",
              "const": "(" + "".join(f"{p}, " for p in st.consts) + ")"}
    call = f"{st.body.name}({', '.join(groups[g] for g in st.body.groups)})"
    if st.cond is not None:
        cond = emit_kernel(st.cond)
        lines += ["    " + line if line else "" for line in cond[cond.index("def "):].rstrip("\n").split("\n")]
        test = f"{st.cond.name}({', '.join(groups[g] for g in st.cond.groups)})[0]"
        return lines + [f"    {t}_c = numpy.asarray({st.init}, dtype=numpy.{st.dtype})",
                        f"    while {test}:",
                        f"        {t}_c = numpy.asarray({call}[0], dtype=numpy.{st.dtype})",
                        f"    {t} = {t}_c"]
    steps = f"range({st.length} - 1, -1, -1)" if st.reverse else f"range({st.length})"
    head = st.carry_width - st.acc_width
    y = 2 if st.acc_width else 1
    lines.append(f"    {t}_c = numpy.array({st.init}, dtype=numpy.{st.dtype})")
    if st.y_width:
        lines.append(f"    {t}_y = numpy.empty(({st.length}, {st.y_width}), dtype=numpy.{st.dtype})")
    lines.append(f"    for {t}_k in {steps}:")
    lines.append(f"        {t}_r = {call}")
    if st.acc_width:          # running sums: the increment added in place, before the rest of the carry is
        # overwritten (the increment may be a view of it: a closed-over value added to the carry has λ as its own)
        lines.append(f"        {t}_c[{head}:] += {t}_r[1]")
        lines.append(f"        {t}_c[:{head}] = {t}_r[0]")
    else:
        lines.append(f"        {t}_c = numpy.asarray({t}_r[0], dtype=numpy.{st.dtype})")
    if st.y_width:
        lines.append(f"        {t}_y[{t}_k] = {t}_r[{y}]")
        lines.append(f"    {t} = numpy.concatenate(({t}_c, {t}_y.ravel()))")
    else:
        lines.append(f"    {t} = {t}_c")
    return lines
