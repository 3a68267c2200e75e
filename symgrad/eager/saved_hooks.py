"""Saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``): the state and the two calls into it.

While hooks are installed, recording a node calls ``pack`` on each tensor torch's node of the same name saves for
backward (its inputs or its result, in torch's order and under torch's conditions: ``MulBackward0`` saves
``other`` when ``self`` needs a gradient, then ``self`` when ``other`` does; ``ExpBackward0`` its result), and
keeps what ``pack`` returned. A backward through the node calls ``unpack`` on each, latest node first, and the
values it returns are the ones the backward program reads for those tensors. Nodes torch does not have (the
inner nodes of a composite such as ``linear``) pack by their own names.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from ..core.graph import Node
from .base import TensorBase

__all__ = ["STACK", "DISABLED", "PACKED", "SAVES", "pack_node", "pack_tensors", "suspended", "unpack_into", "drop"]

#: installed (pack, unpack) pairs, innermost last
STACK: list[tuple[Callable, Callable]] = []
#: error messages of ``disable_saved_tensors_hooks`` blocks, innermost last
DISABLED: list[str] = []
#: node -> [(input index, -1 for its result, or the graph node whose value it stands for (None: none); what pack
#: returned; the unpack hook)]
PACKED: weakref.WeakKeyDictionary[Node, list[tuple[Any, Any, Callable]]] = weakref.WeakKeyDictionary()

R = -1  # the node's result
ANY = None  # saved whenever the node is recorded

_RESULT = ((R, ANY),)
_SELF = ((0, ANY),)
_SELF_RESULT = ((0, ANY), (R, ANY))
_OTHER_SELF = ((1, ANY), (0, ANY))

#: torch grad_fn name -> what it saves, in order: (input index or R, the input that must need a gradient or ANY)
SAVES: dict[str, tuple[tuple[int, int | None], ...]] = {
    "MulBackward0": ((1, 0), (0, 1)),
    "DivBackward0": ((1, ANY), (0, 1)),
    "PowBackward1": ((1, ANY), (0, ANY), (R, 1)),
    "PowBackward2": ((1, ANY), (R, ANY)),
    "MmBackward0": ((1, 0), (0, 1)),
    "BmmBackward0": ((1, 0), (0, 1)),
    "MvBackward0": ((0, 1), (1, 0)),
    "DotBackward0": ((0, 1), (1, 0)),
    "AddcmulBackward0": ((1, 2), (2, 1)),
    "WhereBackward0": ((0, ANY),),
    **{name: _OTHER_SELF for name in ("MaximumBackward0", "MinimumBackward0", "Atan2Backward0")},
    **{name: _RESULT for name in (
        "ExpBackward0", "Exp2Backward0", "Expm1Backward0", "TanhBackward0", "SigmoidBackward0", "ReluBackward0",
        "SqrtBackward0", "RsqrtBackward0", "ReciprocalBackward0", "TanBackward0", "SoftmaxBackward0",
        "LogSoftmaxBackward0")},
    **{name: _SELF for name in (
        "LogBackward0", "Log2Backward0", "Log10Backward0", "Log1PBackward0", "SinBackward0", "CosBackward0",
        "SinhBackward0", "CoshBackward0", "AsinBackward0", "AcosBackward0", "AtanBackward0", "ErfBackward0",
        "AbsBackward0", "PowBackward0", "ClampBackward1", "ClampMinBackward0", "ClampMaxBackward0",
        "LeakyReluBackward0", "GeluBackward0", "SiluBackward0", "EluBackward0", "CeluBackward0",
        "SoftplusBackward0", "HardtanhBackward0", "HardswishBackward0", "MishBackward0", "VarBackward0")},
    **{name: _SELF_RESULT for name in (
        "MaxBackward1", "MinBackward1", "AmaxBackward0", "AminBackward0", "ProdBackward0", "StdBackward0",
        "LogsumexpBackward0", "LogSigmoidBackward0")},
}

_INPLACE_MSG = ("A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
                "cannot be modified by in-place operations as this can lead to unexpected side-effects. Please "
                "open an issue if you need to perform in-place operations on the input to a pack hook.")


def _needs(x: Any) -> bool:
    return isinstance(x, TensorBase) and x._node is not None


def pack_node(node: Node, inputs: Sequence[Any], out: Any) -> None:
    """Run the innermost pack hook on what torch's node of ``node``'s name saves (called while recording)."""
    spec = SAVES.get(node.op.grad_fn_name(dict(node.attrs)))
    if not spec:
        return
    pack, unpack = STACK[-1]
    packed: list[tuple[Any, Any, Callable]] = []
    for src, cond in spec:
        t = out if src == R else inputs[src] if src < len(inputs) else None
        if not isinstance(t, TensorBase) or (cond is not None and not (cond < len(inputs) and _needs(inputs[cond]))):
            continue
        packed.append((src, _pack(pack, t), unpack))
    if packed:
        PACKED[node] = packed


def _pack(pack: Callable, t: Any) -> Any:
    version = t._version.v
    p = pack(t)
    if t._version.v != version:
        raise RuntimeError(_INPLACE_MSG)
    return p


def pack_tensors(node: Node | None, saves: Sequence[tuple[Any, Node | None, bool]]) -> None:
    """Pack what a composite saves as torch's single node does (``linear``'s ``AddmmBackward0``: input, then
    ``weight.T``): ``saves`` holds (tensor, the graph node whose value it is, whether torch saves it)."""
    if not STACK or node is None:
        return
    pack, unpack = STACK[-1]
    packed = [(target, _pack(pack, t), unpack) for t, target, cond in saves if cond and isinstance(t, TensorBase)]
    if packed:
        PACKED[node] = packed


@contextmanager
def suspended() -> Iterator[None]:
    """No packing inside (the ops of a composite that packs as one node)."""
    saved = STACK[:]
    STACK.clear()
    try:
        yield
    finally:
        STACK[:] = saved


def unpack_into(order: Sequence[Node], pos: dict[int, int], values: list, skip: Any = ()) -> None:
    """Run the unpack hooks of the nodes in ``order`` (latest first) and put the tensors they return in
    ``values`` (the backward program's inputs) in place of the saved ones."""
    nodes = sorted((n for n in order if n in PACKED and n.id not in skip), key=lambda n: n.id, reverse=True)
    for node in nodes:
        for src, p, unpack in PACKED[node]:
            t = unpack(p)
            if not isinstance(t, TensorBase):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                                f"{type(t).__name__}")
            target = src if not isinstance(src, int) else node if src == R else node.inputs[src]
            i = None if target is None else pos.get(target.id)
            if i is not None and tuple(t.shape) == tuple(target.shape):
                values[i] = t._data


def drop(order: Sequence[Node]) -> None:
    """Free what the nodes of a finished backward packed (``retain_graph=False``)."""
    for n in order:
        PACKED.pop(n, None)
