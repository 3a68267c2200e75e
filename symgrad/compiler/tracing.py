"""Tracing: run a function once on symbolic ``Tracer`` tensors and record the same DAG eager mode records."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import context as _trace
from ..core import dtypes
from ..core.errors import TracingError
from ..core.errors import user_frame as _user_frame
from ..core.graph import Node
from ..derive.forward import _zeros
from ..derive.reverse import backward_graph
from ..eager.base import _is_number, _py
from ..eager.grad_mode import is_grad_enabled
from ..eager.record import VIEW_WRITES, _const_node, _input_node, note_view, refresh
from ..eager.tensor import Tensor
from ..ops import OpDef, apply
from ..ops import source as _src


class Tracer(Tensor):
    """A tensor with a shape and dtype but no values, standing for an argument while tracing."""

    __slots__ = ()
    _traced = True

    @classmethod
    def wrap(cls, node: Node) -> Tracer:
        t = cls(np.broadcast_to(np.zeros((), node.dtype.np), node.shape), _node=node)
        return t

    @property
    def requires_grad(self) -> bool:  # type: ignore[override]
        return self._node.requires_grad

    def _concrete(self, what: str) -> Any:
        path, line, code = _user_frame()
        raise TracingError(
            f"{what} needs a concrete value, but this tensor is being traced by symgrad.compile "
            f"(at {path}:{line}: `{code}`). Python control flow cannot depend on traced values: "
            "use sg.where(condition, a, b) for a data-dependent choice (it becomes a SymPy Piecewise); "
            "control flow on shapes (x.shape, x.ndim) is fine.")

    def __bool__(self) -> bool:
        return self._concrete("bool() (an `if`, `while`, `and`/`or` or assert on a tensor)")

    def __float__(self) -> float:
        return self._concrete("float()")

    def __int__(self) -> int:
        return self._concrete("int()")

    def __index__(self) -> int:
        return self._concrete("using a tensor as an index")

    def item(self) -> Any:
        return self._concrete("item()")

    def tolist(self) -> Any:
        return self._concrete("tolist()")

    def numpy(self, *, force: bool = False) -> np.ndarray:
        return self._concrete("numpy()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._concrete("conversion to a numpy array")

    def __repr__(self) -> str:
        return f"Tracer(shape={list(self.shape)}, dtype={self.dtype!r})"

    __str__ = __repr__

    def detach(self) -> Tracer:
        return Tracer.wrap(_record_node(apply("stop_gradient", self._node), (self,), False))

    @property
    def data(self) -> Tracer:  # type: ignore[override]
        return self.detach()


def _record_node(node: Node, inputs: Sequence[Any], may_grad: bool) -> Node:
    node.requires_grad = may_grad and is_grad_enabled() and any(
        isinstance(x, Tensor) and x._node is not None and x._node.requires_grad for x in inputs)
    return node


class TraceContext:
    """Installed as ``_trace.active`` while a function is traced; records every op applied."""

    def __enter__(self) -> TraceContext:
        self._prev = _trace.active
        _trace.active = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _trace.active = self._prev

    def record(self, op: OpDef, inputs: Sequence[Any], attrs: dict, out_dtype: Any = None) -> Tensor:
        nodes = []
        for x in inputs:
            if isinstance(x, Tracer):
                if x._view is not None:
                    refresh(x)  # a view after writes to its storage: taken again from its base
                elif x._node in VIEW_WRITES and VIEW_WRITES[x._node] != x._version.recorded:
                    _input_node(x)  # the eager error
                nodes.append(x._node)
            elif isinstance(x, Tensor):
                nodes.append(_const_node(x))
            elif _is_number(x):
                v = _py(x)
                nodes.append(Node(_src.scalar, (), (("value", v),), (), dtypes.result_type(v), value=v))
            else:
                nodes.append(_const_node(Tensor(np.asarray(x))))
        dt = None
        if op.family == "elementwise" and op.name not in ("to",):
            dt = dtypes.result_type(*inputs)
            if not op.keeps_int:
                dt = dtypes.float_result(dt)
            if op.comparison:
                dt = dtypes.bool
        if "dtype" in attrs:  # ``to``'s attr: it shares its name with apply's dtype argument; infer gives it
            shape, inferred = op.infer(op, *nodes, **attrs)
            node = Node(op, tuple(nodes), tuple(sorted(attrs.items())), shape, inferred)
        else:
            node = apply(op, *nodes, dtype=dt, **attrs)
        diff = op.diff_args
        grad_inputs = [x for i, x in enumerate(inputs) if diff is None or i in diff]
        _record_node(node, grad_inputs, node.dtype.is_floating_point)
        out = Tracer.wrap(node)
        if inputs and isinstance(inputs[0], Tracer) and op.is_view(attrs):
            # a view shares its base's version counter: an in-place write to either makes the other stale
            out._version = inputs[0]._version
            VIEW_WRITES[node] = out._version.recorded
            note_view(out, inputs[0], op, attrs, traced=True)
        return out


def leaf(shape: tuple[int, ...], dtype: dtypes.DType, name: str, requires_grad: bool) -> Tracer:
    n = Node(_src.leaf, (), (), tuple(shape), dtype, requires_grad=requires_grad, name=name)
    return Tracer.wrap(n)


def trace(fn: Callable, args: Sequence[Tracer]) -> Any:
    """Run ``fn`` on tracers; returns what it returns (tracers, numbers or constants)."""
    with TraceContext():
        return fn(*args)


def _as_node(out: Any) -> Node:
    if isinstance(out, Tracer):
        return out._node
    if isinstance(out, Tensor) or _is_number(out) or isinstance(out, np.ndarray):
        return _const_tracer(out)._node
    raise TypeError(f"a compiled function must return a tensor or a number, not {type(out).__name__}")


def _const_tracer(x: Any) -> Any:
    t = x if isinstance(x, Tensor) else Tensor(np.asarray(x, dtype=np.float64))
    return Tracer.wrap(_const_node(t))


class Signature:
    """One traced signature: the leaves' nodes, the output nodes, whether ``f`` returned several."""

    def __init__(self, leaves: list[Node], outs: list[Node], multi: bool) -> None:
        self.leaves, self.outs, self.multi = leaves, outs, multi
        self.sweeps: dict[str, Any] = {}  # the transforms' JacobianSweeps, by mode


def trace_signature(f: Callable, kinds: Sequence[tuple], names: Sequence[str], diff: set[int]) -> Signature:
    leaves = [leaf(k[2], dtypes.from_any(k[1]), names[i], i in diff) for i, k in enumerate(kinds)]
    out = trace(f, leaves)
    multi = isinstance(out, (tuple, list))
    outs = [_as_node(o) for o in (out if multi else (out,))]
    return Signature([lv._node for lv in leaves], outs, multi)


def gradient_nodes(sig: Signature, wrt: Sequence[Node]) -> list[Node]:
    """The gradient of a scalar-output trace w.r.t. ``wrt`` (zeros where it does not depend): a Hessian's rows."""
    (out,) = sig.outs if not sig.multi and len(sig.outs) == 1 else (None,)
    if out is None or out.shape != ():
        shape = out.shape if out is not None else "several outputs"
        raise TypeError(f"hessian is only defined for scalar-output functions. Output had shape: {shape}")
    one = Node(_src.scalar, (), (("value", 1),), (), out.dtype, value=1)
    grads, _ = backward_graph([out], [one], wrt)
    return [g if g is not None else _zeros(w) for g, w in zip(grads, wrt)]
