"""Derivatives of loops (the ``scan`` op): the VJP and the JVP of a scan are scans themselves.

Reverse mode: a *history* scan (the same loop, storing the carry each step starts from) and an *adjoint*
scan running backwards over the stored carries: its carry is ``λ`` (the carry's cotangent) followed by the
running sums of the closed-over values' cotangents, its per-step output the cotangent of the step's input.
The adjoint step is the body's own VJP (``backward_graph`` on the body, once per body), so second and higher
derivatives are loops again. Forward mode: one scan carrying ``(c, ċ)`` whose step is the body's JVP.
"""
from __future__ import annotations

import math
import weakref

import sympy as sp

from ..core import dtypes
from ..core.graph import Node, toposort
from ..ops import A, apply
from ..ops import source as _src
from ..ops.loop import Body, scan, split_inputs
from .forward import jvp_graph
from .reverse import backward_graph


def leaf(shape: tuple[int, ...], dtype: dtypes.DType) -> Node:
    return Node(_src.leaf, (), (), tuple(shape), dtype, requires_grad=dtype.is_floating_point)


def piece(x: Node, a: int, b: int) -> Node:
    """``x[a:b]`` of a flat vector."""
    if a == 0 and b == x.shape[0]:
        return x
    return apply("index", x, index=(("s", a, b, None),))


def columns(x: Node, a: int, b: int) -> Node:
    """``x[:, a:b]`` of a matrix."""
    if a == 0 and b == x.shape[1]:
        return x
    return apply("index", x, index=(("s", None, None, None), ("s", a, b, None)))


def reshape(x: Node, shape: tuple[int, ...]) -> Node:
    return x if x.shape == tuple(shape) else apply("reshape", x, shape=tuple(shape))


def cast(x: Node, dt: dtypes.DType) -> Node:
    return x if x.dtype is dt else apply("fused", x, expr=A[0], dtype=dt)


def cat(parts: list[Node], dim: int, dt: dtypes.DType) -> Node:
    parts = [cast(p, dt) for p in parts]
    return parts[0] if len(parts) == 1 else apply("cat", *parts, dim=dim, out_dtype=dt.name)


def zeros(shape: tuple[int, ...], dt: dtypes.DType) -> Node:
    z = Node(_src.scalar, (), (("value", 0),), (), dt, value=0)
    return apply("expand", z, shape=tuple(shape)) if shape else apply("fused", z, expr=A[0], dtype=dt)


def add(a: Node, b: Node) -> Node:
    return apply("fused", a, b, expr=A[0] + A[1], dtype=a.dtype)


def size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def rebuild(outs: list[Node | None], mapping: dict[int, Node], memo: dict[int, Node] | None = None
            ) -> list[Node | None]:
    """``outs`` with the nodes of ``mapping`` (by id) replaced, one shared copy of what depends on them
    (``memo``, when given, receives every node's copy by the original's id)."""
    done: dict[int, Node] = memo if memo is not None else {}
    done.update(mapping)
    roots = [o for o in outs if o is not None]
    for n in toposort(roots, stop=lambda m: m.id in mapping):
        if n.id in done:
            continue
        ins = tuple(done.get(i.id, i) for i in n.inputs)
        if all(a is b for a, b in zip(ins, n.inputs)):
            done[n.id] = n
            continue
        diff = n.op.diff_args
        rg = any(x.requires_grad for i, x in enumerate(ins) if diff is None or i in diff)
        done[n.id] = Node(n.op, ins, n.attrs, n.shape, n.dtype, requires_grad=rg and n.dtype.is_floating_point)
    return [done[o.id] if o is not None else None for o in outs]


def scan_node(inputs: list[Node], body: Body, length: int, reverse: bool, start: int) -> Node:
    return apply(scan, *inputs, body=body, length=length, reverse=reverse, start=start)


# --------------------------------------------------------------------------- reverse mode

def history_parts(body: Body) -> tuple[bool, bool]:
    """What a step's history row stores after ``y`` and the carry the step started from: (the carry it made, when
    the adjoint reads it; the step's ``x``, when the adjoint's input row is then the history row itself: no ``ȳ``
    to append)."""
    after = bool(_carry_outputs(body))
    return after, body.x is not None and body.y is None


def history_body(body: Body) -> Body:
    """The same step, also emitting the carry it started from (after its own ``y``), then what ``history_parts``
    names: the rows the adjoint reads, without a copy of its own to assemble them."""
    if "history" not in body.memo:
        dt = body.new_carry.dtype
        after, with_x = history_parts(body)
        parts = ([body.y] if body.y is not None else []) + [body.carry] + ([body.new_carry] if after else [])
        y = cat(parts + ([body.x] if with_x else []), 0, dt)
        body.memo["history"] = Body(body.carry, body.x, body.index, body.consts, body.new_carry, y,
                                    derived=("history", body), names=body.names, label=body.label)
    return body.memo["history"]


_HISTORY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def history_node(node: Node) -> Node:
    """The history scan of a scan node (one per node: repeated VJPs share it)."""
    h = _HISTORY.get(node)
    if h is None:
        h = scan_node(list(node.inputs), history_body(node.attr("body")), node.attr("length"),
                      node.attr("reverse"), node.attr("start"))
        _HISTORY[node] = h
    return h


def adjoint_body(body: Body, need_x: bool, need_p: tuple[bool, ...]) -> Body:
    """The reverse step: from (λ, p̄) and the stored (carry, x, ȳ) of a step to (λ of the step before, p̄ +
    this step's contribution), emitting the step's x̄ when ``need_x``."""
    key = ("adjoint", need_x, need_p)
    if key in body.memo:
        return body.memo[key]
    dt = body.new_carry.dtype
    wc, wx, wy = body.carry_width, body.x_width, body.y_width
    wp = sum(size(p.shape) for p, need in zip(body.consts, need_p) if need)
    # the carry a step made, stored by the history scan, is read back rather than recomputed where the step's
    # derivative needs it (tanh's 1 - tanh**2): the row then holds the carry before and after the step
    outs = _carry_outputs(body)
    wn = wc if outs else 0
    ca = leaf((wc + wp,), dt)
    xa = leaf((wc + wn + wx + wy,), dt)
    idx = leaf((), dtypes.int64) if body.index is not None else None
    consts = tuple(leaf(p.shape, p.dtype) for p in body.consts)
    c = piece(xa, 0, wc)
    mapping = {body.carry.id: c, **{p.id: q for p, q in zip(body.consts, consts)}}
    if body.x is not None:
        mapping[body.x.id] = piece(xa, wc + wn, wc + wn + wx)
    if idx is not None:
        mapping[body.index.id] = idx
    memo: dict[int, Node] = {}
    new_c, y = rebuild([body.new_carry, body.y], mapping, memo)
    lam = piece(ca, 0, wc)
    roots, seeds = [new_c], [lam]
    if y is not None:
        roots.append(y)
        seeds.append(piece(xa, wc + wn + wx, wc + wn + wx + wy))
    wrt = [c] + ([mapping[body.x.id]] if need_x else []) + [q for q, need in zip(consts, need_p) if need]
    grads, _ = backward_graph(roots, seeds, wrt)
    grads = [g if g is not None else zeros(w.shape, w.dtype) for g, w in zip(grads, wrt)]
    if outs:
        after = piece(xa, wc, 2 * wc)
        stored = {memo[n.id].id: cast(reshape(piece(after, a, b), n.shape), n.dtype)
                  for n, a, b in outs if n.id in memo and memo[n.id].op is not _src.leaf}
        grads = rebuild(grads, stored) if stored else grads
    lam_prev = cast(grads[0], dt)
    xbar = reshape(cast(grads[1], dt), (wx,)) if need_x else None
    pbars = grads[1 + need_x:]
    rests, pulled = _pull_products(pbars, wc + wn + wx + wy)
    if any(pulled):       # the running sums of the pulled products leave the carry: a narrower λ carry
        wp = sum(size(r.shape) for r in rests if r is not None)
        ca = leaf((wc + wp,), dt)
        swap = {lam.id: piece(ca, 0, wc)}
        flat_terms = [t for ts in pulled for t in ts]
        new = rebuild([lam_prev, xbar, *rests, *[o for t in flat_terms for o in t.inputs], *pbars], swap)
        lam_prev, xbar = new[0], new[1]
        k = 2 + len(rests)
        rests, operands, pbars = new[2:k], new[k:k + 2 * len(flat_terms)], new[k + 2 * len(flat_terms):]
        lam = swap[lam.id]
    else:
        operands = []
    # per-step outputs: x̄, then each pulled product's operands (flat; once each; an operand that is a piece of
    # the stored row is read from the stacked rows instead), summed by one matmul after the loop
    ys = [xbar] if xbar is not None else []
    layout, acc_off, y_off = [], wc, wx if need_x else 0
    placed: dict[int, tuple[str, int]] = {}

    def place(o: Node) -> tuple[str, int]:
        nonlocal y_off
        o = _flat_root(o)
        if o.id not in placed:
            row = _row_piece(o, xa)
            if row is not None:
                placed[o.id] = ("x", row)
            else:
                placed[o.id] = ("y", y_off)
                ys.append(reshape(cast(o, dt), (size(o.shape),)))
                y_off += size(o.shape)
        return placed[o.id]

    it = iter(operands)
    for r, ts in zip(rests, pulled):
        prods = []
        for _ in ts:
            a_op, b_op = next(it), next(it)
            prods.append((place(a_op), a_op.shape, place(b_op), b_op.shape))
        layout.append((acc_off if r is not None else None, tuple(prods)))
        acc_off += size(r.shape) if r is not None else 0
    y_adj = cat(ys, 0, dt) if ys else None
    accumulates = None
    if wp:
        flat = cat([reshape(cast(g, dt), (size(g.shape),)) for g in rests if g is not None], 0, dt)
        new_carry = cat([lam_prev, add(piece(ca, wc, wc + wp), flat)], 0, dt)
        accumulates = (wc, lam_prev, flat)
    else:
        new_carry = lam_prev
    adj = Body(ca, xa, idx, consts, new_carry, y_adj, label=f"adjoint of {body.label}", accumulates=accumulates,
               display=_adjoint_display(body, memo, mapping, lam, lam_prev, pbars, need_p, consts))
    adj.memo["primal"] = body
    adj.memo["after"] = bool(outs)
    adj.memo["layout"] = tuple(layout)
    body.memo[key] = adj
    return adj


#: a product ``A @ B`` (``A`` (n, r), ``B`` (r, m)) added to a closed-over value's cotangent each step leaves the
#: loop when its operands take at most this fraction of the product's elements: the adjoint step emits ``A`` and
#: ``B``, and one matmul of the stacked operands after the loop sums the products (``dW = Σ_k a_k h_kᵀ`` is
#: ``Aᵀ H``, a BLAS gemm, instead of an (n, m) read-modify-write per step)
PULL_FRACTION = 0.5
#: the pulled operands stored per step, at most this many times the adjoint step's stored input row
PULL_STORAGE = 4


def _terms(g: Node) -> list[Node]:
    """``g`` as a list of same-shape addends (a ``fused`` plain sum of distinct inputs), else ``[g]``."""
    if g.op.name == "fused" and g.inputs and all(i.shape == g.shape and i.dtype is g.dtype for i in g.inputs):
        expr = g.attr("expr")
        syms = [sp.Symbol(f"a{i}", real=True) for i in range(len(g.inputs))]
        if isinstance(expr, sp.Add) and set(expr.args) == set(syms) and len(expr.args) == len(syms):
            return [t for i in g.inputs for t in _terms(i)]
    return [g]


def _pullable(t: Node, shape: tuple[int, ...]) -> bool:
    if t.op.name != "matmul" or t.shape != tuple(shape) or len(shape) != 2:
        return False
    a, b = t.inputs
    if a.ndim != 2 or b.ndim != 2 or not (a.dtype.is_floating_point and b.dtype.is_floating_point):
        return False
    (n, r), m = a.shape, b.shape[1]
    return r * (n + m) <= PULL_FRACTION * n * m


def _flat_root(o: Node) -> Node:
    """The node whose elements, in order, are ``o``'s: ``o`` seen through reshapes and permutes of vectors."""
    while o.op.name == "reshape" or (o.op.name == "permute" and sum(s != 1 for s in o.shape) <= 1):
        o = o.inputs[0]
    return o


def _row_piece(o: Node, xa: Node) -> int | None:
    """Where the elements of ``o`` (a ``_flat_root``) start in the step's input row ``xa``, when ``o`` is a
    contiguous piece of it; else None."""
    if o is xa:
        return 0
    if o.op.name == "index" and o.inputs[0] is xa:
        (idx,) = o.attr("index")
        if idx[0] == "s" and idx[3] in (None, 1):
            return idx[1] or 0
    return None


def _pull_products(pbars: list[Node], row: int) -> tuple[list[Node | None], list[list[Node]]]:
    """Per closed-over cotangent: what stays a running sum in the carry (None: nothing) and the matmul addends
    that leave the loop (``PULL_FRACTION``, ``PULL_STORAGE``), the largest first."""
    budget = PULL_STORAGE * row
    cands = []
    for i, g in enumerate(pbars):
        cands += [(size(t.shape), i, j, t) for j, t in enumerate(_terms(g)) if _pullable(t, g.shape)]
    chosen: set[tuple[int, int]] = set()
    for _, i, j, t in sorted(cands, key=lambda c: -c[0]):
        cost = sum(size(o.shape) for o in t.inputs)
        if cost <= budget:
            budget -= cost
            chosen.add((i, j))
    rests: list[Node | None] = []
    pulled: list[list[Node]] = []
    for i, g in enumerate(pbars):
        terms = _terms(g)
        keep = [t for j, t in enumerate(terms) if (i, j) not in chosen]
        pulled.append([t for j, t in enumerate(terms) if (i, j) in chosen])
        if len(keep) == len(terms):
            rests.append(g)
            continue
        rest = keep[0] if keep else None
        for t in keep[1:]:
            rest = add(rest, t)
        rests.append(rest)
    return rests, pulled


def _carry_outputs(body: Body) -> list[tuple[Node, int, int]]:
    """The step's carry parts as the user's nodes made them, with their place in the packed carry
    (``(node, start, stop)``); empty where the body is not a traced step (derived bodies)."""
    d = body.display
    if body.derived is not None or d is None or "n_carry" not in d:
        return []
    out, off = [], 0
    for _, n in d["outs"][:d["n_carry"]]:
        k = size(n.shape)
        out.append((n, off, off + k))
        off += k
    return out if off == body.carry_width else []


def _adjoint_display(body: Body, memo: dict, mapping: dict, lam: Node, lam_prev: Node, pbars: list[Node],
                     need_p: tuple[bool, ...], consts: tuple[Node, ...]) -> dict | None:
    """How the adjoint step prints: ``λ[k]`` from ``λ[k+1]`` and the stored carry ``s[k]``, and each closed-over
    value's running cotangent."""
    if body.display is None:
        return None
    d = body.display
    carry = d["carry"]
    ins = [(memo.get(n.id, mapping.get(n.id, n)), name) for n, name in d["ins"]]
    ins.append((lam, f"λ_{carry}[k+1]"))
    const_names = dict(d.get("consts", ()))
    outs = [(f"λ_{carry}[k]", lam_prev)]
    k = 0
    for i, need in enumerate(need_p):
        if need:
            name = const_names.get(i, f"c{i}")
            outs.append((f"d{name}[k]", pbars[k]))
            k += 1
    names = dict(const_names)
    return {"carry": f"λ_{carry}", "ins": ins + [(q, names.get(i, f"c{i}")) for i, q in enumerate(consts)],
            "outs": outs, "consts": d.get("consts", ()), "note": "backwards, from the last step to the first; "
            "the gradient with respect to a closed-over value c is the sum over the steps of dc[k]"}


def scan_vjp(node: Node, g: Node) -> tuple[Node | None, ...]:
    body: Body = node.attr("body")
    if body.cond is not None:
        raise TypeError("Reverse-mode differentiation does not work for while_loop (its trip count depends on the "
                        "values). Try sg.scan or sg.fori_loop with a fixed number of steps, or forward mode (sg.jvp).")
    length, reverse, start = node.attr("length"), node.attr("reverse"), node.attr("start")
    init, xs, consts = split_inputs(node)
    dt = node.dtype
    wc, wx, wy = body.carry_width, body.x_width, body.y_width
    need_x = xs is not None and xs.requires_grad
    need_p = tuple(bool(p.requires_grad and p.dtype.is_floating_point) for p in consts)
    hist = history_node(node)
    hw = hist.attr("body").y_width
    after, with_x = history_parts(body)
    rows = reshape(piece(hist, wc, wc + length * hw), (length, hw))
    adj = adjoint_body(body, need_x, need_p)
    assert adj.memo.get("after") == after
    parts = [columns(rows, wy, wy + wc)]         # the carry each step started from
    if after:                                     # and the one it made
        parts.append(columns(rows, wy + wc, wy + 2 * wc))
    if xs is not None:
        parts.append(columns(rows, hw - wx, hw) if with_x else xs)
    if wy:
        parts.append(reshape(piece(g, wc, wc + length * wy), (length, wy)))
    xs_a = columns(rows, wy, hw) if with_x else cat(parts, 1, dt)
    wp = adj.carry_width - wc
    lam = piece(g, 0, wc)
    init_a = cat([lam, zeros((wp,), dt)], 0, dt) if wp else lam
    a = scan_node([init_a, xs_a, *consts], adj, length, not reverse, start)
    out: list[Node | None] = [cast(piece(a, 0, wc), init.dtype)]
    wya = adj.y_width
    ys = reshape(piece(a, wc + wp, wc + wp + length * wya), (length, wya)) if wya else None
    if xs is not None:
        out.append(columns(ys, 0, wx) if need_x else None)
    layout = iter(adj.memo["layout"])
    row_parts, starts = list(parts), [0]
    for q in row_parts:
        starts.append(starts[-1] + q.shape[1])

    def stacked(src: tuple[str, int], w: int) -> Node:
        """A pulled operand, one row per step: columns of the adjoint's outputs, or of the part of its rows."""
        where, off = src
        if where == "y":
            return columns(ys, off, off + w)
        for q, a0, a1 in zip(row_parts, starts, starts[1:]):
            if a0 <= off and off + w <= a1:
                return columns(q, off - a0, off - a0 + w)
        return columns(xs_a, off, off + w)

    for p, need in zip(consts, need_p):
        if not need:
            out.append(None)
            continue
        off, prods = next(layout)
        parts = [reshape(piece(a, off, off + size(p.shape)), p.shape)] if off is not None else []
        for src_a, (n, r), src_b, (_, m) in prods:     # Σ_k A_k @ B_k = [A_0 … A_T-1] @ [B_0; …; B_T-1]
            sa = stacked(src_a, n * r)
            if r == 1:
                lhs = apply("permute", sa, dims=(1, 0))
            else:
                lhs = reshape(apply("permute", reshape(sa, (length, n, r)), dims=(1, 0, 2)), (n, length * r))
            parts.append(apply("matmul", lhs, reshape(stacked(src_b, r * m), (length * r, m))))
        total = parts[0]
        for q in parts[1:]:
            total = add(total, q)
        out.append(cast(total, p.dtype))
    return tuple(out)


# --------------------------------------------------------------------------- forward mode

def tangent_body(body: Body, have_x: bool, have_p: tuple[bool, ...]) -> Body:
    """The step carrying ``(c, ċ)``: its x is ``(x, ẋ)`` when ``have_x``, its consts the primal ones followed by
    the tangents of those in ``have_p``; ``y`` is ``(y, ẏ)``."""
    key = ("tangent", have_x, have_p)
    if key in body.memo:
        return body.memo[key]
    dt = body.new_carry.dtype
    wc, wx = body.carry_width, body.x_width
    ct = leaf((2 * wc,), dt)
    xt = leaf((wx * (2 if have_x else 1),), dt) if body.x is not None else None
    idx = leaf((), dtypes.int64) if body.index is not None else None
    consts = tuple(leaf(p.shape, p.dtype) for p in body.consts)
    dots = tuple(leaf(p.shape, p.dtype) for p, h in zip(body.consts, have_p) if h)
    c, cdot = piece(ct, 0, wc), piece(ct, wc, 2 * wc)
    mapping = {body.carry.id: c, **{p.id: q for p, q in zip(body.consts, consts)}}
    wrt, tans = [c], [cdot]
    if body.x is not None:
        mapping[body.x.id] = piece(xt, 0, wx)
        if have_x:
            wrt.append(mapping[body.x.id])
            tans.append(piece(xt, wx, 2 * wx))
    if idx is not None:
        mapping[body.index.id] = idx
    wrt += [q for q, h in zip(consts, have_p) if h]
    tans += list(dots)
    new_c, y, cond = rebuild([body.new_carry, body.y, body.cond], mapping)
    outs = [new_c] + ([y] if y is not None else [])
    ts = jvp_graph(outs, wrt, tans)
    ts = [t if t is not None else zeros(o.shape, o.dtype) for t, o in zip(ts, outs)]
    new_carry = cat([new_c, ts[0]], 0, dt)
    yt = cat([y, ts[1]], 0, dt) if y is not None else None
    tb = Body(ct, xt, idx, consts + dots, new_carry, yt, derived=("tangent", body), label=f"tangent of {body.label}",
              cond=cond)
    body.memo[key] = tb
    return tb


def scan_jvp(node: Node, ts: list[Node | None]) -> Node | None:
    body: Body = node.attr("body")
    length, reverse, start = node.attr("length"), node.attr("reverse"), node.attr("start")
    init, xs, consts = split_inputs(node)
    dt = node.dtype
    wc, wy = body.carry_width, body.y_width
    t_init = ts[0]
    t_xs = ts[1] if xs is not None else None
    t_consts = ts[2:] if xs is not None else ts[1:]
    have_p = tuple(t is not None for t in t_consts)
    tb = tangent_body(body, t_xs is not None, have_p)
    init_t = cat([init, t_init if t_init is not None else zeros(init.shape, dt)], 0, dt)
    inputs = [init_t]
    if xs is not None:
        inputs.append(cat([xs, t_xs], 1, dt) if t_xs is not None else xs)
    inputs += list(consts) + [cast(t, p.dtype) for t, p in zip(t_consts, consts) if t is not None]
    s = scan_node(inputs, tb, length, reverse, start)
    cdot = piece(s, wc, 2 * wc)
    if not wy:
        return cdot
    ys = reshape(piece(s, 2 * wc, 2 * wc + 2 * wy * length), (length, 2 * wy))
    return cat([cdot, reshape(columns(ys, wy, 2 * wy), (length * wy,))], 0, dt)


scan.vjp = scan_vjp
scan.jvp = scan_jvp
