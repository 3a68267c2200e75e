"""The eager backward engine: graph structure → cached generated gradient program → ``.grad``.

``backward()`` finds the recorded DAG behind its outputs, keys it by structure (ops, attrs,
wiring, shapes, dtypes), derives the gradient symbolically the first time a structure is seen
(``autodiff.backward_graph``), lowers it to a kernel (``lower``) and runs the generated code on
the recorded values. The next backward over the same structure only builds the key.

A graph with tensor hooks on non-leaf tensors or ``autograd.Function`` calls (whose backward is Python code) is
split there (``_split_backward``): the gradient is materialised at such a node, the hooks or the Function's
backward run on it, and the rest of the backward continues from their result as the seed of the next program.
Graphs without them keep the one-program path.
"""
from __future__ import annotations

import logging
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.graph import Node, toposort
from ..derive.reverse import backward_graph
from ..kernels import stats as _stats
from ..kernels.program import EAGER_JIT_AFTER, Program
from ..ops import source as _src
from . import saved_attrs as _saved_attrs
from . import saved_hooks as _saved_hooks
from .anomaly_check import check_backward
from .base import TensorBase, make_tensor
from .create_graph import backward_create_graph
from .edges import _EDGES, set_edges, torch_inputs  # noqa: F401  (set_edges: re-exported)
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .hooks import RemovableHandle, check_hook_result, hook_name
from .record import MULTI_VIEWS, SAVED_INPUTS

if TYPE_CHECKING:
    pass

log = logging.getLogger("symgrad")

__all__ = ["backward", "grad", "GradFn", "AccumulateGrad", "PythonGradFn"]


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
        return tuple((None, 0) if x is None else _edge(x) for x in torch_inputs(self._node))

    @property
    def requires_grad(self) -> bool:
        return True

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after this node's backward (one gradient per ``next_functions``
        entry); a tuple it returns replaces ``grad_inputs``."""
        return _add_hook(_NODE_POST, self._node, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` before this node's backward; a tuple it returns replaces ``grad_outputs``."""
        return _add_hook(_NODE_PRE, self._node, fn)

    def __getattr__(self, name: str) -> Any:
        # torch's saved values (``_saved_self``, ``_raw_saved_self``...): eager.saved_attrs
        if name.startswith(("_saved_", "_raw_saved_")) and self._node is not None and type(self) is not AccumulateGrad:
            try:
                v = _saved_attrs.read(self._node, name)
            except _saved_attrs.Freed:
                raise RuntimeError(_FREED_MSG) from None
            except _saved_attrs.Modified as e:
                raise modified_error(*e.args) from None
            if v is not _saved_attrs.MISSING:
                return v
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self) -> list[str]:
        extra = [] if self._node is None or type(self) is AccumulateGrad else _saved_attrs.names(self._node)
        return sorted(set(super().__dir__()) | set(extra))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"


class PythonGradFn(GradFn):
    """A grad_fn whose backward is Python code (``autograd.Function``'s ctx). The engine splits the backward at
    its output nodes and calls ``run_backward`` with their gradients; ``release`` frees what it saved.

    Its node hooks (``register_prehook(hook(grad_outputs))``, ``register_hook(hook(grad_inputs, grad_outputs))``)
    are run by ``run_backward``.
    """

    def __init__(self, node: Node | None = None) -> None:
        super().__init__(node)  # type: ignore[arg-type]
        self._pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._post_hooks: OrderedDict[int, Callable] = OrderedDict()

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after this node's backward; a tuple it returns replaces grad_inputs."""
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` before this node's backward; a tuple it returns replaces grad_outputs."""
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def run_backward(self, grads: Sequence[tuple[Node, Any]], create_graph: bool) -> list[tuple[Node, Any]]:
        """The gradients of this call's inputs (input node, tensor) for those of its output nodes."""
        raise NotImplementedError

    def release(self) -> None:
        """Free the saved tensors (after a backward without ``retain_graph``)."""


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


def _edge(node: Node) -> tuple[GradFn | None, int]:
    """A ``next_functions`` entry: the grad_fn and which of its outputs (split's views: their number)."""
    if node.requires_grad and node.op.name == "clone" and node.attr("saved"):
        return _edge(node.inputs[0])
    multi = MULTI_VIEWS.get(node)
    return _next_fn(node), 0 if multi is None else multi[1]


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
#: node -> its tensor hooks (``register_hook``), in registration order
_HOOKS: weakref.WeakKeyDictionary[Node, OrderedDict] = weakref.WeakKeyDictionary()
#: leaf node -> its post-accumulate-grad hooks
_POST_HOOKS: weakref.WeakKeyDictionary[Node, OrderedDict] = weakref.WeakKeyDictionary()
#: node -> the pre-hooks / hooks registered on its grad_fn (``grad_fn.register_prehook`` / ``register_hook``)
_NODE_PRE: weakref.WeakKeyDictionary[Node, OrderedDict] = weakref.WeakKeyDictionary()
_NODE_POST: weakref.WeakKeyDictionary[Node, OrderedDict] = weakref.WeakKeyDictionary()
#: live nodes whose grad_fn is a ``PythonGradFn`` (``autograd.Function`` outputs): the backward splits there
PYTHON_NODES: weakref.WeakSet[Node] = weakref.WeakSet()


def retain(t: Any) -> None:
    _RETAINED[t._node.id] = t


def _add_hook(table: weakref.WeakKeyDictionary, node: Node, fn: Callable) -> RemovableHandle:
    hooks = table.get(node)
    if hooks is None:
        hooks = table[node] = OrderedDict()
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


def register_hook(t: Any, fn: Callable) -> RemovableHandle:
    """Call ``fn(grad)`` when the gradient of ``t`` is computed; a tensor it returns replaces the gradient
    (what flows on, and what ``.grad`` / ``retain_grad()`` receive)."""
    if t._node is None:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.is_leaf:
        _LEAF_TENSORS[t._node.id] = t
    return _add_hook(_HOOKS, t._node, fn)


def register_post_accumulate_grad_hook(t: Any, fn: Callable) -> RemovableHandle:
    """Call ``fn(t)`` after the gradient of the leaf ``t`` was accumulated into ``t.grad``."""
    if t._node is None:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not t.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    _LEAF_TENSORS[t._node.id] = t
    return _add_hook(_POST_HOOKS, t._node, fn)


def _checked_values(fn: Callable, old: tuple, new: Any) -> tuple:
    """torch's checks of the tuple a node hook returned in place of ``old``."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(f"hook '{hook_name(fn)}' has returned an incorrect number of values (got {len(new)}, but "
                           f"expected {len(old)})")
    for o, n in zip(old, new):
        if n is not None:
            if o is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            check_hook_result(fn, o, n, TensorBase)
    return new


def run_prehooks(hooks: OrderedDict | None, grad_outputs: tuple) -> tuple:
    """``grad_outputs`` after a node's pre-hooks (each may return a replacement tuple)."""
    for fn in tuple(hooks.values()) if hooks else ():
        r = fn(grad_outputs)
        if r is not None:
            grad_outputs = _checked_values(fn, grad_outputs, r)
    return grad_outputs


def run_posthooks(hooks: OrderedDict | None, grad_inputs: tuple, grad_outputs: tuple) -> tuple:
    """``grad_inputs`` after a node's hooks ``fn(grad_inputs, grad_outputs)`` (each may replace them)."""
    for fn in tuple(hooks.values()) if hooks else ():
        r = fn(grad_inputs, grad_outputs)
        if r is not None:
            grad_inputs = _checked_values(fn, grad_inputs, r)
    return grad_inputs


def run_tensor_hooks(node: Node, g: Any) -> Any:
    """``g`` after the tensor hooks of ``node`` (each may replace it), with torch's checks of what they return."""
    hooks = _HOOKS.get(node)
    if hooks:
        for fn in tuple(hooks.values()):
            r = fn(g)
            if r is not None:
                check_hook_result(fn, g, r, TensorBase)
                g = r
    return g


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
    scalar = _src.scalar
    # ops by identity (each OpDef is one object): hashing and comparing them is cheaper than their names
    return (tuple([(n.op, n.attrs if n.op is not scalar else (), tuple([pos.get(i.id, -1) for i in n.inputs]),
                    n.shape, n.dtype.name, n.requires_grad) for n in order]),
            tuple(wrt_pos), tuple([(s.shape, s.dtype.str) for s in seeds]))


def build_program(order: Sequence[Node], roots: Sequence[Node], wrt: Sequence[Node],
                  seed_specs: Sequence[tuple[tuple, Any]], cut: frozenset[int] | set[int] = frozenset()) -> _Structure:
    """Derive the gradient of one structure and build its program (numpy now, numba once hot); nothing flows
    past the nodes in ``cut``."""
    t0 = time.perf_counter()
    seeds = [Node(_src.const, (), (), shape, dt, name=f"seed{i}") for i, (shape, dt) in enumerate(seed_specs)]
    pairs: list[tuple[int, int]] = []
    grads, saving = backward_graph(roots, seeds, wrt, reads=pairs, cut=cut)
    t1 = time.perf_counter()
    _stats.add_time("derive", t1 - t0)
    outs = [g if g is not None else seeds[0] for g in grads]
    params = [(n, "v", i) for i, n in enumerate(order)] + [(s, "s", i) for i, s in enumerate(seeds)]
    prog = Program("backward", params, outs, doc="gradient of the recorded graph", prefix="eager", groups=("v", "s"),
                   const_group=None, hot_after=EAGER_JIT_AFTER, what="backward", torch_order=True,
                   signature=f"({len(order)} nodes{', split' if cut else ''})", reason="new graph structure",
                   times={"derive": t1 - t0})
    STATS["derived"] += 1
    pos = {n.id: i for i, n in enumerate(order)}
    log.debug("derived a backward program for %d nodes: differentiate %.1f ms, lower+emit %.1f ms (%s)",
              len(order), 1e3 * (t1 - t0), 1e3 * prog.build_s, prog.path)
    read_set = set(prog.reads)
    # torch's engine runs (checks, then frees) only the nodes on a path to an input it differentiates
    run = {w.id for w in wrt} | set(cut)
    for n in order:
        if n.id not in run and any(x.id in run for x in n.inputs):
            run.add(n.id)
    saved = sorted({(pos[r], pos[v]) for r, v in pairs if r in pos and v in pos and pos[v] in read_set and r in run},
                   reverse=True)
    return _Structure(prog, sorted(pos[i] for i in saving if i in pos and i in run), saved,
                      [g is None for g in grads])


_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.")


#: torch's error for saved values read after a backward freed them (``ctx.saved_tensors`` raises it too)
FREED_MSG = _FREED_MSG


def modified_error(t: Any, expected: int, saved_by: str | None = None) -> RuntimeError:
    """torch's error for a saved tensor ``t`` written in place since it was saved (at version ``expected``); a
    saved output is named after the node that saved it (``saved_by``), an input after its current grad_fn."""
    n = t._node
    name = saved_by or (None if n is None or n.op is _src.leaf else grad_fn_of(n).name())
    which = "" if name is None else f", which is output 0 of {_short_name(name)},"
    shape = ", ".join(map(str, t.shape))
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[torch.{dtypes.torch_type_name(t.dtype)}Tensor [{shape}]]{which} is at version {t._version.v}; expected "
        f"version {expected} instead. Hint: enable anomaly detection to find the operation that failed to compute "
        "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


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


def run_graph(roots: Sequence[Node], seeds: Sequence[np.ndarray], wrt: Sequence[Node], retain_graph: bool,
              cut: frozenset[int] | set[int] = frozenset(), order: Sequence[Node] | None = None
              ) -> tuple[list[np.ndarray | None], Sequence[Node], _Structure]:
    """Gradients of ``roots`` (weighted by ``seeds``) with respect to ``wrt`` as numpy arrays; nothing flows
    past the nodes in ``cut`` (ids). ``order`` is the graph's toposort when the caller has it."""
    if order is None:
        order = toposort(roots, stop=(lambda n: not n.requires_grad or n.id in cut) if cut else
                         (lambda n: not n.requires_grad))
    pos = {n.id: i for i, n in enumerate(order)}
    wrt_pos = [pos.get(w.id, -1) for w in wrt]
    # which nodes it starts from (one root may lie below another) and, split, where it stops
    key = (structure_key(order, wrt_pos, seeds), tuple(pos[r.id] for r in roots),
           tuple(sorted(pos[c] for c in cut if c in pos)) if cut else ())
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _PROGRAMS[key] = build_program(order, roots, wrt, [(s.shape, dtypes.from_numpy_dtype(s.dtype))
                                                                   for s in seeds], cut)
    else:
        STATS["hits"] += 1
    _check_saved(order, prog)
    values = [n.value for n in order]
    if _saved_hooks.PACKED:
        _saved_hooks.unpack_into(order, pos, values, cut)
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
        if _saved_hooks.PACKED:
            _saved_hooks.drop([n for n in order if n.id not in cut])
    return result, order, prog


# ====================================================================== roots and seeds

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


def _graph_leaves(roots: Sequence[Node], order: Sequence[Node] | None = None) -> list[Node]:
    if order is None:
        order = toposort(roots, stop=lambda n: not n.requires_grad)
    return [n for n in order if n.requires_grad and (n.op is _src.leaf or n.id in _RETAINED)]


# ====================================================================== split backward (hooks, Functions)

@dataclass
class _Unit:
    """Where a backward is split: a non-leaf tensor with hooks, or one ``autograd.Function`` call (``fn``) and
    its output nodes. ``pos`` is the first of its nodes in topological order."""

    pos: int
    fn: PythonGradFn | None
    nodes: list[Node] = field(default_factory=list)

    def below(self) -> list[Node]:
        """Where the backward continues from once the unit ran: its nodes' inputs."""
        return [x for n in self.nodes for x in (n.inputs if self.fn is None else n.inputs[1:])]


def _units(order: Sequence[Node]) -> list[_Unit]:
    """The places the backward over ``order`` must be split (empty for the one-program path)."""
    if not _HOOKS and not PYTHON_NODES and not _NODE_PRE and not _NODE_POST:
        return []
    units: list[_Unit] = []
    calls: dict[int, _Unit] = {}
    for i, n in enumerate(order):
        f = n.fn
        if isinstance(f, PythonGradFn):
            u = calls.get(id(f))
            if u is None:
                u = calls[id(f)] = _Unit(i, f)
                units.append(u)
            u.nodes.append(n)
        elif n.op is not _src.leaf and n.requires_grad and (_HOOKS.get(n) or _NODE_PRE.get(n) or _NODE_POST.get(n)):
            units.append(_Unit(i, None, [n]))
    return units


def _plus(a: Any, b: Any, create_graph: bool) -> Any:
    if create_graph:
        return a + b
    return make_tensor(a._data + b._data)


def _local_grads(n: Node, g: Any, ins: Sequence[Node | None], create_graph: bool, saving: list[Node]) -> tuple:
    """The gradients node ``n``'s own rule gives each of ``ins`` (its ``torch_inputs``: its inputs, or a composite's
    edges) for its gradient ``g``: one program cut at them (a copy over stand-in inputs when one is used twice, as
    in ``x * x``, whose two gradients torch reports separately); None for a None input."""
    if n.freed:
        raise RuntimeError(_FREED_MSG)
    given = list(ins)
    ins = [x for x in given if x is not None]
    node, wrt = n, [x for x in ins if x.requires_grad]
    if len({x.id for x in ins}) < len(ins) and n not in _EDGES:
        stand = [Node(_src.leaf, (), (), x.shape, x.dtype, value=x.value, requires_grad=x.requires_grad)
                 if x in ins else x for x in n.inputs]
        node = Node(n.op, tuple(stand), n.attrs, n.shape, n.dtype, value=n.value, requires_grad=True)
        ins = [stand[k] for k, x in enumerate(n.inputs) if n.op.diff_args is None or k in n.op.diff_args]
        wrt = [x for x in ins if x.requires_grad]
    arr = np.asarray(g._data, dtype=n.dtype.np)
    cut = {x.id for x in ins}
    if create_graph:
        out = backward_create_graph([node], [arr], wrt, [g], cut=cut)
    else:
        arrs, order, prog = run_graph([node], [arr], wrt, True, cut=cut)
        if any(order[i] is node for i in prog.saving):
            saving.append(n)
        out = [None if a is None else make_tensor(a) for a in arrs]
    got = dict(zip((x.id for x in wrt), out))
    per = iter([got.get(x.id) for x in ins])           # in the order of ``given``'s tensors (or their stand-ins)
    return tuple(None if x is None else next(per) for x in given)


def _compute(roots: Sequence[Node], seeds: Sequence[np.ndarray], wrt: Sequence[Node], retain_graph: bool,
             create_graph: bool, grad_tensors: Sequence[Any] | None, deliver: Callable, terms: bool,
             order: Sequence[Node] | None = None) -> list:
    """The gradients of ``roots`` (cotangents ``seeds``) with respect to ``wrt``, each handed to
    ``deliver(node, grad, term, hooked)`` as soon as it is complete; returns what ``deliver`` returned.

    ``term`` is what ``sg.grad_formula(x)`` needs to show the gradient (None when hooks changed it),
    ``hooked`` whether the node's tensor hooks ran already (the backward was split there). ``order``: the
    graph's toposort, when the caller has it.
    """
    if order is None:
        order = toposort(roots, stop=lambda n: not n.requires_grad)
    units = _units(order)
    if units:
        return _split_backward(order, units, roots, seeds, wrt, retain_graph, create_graph, grad_tensors, deliver,
                               terms)
    if create_graph:
        grads = backward_create_graph(roots, seeds, wrt, grad_tensors)
    else:
        arrs, _, _ = run_graph(roots, seeds, wrt, retain_graph, order=order)
        grads = [None if a is None else make_tensor(a) for a in arrs]
    with enable_grad() if create_graph else no_grad():  # hooks run in the backward's grad mode, as torch's
        return [None if g is None else deliver(w, g, (roots, seeds, w) if terms and not create_graph else None,
                                               False) for w, g in zip(wrt, grads)]


def _split_backward(order: Sequence[Node], units: list[_Unit], roots: Sequence[Node], seeds: Sequence[np.ndarray],
                    wrt: Sequence[Node], retain_graph: bool, create_graph: bool, grad_tensors: Sequence[Any] | None,
                    deliver: Callable, terms: bool) -> list:
    """``_compute`` for a graph with units: one program from the roots to the units (cut there), then, latest
    unit first, the unit's hooks or Python backward on its complete gradient and one program from its result
    (cut at the units below) — torch's order, in as few programs as there are units."""
    wrt_ids = {w.id: i for i, w in enumerate(wrt)}
    needed: set[int] = set()  # nodes from which a differentiated input can be reached: torch runs only those
    for n in order:
        if n.id in wrt_ids or any(x.id in needed for x in n.inputs):
            needed.add(n.id)
    units = sorted((u for u in units if any(n.id in needed for n in u.nodes)), key=lambda u: -u.pos)
    cut = {n.id for u in units for n in u.nodes}
    unit_of = {n.id: k for k, u in enumerate(units) for n in u.nodes}
    # a differentiated input is complete after the last unit that reaches it (its own unit, for a split node)
    done_at = [unit_of.get(w.id, -1) for w in wrt]
    for k, u in enumerate(units):
        for n in toposort(u.below(), stop=lambda m: not m.requires_grad):
            i = wrt_ids.get(n.id)
            if i is not None and n.id not in unit_of:
                done_at[i] = max(done_at[i], k)
    term_ok = terms and not create_graph and all(u.fn is not None for u in units)
    acc: dict[int, Any] = {}
    final: set[int] = set()
    results: list[Any] = [None] * len(wrt)
    saving: list[Node] = []
    ran: list[PythonGradFn] = []
    by_id = {n.id: n for u in units for n in u.nodes}

    def add(n: Node, g: Any) -> None:
        prev = acc.get(n.id)
        acc[n.id] = g if prev is None else _plus(prev, g, create_graph)

    def segment(pending: dict[int, tuple[Node, Any]]) -> None:
        rs, gs = [], []
        for n, g in pending.values():
            if n.id in cut or n.op.family == "source":
                if n.id in cut or n.id in wrt_ids:
                    add(n, g)
                continue
            rs.append(n)
            gs.append(g)
        if not rs:
            return
        targets = [w for w in wrt if w.id not in final and w.id not in cut and w.id not in split_done] + \
            [by_id[c] for c in cut]
        arrays = [np.asarray(g._data, dtype=r.dtype.np) for r, g in zip(rs, gs)]
        if create_graph:
            out = backward_create_graph(rs, arrays, targets, gs, cut=cut)
        else:
            arrs, seg_order, prog = run_graph(rs, arrays, targets, True, cut=cut)
            saving.extend(seg_order[i] for i in prog.saving)
            out = [None if a is None else make_tensor(a) for a in arrs]
        for t, g in zip(targets, out):
            if g is not None:
                add(t, g)

    delivered: set[int] = set()
    split_done: dict[int, Any] = {}  # complete gradients of differentiated split nodes, after their hooks

    def finish(k: int) -> None:
        for i, w in enumerate(wrt):
            if done_at[i] == k and w.id not in final:
                final.add(w.id)
                g = split_done.pop(w.id) if w.id in split_done else acc.pop(w.id, None)
                if g is None:
                    continue
                if id(g) in delivered and not g.requires_grad:
                    g = make_tensor(g._data.copy())  # one tensor returned for two inputs: separate gradients
                delivered.add(id(g))
                results[i] = deliver(w, g, (roots, seeds, w) if term_ok else None, w.id in unit_of)

    first: dict[int, tuple[Node, Any]] = {}
    for i, (r, s) in enumerate(zip(roots, seeds)):
        gt = grad_tensors[i] if create_graph and grad_tensors is not None else None
        g = gt if isinstance(gt, TensorBase) and gt.requires_grad else make_tensor(s)
        first[r.id] = (r, _plus(first[r.id][1], g, create_graph)) if r.id in first else (r, g)
    with enable_grad() if create_graph else no_grad():
        segment(first)
        finish(-1)
        for k, u in enumerate(units):
            for n in u.nodes:
                cut.discard(n.id)
            grads = []
            for n in u.nodes:
                g = acc.pop(n.id, None)
                if g is not None:
                    g = run_tensor_hooks(n, g)
                    if n.id in wrt_ids:
                        split_done[n.id] = g  # what finish() delivers: the hooked value, as torch's retain_grad
                grads.append((n, g))
            pending: dict[int, tuple[Node, Any]] = {}
            if u.fn is None:
                n, g = grads[0]
                if g is not None and _NODE_PRE.get(n):
                    g = run_prehooks(_NODE_PRE.get(n), (g,))[0]
                if g is not None and _NODE_POST.get(n):  # the node's own gradients, for its hooks to see
                    ins = torch_inputs(n)
                    gi = run_posthooks(_NODE_POST.get(n), _local_grads(n, g, ins, create_graph, saving), (g,))
                    for x, gx in zip(ins, gi):
                        if gx is not None and x.requires_grad and x.id in needed:
                            pending[x.id] = (x, _plus(pending[x.id][1], gx, create_graph)) if x.id in pending \
                                else (x, gx)
                elif g is not None and any(x.id in needed for x in n.inputs):
                    pending[n.id] = (n, g)
            elif any(g is not None for _, g in grads):
                ran.append(u.fn)
                for x, g in u.fn.run_backward(grads, create_graph):
                    if g is None or not x.requires_grad or x.id not in needed:
                        continue
                    pending[x.id] = (x, _plus(pending[x.id][1], g, create_graph)) if x.id in pending else (x, g)
            segment(pending)
            finish(k)
    if not retain_graph:
        for n in saving:
            n.freed = True
        for f in ran:
            f.release()
    return results


# ====================================================================== public entry points

def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Sequence[Any] | None = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    tensors = [tensors] if isinstance(tensors, TensorBase) else list(tensors)
    if grad_tensors is not None and not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = [grad_tensors]
    if retain_graph is None:
        retain_graph = create_graph
    roots, seeds = _roots_and_seeds(tensors, grad_tensors)
    order = toposort(roots, stop=lambda n: not n.requires_grad)
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, TensorBase) else list(inputs)
        wrt = [t._node for t in inputs]
        if any(w is None for w in wrt):
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    else:
        wrt = _graph_leaves(roots, order)
    check_backward(roots, seeds, wrt)  # anomaly mode: torch's error for a backward returning NaN

    def deliver(w: Node, g: Any, term: Any, hooked: bool) -> Any:
        return _finish(w, g, term, hooked, accumulate=True)

    _compute(roots, seeds, wrt, retain_graph, create_graph, grad_tensors, deliver, terms=True, order=order)


def _owner(node: Node) -> Any:
    if node.op is _src.leaf:
        return _LEAF_TENSORS.get(node.id)
    return _RETAINED.get(node.id)


def _finish(node: Node, g: Any, term: Any, hooked: bool, accumulate: bool) -> Any:
    """The complete gradient ``g`` of ``node``: its tensor hooks (unless they ran where the backward was split),
    then into ``.grad`` (leaves when ``accumulate``; retained tensors always) and the post-accumulate hooks."""
    if not hooked:
        g = run_tensor_hooks(node, g)
    acc = accumulate and node.op is _src.leaf  # torch runs the AccumulateGrad node (and its hooks)
    if acc and _NODE_PRE.get(node):
        g = run_prehooks(_NODE_PRE.get(node), (g,))[0]
    t = _owner(node)
    if t is None or not (accumulate or node.id in _RETAINED):
        return g
    _store(t, g if accumulate or g.requires_grad else make_tensor(g._data.copy()), term)
    post = _POST_HOOKS.get(node) if accumulate else None
    if post:
        for fn in tuple(post.values()):
            fn(t)
    if acc and _NODE_POST.get(node):
        run_posthooks(_NODE_POST.get(node), (), (g,))
    return g


def _store(t: Any, g: Any, term: Any) -> None:
    """Accumulate ``g`` into ``t.grad`` (a buffer of its own; recorded when either requires grad)."""
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

    def deliver(w: Node, g: Any, term: Any, hooked: bool) -> Any:
        # the hooks of a differentiated tensor run before its gradient is captured, as torch's
        return _finish(w, g, None, hooked, accumulate=False)

    gs = _compute(roots, seeds, wrt + retained, retain_graph, create_graph, grad_outputs, deliver, terms=False)
    gs = gs[:len(wrt)]
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
