"""torch.linalg's decompositions and solvers as registry ops: ``linalg_inv det slogdet solve cholesky eigh svd qr
tril``, each evaluated and lowered (``ir.Call``) through ``codegen.arrayfns``, batched over leading dims. Several
outputs (eigh's values and vectors) are several nodes, told apart by the ``which`` attr. Their VJPs are built from
these ops, matmuls and fused expressions (d inv = -inv^T g inv^T; det: g det inv^T; solve: a solve with the
transpose), so gradients of any order are graph nodes."""
from __future__ import annotations

from typing import Any

import sympy as sp

from codegen import arrayfns, ir

from ..core import dtypes
from ..core.graph import Node
from .base import A, OpDef, apply, broadcast_shapes, register
from .index import normalize_index
from .reduce import sum_to_node

Shape = tuple[int, ...]


# --------------------------------------------------------------------------- graph helpers

def _mT(x: Node) -> Node:  # noqa: N802
    return apply("permute", x, dims=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _mm(a: Node, b: Node) -> Node:
    return apply("matmul", a, b)


def _ew(expr: sp.Expr, *xs: Node) -> Node:
    return apply("fused", *xs, expr=expr, dtype=xs[0].dtype)


def _unsq(x: Node, axis: int) -> Node:
    axis = axis % (x.ndim + 1)
    return apply("reshape", x, shape=x.shape[:axis] + (1,) + x.shape[axis:])



def _call(fn: str, *keys: str) -> Any:
    def lower(node: Node, target: str, args: list[str]) -> list:
        attrs = tuple((k, node.attr(k)) for k in keys)
        return [ir.Call(target, fn, tuple(args), attrs, node.shape, node.dtype.np.name, note=node.op.name)]
    return lower


def _same(op: OpDef, a: Node, **_: Any) -> tuple:
    return a.shape, a.dtype


def _batch(op: OpDef, a: Node, **_: Any) -> tuple:
    return a.shape[:-2], a.dtype


def _op(name: str, grad_fn: Any, ev: Any, infer: Any, vjp: Any, fn: str, keys: tuple[str, ...] = (),
        **kw: Any) -> OpDef:
    return register(OpDef(name, "linalg", grad_fn, ev, infer, vjp=vjp, lower=_call(fn, *keys), **kw))


def inv(a: Node) -> Node:
    return apply("linalg_inv", a)


def solve(a: Node, b: Node, vector: bool = False, left: bool = True) -> Node:
    return apply("linalg_solve", a, b, vector=vector, left=left)


def tril(x: Node, k: int = 0) -> Node:
    return apply("linalg_tril", x, k=k)


# --------------------------------------------------------------------------- tril (a helper of the rules below)

_op("linalg_tril", "TrilBackward0", lambda a, k=0: arrayfns.tril(a, k), _same,
    lambda node, g: (tril(g, node.attr("k")),), "tril", ("k",), linear=True,
    doc="the lower triangle of the last two dims (k: the bounding diagonal), zeros above")


# --------------------------------------------------------------------------- inv, det, slogdet

def _inv_vjp(node: Node, g: Node) -> tuple:
    xt = _mT(node)
    return (apply("neg", _mm(_mm(xt, g), xt)),)


_op("linalg_inv", "LinalgInvExBackward0", lambda a: arrayfns.inv(a), _same, _inv_vjp, "inv",
    doc="the inverse of each matrix")


def _det_vjp(node: Node, g: Node) -> tuple:
    a = node.inputs[0]
    gd = _unsq(_unsq(_ew(A[0] * A[1], g, node), -1), -1)
    return (_ew(A[0] * A[1], gd, _mT(inv(a))),)


_op("linalg_det", "LinalgDetBackward0", lambda a: arrayfns.det(a), _batch, _det_vjp, "det",
    doc="the determinant of each matrix")


def _slogdet_vjp(node: Node, g: Node) -> tuple:
    if node.attr("which") == 0:
        return (None,)
    a = node.inputs[0]
    return (_ew(A[0] * A[1], _unsq(_unsq(g, -1), -1), _mT(inv(a))),)


_op("linalg_slogdet", "LinalgSlogdetBackward0", lambda a, which: arrayfns.slogdet(a, which), _batch, _slogdet_vjp,
    "slogdet", ("which",), doc="sign (which 0) or log|det| (which 1) of each matrix")


# --------------------------------------------------------------------------- solve

def _solve_infer(op: OpDef, a: Node, b: Node, vector: bool = False, left: bool = True) -> tuple:
    dt = dtypes.promote_types(a.dtype, b.dtype)
    if vector:
        return broadcast_shapes(a.shape[:-2], b.shape[:-1]) + b.shape[-1:], dt
    return broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dt


def _solve_vjp(node: Node, g: Node) -> tuple:
    a, b = node.inputs
    vector, left = node.attr("vector"), node.attr("left")
    gb = solve(_mT(a), g, vector, left)
    ga = None
    if a.requires_grad:
        if vector:
            ga = apply("neg", _ew(A[0] * A[1], _unsq(gb, -1), _unsq(node, -2)))
        elif left:
            ga = apply("neg", _mm(gb, _mT(node)))
        else:
            ga = apply("neg", _mm(_mT(node), gb))
        ga = sum_to_node(ga, a.shape)
    return ga, (sum_to_node(gb, b.shape) if b.requires_grad else None)


_op("linalg_solve", "LinalgSolveExBackward0", lambda a, b, vector=False, left=True: arrayfns.solve(a, b, vector, left),
    _solve_infer, _solve_vjp, "solve", ("vector", "left"), doc="X with A X = B (left) or X A = B")


# --------------------------------------------------------------------------- cholesky

def _cholesky_vjp(node: Node, g: Node) -> tuple:
    # torch's cholesky_backward: L^-T (0.5 (P + tril(P, -1)^T)) L^-1 with P = tril(L^T gL)
    low, gl = (_mT(node), _mT(g)) if node.attr("upper") else (node, g)
    p = tril(_mm(_mT(low), gl))
    s = _ew((A[0] + A[1]) / 2, p, _mT(tril(p, -1)))
    x = solve(_mT(low), s)
    return (solve(low, x, left=False),)


_op("linalg_cholesky", "LinalgCholeskyExBackward0", lambda a, upper=False: arrayfns.cholesky(a, upper), _same,
    _cholesky_vjp, "cholesky", ("upper",), doc="the Cholesky factor (lower, or upper) of each matrix")


# --------------------------------------------------------------------------- eigh

def _eigh_infer(op: OpDef, a: Node, which: int, uplo: str = "L") -> tuple:
    return (a.shape[:-1] if which == 0 else a.shape), a.dtype


def _eigh_vjp(node: Node, g: Node) -> tuple:
    a, uplo = node.inputs[0], node.attr("uplo")
    if node.attr("which") == 0:
        v = apply("linalg_eigh", a, which=1, uplo=uplo)
        return (_mm(_ew(A[0] * A[1], v, _unsq(g, -2)), _mT(v)),)
    v, lam = node, apply("linalg_eigh", a, which=0, uplo=uplo)
    vg = _mm(_mT(v), g)
    e = _ew(A[0] - A[1], _unsq(lam, -2), _unsq(lam, -1))       # e[i, j] = lam[j] - lam[i]
    m = _ew(sp.Piecewise((0, sp.Eq(A[2], 0)), ((A[0] - A[1]) / (2 * A[2]), True)), vg, _mT(vg), e)
    return (_mm(_mm(v, m), _mT(v)),)


_op("linalg_eigh", "LinalgEighBackward0", lambda a, which, uplo="L": arrayfns.eigh(a, which, uplo), _eigh_infer,
    _eigh_vjp, "eigh", ("which", "uplo"), doc="eigenvalues (which 0) or eigenvectors (1) of symmetric matrices")


# --------------------------------------------------------------------------- svd

def _svd_infer(op: OpDef, a: Node, which: int, full_matrices: bool = True) -> tuple:
    m, n = a.shape[-2:]
    k = min(m, n)
    b = a.shape[:-2]
    if which == 1:
        return b + (k,), a.dtype
    if which == 0:
        return b + (m, m if full_matrices else k), a.dtype
    return b + (n if full_matrices else k, n), a.dtype


def _svd_vjp(node: Node, g: Node) -> tuple:
    # torch's svd_backward, one output at a time (it is linear in gU, gS, gVh)
    a, which = node.inputs[0], node.attr("which")
    m, n = a.shape[-2:]
    k = min(m, n)
    u = apply("linalg_svd", a, which=0, full_matrices=False)
    s = apply("linalg_svd", a, which=1, full_matrices=False)
    vh = apply("linalg_svd", a, which=2, full_matrices=False)
    if which == 1:
        return (_mm(_ew(A[0] * A[1], u, _unsq(g, -2)), vh),)
    if node.attr("full_matrices") and m != n:
        index = (Ellipsis, slice(0, k)) if which == 0 else (Ellipsis, slice(0, k), slice(None))
        g = apply("index", g, index=normalize_index(index, g.shape))
    s2 = _ew(A[0] * A[0], s)
    e = _ew(A[0] - A[1], _unsq(s2, -2), _unsq(s2, -1))        # e[i, j] = s[j]^2 - s[i]^2
    if which == 0:
        uhg = _mm(_mT(u), g)
        core = _ew(sp.Piecewise((0, sp.Eq(A[2], 0)), ((A[0] - A[1]) * A[3] / A[2], True)),
                   uhg, _mT(uhg), e, _unsq(s, -2))
        ga = _mm(u, core)
        if m > k:
            gus = _ew(A[0] / A[1], g, _unsq(s, -2))
            ga = _ew(A[0] + A[1] - A[2], ga, gus, _mm(u, _mm(_mT(u), gus)))
        return (_mm(ga, vh),)
    vhg = _mm(vh, _mT(g))
    core = _ew(sp.Piecewise((0, sp.Eq(A[2], 0)), (A[3] * (A[0] - A[1]) / A[2], True)), vhg, _mT(vhg), e, _unsq(s, -1))
    ga = _mm(core, vh)
    if n > k:
        sgv = _ew(A[0] / A[1], g, _unsq(s, -1))               # S^-1 gVh
        ga = _ew(A[0] + A[1] - A[2], ga, sgv, _mm(_mm(sgv, _mT(vh)), vh))
    return (_mm(u, ga),)


_op("linalg_svd", "LinalgSvdBackward0", lambda a, which, full_matrices=True: arrayfns.svd(a, which, full_matrices),
    _svd_infer, _svd_vjp, "svd", ("which", "full_matrices"), doc="U (which 0), S (1) or Vh (2) of the SVD")


# --------------------------------------------------------------------------- qr

def _qr_infer(op: OpDef, a: Node, which: int, mode: str = "reduced") -> tuple:
    m, n = a.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    return a.shape[:-2] + ((m, k) if which == 0 else (k, n)), a.dtype


def _copyltu(m: Node) -> Node:
    return _ew(A[0] + A[1], tril(m), _mT(tril(m, -1)))


def _qr_vjp(node: Node, g: Node) -> tuple:
    a, mode = node.inputs[0], node.attr("mode")
    m, n = a.shape[-2:]
    if m < n or (mode == "complete" and m > n):
        raise NotImplementedError("The derivative of linalg.qr is implemented here for m >= n (mode='reduced')")
    q = apply("linalg_qr", a, which=0, mode=mode)
    r = apply("linalg_qr", a, which=1, mode=mode)
    if node.attr("which") == 0:
        x = _ew(A[0] + A[1], g, _mm(q, _copyltu(apply("neg", _mm(_mT(g), q)))))
    else:
        x = _mm(q, _copyltu(_mm(r, _mT(g))))
    return (solve(_mT(r), x, left=False),)


_op("linalg_qr", "LinalgQrBackward0", lambda a, which, mode="reduced": arrayfns.qr(a, which, mode), _qr_infer,
    _qr_vjp, "qr", ("which", "mode"), doc="Q (which 0) or R (1) of the QR decomposition")

