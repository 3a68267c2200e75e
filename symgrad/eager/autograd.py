"""The eager backward engine: graph structure → cached generated gradient program → ``.grad``.

``backward()`` finds the recorded DAG behind its outputs, keys it by structure (ops, attrs,
wiring, shapes, dtypes), derives the gradient symbolically the first time a structure is seen
(``autodiff.backward_graph``), lowers it to a kernel (``lower``) and runs the generated code on
the recorded values. The next backward over the same structure only builds the key.
"""
from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.graph import Node, toposort
from ..derive.reverse import backward_graph
from ..kernels.program import EAGER_JIT_AFTER, Program
from ..ops import source as _src
from .anomaly_check import check_backward
from .base import TensorBase, make_tensor
from .create_graph import backward_create_graph
from .grad_mode import is_grad_enabled
from .record import SAVED_INPUTS

if TYPE_CHECKING:
    pass

log = logging.getLogger("symgrad")

__all__ = ["backward", "grad", "GradFn", "AccumulateGrad"]


# ====================================================================== grad_fn objects

class GradFn:
    """The function that produced a tensor, under torch's class name (``MulBackward0``...)."""

    __slots__ = ("_node", "metadata", "__weakref__")

    def __init__(self, node: Node) -> None:
        self._node = node
        self.metadata: dict = {}

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        # as torch, only the inputs the op differentiates (not where's condition, not max(dim)'s indices)
        diff = self._node.op.diff_args
        return tuple((_next_fn(x), 0) for k, x in enumerate(self._node.inputs) if diff is None or k in diff)

    @property
    def requires_grad(self) -> bool:
        return True

    def register_hook(self, fn: Callable) -> Any:
        raise RuntimeError("hooks on grad_fn objects are not supported by symgrad; use Tensor.register_hook")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"


class AccumulateGrad(GradFn):
    """What stands behind a leaf that requires grad: adds into its ``.grad``."""

    __slots__ = ()

    @property
    def next_functions(self) -> tuple:
        return ()

    @property
    def variable(self) -> Any:
        return _LEAF_TENSORS.get(self._node.id)


_CLASSES: dict[str, type] = {}
_LEAF_TENSORS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def _grad_fn_class(name: str) -> type:
    cls = _CLASSES.get(name)
    if cls is None:
        # torch's C++ nodes (``torch::autograd::CopySlices``) are classes named by their last part
        body: dict = {"__slots__": (), "__module__": "builtins"}
        if "::" in name:
            body["name"] = lambda self: name
        cls = _CLASSES[name] = type(name.rsplit("::", 1)[-1], (GradFn,), body)
    return cls


def grad_fn_of(node: Node) -> GradFn:
    if node.fn is None:
        node.fn = _grad_fn_class(node.op.grad_fn_name(dict(node.attrs)))(node)
    return node.fn


def _next_fn(node: Node) -> GradFn | None:
    if not node.requires_grad:
        return None
    if node.op.name == "clone" and node.attr("saved"):
        return _next_fn(node.inputs[0])
    if node.op is _src.leaf:
        if node.fn is None:
            node.fn = AccumulateGrad(node)
        return node.fn
    return grad_fn_of(node)


# ====================================================================== retained grads and hooks

_RETAINED: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_HOOKS: dict[int, list] = {}


def retain(t: Any) -> None:
    _RETAINED[t._node.id] = t


class _HookHandle:
    def __init__(self, key: int, fn: Callable) -> None:
        self.key, self.fn = key, fn

    def remove(self) -> None:
        hooks = _HOOKS.get(self.key, [])
        if self.fn in hooks:
            hooks.remove(self.fn)


def register_hook(t: Any, fn: Callable) -> _HookHandle:
    """Call ``fn(grad)`` when the gradient of ``t`` is computed; a non-None return replaces it."""
    if t._node is None:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    _HOOKS.setdefault(t._node.id, []).append(fn)
    if t.is_leaf:
        _LEAF_TENSORS[t._node.id] = t
    return _HookHandle(t._node.id, fn)


# ====================================================================== programs

@dataclass
class _Structure:
    """The gradient program of one recorded graph structure and what the saved-value checks need of it."""

    program: Program
    saving: list[int]         # topo positions of nodes whose rule read saved values
    saved: list[tuple[int, int]]  # (rule's node, value it reads) topo positions, latest rule first
    zero: list[bool]          # per wrt: structurally zero gradient

    @property
    def jit(self) -> Callable | None:
        return self.program.jit


_PROGRAMS: dict[Any, _Structure] = {}
STATS = {"derived": 0, "hits": 0}


def structure_key(order: Sequence[Node], wrt_pos: Sequence[int], seeds: Sequence[np.ndarray]) -> tuple:
    pos = {n.id: i for i, n in enumerate(order)}
    return (tuple((n.op.name, n.attrs if n.op is not _src.scalar else (), tuple(pos[i.id] for i in n.inputs),
                   n.shape, n.dtype.name, n.requires_grad) for n in order),
            tuple(wrt_pos), tuple((s.shape, s.dtype.str) for s in seeds))


def build_program(order: Sequence[Node], roots: Sequence[Node], wrt: Sequence[Node],
                  seed_specs: Sequence[tuple[tuple, Any]]) -> _Structure:
    """Derive the gradient of one structure and build its program (numpy now, numba once hot)."""
    t0 = time.perf_counter()
    seeds = [Node(_src.const, (), (), shape, dt, name=f"seed{i}") for i, (shape, dt) in enumerate(seed_specs)]
    pairs: list[tuple[int, int]] = []
    grads, saving = backward_graph(roots, seeds, wrt, reads=pairs)
    t1 = time.perf_counter()
    outs = [g if g is not None else seeds[0] for g in grads]
    params = [(n, "v", i) for i, n in enumerate(order)] + [(s, "s", i) for i, s in enumerate(seeds)]
    prog = Program("backward", params, outs, doc="gradient of the recorded graph", prefix="eager", groups=("v", "s"),
                   const_group=None, hot_after=EAGER_JIT_AFTER)
    STATS["derived"] += 1
    pos = {n.id: i for i, n in enumerate(order)}
    log.debug("derived a backward program for %d nodes: differentiate %.1f ms, lower+emit %.1f ms (%s)",
              len(order), 1e3 * (t1 - t0), 1e3 * prog.build_s, prog.path)
    read_set = set(prog.reads)
    saved = sorted({(pos[r], pos[v]) for r, v in pairs if r in pos and v in pos and pos[v] in read_set}, reverse=True)
    return _Structure(prog, sorted(pos[i] for i in saving if i in pos), saved, [g is None for g in grads])


_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.")


def _type_str(n: Node) -> str:
    return f"torch.{dtypes.torch_type_name(n.dtype)}Tensor [{', '.join(map(str, n.shape))}]"


def _short_name(fn_name: str) -> str:
    """How torch's version-counter error names a node: ``ExpBackward0`` -> ``Exp``, ``ClampBackward1`` -> ``Clamp1``."""
    if "::" in fn_name:  # torch's C++ nodes keep their full name: torch::autograd::CopySlices
        return fn_name
    return fn_name.replace("Backward0", "").replace("Backward", "")


def _check_saved(order: Sequence[Node], prog: _Structure) -> None:
    """Raise torch's errors for a graph whose saved values were freed or modified in place since."""
    for i in prog.saving:
        if order[i].freed:
            raise RuntimeError(_FREED_MSG)
    # torch runs the rules latest first and reports the first saved value found modified
    for r, v in prog.saved:
        n = order[v]
        if n.storage is None:
            continue
        owner = None
        if r == v:  # a rule reading its own result: torch names the op that saved it
            expected = n.version
        else:  # a rule reading an input: the version and tensor it saved
            rec = SAVED_INPUTS.get(order[r])
            k = next((k for k, x in enumerate(order[r].inputs) if x is n), None)
            if rec is None or k is None or rec[k] is None:
                if n.op is _src.leaf:
                    continue
                expected = n.version
            else:
                expected, ref = rec[k]
                owner = ref()
        if n.storage.v == expected:
            continue
        if r == v:
            name = grad_fn_of(n).name()
        else:
            cur = owner._node if owner is not None else (None if n.op.family == "source" else n)
            name = None if cur is None or cur.op is _src.leaf else grad_fn_of(cur).name()
        which = "" if name is None else f", which is output 0 of {_short_name(name)},"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{_type_str(n)}]{which} is at version {n.storage.v}; expected version {expected} instead. Hint: "
            "enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")


def run_graph(roots: Sequence[Node], seeds: Sequence[np.ndarray], wrt: Sequence[Node], retain_graph: bool
              ) -> tuple[list[np.ndarray | None], Sequence[Node], _Structure]:
    """Gradients of ``roots`` (weighted by ``seeds``) with respect to ``wrt`` as numpy arrays."""
    order = toposort(roots, stop=lambda n: not n.requires_grad)
    pos = {n.id: i for i, n in enumerate(order)}
    wrt_pos = [pos.get(w.id, -1) for w in wrt]
    key = structure_key(order, wrt_pos, seeds)
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _PROGRAMS[key] = build_program(order, roots, wrt, [(s.shape, dtypes.from_numpy_dtype(s.dtype))
                                                                   for s in seeds])
    else:
        STATS["hits"] += 1
    _check_saved(order, prog)
    values = [n.value for n in order]
    with np.errstate(all="ignore"):
        outs = prog.program.run({"v": values, "s": list(seeds)})
    result: list[np.ndarray | None] = []
    for w, wp, z, o in zip(wrt, wrt_pos, prog.zero, outs):
        if z:
            # torch: zeros for an input the graph reaches (``x ** 0``, ``x * 0``), None for one it does not
            result.append(None if wp < 0 else np.zeros(w.shape, dtype=w.dtype.np))
            continue
        o = np.asarray(o, dtype=w.dtype.np)
        if o.shape != w.shape:
            o = np.broadcast_to(o, w.shape)
        # each gradient gets its own buffer: ``.grad`` accumulates in place (two inputs can share an adjoint)
        if (not o.flags.writeable or not o.flags.owndata or any(o is v for v in values) or any(o is s for s in seeds)
                or any(o is r for r in result)):
            o = o.copy()
        result.append(o)
    if not retain_graph:
        for i in prog.saving:
            order[i].freed = True
    return result, order, prog


# ====================================================================== public entry points

def _as_seed(root: Any, g: Any, i: int) -> np.ndarray:
    if g is None:
        if root._data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return np.ones(root._data.shape, dtype=root._data.dtype)
    arr = g._data if isinstance(g, TensorBase) else np.asarray(g, dtype=root._data.dtype)
    if arr.shape != root._data.shape:
        if arr.size == root._data.size == 1 or (root._data.shape == () and arr.size == 1):
            arr = arr.reshape(root._data.shape)
        else:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of torch.Size({list(arr.shape)}) and output[{i}] "
                f"has a shape of torch.Size({list(root._data.shape)}).")
    if arr.dtype != root._data.dtype:
        arr = arr.astype(root._data.dtype)
    return arr


def _roots_and_seeds(tensors: Sequence[Any], grad_tensors: Sequence[Any] | None) -> tuple[list[Node], list]:
    roots, seeds = [], []
    for i, t in enumerate(tensors):
        if t._node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(t._node)
        seeds.append(_as_seed(t, None if grad_tensors is None else grad_tensors[i], i))
    return roots, seeds


def _graph_leaves(roots: Sequence[Node]) -> list[Node]:
    order = toposort(roots, stop=lambda n: not n.requires_grad)
    return [n for n in order if n.requires_grad and (n.op is _src.leaf or n.id in _RETAINED or n.id in _HOOKS)]


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Sequence[Any] | None = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    tensors = [tensors] if isinstance(tensors, TensorBase) else list(tensors)
    if grad_tensors is not None and not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = [grad_tensors]
    if retain_graph is None:
        retain_graph = create_graph
    roots, seeds = _roots_and_seeds(tensors, grad_tensors)
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, TensorBase) else list(inputs)
        wrt = [t._node for t in inputs]
        if any(w is None for w in wrt):
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    else:
        wrt = _graph_leaves(roots)
    check_backward(roots, seeds, wrt)  # anomaly mode: torch's error for a backward returning NaN
    if create_graph:
        grads = backward_create_graph(roots, seeds, wrt, grad_tensors)
        for w, g in zip(wrt, grads):
            if g is not None:
                _deliver(w, g, None)
        return
    grads, order, prog = run_graph(roots, seeds, wrt, retain_graph)
    for w, g in zip(wrt, grads):
        if g is not None:
            _deliver(w, make_tensor(g), (roots, seeds, w))


def _owner(node: Node) -> Any:
    if node.op is _src.leaf:
        return _LEAF_TENSORS.get(node.id)
    return _RETAINED.get(node.id)


def _deliver(node: Node, g: Any, term: Any) -> None:
    for hook in _HOOKS.get(node.id, []):
        r = hook(g)
        if r is not None:
            if node.op is not _src.leaf:
                # the gradient program runs the whole backward at once: nothing can be replaced mid-way
                raise RuntimeError("symgrad: a hook on a non-leaf tensor can observe its gradient but not replace "
                                   "it; return None from the hook")
            g = r
    t = _owner(node)
    if t is None:
        return
    if t._grad is None:
        if not g.requires_grad and not (g._data.flags.writeable and g._data.flags.owndata):
            g = type(g)(g._data.copy())  # .grad accumulates in place: it needs a buffer of its own
        t._grad = g
        g._grad_terms.reset(term is not None and not g.requires_grad)
        if term is not None:
            g._grad_terms.items.append(term)
    elif g.requires_grad or t._grad.requires_grad:
        t._grad = t._grad + g
    else:
        t._grad._data += g._data
        t._grad._version.v += 1
        terms = t._grad._grad_terms
        if terms.known and term is not None and len(terms.items) < 64:
            terms.items.append(term)
        else:
            terms.reset(False)


def register_leaf(t: Any) -> None:
    """Remember the tensor behind a leaf node so backward can reach its ``.grad``."""
    _LEAF_TENSORS[t._node.id] = t


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated).

    >>> import symgrad as sg
    >>> x = sg.tensor(2.0, requires_grad=True)
    >>> sg.autograd.grad(x ** 3, x)
    (tensor(12.),)
    """
    if is_grads_batched:
        raise NotImplementedError("symgrad: autograd.grad(is_grads_batched=True) is not supported; use sg.func.vmap")
    outputs = [outputs] if isinstance(outputs, TensorBase) else list(outputs)
    single = isinstance(inputs, TensorBase)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is not None and not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    roots, seeds = _roots_and_seeds(outputs, grad_outputs)
    for t in inputs:
        if t._node is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    wrt = [t._node for t in inputs]
    check_backward(roots, seeds, wrt)  # anomaly mode: torch's error for a backward returning NaN
    # torch also fills the ``.grad`` of retained (``retain_grad()``) tensors the gradient passes through
    ids = {w.id for w in wrt}
    retained = [n for n in _graph_leaves(roots) if n.op is not _src.leaf and n.id not in ids]
    if create_graph:
        gs = backward_create_graph(roots, seeds, wrt + retained, grad_outputs)
    else:
        arrs, _, _ = run_graph(roots, seeds, wrt + retained, retain_graph)
        gs = [None if a is None else make_tensor(a) for a in arrs]
    gs, extra = gs[:len(wrt)], gs[len(wrt):]
    for node, g in zip(retained, extra):
        if g is not None:
            _deliver(node, g, None)
    for w, g in zip(wrt, gs):
        if g is not None and w.id in _RETAINED:
            _deliver(w, g if g.requires_grad else make_tensor(g._data.copy()), None)
    out = []
    for i, (t, g) in enumerate(zip(inputs, gs)):
        if g is None:
            if materialize_grads:
                g = make_tensor(np.zeros_like(t._data))
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        out.append(g)
    return tuple(out)


def is_grad_mode() -> bool:
    return is_grad_enabled()
