"""``ir.Scan`` for numba: the loop as a module-level ``njit`` function of its own, called from the kernel.

The loop function holds the carry between steps. When every value of the step has at most
``scalar.SCALAR_LIMIT`` elements (a small state: an ODE, a recurrence), the step is straight-line scalar code
inlined in the loop (``scalar.scalar_lines``): no array is allocated per step, like CasADi's SX or a
hand-written numba function. Otherwise the step is the numba kernel of the body (``emit_numba`` of it, loaded
from the kernel cache when the module is imported) called once per step.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable

from .. import ir
from . import scalar
from .folds import src_name, standalone
from .plan import Planner
from .render import np_dtype


def plan_scan(em: Planner, st: ir.Scan, emit_body: Callable[[ir.Kernel], str]) -> None:
    """Place the scan as an array made by its loop function (``emit_body`` prints an array-mode step)."""
    args = [st.init] + ([st.xs] if st.xs is not None else []) + list(st.consts)
    cls = em.fresh_cls(tuple(st.shape), [None])
    standalone(em, st, cls, args, _render_scan, scan=st, emit_body=emit_body)


def _render_scan(em: Any, op: Any, out: list[str], ind: int) -> None:
    st: ir.Scan = op.data["scan"]
    name = em.fresh(f"_{st.target}_loop")
    em.chunk_fns.append(loop_function(st, name, op.data["emit_body"]))
    srcs = [src_name(s) for s in op.data["srcs"]]
    out.append(f"{'    ' * ind}{op.val.arr} = {name}({', '.join(srcs)})")


def _step_args(kernel: ir.Scan | ir.Kernel, c: str, x: str, k: str) -> list[str]:
    by_group = {"carry": c, "row": x, "step": k}
    body = kernel.body if isinstance(kernel, ir.Scan) else kernel
    return [by_group[q.group] if q.group != "const" else f"p{q.index}" for q in body.params]


def _scalar_ok(body: ir.Kernel) -> bool:
    ok = getattr(scalar, "scalarizable", None)
    return ok is not None and SCALAR and ok(body)


#: the pass size from which an array-mode step's transcendentals are ``vmath``'s vectorised ones
VECTOR_STEP = 32


#: whether small steps become inlined scalar code (else every step calls the body's array kernel)
SCALAR = True


def loop_function(st: ir.Scan, name: str, emit_body: Callable[[ir.Kernel], str]) -> str:
    """Module source defining ``name(init[, xs], p0, ...)``, returning the scan's flat value."""
    params = ["init"] + (["xs"] if st.xs is not None else []) + [f"p{i}" for i in range(len(st.consts))]
    dt = np_dtype(st.dtype)
    steps = f"range({st.length} - 1, -1, -1)" if st.reverse else f"range({st.length})"
    wc, wy = st.carry_width, st.y_width
    total = wc + (st.length or 0) * wy
    what = f"{st.length} steps" if st.cond is None else "while its condition holds"
    head = [f"def {name}({', '.join(params)}):", f'    """the loop of {st.target}: {what}"""']
    if _scalar_ok(st.body) and (st.cond is None or _scalar_ok(st.cond)):
        return _scalar_loop(st, name, head, steps, dt, total)
    step = f"_{name}_step"
    # the step writes its new carry, increment and output into the loop's buffers (``out=`` form: no array
    # allocated per step for them; an output the step does not allocate, such as a param returned as given,
    # comes back as its own array and is copied the same way)
    n_out = 1 + bool(st.acc_width) + bool(wy)
    src = emit_body(st.body, out_params=tuple(range(n_out)), vector_threshold=VECTOR_STEP)
    # element loops only: numba's slice assignments (``out[3:] = ys.reshape(-1)``) cost seconds of compile
    first = wc - st.acc_width
    lines = [f"{step} = _load_kernel({src!r}, {st.body.name!r}, prefix='numba')[0]", "", "",
             '@numba.njit(cache=True, error_model="numpy")', *head,
             f"    out = numpy.empty({total}, {dt})",
             f"    c = numpy.empty({wc}, {dt})",
             f"    for j in range({wc}):",
             "        c[j] = init[j]",
             f"    buf_c = numpy.empty({first}, {dt})"]
    bufs = ["buf_c"]
    if st.acc_width:
        lines.append(f"    buf_d = numpy.empty({st.acc_width}, {dt})")
        bufs.append("buf_d")
    if wy:
        bufs.append(f"out[{wc} + k * {wy}:{wc} + (k + 1) * {wy}]")
    lines.append(f"    for k in {steps}:")
    if st.cond is not None:
        steps_cond = f"_{name}_cond"
        lines[0] += f"\n{steps_cond} = _load_kernel({emit_body(st.cond)!r}, {st.cond.name!r}, prefix='numba')[0]"
        test = f"{steps_cond}({', '.join(_step_args(st.cond, 'c', 'None', '0'))})[0]"
        lines[-1] = f"    while {test}:"
    x = "xs[k]" if st.xs is not None else "None"
    args = _step_args(st, "c", x, f"numpy.int64({st.start} + k)") + bufs
    lines.append(f"        r = {step}({', '.join(args)})")
    if wy:                    # the output first: it may be the carry itself (a history stores it)
        lines.append(f"        y = r[{2 if st.acc_width else 1}]")
        lines.append(f"        for j in range({wy}):")
        lines.append(f"            out[{wc} + k * {wy} + j] = y[j]")
    if st.acc_width:          # running sums: the increment added in place
        # the increment before the head: it may be a view of the carry's head (λ itself, for a value added to it)
        lines += ["        d = r[1]", f"        for j in range({st.acc_width}):", f"            c[{first} + j] += d[j]"]
    lines += ["        h = r[0]", f"        for j in range({first}):", "            c[j] = h[j]"]
    lines.append(f"    for j in range({wc}):")
    lines.append("        out[j] = c[j]")
    lines.append("    return out")
    return "from codegen.cache import load_kernel as _load_kernel\n" + "\n".join(lines) + "\n"


def _scalar_loop(st: ir.Scan, name: str, head: list[str], steps: str, dt: str, total: int) -> str:
    used: set[str] = set()

    def fresh(stem: str) -> str:
        k = 0
        while f"{stem}_{k}" in used:
            k += 1
        used.add(f"{stem}_{k}")
        return f"{stem}_{k}"

    wc, wy = st.carry_width, st.y_width
    carry = [fresh("carry") for _ in range(wc)]
    pre: list[str] = [f"    {c} = {dt}(init[{j}])" for j, c in enumerate(carry)]
    inputs: dict[str, list[str]] = {}
    params = {q.name: q for q in (*st.body.params, *(st.cond.params if st.cond is not None else ()))}
    for q in params.values():
        n = math.prod(q.shape)
        if q.group == "carry":
            inputs[q.name] = carry
        elif q.group == "row":
            inputs[q.name] = [f"xs[k, {j}]" for j in range(n)]
        elif q.group == "step":
            inputs[q.name] = [f"numpy.int64({st.start} + k)"]
        else:
            names = [fresh(f"p{q.index}") for _ in range(n)]
            if q.shape:
                pre += [f"    {v} = p{q.index}[{', '.join(map(str, ix))}]"
                        for v, ix in zip(names, itertools.product(*map(range, q.shape)))]
            else:
                pre.append(f"    {names[0]} = numpy.asarray(p{q.index})[()]")
            inputs[q.name] = names
    lines, outs = scalar.scalar_lines(st.body, inputs, fresh)
    new_c = outs[0]
    if st.acc_width:          # running sums: the increments added to the carry's last elements
        first = wc - st.acc_width
        new_c = list(new_c) + [f"{carry[first + j]} + {d}" for j, d in enumerate(outs[1])]
        outs = [new_c] + outs[2:]
    if st.cond is None:
        loop = [f"    for k in {steps}:"]
        select = lines
    else:
        cond_lines, (test,) = scalar.scalar_lines(st.cond, inputs, fresh)
        loop = ["    while True:", *(f"        {line}" for line in cond_lines), f"        if not {test[0]}:",
                "            break"]
        select = lines + cond_lines
    loop += [f"        {line}" for line in lines]
    if wy:
        loop += [f"        out[{wc} + k * {wy} + {j}] = {e}" for j, e in enumerate(outs[1])]
    loop.append(f"        {', '.join(carry)}{',' if wc == 1 else ''} = {', '.join(f'{dt}({e})' for e in new_c)}"
                f"{',' if wc == 1 else ''}")
    body = ['@numba.njit(cache=True, error_model="numpy")', *head, *pre, f"    out = numpy.empty({total}, {dt})"]
    body += loop
    body += [f"    out[{j}] = {c}" for j, c in enumerate(carry)]
    body.append("    return out")
    prelude = scalar.PRELUDE if any(scalar.SELECT in line for line in select) else ""
    return prelude + "\n" + "\n".join(body) + "\n"

