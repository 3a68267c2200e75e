"""What a grad_fn shows of what it saved (``y.grad_fn._saved_self``, ``_saved_result``, ``_saved_dim``...), as
torch's node of the same name: the saved input tensors are the very objects the op was called on, its saved result
a new tensor on the result's storage with the same grad_fn, a value torch did not save is ``None``, sizes are
tuples and negative integers read as torch's unsigned 64-bit view of them (``-1`` is ``2**64 - 1``);
``_raw_saved_*`` are ``SavedTensor``s whose ``register_hooks(pack, unpack)`` packs the tensor at once and unpacks
it when the backward (or ``_saved_*``) reads it. Reading a saved tensor after a backward freed the graph raises
torch's error (``Freed``, turned into it by the grad_fn). ``check_inference`` is torch's refusal to save an
inference tensor for backward.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from ..core.graph import Node
from . import saved_hooks as _saved_hooks
from .base import TensorBase, make_tensor

__all__ = ["NOTES", "Freed", "Modified", "SavedTensor", "check_inference", "names", "note", "note_dims", "note_indices",
           "note_select", "read", "refuse_inference"]

_INFERENCE_MSG = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")
_RAW_FREED_MSG = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are "
    "freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
    "the graph a second time or if you need to access saved variables after calling backward.")
_RAW_SET_MSG = ("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of "
                "hooks is allowed at a time.")

#: node -> what torch's node keeps that the graph does not (the dim as written, ``nll_loss``'s target...)
NOTES: weakref.WeakKeyDictionary[Node, dict] = weakref.WeakKeyDictionary()


class Freed(Exception):
    """A saved tensor read after the backward that freed it."""


class Modified(Exception):
    """A saved tensor read after an in-place write: ``args`` are the tensor, the version it was saved at and the
    name of the node that saved it (for a saved result; None for an input)."""


def note(out: Any, **values: Any) -> Any:
    """Remember ``values`` as what ``out``'s grad_fn saved (overriding what the graph shows). Returns ``out``."""
    node = getattr(out, "_node", None)
    if node is not None:
        NOTES.setdefault(node, {}).update(values)
    return out


def note_dims(out: Any, dim: Any, dims: tuple) -> Any:
    """``out``'s reduction dims as the caller wrote them (``-1``, ``(1, 0)``) where they differ from ``dims``, the
    normalised ones its node keeps. Returns ``out``."""
    raw = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if raw != dims and out._node is not None:
        note(out, dim=raw)
    return out


def _u64(v: Any) -> Any:
    """An int as torch shows a saved int64 (its unsigned view); tuples item by item."""
    if isinstance(v, tuple):
        return tuple(_u64(x) for x in v)
    return v + 2 ** 64 if isinstance(v, int) and not isinstance(v, bool) and v < 0 else v


# ---------------------------------------------------------------------------------------------- saved tensors

class _Src:
    """Where a saved tensor is: ``node`` (the graph node holding it), ``k`` (its input number, -1: its result),
    ``owner`` (the grad_fn's node, whose ``freed`` and packed hooks count)."""

    __slots__ = ("node", "k", "owner")

    def __init__(self, node: Node, k: int, owner: Node) -> None:
        self.node, self.k, self.owner = node, k, owner

    @property
    def key(self) -> Any:
        """How ``saved_hooks.PACKED`` names it: the input number or -1 on the grad_fn's own node, else the node
        whose value it is."""
        if self.node is self.owner:
            return self.k
        return self.node if self.k == -1 else self.node.inputs[self.k]

    def freed(self) -> bool:
        return self.owner.freed or self.node.freed

    def tensor(self) -> Any:
        """The saved tensor itself (no unpack hook)."""
        n = self.node
        if self.k == -1:
            t = make_tensor(n.value, _node=n, _version=n.storage)
            return t
        rec = n.saved[self.k] if n.saved is not None and self.k < len(n.saved) else None
        t = rec[1]() if rec is not None else None
        if t is not None:
            return t
        x = n.inputs[self.k]
        if x.op.name == "scalar":  # a Python number: torch's wrapped-number tensor (double or long)
            v = x.attr("value")
            return make_tensor(np.asarray(v, dtype=np.float64 if isinstance(v, float) else np.int64))
        return make_tensor(x.value, _node=x if x.requires_grad else None, _version=x.storage)

    def packed(self) -> tuple | None:
        for entry in _saved_hooks.PACKED.get(self.owner, ()):
            if entry[0] is self.key or entry[0] == self.key and isinstance(self.key, int):
                return entry
        return None

    def value(self) -> Any:
        if self.freed():
            raise Freed
        entry = self.packed()
        if entry is not None:
            return entry[2](entry[1])
        t = self.tensor()
        expected, by = self._expected(t)
        if isinstance(t, TensorBase) and t._version.v != expected:
            raise Modified(t, expected, by)
        return t

    def _expected(self, t: Any) -> tuple[int, str | None]:
        """The version ``t`` was saved at, and the name of the node that saved it as its result (else None)."""
        n = self.node
        if self.k == -1:
            return n.version, n.op.grad_fn_name(dict(n.attrs))
        rec = n.saved[self.k] if n.saved is not None and self.k < len(n.saved) else None
        return (t._version.v if rec is None else rec[0]), None


class _Held(_Src):
    """A tensor a composite's call noted as saved (``NOTES``): ``node`` is the inner node whose ``freed`` counts."""

    __slots__ = ("held",)

    def __init__(self, held: Any, node: Node, owner: Node) -> None:
        super().__init__(node, 0, owner)
        self.held = held

    @property
    def key(self) -> Any:
        return getattr(self.held, "_node", None)

    def tensor(self) -> Any:
        return self.held

    def _expected(self, t: Any) -> tuple[int, str | None]:
        return (t._version.v if isinstance(t, TensorBase) else 0), None


class SavedTensor:
    """torch's ``torch._C._autograd.SavedTensor``: one tensor a node saved."""

    __slots__ = ("_src",)

    def __init__(self, src: _Src) -> None:
        self._src = src

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        """Pack the saved tensor now with ``pack_hook``; ``unpack_hook`` gives what the backward reads."""
        src = self._src
        if src.freed():
            raise RuntimeError(_RAW_FREED_MSG)
        if src.packed() is not None:
            raise RuntimeError(_RAW_SET_MSG)
        t = src.tensor()
        _saved_hooks.PACKED.setdefault(src.owner, []).append((src.key, _saved_hooks._pack(pack_hook, t), unpack_hook))

    def unpack(self) -> Any:
        return self._src.value()

    def __repr__(self) -> str:
        return f"<torch._C._autograd.SavedTensor object at {id(self):#x}>"


# ---------------------------------------------------------------------------------------------- the table

def _needs(node: Node, k: int | None) -> bool:
    return k is None or (k < len(node.inputs) and node.inputs[k].requires_grad)


def _inner(node: Node, op: str) -> Node | None:
    """The first input of ``node`` (or ``node``) that is an ``op`` node: a composite's inner node."""
    if node.op.name == op:
        return node
    return next((x for x in node.inputs if x.op.name == op and x.requires_grad), None)


def _t(k: int, cond: int | None = None, where: Callable[[Node], Node | None] | None = None) -> Callable:
    """Input ``k`` (-1: the result) of the node (or of ``where(node)``), saved when input ``cond`` needs a
    gradient: returns the _Src, or None."""
    def get(node: Node) -> _Src | None:
        n = node if where is None else where(node)
        if n is None or not _needs(n, cond):
            return None
        return _Src(n, k, node)
    get.tensor = True  # type: ignore[attr-defined]
    return get


def _attr(key: str, default: Any = None, conv: Callable = _u64) -> Callable:
    return lambda node: conv(NOTES.get(node, {}).get(key, node.attr(key, default)))


def _sizes(k: int = 0, where: Callable | None = None, cond: int | None = None) -> Callable:
    """Input ``k``'s sizes (saved when input ``cond`` needs a gradient, else torch's empty tuple)."""
    def get(node: Node) -> tuple:
        n = node if where is None else where(node)
        return tuple(n.inputs[k].shape) if _needs(n, cond) else ()
    return get


def _strides(k: int, where: Callable) -> Callable:
    """Input ``k``'s strides, saved when it needs a gradient (else ``()``)."""
    def get(node: Node) -> tuple:
        n = where(node)
        return tuple(_Src(n, k, node).tensor().stride()) if _needs(n, k) else ()
    return get


def _numel(node: Node) -> int:
    return int(np.prod(node.inputs[0].shape, dtype=np.int64))


def _noted(key: str, default: Callable) -> Callable:
    return lambda node: _u64(NOTES[node][key]) if key in NOTES.get(node, {}) else default(node)


def _dim_tuple(node: Node) -> tuple:
    return _u64(tuple(NOTES.get(node, {}).get("dim", node.attr("dims"))))


def _dim_int(node: Node) -> int:
    return _u64(NOTES.get(node, {}).get("dim", node.attr("dims"))[0])


def _keepdim(node: Node) -> bool:
    return bool(node.attr("keepdim", False))


def _index_part(node: Node) -> tuple[int, tuple]:
    """The dim and the entry of a one-dim ``index`` node's key (a slice or a select)."""
    for d, part in enumerate(node.attr("index")):
        if part[0] != "s" or part[1:] != (None, None, None):
            return d, part
    return 0, ("s", None, None, None)


def _slice(i: int, default: int) -> Callable:
    def get(node: Node) -> int:
        v = _index_part(node)[1][i]
        return _u64(default if v is None else v)
    return get


def _indices(node: Node) -> tuple:
    noted = NOTES.get(node, {}).get("indices")
    if noted is not None:
        return noted
    out = []
    for part in node.attr("index"):
        if part[0] == "a":
            out.append(make_tensor(np.asarray(part[1], dtype=np.int64).reshape(part[2])))
        elif part[0] == "i":
            out.append(make_tensor(np.asarray(part[1], dtype=np.int64)))
        else:
            out.append(None)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def _tensors(get: Callable) -> Callable:
    """``get`` marked as giving saved tensors (a ``_raw_saved_`` twin)."""
    get.tensor = True  # type: ignore[attr-defined]
    return get


def _matmul(node: Node) -> Node | None:
    return _inner(node, "matmul")


def _mse(node: Node) -> Node | None:
    if node.op.name == "fused" and len(node.inputs) == 2:
        return node
    return next((x for x in node.inputs if x.op.name == "fused" and x.requires_grad), None)


def _reduction(node: Node) -> int:
    return {"none": 0, "mean": 1, "sum": 2}["none" if node.op.name == "fused" else node.op.name]


def _result(cond: int | None = None) -> Callable:
    return _t(-1, cond)


_SELF = {"self": _t(0)}
_RESULT = {"result": _t(-1)}
_MM = {"mat2": _t(1, 0, _matmul), "mat2_sym_sizes": _sizes(1, _matmul), "mat2_sym_strides": _strides(1, _matmul)}

#: torch grad_fn name -> its saved attributes (without ``_saved_``) -> getter(node)
TABLE: dict[str, dict[str, Callable]] = {
    "MulBackward0": {"other": _t(1, 0), "self": _t(0, 1)},
    "DivBackward0": {"other": _t(1), "self": _t(0, 1)},
    "PowBackward0": {"exponent": _attr("exponent"), "self": _t(0)},
    "PowBackward1": {"exponent": _t(1), "result": _result(1), "self": _t(0)},
    "PowBackward2": {"exponent": _t(0), "result": _result(), "self": _attr("base")},
    **{name: _RESULT for name in ("ExpBackward0", "TanhBackward0", "SigmoidBackward0", "ReluBackward0",
                                  "SqrtBackward0", "RsqrtBackward0", "ReciprocalBackward0")},
    **{name: _SELF for name in ("LogBackward0", "Log2Backward0", "Log10Backward0", "Log1PBackward0", "SinBackward0",
                                "CosBackward0", "AbsBackward0", "SinhBackward0", "CoshBackward0")},
    "SumBackward0": {"self_sym_sizes": _sizes()},
    "SumBackward1": {"dim": _dim_tuple, "keepdim": _keepdim, "self_sym_sizes": _sizes()},
    "MeanBackward0": {"self_sym_numel": _numel, "self_sym_sizes": _sizes()},
    "MeanBackward1": {"dim": _dim_tuple, "keepdim": _keepdim, "self_sym_numel": _numel, "self_sym_sizes": _sizes()},
    "MmBackward0": {**_MM, "self": _t(0, 1, _matmul), "self_sym_sizes": _sizes(0, _matmul),
                    "self_sym_strides": _strides(0, _matmul)},
    "AddmmBackward0": {"alpha": _noted("alpha", lambda n: 1), "beta": _noted("beta", lambda n: 1),
                       "mat1": _t(0, 1, _matmul), "mat1_sym_sizes": _sizes(0, _matmul),
                       "mat1_sym_strides": _strides(0, _matmul), **_MM},
    "BmmBackward0": {"mat2": _t(1, 0), "self": _t(0, 1)},
    "MvBackward0": {"self": _t(0, 1), "vec": _t(1, 0)},
    "ThresholdBackward0": {"self": _t(0), "threshold": _attr("threshold")},
    "SoftmaxBackward0": {"dim": _dim_int, **_RESULT},
    "LogSoftmaxBackward0": {"dim": _dim_int, **_RESULT},
    "ClampBackward1": {"max": _attr("max"), "min": _attr("min"), "self": _t(0)},
    "ClampMinBackward0": {"min": _attr("min"), "self": _t(0)},
    "ClampMaxBackward0": {"max": _attr("max"), "self": _t(0)},
    "IndexBackward0": {"indices": _tensors(_indices), "self_sym_sizes": _sizes()},
    "SliceBackward0": {"dim": lambda n: _index_part(n)[0], "end": _slice(2, 2 ** 63 - 1), "self_sym_sizes": _sizes(),
                       "start": _slice(1, 0), "step": _slice(3, 1)},
    "SelectBackward0": {"dim": lambda n: _index_part(n)[0], "index": _noted("index", _slice(1, 0)),
                        "self_sym_sizes": _sizes()},
    "ViewBackward0": {"self_sym_sizes": _sizes()},
    "UnsafeViewBackward0": {"self_sym_sizes": _sizes()},
    "MseLossBackward0": {"reduction": _reduction, "self": _t(0, None, _mse), "target": _t(1, None, _mse)},
}


def _held(key: str) -> Callable:
    """A tensor the call noted under ``key`` (None: not saved)."""
    def get(node: Node) -> _Held | None:
        notes = NOTES.get(node, {})
        t = notes.get(key)
        if callable(t) and not isinstance(t, TensorBase):
            t = notes[key] = t()  # computed once, when first read
        return None if t is None else _Held(t, notes.get("watch", node), node)
    get.tensor = True  # type: ignore[attr-defined]
    return get


def _noted_only(key: str) -> Callable:
    return lambda node: _u64(NOTES.get(node, {}).get(key))


TABLE["NllLossBackward0"] = TABLE["NllLoss2DBackward0"] = {
    "ignore_index": _noted_only("ignore_index"), "reduction": _noted_only("reduction"), "self": _held("self"),
    "target": _held("target"), "total_weight": _held("total_weight"), "weight": _held("weight")}


def _swapped(node: Node) -> tuple[int, int]:
    """A transpose's two dims (from its permutation)."""
    moved = [i for i, d in enumerate(node.attr("dims")) if d != i]
    return (moved[0], moved[1]) if len(moved) == 2 else (0, 0)


def _inserted(node: Node) -> int:
    """The dim an unsqueeze inserted / a squeeze removed: the first position whose removal gives the other shape."""
    big, small = (node.shape, node.inputs[0].shape) if len(node.shape) > len(node.inputs[0].shape) else \
        (node.inputs[0].shape, node.shape)
    return next((i for i in range(len(big)) if big[:i] + big[i + 1:] == small), 0)


_ALPHA = {"alpha": _attr("alpha", 1)}
TABLE.update({
    "AddBackward0": _ALPHA, "SubBackward0": _ALPHA, "RsubBackward0": _ALPHA, "RsubBackward1": _ALPHA,
    "TransposeBackward0": {"dim0": lambda n: _swapped(n)[0], "dim1": lambda n: _swapped(n)[1]},
    "PermuteBackward0": {"dims": lambda n: tuple(n.attr("dims"))},
    "UnsqueezeBackward0": {"dim": _noted("dim", _inserted)},
    "SqueezeBackward0": {"self_sym_sizes": _sizes()},
    "SqueezeBackward1": {"dim": _inserted, "self_sym_sizes": _sizes()},
    "ExpandBackward0": {"self_sym_sizes": _sizes()},
    "CatBackward0": {"dim": _attr("dim")}, "StackBackward0": {"dim": _attr("dim")},
    "CumsumBackward0": {"dim": _attr("dim")},
    "WhereBackward0": {"condition": _t(0)},
    "LeakyReluBackward0": {"negative_slope": _attr("negative_slope", 0.01), "self": _t(0)},
    "GeluBackward0": {"approximate": _attr("approximate", "none"), "self": _t(0)},
    "SiluBackward0": _SELF,
    "MaximumBackward0": {"other": _t(1), "self": _t(0)}, "MinimumBackward0": {"other": _t(1), "self": _t(0)},
    "AmaxBackward0": {"dim": _dim_tuple, "keepdim": _keepdim, **_RESULT, **_SELF},
    "AminBackward0": {"dim": _dim_tuple, "keepdim": _keepdim, **_RESULT, **_SELF},
    "MaxBackward1": {**_RESULT, **_SELF}, "MinBackward1": {**_RESULT, **_SELF},
    "MaxBackward0": {"dim": _dim_int, "indices": _t(1), "keepdim": _keepdim, "self_sym_sizes": _sizes()},
    "MinBackward0": {"dim": _dim_int, "indices": _t(1), "keepdim": _keepdim, "self_sym_sizes": _sizes()},
    "ProdBackward0": {**_RESULT, **_SELF},
    "LogsumexpBackward0": {"dim": _dim_tuple, "keepdim": _keepdim, **_RESULT, **_SELF},
    "EluBackward0": {"alpha": _attr("alpha", 1.0), "input_scale": lambda n: 1, "scale": lambda n: 1, **_SELF},
    "HardtanhBackward0": {"max_val": _attr("max_val", 1.0), "min_val": _attr("min_val", -1.0), **_SELF},
    "DotBackward0": {"self": _t(0, 1), "tensor": _t(1, 0)},
    "RepeatBackward0": {"repeats": _attr("repeats"), "self_sym_sizes": _sizes()},
    "MaskedFillBackward0": {"mask": _t(1)},
    "IndexSelectBackward0": {"dim": lambda n: next(d for d, p in enumerate(n.attr("index")) if p[0] == "a"),
                             "index": _tensors(lambda n: _Held(_indices(n)[-1], n, n)), "self_sym_sizes": _sizes()},
})


def _spec(node: Node) -> dict[str, Callable]:
    spec = TABLE.get(node.op.grad_fn_name(dict(node.attrs)), {})
    extra = NOTES.get(node, {}).get("saved")
    return {**spec, **extra} if extra else spec


def names(node: Node) -> list[str]:
    """The ``_saved_*`` / ``_raw_saved_*`` attribute names of ``node``'s grad_fn."""
    spec = _spec(node)
    return [f"_saved_{k}" for k in spec] + [f"_raw_saved_{k}" for k, g in spec.items() if getattr(g, "tensor", 0)]


_MISSING = object()


def read(node: Node, name: str) -> Any:
    """The value of attribute ``name`` of ``node``'s grad_fn, or ``_MISSING``; raises ``Freed``."""
    raw = name.startswith("_raw_saved_")
    key = name[len("_raw_saved_" if raw else "_saved_"):]
    get = _spec(node).get(key)
    if get is None or (raw and not getattr(get, "tensor", False)):
        return _MISSING
    v = get(node)
    if raw and isinstance(v, tuple):  # ``_raw_saved_indices``: one SavedTensor per index tensor
        return tuple(None if x is None else SavedTensor(_Held(x, node, node)) for x in v)
    if not isinstance(v, _Src):
        if raw:  # a saved tensor torch did not keep: its SavedTensor holds nothing
            return SavedTensor(_Src(node, -1, node)) if v is None else v
        return v
    return SavedTensor(v) if raw else v.value()


#: what the (inner) nodes of names ``saved_hooks.SAVES`` leaves out save, in its terms
_INFERENCE_SAVES = {"MseLossBackward0": ((0, None), (1, None)), "AddmmBackward0": ((0, None), (1, None))}


def note_indices(out: Any, index: Any) -> Any:
    """Keep the index tensors of ``out = t[index]`` as torch's ``IndexBackward0`` saves them (the very objects),
    where ``index`` is integer tensors and full slices only. Returns ``out``."""
    parts = index if isinstance(index, tuple) else (index,)
    kept: list = []
    for p in parts:
        if isinstance(p, TensorBase) and not p.dtype.is_floating_point and p.dtype.name != "bool":
            kept.append(p)
        elif isinstance(p, slice) and p == slice(None):
            kept.append(None)
        else:
            return out
    while kept and kept[-1] is None:
        kept.pop()
    return note(out, indices=tuple(kept))


def note_select(out: Any, index: Any) -> Any:
    """Keep a negative integer of ``out = t[index]`` (a select) as written: torch's ``_saved_index``."""
    parts = index if isinstance(index, tuple) else (index,)
    ints = [p for p in parts if isinstance(p, int) and not isinstance(p, bool)]
    if len(ints) == 1 and ints[0] < 0:
        note(out, index=ints[0])
    return out


def refuse_inference(out: Any, *saved: Any) -> Any:
    """torch's error when ``out`` is recorded for backward and one of the tensors its node saves (``saved``: tensors,
    sequences of them, or other values) is an inference tensor. Returns ``out``."""
    if getattr(out, "_node", None) is not None:
        for x in saved:
            for t in (x if isinstance(x, (tuple, list)) else (x,)):
                if isinstance(t, TensorBase) and t._version.inference:
                    raise RuntimeError(_INFERENCE_MSG)
    return out


def check_inference(node: Node, inputs: Any) -> None:
    """torch's error when an input that ``node``'s torch node saves is an inference tensor."""
    name = node.op.grad_fn_name(dict(node.attrs))
    spec = _saved_hooks.SAVES.get(name) or _INFERENCE_SAVES.get(name, ())
    for src, cond in spec:
        if src == _saved_hooks.R or src >= len(inputs):
            continue
        x = inputs[src]
        if isinstance(x, TensorBase) and x._version.inference and _needs(node, cond):
            raise RuntimeError(_INFERENCE_MSG)


MISSING = _MISSING
