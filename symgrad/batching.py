"""vmap's batched path: trace the function once on per-example tracers, then replay the recorded DAG on the
batched tensors (batch dimension first), one eager op per node.

The replay keeps the graph torch's vmap records (``vmap(torch.sin)(x).grad_fn`` is a ``SinBackward0``), runs
the function's Python once, as torch does, and costs one traced example plus one pass of batched ops
whatever the batch size. Tensors the function reaches without taking them from the batch (arguments with
``in_dim`` None, closed-over parameters) enter the replay as themselves, so their gradients flow. A trace
that needs a concrete value raises torch's vmap errors (``.item()``, data-dependent control flow).

What the replay does not know how to batch (in-place writes, compiled kernels, integer-array indexing that
numpy would move, draws from the random generator, ...) raises ``Unbatchable``: vmap then runs the function
once per example instead.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .compiler.tracing import TraceContext, Tracer, leaf
from .core import dtypes
from .core.errors import TracingError
from .core.graph import Node, toposort
from .eager.random import get_rng_state, set_rng_state
from .eager.record import _apply
from .eager.tensor import Tensor
from .ops import REGISTRY
from .ops import source as _src

__all__ = ["STATS", "Unbatchable", "batched_call"]

#: how vmap calls went: the batched path, one call per example (``looped``), batched results that disagreed
#: with the eager first example (``mismatch``, then looped too)
STATS = {"batched": 0, "looped": 0, "mismatch": 0}

_ITEM_MSG = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
             "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
             "inside PyTorch internals, please file a bug report.")
_FLOW_MSG = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't "
             "support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")


class Unbatchable(Exception):
    """The batched path can't run this function: vmap falls back to one call per example."""


class _Recorder(TraceContext):
    """A trace that also remembers the tensors standing behind nodes it did not create: eager tensors
    (recorded as constants) and tracers of an enclosing trace."""

    def __init__(self) -> None:
        self.eager: dict[int, Tensor] = {}    # id(array) -> the eager tensor holding it
        self.foreign: dict[int, Tensor] = {}  # node id -> the enclosing trace's tracer
        self.first = Node(_src.scalar, (), (), (), dtypes.float32).id  # nodes from here on are this trace's

    def record(self, op: Any, inputs: Sequence[Any], attrs: dict, out_dtype: Any = None) -> Tensor:
        for x in inputs:
            if isinstance(x, Tracer):
                if x._node.id < self.first:
                    self.foreign[x._node.id] = x
            elif isinstance(x, Tensor):
                self.eager[id(x._data)] = x
        return super().record(op, inputs, attrs, out_dtype)


# ----------------------------------------------------------------------------- per-family batching rules

def _pad(t: Tensor, rank: int, B: int) -> Tensor:  # noqa: N803
    """A batched ``t`` (B, *s) viewed as (B, 1, ..., 1, *s) with ``rank`` per-example dims."""
    s = tuple(t.shape[1:])
    if len(s) >= rank:
        return t
    return _apply(REGISTRY["reshape"], t, shape=(B,) + (1,) * (rank - len(s)) + s, fn="UnsqueezeBackward0")


def _norm_dims(dims: Any, rank: int) -> Any:
    if dims is None:
        return None
    if rank == 0:
        raise Unbatchable("a reduction over a 0-d tensor")
    if isinstance(dims, int):
        return dims % rank + 1
    return tuple(d % rank + 1 for d in dims)


def _expanded(t: Any, b: bool, B: int) -> Any:  # noqa: N803
    """An unbatched tensor expanded to the batch (for ops whose inputs must all be batched)."""
    if b:
        return t
    if not isinstance(t, Tensor):
        raise Unbatchable("a number where a tensor is needed")
    return _apply(REGISTRY["expand"], t, shape=(B,) + tuple(t.shape))


def _elementwise(node: Node, ins: list, B: int) -> Tensor:  # noqa: N803
    rank = len(node.shape)
    args = [_pad(t, rank, B) if b else t for t, b in ins]
    return _apply(node.op, *args, **dict(node.attrs))


def _reduce(node: Node, ins: list, B: int) -> Tensor:  # noqa: N803
    attrs = dict(node.attrs)
    name = node.op.name
    x = ins[0][0]
    rank = x.ndim - 1
    if name in ("argmax", "argmin") and attrs.get("dim") is None:
        if rank == 0:
            raise Unbatchable("argmax of a 0-d tensor")
        flat = _apply(REGISTRY["reshape"], x, shape=(B, x.numel() // B), fn="ViewBackward0")
        out = _apply(node.op, flat, dim=1, keepdim=False)
        if attrs.get("keepdim"):
            out = _apply(REGISTRY["reshape"], out, shape=(B,) + (1,) * rank, fn="ViewBackward0")
        return out
    if name == "sum_to":
        target = tuple(attrs["shape"])
        lead = rank - len(target)
        out = _apply(node.op, x, shape=(B,) + (1,) * lead + target)
        return _apply(REGISTRY["reshape"], out, shape=(B,) + target, fn="ViewBackward0") if lead else out
    if "dims" in attrs:
        attrs["dims"] = _norm_dims(attrs["dims"], rank)
    if "dim" in attrs:
        attrs["dim"] = _norm_dims(attrs["dim"], rank)
    if "full" in attrs:
        attrs["full"] = False
    args = [t if b else _expanded(t, b, B) for t, b in ins]
    return _apply(node.op, *args, **attrs)


def _contiguous_advanced(spec: tuple) -> bool:
    pos = [k for k, e in enumerate(spec) if e[0] in ("a", "i")]
    if not any(e[0] == "a" for e in spec):
        return True
    return pos == list(range(pos[0], pos[0] + len(pos)))


def _shape(node: Node, ins: list, B: int) -> Tensor:  # noqa: N803
    attrs = dict(node.attrs)
    name = node.op.name
    x = ins[0][0]
    if name == "reshape":
        attrs["shape"] = (B,) + tuple(attrs["shape"])
    elif name == "permute":
        attrs["dims"] = (0,) + tuple(d % max(len(attrs["dims"]), 1) + 1 for d in attrs["dims"])
    elif name == "expand":
        x = _pad(x, len(attrs["shape"]), B)
        attrs["shape"] = (B,) + tuple(attrs["shape"])
    elif name == "repeat":
        x = _pad(x, len(attrs["repeats"]), B)
        attrs["repeats"] = (1,) + tuple(attrs["repeats"])
    elif name == "index":
        spec = tuple(attrs["index"])
        if not _contiguous_advanced(spec):
            raise Unbatchable("integer-array indices numpy would move to the front")
        attrs["index"] = (("s", None, None, None),) + spec
    else:
        raise Unbatchable(f"no batching rule for {name}")
    return _apply(node.op, x, *[t for t, _ in ins[1:]], **attrs)


def _join(node: Node, ins: list, B: int) -> Tensor:  # noqa: N803
    attrs = dict(node.attrs)
    rank = len(node.shape)
    attrs["dim"] = attrs["dim"] % rank + 1
    return _apply(node.op, *[_expanded(t, b, B) for t, b in ins], **attrs)


def _matmul(node: Node, ins: list, B: int) -> Tensor:  # noqa: N803
    (a, ba), (b, bb) = ins
    ra = a.ndim - ba
    rb = b.ndim - bb
    if ra == 1:  # a row
        a = _apply(REGISTRY["reshape"], a, shape=tuple(a.shape[:-1]) + (1, a.shape[-1]), fn="UnsqueezeBackward0")
        ra = 2
    if rb == 1:  # a column
        b = _apply(REGISTRY["reshape"], b, shape=tuple(b.shape) + (1,), fn="UnsqueezeBackward0")
        rb = 2
    rank = max(ra, rb)
    if ba:
        a = _pad(a, rank, B)
    if bb:
        b = _pad(b, rank, B)
    out = _apply(node.op, a, b, **dict(node.attrs))
    want = (B,) + tuple(node.shape)
    if tuple(out.shape) != want:
        out = _apply(REGISTRY["reshape"], out, shape=want, fn="SqueezeBackward1")
    return out


_RULES: dict[str, Callable] = {"elementwise": _elementwise, "reduce": _reduce, "shape": _shape, "join": _join,
                               "linalg": _matmul}


# ----------------------------------------------------------------------------- trace and replay

def _replay(outs: list[Node], rec: _Recorder, leaves: dict[int, Tensor], B: int) -> dict[int, tuple[Any, bool]]:  # noqa: N803
    """Every node the outputs need: (value, whether it carries the batch dimension first)."""
    vals: dict[int, tuple[Any, bool]] = {}
    for n in toposort(outs, stop=lambda m: m.id < rec.first or m.id in leaves):
        if n.id in leaves:
            vals[n.id] = (leaves[n.id], True)
        elif n.id < rec.first:
            if n.id not in rec.foreign:
                raise Unbatchable("a node of an enclosing trace reached without its tracer")
            vals[n.id] = (rec.foreign[n.id], False)
        elif n.op is _src.scalar:
            vals[n.id] = (n.attr("value"), False)
        elif n.op is _src.const:
            t = rec.eager.get(id(n.value))
            vals[n.id] = (t if t is not None else Tensor(n.value), False)
        elif n.op.family == "source":
            raise Unbatchable("a leaf the trace did not make")
        else:
            ins = [vals[i.id] for i in n.inputs]
            if not any(b for _, b in ins):
                vals[n.id] = (_apply(n.op, *[t for t, _ in ins], **dict(n.attrs)), False)
                continue
            if n.op.name == "numel":  # reads only the shape: the same count for every example
                x = ins[0][0]
                dims = _norm_dims(n.attr("dims"), x.ndim - 1)
                vals[n.id] = (_apply(n.op, x, dims=dims), False)
                continue
            rule = _RULES.get(n.op.family)
            if rule is None:
                raise Unbatchable(f"no batching rule for {n.op.name}")
            out = rule(n, ins, B)
            if tuple(out.shape) != (B,) + tuple(n.shape) or out.dtype != n.dtype:
                raise Unbatchable(f"{n.op.name}: batched {tuple(out.shape)} {out.dtype}, expected "
                                  f"{(B,) + tuple(n.shape)} {n.dtype}")
            vals[n.id] = (out, True)
    return vals


def _trace_error(exc: TracingError) -> RuntimeError | None:
    text = str(exc)
    if text.startswith(("item()", "float()", "int()")):
        return RuntimeError(_ITEM_MSG)
    if text.startswith("bool()"):
        return RuntimeError(_FLOW_MSG)
    return None


def batched_call(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, spec: Any,
                 unflatten: Callable, flatten: Callable, kwargs: dict) -> tuple[Any, Any, list[tuple[Any, bool]]]:
    """``func`` on the whole batch by trace and replay: (its output as traced, that output's structure, per
    flat output (value, whether it carries the batch dimension first)). Raises ``Unbatchable``, or torch's
    vmap error for a trace that needs a concrete value."""
    B = batch_size  # noqa: N806
    if B == 0:
        raise Unbatchable("an empty batch")
    args = []
    moved: dict[int, Tensor] = {}
    for a, d in zip(flat_args, flat_in_dims):
        if d is None:
            args.append(a)
            continue
        shape = tuple(a.shape[:d]) + tuple(a.shape[d + 1:])
        lv = leaf(shape, a.dtype, "x", a.requires_grad)
        moved[lv._node.id] = a if d == 0 else _apply(REGISTRY["permute"], a, dims=(d,) + tuple(
            k for k in range(a.ndim) if k != d), fn="PermuteBackward0")
        args.append(lv)
    state = get_rng_state()
    rec = _Recorder()
    try:
        with rec:
            out = func(*unflatten(args, spec), **kwargs)
    except TracingError as exc:
        err = _trace_error(exc)
        if err is not None:
            raise err from None
        raise Unbatchable(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the trace refused what eager mode may take: one call per example
        raise Unbatchable(f"{type(exc).__name__}: {exc}") from None
    finally:
        if not (get_rng_state()._data == state._data).all():
            set_rng_state(state)
            raise Unbatchable("the function draws random numbers")
    flat_out, out_spec = flatten(out)
    nodes = [o._node for o in flat_out if isinstance(o, Tracer)]
    vals = _replay(nodes, rec, moved, B) if nodes else {}
    return out, out_spec, [vals[o._node.id] if isinstance(o, Tracer) else (o, False) for o in flat_out]
