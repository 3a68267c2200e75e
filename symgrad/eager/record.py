"""Recording: ``_apply`` runs an op on tensors and records its node; constant and input nodes; the tables
torch's saved-variable and view checks read; views that follow their base through recorded writes."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core import context as _trace
from ..core import dtypes
from ..core.dtypes import DType
from ..core.graph import Node
from ..ops import REGISTRY, A, OpDef, apply, broadcast_shapes
from ..ops import source as _src
from ..ops.base import promotion_operands
from ..ops.update import COPY_SLICES, WHOLE, index_put_op
from . import anomaly
from . import saved_attrs as _saved_attrs
from . import saved_hooks as _saved_hooks
from .base import _CONST, _LEAF, _SCALAR, TensorBase, _py, is_traced, make_tensor
from .grad_mode import is_grad_enabled

if TYPE_CHECKING:
    from .tensor import Tensor


_VIEW_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation."

#: view node -> how many recorded in-place writes its storage had when the view was taken
VIEW_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


#: node of a view made by a function returning several (split, chunk, unbind) -> (torch's name, output number):
#: torch refuses in-place operations on those
MULTI_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _SavedInputs:
    """A mapping node -> value kept in the node's ``saved`` slot: it lives and dies with the node, without
    the weak references (and their callbacks) of a weak-keyed table."""

    __slots__ = ()

    def __setitem__(self, node: Node, value: Any) -> None:
        node.saved = value

    def __getitem__(self, node: Node) -> Any:
        if node.saved is None:
            raise KeyError(node)
        return node.saved

    def __contains__(self, node: Node) -> bool:
        return node.saved is not None

    def get(self, node: Node, default: Any = None) -> Any:
        return default if node.saved is None else node.saved


#: node -> per input (version of its storage when the node was recorded, the input tensor) or None:
#: what torch's SavedVariable remembers, checked when a backward rule reads that input.
SAVED_INPUTS = _SavedInputs()


def _refuse_inplace_on_view(node: Node) -> None:
    """In-place on a view of a tensor that requires grad: torch's error for a leaf's view; otherwise
    torch rewrites the base's history (``CopySlices``), which symgrad does not do."""
    base = node
    while base.op.family != "source" and base.op.is_view(dict(base.attrs)):
        base = base.inputs[0]
    if base.op is _LEAF:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    raise NotImplementedError(
        "symgrad does not support in-place operations on a view of a tensor that requires grad (torch rewrites "
        "the history of the viewed tensor as CopySlices); apply the operation out of place, or to a clone()")


def _reads_self(op: OpDef, n: int, attrs: dict) -> bool:
    """Whether the rule of an in-place ``op`` reads its first input (``mul_`` does, ``add_`` does not)."""
    if op.family != "elementwise":
        return True
    return any(A[0] in p.free_symbols for p in op.local_partials(n, tuple(sorted(attrs.items()))))


def _original(t: Tensor) -> Tensor:
    """``t`` as an in-place op on it saves it: a copy of its value under a fresh version counter.

    Its node, if any, is a ``clone`` of ``t``'s marked ``saved`` (hidden from ``next_functions``):
    the gradient flows on to ``t``'s node, while the ops that saved ``t`` itself (``exp`` saves its
    result) still see the write and raise torch's "modified by an inplace operation" error.
    """
    snap = make_tensor(t._data.copy())
    n = t._node
    if n is not None:
        saved = Node(REGISTRY["clone"], (n,), (("saved", True),), n.shape, n.dtype, value=snap._data,
                     requires_grad=True)
        saved.storage = snap._version
        saved.version = snap._version.v
        snap._node = saved
    return snap


def _const_node(t: Tensor) -> Node:
    n = Node(_CONST, (), (), t._data.shape, t.dtype, value=t._data, name=t._name)
    n.storage = t._version
    n.version = t._version.v
    return n


def _input_node(x: Any) -> Node:
    if isinstance(x, TensorBase):
        if x._view is not None:
            refresh(x)
        # only view nodes are in VIEW_WRITES: skip the weak-dict lookup for the others
        elif x._node is not None and x._node.op.view is not False and x._node in VIEW_WRITES and \
                VIEW_WRITES[x._node] != x._version.recorded:
            raise NotImplementedError(
                "symgrad does not support using a view after an in-place operation recorded on the tensor it views "
                "(torch regenerates the view's grad_fn); take the view again after the in-place operation")
        return x._node if x._node is not None else _const_node(x)
    v = _py(x)
    return Node(_SCALAR, (), (("value", v),), (), dtypes.result_type(v), value=v)


def _same_dtype(inputs: Sequence[Any]) -> DType | None:
    """The dtype of ``inputs`` when all are tensors of one dtype (their promoted type), else None."""
    npd = None
    for x in inputs:
        if not isinstance(x, TensorBase):
            return None
        d = x._data.dtype
        if npd is None:
            npd = d
        elif d != npd:
            return None
    return None if npd is None else dtypes.from_numpy_dtype(npd)



def _scalar_array(value: Any, np_dtype: Any) -> np.ndarray:
    """A Python number as a 0-d array of the op's dtype; an integer out of its range wraps, as torch's does."""
    try:
        return np.asarray(value, dtype=np_dtype)
    except OverflowError:
        return np.asarray(value).astype(np_dtype)

def _apply(op: OpDef, *inputs: Any, _out_dtype: DType | None = None, **attrs: Any) -> Tensor:
    """Run ``op`` eagerly on tensors / Python numbers and record a node when grad is needed."""
    if _trace.active is not None:
        return _trace.active.record(op, inputs, attrs, _out_dtype)
    if op.check is not None:
        op.check(*(x.dtype if isinstance(x, TensorBase) else dtypes.result_type(_py(x)) for x in inputs), **attrs)
    elementwise = op.family == "elementwise"
    if elementwise:
        # tensors of one dtype (no scalar operands or attrs taking part in promotion) promote to that dtype
        promote = op.promote_attrs
        dt = None if promote and any(attrs.get(k) is not None for k in promote) else _same_dtype(inputs)
        same = dt is not None
        if not same:
            dt = dtypes.result_type(*promotion_operands(op, inputs, attrs))
        if not op.keeps_int:
            dt = dtypes.float_result(dt)
        if op.name == "to":
            dt = dtypes.from_any(attrs["dtype"])
        elif op.comparison:
            arrays = [x._data if isinstance(x, TensorBase) else np.asarray(_py(x)) for x in inputs]
            broadcast_shapes(*(a.shape for a in arrays))
            return make_tensor(np.asarray(op.eval(*arrays)))
        if same and (dt.np == inputs[0]._data.dtype or op.name == "to"):
            arrays = [x._data for x in inputs]
        else:
            arrays = [x._data.astype(dt.np, copy=False) if isinstance(x, TensorBase) and op.name != "to" else
                      x._data if isinstance(x, TensorBase) else _scalar_array(_py(x), dt.np) for x in inputs]
        if len(arrays) > 1:
            s0 = arrays[0].shape
            if any(a.shape != s0 for a in arrays):
                broadcast_shapes(*(a.shape for a in arrays))
    else:
        arrays = [x._data if isinstance(x, TensorBase) else np.asarray(_py(x)) for x in inputs]
        dt = None
    value = op.eval(*arrays, **attrs)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if elementwise and value.ndim >= 2 and not (value.flags.c_contiguous and all(a.flags.c_contiguous
                                                                                for a in arrays)):
        value = _torch_layout(value, arrays, op.result_layout(attrs))  # (C-order operands keep a C-order result)
    if _out_dtype is not None:
        dt = _out_dtype  # in-place ops keep the dtype of the tensor they write into
    if dt is not None and value.dtype != dt.np:
        value = value.astype(dt.np)
    out_dt = dt if dt is not None and value.dtype == dt.np else dtypes.from_numpy_dtype(value.dtype)
    needs = False
    if is_grad_enabled():
        diff = op.diff_args
        for i, x in enumerate(inputs):
            if isinstance(x, TensorBase) and x._node is not None and (diff is None or i in diff):
                needs = True
                break
    view = op.view
    is_view = bool(view) and bool(inputs) and isinstance(inputs[0], TensorBase) and (
        view(attrs) if callable(view) else True)
    out = make_tensor(value, _version=inputs[0]._version if is_view else None)
    if is_view:
        note_view(out, inputs[0], op, attrs)
    if needs:
        if not out_dt.is_floating_point:
            return out
        nodes, saved = [], []
        inference = False
        for x in inputs:
            nodes.append(_input_node(x))
            if isinstance(x, TensorBase):
                saved.append((x._version.v, weakref.ref(x)))
                inference = inference or x._version.inference
            else:
                saved.append(None)
        node = Node(op, tuple(nodes), tuple(sorted(attrs.items())) if len(attrs) > 1 else tuple(attrs.items()),
                    value.shape, out_dt, value=value, requires_grad=True)
        version = out._version
        node.storage = version
        node.version = version.v
        node.saved = tuple(saved)  # SAVED_INPUTS[node]
        if inference:
            _saved_attrs.check_inference(node, inputs)  # torch refuses to save an inference tensor
        out._node = node
        if _saved_hooks.STACK:
            _saved_hooks.pack_node(node, inputs, out)
        if anomaly.is_anomaly_enabled():
            anomaly.note_forward(node)
        if is_view:
            VIEW_WRITES[node] = version.recorded
    return out


def _torch_layout(value: np.ndarray, operands: Sequence[np.ndarray], layout: str) -> np.ndarray:
    """``value`` laid out in memory as torch lays out an elementwise result, so that ``view()`` works
    (or fails) and ``reshape`` picks its grad_fn as in torch.

    torch's TensorIterator orders the dims by the strides of the operands, first operand first,
    skipping broadcast dims (numpy instead falls back to C order when the operands disagree).
    """
    if layout == "contiguous":
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    if all(a.flags.c_contiguous for a in operands):
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    shape, nd = value.shape, value.ndim
    strides = []
    for a in operands:
        lead = nd - a.ndim
        strides.append([0 if i < lead or (a.shape[i - lead] == 1 and shape[i] != 1) else a.strides[i - lead]
                        for i in range(nd)])

    def should_swap(d0: int, d1: int) -> int:
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(nd - 1, -1, -1))  # fastest-moving dim first, as TensorIterator keeps it
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    order = perm[::-1]  # slowest first
    if order == list(range(nd)):
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    want = np.empty([shape[d] for d in order], dtype=value.dtype).transpose(np.argsort(order))
    if want.strides == value.strides:
        return value
    want[...] = value
    return want


# ====================================================================== views: writes reach their base

class ViewOf:
    """How a view tensor was taken: its ``base`` (never itself a view), the view ops from the base to
    it (``chain``: (op, attrs) pairs), and the base's count of recorded writes when the view's node
    was last derived from the base's (``recorded``)."""

    __slots__ = ("base", "chain", "recorded")

    def __init__(self, base: Any, chain: tuple, recorded: int) -> None:
        self.base, self.chain, self.recorded = base, chain, recorded


def note_view(out: Any, src: Any, op: OpDef, attrs: dict, traced: bool = False) -> None:
    """Record that ``out`` is ``op(src, **attrs)``, a view of ``src`` (if it shares its storage, which
    tracers, without storage, are taken to do)."""
    if not traced and (out._data.base is None or not np.may_share_memory(out._data, src._data)):
        return
    step = ((op, attrs),)
    if src._view is not None:
        out._view = ViewOf(src._view.base, src._view.chain + step, out._version.recorded)
    else:
        out._view = ViewOf(src, step, out._version.recorded)


def _view_step(op: OpDef, attrs: tuple, parent: Node, value: Any, fn: str | None = None) -> Node:
    at = dict(attrs)
    if fn is not None and op.name != "expand":
        at["fn"] = fn
    node = apply(op, parent, **at)
    if value is not None:
        node.value = value
    return node


def _chain_values(data: Any, chain: tuple) -> list:
    """The base's array and each view of the chain applied to it (numpy views; None while tracing)."""
    out = [data]
    for op, attrs in chain:
        out.append(None if data is None else op.eval(out[-1], **dict(attrs)))
    return out


def refresh(t: Any) -> None:
    """Bring a view's node up to date after recorded writes to its storage: the view ops applied to
    the base's current node (torch regenerates such a view, as ``AsStridedBackward0``)."""
    info = t._view
    if info is None or info.recorded == t._version.recorded:
        return
    base = info.base
    info.recorded = t._version.recorded
    if base._node is None:
        return
    tracing = is_traced(t)
    values = _chain_values(None if tracing else base._data, info.chain)
    node = base._node if base._node is not None else _const_node(base)
    for k, (op, attrs) in enumerate(info.chain):
        last = k == len(info.chain) - 1
        node = _view_step(op, attrs, node, values[k + 1], "AsStridedBackward0" if last else None)
        if not tracing:
            node.storage, node.version = t._version, t._version.v
    t._node = node
    VIEW_WRITES[node] = t._version.recorded


def check_view_write(t: Any) -> None:
    """torch's errors for writing into a view: of a leaf that requires grad, of an expanded tensor; and
    symgrad's for a view it cannot trace back to its base."""
    info = t._view
    if info is None:
        if t._node is not None and t._node.op.is_view(dict(t._node.attrs)):
            _refuse_inplace_on_view(t._node)
        return
    base = info.base
    if base._node is not None and base._node.op is _src.leaf and base._node.requires_grad:
        raise RuntimeError(_VIEW_LEAF_MSG)
    # torch's internal-overlap check (an expanded view); a tracer's layout is that of a fresh base's view
    data = _chain_values(np.empty(base.shape, np.bool_), info.chain)[-1] if is_traced(t) else t._data
    if any(st == 0 and n > 1 for st, n in zip(data.strides, data.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if not is_traced(t) and not data.flags.writeable:
        raise RuntimeError("symgrad cannot write into an expand() result (its numpy view is read-only); write into "
                           "the tensor it expands, or into a clone()")


def _unview(op: OpDef, attrs: tuple, parent: Node, child: Node) -> Node:
    """``parent`` with its view ``op(parent, **attrs)`` replaced by ``child``."""
    at = dict(attrs)
    if op.name == "index":
        return apply(index_put_op, parent, child, index=at["index"], accumulate=False, fn=COPY_SLICES)
    if op.name == "reshape":
        return apply(op, child, shape=tuple(parent.shape))
    if op.name == "permute":
        inv = tuple(int(i) for i in np.argsort(at["dims"]))
        return apply(op, child, dims=inv)
    if op.name == "expand":  # only an expand that adds size-1 dims gets here (check_view_write)
        return apply(REGISTRY["reshape"], child, shape=tuple(parent.shape))
    raise NotImplementedError(f"symgrad cannot write through a view made by {op.name}")


def propagate(t: Any) -> None:
    """After ``t`` (a view) got a new node by an in-place write, rewrite its base's history as torch's
    ``CopySlices``: the base with the view's region replaced by the view's new value; then derive the
    view's node from the base's again."""
    info = t._view
    base, chain = info.base, info.chain
    tracing = is_traced(t)
    if base._node is not None:
        root = base._node
    else:  # a base without history: a constant of its values (outside the written region, unchanged)
        root = _const_node(make_tensor(base._data.copy()))
    values = _chain_values(None if tracing else base._data, chain)
    parents = [root]
    for op, attrs in chain[:-1]:
        parents.append(apply(op, parents[-1], **dict(attrs)))
    cur = t._node
    for k in range(len(chain) - 1, -1, -1):
        op, attrs = chain[k]
        cur = _unview(op, attrs, parents[k], cur)
        if values[k] is not None:
            cur.value = values[k]
    if cur.op is not index_put_op or cur.inputs[0] is not root:
        cur = apply(index_put_op, root, cur, index=WHOLE, accumulate=False, fn=COPY_SLICES)
        cur.value = values[0]
    if not tracing:
        cur.storage, cur.version = base._version, base._version.v
        base._grad_terms.reset(False)
    base._node = cur
    info.recorded = -1  # derive the view's node from the base's new one
    refresh(t)
    if t._node is not None:
        VIEW_WRITES[t._node] = t._version.recorded
