"""``index_put(base, values, index, accumulate)``: the one functional write op behind ``t[idx] = v``,
``copy_``, ``fill_``, ``index_put(_)`` and ``index_add(_)``.

``base`` with ``values`` (broadcast to the indexed region, converted to ``base``'s dtype) written at
``index``, or added there (``accumulate``: repeated integer indices add up). Its VJP sends ``g`` with the
written region zeroed to ``base`` (``g`` itself when accumulating) and ``g[index]``, summed to its shape,
to ``values``. It lowers to existing IR only (scatters into zeros and a ``where``), so both backends take it.
Repeated integer targets without ``accumulate`` keep the last value written (numpy's rule, torch's on CPU).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from codegen import ir

from ..core.graph import Node
from .base import REGISTRY, OpDef, apply, register
from .display import Updated, describe
from .index import to_numpy_index
from .reduce import sum_to_node

COPY_SLICES = "torch::autograd::CopySlices"
COPY = "torch::autograd::CopyBackwards"
WHOLE = (("e",),)


def region_shape(shape: tuple[int, ...], spec: tuple) -> tuple[int, ...]:
    """The shape of ``x[spec]`` for ``x`` of ``shape`` (without allocating ``x``)."""
    return np.broadcast_to(np.empty((), np.bool_), shape)[to_numpy_index(spec)].shape


def fit_shape(shape: tuple[int, ...], region: tuple[int, ...]) -> tuple[int, ...]:
    """A value's shape without the leading size-1 dims that the region does not have (torch drops them)."""
    shape = tuple(shape)
    while len(shape) > len(region) and shape[0] == 1:
        shape = shape[1:]
    return shape


def put_into(out: np.ndarray, spec: tuple, values: np.ndarray, accumulate: bool) -> None:
    """``out[spec] = values`` (``+=``, repeated indices adding up, with ``accumulate``), in place."""
    idx = to_numpy_index(spec)
    values = np.asarray(values)
    values = values.reshape(fit_shape(values.shape, region_shape(out.shape, spec)))
    if accumulate:
        np.add.at(out, idx, values.astype(out.dtype, copy=False))
    else:
        with np.errstate(invalid="ignore"):
            out[idx] = values


def _put_eval(base: np.ndarray, values: np.ndarray, index: tuple, accumulate: bool = False,
              fn: str = COPY_SLICES) -> np.ndarray:
    out = np.array(base, copy=True)
    put_into(out, index, values, accumulate)
    return out


def _put_infer(op: OpDef, base: Node, values: Node, index: tuple, accumulate: bool = False,
               fn: str = COPY_SLICES) -> Any:
    return tuple(base.shape), base.dtype


def covers(spec: tuple, shape: tuple[int, ...]) -> bool:
    """Whether ``x[spec]`` is all of ``x`` (``...`` and whole slices only)."""
    dim = 0
    consumed = sum(1 for e in spec if e[0] in "isa")
    for e in spec:
        if e[0] == "e":
            dim += len(shape) - consumed
        elif e[0] == "s":
            start, stop, step = e[1:]
            if not (start in (None, 0) and step in (None, 1) and (stop is None or stop >= shape[dim])):
                return False
            dim += 1
        else:
            return False
    return True


def _put_vjp(node: Node, g: Node) -> tuple:
    base, values = node.inputs
    spec, acc = node.attr("index"), node.attr("accumulate", False)
    gb = gv = None
    if base.requires_grad:
        if acc:
            gb = g
        elif not covers(spec, base.shape):
            gb = apply("index_put", g, apply("scalar", value=0), index=spec, accumulate=False, fn=COPY_SLICES)
    if values.requires_grad:
        region = region_shape(base.shape, spec)
        gv = g if covers(spec, base.shape) and region == tuple(g.shape) else apply("index", g, index=spec)
        fitted = fit_shape(values.shape, region)
        gv = sum_to_node(gv, fitted)
        if fitted != tuple(values.shape):
            gv = apply("reshape", gv, shape=tuple(values.shape))
        if gv.dtype != values.dtype:  # (``apply``'s own ``dtype`` argument would shadow ``to``'s attr)
            gv = Node(REGISTRY["to"], (gv,), (("dtype", values.dtype.name),), gv.shape, values.dtype,
                      requires_grad=gv.requires_grad)
    return gb, gv


def _sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


def _last_writes(spec: tuple, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """For a write whose integer arrays repeat a target: the region positions (flat, ascending) that
    write last to each target and those targets (flat); None when no target repeats."""
    if not any(e[0] == "a" for e in spec):
        return None
    targets = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[to_numpy_index(spec)].ravel()
    rev = targets[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    if len(first_in_rev) == len(targets):
        return None
    keep = np.sort(len(targets) - 1 - first_in_rev)
    return keep, targets[keep]


def _scatter(name: str, v: str, spec: tuple, shape: tuple[int, ...], region: tuple[int, ...], vdt: str, dt: str,
             last_wins: bool) -> list:
    """``name = zeros(shape); name[spec] = v`` as IR: repeated targets keep the last value written (as
    numpy's and the eager write's assignment do) when ``last_wins``, else add up (``IndexAdd``)."""
    last = _last_writes(spec, shape) if last_wins else None
    if last is None:
        return [ir.IndexAdd(name, v, spec, shape, dt)]
    keep, targets = last
    k, r = len(keep), int(np.prod(region))
    return [ir.Reshape(f"{name}_f", v, (r,), vdt),
            ir.Index(f"{name}_k", f"{name}_f", (("a", tuple(int(i) for i in keep), (k,)),), (k,), vdt),
            ir.IndexAdd(f"{name}_u", f"{name}_k", (("a", tuple(int(i) for i in targets), (k,)),),
                        (int(np.prod(shape)),), dt),
            ir.Reshape(name, f"{name}_u", shape, dt)]


def _put_lower(node: Node, target: str, args: list[str]) -> list:
    """Existing IR only, so both backends take it: the values scattered into zeros (``IndexAdd``), and
    ``where(mask, scattered, base)`` with the mask scattered likewise (``base + scattered`` when
    accumulating). The base's own values never enter the written region (no ``inf - inf``)."""
    base, values = node.inputs
    spec, acc = node.attr("index"), node.attr("accumulate", False)
    dt, vdt = node.dtype.np.name, values.dtype.np.name
    region = region_shape(base.shape, spec)
    stmts: list = []
    scalar = values.op.name == "scalar"
    v, vshape = args[1], tuple(values.shape)
    if fit_shape(vshape, region) != vshape:
        vshape = fit_shape(vshape, region)
        stmts.append(ir.Reshape(f"{target}_v", v, vshape, vdt))
        v = f"{target}_v"
    whole = covers(spec, base.shape) and region == tuple(base.shape)
    if scalar and not acc:
        written: sp.Expr = sp.sympify(values.attr("value"))
    else:
        if vshape != region:
            stmts.append(ir.Broadcast(f"{target}_vb", v, region, vdt))
            v = f"{target}_vb"
        if whole and not acc:
            stmts.append(ir.Elementwise(target, _sym(v), node.shape, dt))
            return stmts
        stmts.extend(_scatter(f"{target}_s", v, spec, tuple(base.shape), region, vdt, dt, last_wins=not acc))
        written = _sym(f"{target}_s")
    if acc:
        stmts.append(ir.Elementwise(target, _sym(args[0]) + written, node.shape, dt))
        return stmts
    if whole:
        stmts.append(ir.Elementwise(target, written, node.shape, dt))
        return stmts
    stmts.append(ir.Broadcast(f"{target}_one", "numpy.asarray(1)", region, "int64"))
    stmts.append(ir.IndexAdd(f"{target}_m", f"{target}_one", spec, tuple(base.shape), dt))
    stmts.append(ir.Elementwise(target, sp.Piecewise((written, _sym(f"{target}_m") > 0), (_sym(args[0]), True)),
                                node.shape, dt))
    return stmts


def _put_grad_fn(at: dict) -> str:
    return at.get("fn", COPY_SLICES)


def show_put(node: Node, ins: list) -> sp.Expr:
    """``put(x, spec = v)``; a write covering everything (``copy_``) is the value."""
    spec, acc = node.attr("index"), node.attr("accumulate", False)
    if covers(spec, node.shape) and not acc:
        return ins[1]
    return Updated(ins[0], ins[1], sp.Symbol(describe(spec)), sp.Symbol("+=" if acc else "="))



index_put_op = register(OpDef(
    "index_put", "update", _put_grad_fn, _put_eval, _put_infer, vjp=_put_vjp, lower=_put_lower, display=show_put,
    doc="base with values written (accumulate: added) at index: __setitem__, copy_, index_put, index_add", linear=True))


# ====================================================================== writing into a tensor

