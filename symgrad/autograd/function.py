"""``torch.autograd.Function``: user-defined forward and backward, as torch runs them, and as symgrad rules.

``MyFn.apply(*args)`` runs ``forward`` without recording (``forward(ctx, ...)``, or ``forward(...)`` then
``setup_context(ctx, inputs, output)``) and records one node per differentiable output. The ``ctx`` is the
outputs' ``grad_fn`` (``<MyFnBackward>``), as in torch.

Two ways the backward runs:

- eagerly (``loss.backward()``, ``autograd.grad``): the engine splits the backward at the call and runs
  ``backward(ctx, *grads)`` on tensors each time, as torch does (side effects, ``ctx`` state, numpy code
  inside all work); under ``create_graph=True`` its ops are recorded, so it can be differentiated again.
- symbolically (``sg.grad_formula``, ``@sg.compile`` over code calling ``.apply``, ``sg.grad`` / ``jacobian``,
  forward mode): the node is a ``custom_rule`` op (``compiler.custom``) whose VJP traces ``backward`` on
  symbolic tensors, so a backward written in sg ops prints, compiles and differentiates like a built-in rule.
  A backward that leaves the op world (``.numpy()``, ``@once_differentiable``) stays a numeric rule: it
  works eagerly and raises a ``TracingError`` saying so when traced.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import warnings
import weakref
from typing import Any, Callable

import numpy as np
import sympy as sp

from ..compiler.custom import CustomRule
from ..compiler.tracing import TraceContext, Tracer
from ..core import context as _trace
from ..core.errors import TracingError
from ..core.graph import Node
from ..eager import saved_hooks as _saved_hooks
from ..eager.autograd import FREED_MSG, PYTHON_NODES, PythonGradFn, modified_error, run_posthooks, run_prehooks
from ..eager.base import is_traced, make_tensor
from ..eager.formula import _number
from ..eager.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..eager.record import _apply, _input_node
from ..eager.tensor import Tensor
from ..ops.base import broadcast_shapes
from ..ops.reduce import sum_to_node

__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "FunctionMeta", "InplaceFunction", "once_differentiable"]

_FUNCTION_IDS = itertools.count()


# ---------------------------------------------------------------------------- ctx

class FunctionCtx:
    """What ``forward`` / ``setup_context`` call on ``ctx``: saving tensors and marking outputs."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` (inputs, outputs or others; None allowed) for ``backward`` (``ctx.saved_tensors``)."""
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for ``jvp``."""
        for t in tensors:
            if not (isinstance(t, Tensor) or t is None):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should save "
                                     "non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *args: Any) -> None:
        """Declare the inputs ``forward`` modified in place (and returns)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args: Any) -> None:
        """Declare outputs without a gradient (``backward`` still gets one, of zeros)."""
        self.non_differentiable = args

    def mark_shared_storage(self, *pairs: Any) -> None:
        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are automatically tracked. "
                      "Note that calls to `set_()` are not tracked", FutureWarning, stacklevel=2)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (True, the default) or None for outputs that got no gradient."""
        self.materialize_grads = value


class _CallRef:
    """The call a Function's node belongs to, carried in the node's attrs (so copies of the node keep it).

    All refs compare equal: the eager engine keys its programs by graph structure, and a Function's node is
    always a point where the engine splits the backward, never part of a cached program.
    """

    __slots__ = ("ctx",)

    def __init__(self, ctx: BackwardCFunction) -> None:
        self.ctx = ctx

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _CallRef)

    def __hash__(self) -> int:
        return 0x5F3759DF

    def __repr__(self) -> str:
        return "call"


class BackwardCFunction(PythonGradFn, FunctionCtx):
    """The ctx of one ``apply`` call, and the ``grad_fn`` of its outputs (``<MyFnBackward>``)."""

    _forward_cls: type

    def __init__(self) -> None:
        super().__init__(None)
        self.materialize_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()
        self.to_save: tuple | None = ()
        self.non_differentiable: tuple = ()
        self.dirty_tensors: tuple = ()
        self._freed = False
        self._saved: list[tuple] = []
        self._packed: list | None = None  # per saved entry, (what the pack hook returned, unpack) or None
        self._inputs: tuple = ()          # the call's arguments
        self._positions: tuple[int, ...] = ()
        self._in_specs: list[tuple] = []  # (shape, dtype) per tensor argument
        self._out_specs: list[tuple | None] = []
        self._out_nodes: list[Node | None] = []
        self._out_refs: list[Any] = []
        self._in_nodes: tuple[Node, ...] = ()
        self._sym: tuple[Node, tuple[Node, ...]] | None = None  # set while the backward is traced

    # -- torch's Node interface
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<torch.autograd.function.{type(self).__name__} object at {id(self):#x}>"

    def apply(self, *grads: Any) -> Any:
        """Call the user's backward directly (``grad_fn.apply(grad)``)."""
        return _user_backward(self._forward_cls)(self, *grads)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors ``save_for_backward`` kept, checked against in-place writes since (torch's errors)."""
        if self._sym is not None:
            return tuple(self._symbolic_saved(e) for e in self._saved)
        if self._freed:
            raise RuntimeError(FREED_MSG)
        out = []
        for e in self._saved:
            kind = e[0]
            if kind == "none":
                out.append(None)
                continue
            if kind == "input":
                t = self._inputs[e[1]]
            elif kind == "output":
                t = self._output(e[1])
            else:
                t = e[1]
            if t._version.v != e[-1]:
                raise modified_error(t, e[-1], self.name() if kind == "output" else None)
            out.append(t)
        if self._packed is not None:  # saved-tensor hooks: what the unpack hooks return
            out = [t if p is None else _unpacked(p) for t, p in zip(out, self._packed)]
        return tuple(out)

    @property
    def saved_variables(self) -> tuple:
        return self.saved_tensors

    def _output(self, j: int) -> Any:
        t = self._out_refs[j]() if isinstance(self._out_refs[j], weakref.ref) else self._out_refs[j]
        if t is None:  # the output tensor is gone: the same value, node and version counter
            node = self._out_nodes[j]
            t = make_tensor(node.value, _node=node, _version=node.storage)
        return t

    def _symbolic_saved(self, e: tuple) -> Any:
        node, ins = self._sym  # type: ignore[misc]
        kind = e[0]
        if kind == "none":
            return None
        if kind == "input":
            return Tracer.wrap(ins[self._positions.index(e[1])])
        if kind == "output":
            j = e[1]
            if j == node.attr("output"):
                return Tracer.wrap(node)
            other = self._out_nodes[j]
            return Tracer.wrap(other) if other is not None else self._output(j)
        return e[1]

    # -- the engine's interface (PythonGradFn)
    def run_backward(self, grads: Any, create_graph: bool) -> list[tuple[Node, Any]]:
        gs: list[Any] = [None] * len(self._out_specs)
        for n, g in grads:
            gs[n.attr("output")] = g
        gs = list(run_prehooks(self._pre_hooks, tuple(gs)))
        raw = tuple(gs)  # what the node hooks see: None where no gradient arrived
        if self.materialize_grads:
            gs = [make_tensor(np.zeros(spec[0], spec[1].np)) if g is None and spec is not None else g
                  for g, spec in zip(gs, self._out_specs)]
        with enable_grad() if create_graph else no_grad():
            res = _user_backward(self._forward_cls)(self, *gs)
            got = _validate(self, res)
        if self._post_hooks:
            got = list(run_posthooks(self._post_hooks, tuple(got), raw))
        return [(x, g) for x, g in zip(self._in_nodes, got) if g is not None]

    def release(self) -> None:
        self._freed = True


def _user_backward(cls: type) -> Callable:
    backward_fn, vjp_fn = cls.backward, cls.vjp
    if backward_fn is not Function.backward and vjp_fn is not Function.vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return vjp_fn if vjp_fn is not Function.vjp else backward_fn


def _sum_to(g: Any, shape: tuple[int, ...]) -> Any:
    """``g`` summed down to ``shape`` (which expands to ``g``'s shape), with tensor ops."""
    lead = g.ndim - len(shape)
    if lead > 0:
        g = g.sum(dim=tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    if tuple(g.shape) != tuple(shape):
        g = g.reshape(shape)
    return g


def _validate(ctx: BackwardCFunction, res: Any) -> list[Any]:
    """What ``backward`` returned, checked as torch checks it; one gradient per tensor argument (None where
    there is none), each summed to its input's shape and cast to its dtype."""
    name = type(ctx).__name__
    if not isinstance(res, tuple):
        res = (res,)
    n = len(ctx._inputs)
    if len(res) > n and all(r is None for r in res[n:]):
        res = res[:n]
    if len(res) != n:
        raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n}, got {len(res)})")
    for i, r in enumerate(res):
        if r is not None and i not in ctx._positions:
            raise RuntimeError(f"function {name} returned a gradient different than None at position {i + 1}, but "
                               "the corresponding forward input was not a Variable")
        if r is not None and not isinstance(r, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
    out = []
    for k, i in enumerate(ctx._positions):
        r = res[i]
        if r is not None:
            shape, dtype = ctx._in_specs[k]
            got = tuple(r.shape)
            if got != shape:
                try:
                    ok = broadcast_shapes(shape, got) == got
                except RuntimeError:
                    ok = False
                if not ok:
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index {k} - got {list(got)} "
                                       f"but expected shape compatible with {list(shape)}")
                r = _sum_to(r, shape)
            if r.dtype is not dtype:
                r = r.to(dtype)
        out.append(r)
    return out


# ---------------------------------------------------------------------------- the symbolic rule

class _FunctionRule(CustomRule):
    """A Function class as a ``custom_rule`` op: input 0 is the forward's output, the others the tensor
    arguments; its VJP traces the user's ``backward`` (so it prints, compiles and differentiates again)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        super().__init__(cls.forward, vjp=None, name=cls.__name__)
        self.grad_fn_name = cls.__name__ + "Backward"
        self.op.grad_fn = self.grad_fn_name
        self.op.doc = f"autograd.Function {cls.__qualname__}: the value of input 0, the derivative of its backward"

    def __repr__(self) -> str:
        return f"<autograd.Function {self.cls.__name__} (op {self.op.name})>"

    def _display(self, node: Node, ins: list) -> sp.Expr:
        ctx = node.attr("call").ctx
        shown: list[Any] = []
        it = iter(ins[1:])
        for i, a in enumerate(ctx._inputs):
            if i in ctx._positions:
                shown.append(next(it))
            elif isinstance(a, (int, float)) and not isinstance(a, bool):
                shown.append(_number(a))
            else:
                shown.append(sp.Symbol(repr(a)))
        name = self.cls.__name__ if node.attr("nout") == 1 else f"{self.cls.__name__}_{node.attr('output')}"
        return sp.Function(name, real=True)(*shown)

    def _vjp(self, node: Node, g: Node) -> tuple[Node | None, ...]:
        ctx = node.attr("call").ctx
        fn = _user_backward(self.cls)
        what = f"the backward of autograd.Function {self.cls.__name__}"
        if getattr(fn, "_sg_numeric", False):
            raise TracingError(f"{what} is marked @once_differentiable: it is a numeric rule, run eagerly by "
                               "backward() and autograd.grad, and cannot be traced (sg.compile, sg.grad_formula, "
                               "symbolic derivatives); write it in symgrad ops, without @once_differentiable")
        ins = node.inputs[1:]
        j = node.attr("output")
        with enable_grad(), TraceContext():
            gs: list[Any] = [None] * node.attr("nout")
            for k, spec in enumerate(ctx._out_specs):
                if k == j:
                    gs[k] = Tracer.wrap(g)
                elif spec is not None and ctx.materialize_grads:
                    gs[k] = make_tensor(np.zeros(spec[0], spec[1].np))
            prev, ctx._sym = ctx._sym, (node, ins)
            try:
                res = fn(ctx, *gs)
                got = _validate(ctx, res)
            except TracingError as exc:
                why = str(exc).split(" Python control flow")[0]
                raise TracingError(f"{what} cannot be traced: it runs eagerly as a numeric rule (backward(), "
                                   "autograd.grad), but sg.compile, sg.grad_formula and symbolic derivatives need a "
                                   f"backward written in symgrad ops ({why})") from None
            finally:
                ctx._sym = prev
        out = []
        for r, x in zip(got, ins):
            out.append(None if r is None else sum_to_node(r._node if is_traced(r) else _input_node(r), x.shape))
        return (None, *out)


_RULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _rule_of(cls: type) -> _FunctionRule:
    rule = _RULES.get(cls)
    if rule is None:
        rule = _RULES[cls] = _FunctionRule(cls)
    return rule


# ---------------------------------------------------------------------------- Function

class FunctionMeta(type):
    """Gives each Function class its ctx / grad_fn class, ``<Name>Backward``."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        backward_cls = type(name + "Backward", (BackwardCFunction,), {
            "_forward_cls": cls, "__module__": "torch.autograd.function", "__qualname__": name + "Backward"})
        backward_cls._autograd_function_id = next(_FUNCTION_IDS)  # type: ignore[attr-defined]
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


def _has_setup_context(cls: type) -> bool:
    return cls.setup_context is not Function.setup_context


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom autograd functions: subclass it with static ``forward`` and ``backward`` and call
    ``MyFn.apply(*args)``.

    >>> import symgrad as sg
    >>> class Cube(sg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * g * x ** 2
    >>> x = sg.tensor([2.0], requires_grad=True)
    >>> y = Cube.apply(x)
    >>> y
    tensor([8.], grad_fn=<CubeBackward>)
    >>> y.backward()
    >>> x.grad
    tensor([12.])
    """

    _backward_cls: type
    generate_vmap_rule = False
    clear_saved_tensors_on_access = False
    boxed_grads_call = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself. Instantiating an autograd function will raise "
                      "an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """``forward(ctx, *args)`` (or ``forward(*args)`` with ``setup_context``): the function's value."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """Set up ``ctx`` from the inputs and output (when ``forward`` takes no ctx)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """One gradient per ``forward`` argument (None for non-tensors) from one per output."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @staticmethod
    def vmap(info: Any, in_dims: Any, *args: Any) -> Any:
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap "
                                  "staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` without recording and record its differentiable outputs with this Function's
        backward as their gradient rule."""
        setup = _has_setup_context(cls)
        if setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        grad_on = is_grad_enabled()
        with no_grad():
            if setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        return _record(cls, ctx, tuple(args), out, grad_on and any(ctx.needs_input_grad))


def _record(cls: type, ctx: BackwardCFunction, args: tuple, out: Any, differentiable: bool) -> Any:
    """The outputs of ``forward`` wrapped as the call's outputs (nodes for the differentiable ones), and what
    ``ctx`` keeps for the backward."""
    is_tuple = isinstance(out, tuple)
    outs = list(out) if is_tuple else [out]
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    ctx._inputs, ctx._positions = args, positions
    ctx._in_specs = [(tuple(args[i].shape), args[i].dtype) for i in positions]
    nondiff = {id(t) for t in ctx.non_differentiable or ()}
    dirty = {id(t) for t in ctx.dirty_tensors or ()}
    tracing = _trace.active is not None
    rule = _rule_of(cls) if differentiable else None
    ref = _CallRef(ctx)
    in_nodes: tuple[Node, ...] | None = None
    result: list[Any] = []
    for j, o in enumerate(outs):
        ctx._out_nodes.append(None)
        if not isinstance(o, Tensor):
            ctx._out_specs.append(None)
            ctx._out_refs.append(o)
            result.append(o)
            continue
        target = o
        is_input = any(o is args[i] for i in positions)
        if is_input and id(o) in dirty:
            if o.is_leaf and o.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            o._version.v += 1
        elif is_input or o._node is not None:  # an input (or a tensor with a history) returned: a new tensor on it
            target = Tracer.wrap(o._node) if is_traced(o) else make_tensor(o._data, _version=o._version)
        ctx._out_specs.append((tuple(o.shape), o.dtype))
        if rule is not None and id(o) not in nondiff and o.dtype.is_floating_point:
            r = _apply(rule.op, target, *(args[i] for i in positions), nargs=len(args), positions=positions,
                       output=j, nout=len(outs), call=ref)
            node = r._node
            if node is not None:
                target._node = node
                if in_nodes is None:
                    in_nodes = node.inputs[1:]
                if not tracing:
                    node.storage, node.version = target._version, target._version.v
                    node.fn = ctx
                    PYTHON_NODES.add(node)
                    if ctx._node is None:
                        ctx._node = node
                ctx._out_nodes[j] = node
        ctx._out_refs.append(weakref.ref(target) if ctx._out_nodes[j] is not None else target)
        result.append(target)
    ctx._in_nodes = in_nodes or ()
    _keep_saved(ctx, args, positions, outs, result)
    ctx.to_save = None  # as torch: what was saved is reached through saved_tensors only
    return tuple(result) if is_tuple else result[0]


def _keep_saved(ctx: BackwardCFunction, args: tuple, positions: tuple, outs: list, result: list) -> None:
    for k, t in enumerate(ctx.to_save or ()):
        if t is None:
            ctx._saved.append(("none",))
        elif not isinstance(t, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {k} is of type "
                            f"{type(t).__name__}")
        elif any(t is args[i] for i in positions) and not any(t is o for o in outs):
            i = next(i for i in positions if t is args[i])
            ctx._saved.append(("input", i, t._version.v))
        elif any(t is o for o in outs):
            j = next(j for j, o in enumerate(outs) if t is o)
            ctx._saved.append(("output", j, result[j]._version.v))
        else:
            ctx._saved.append(("other", t, t._version.v))
    if _saved_hooks.STACK and ctx._saved and not any(is_traced(t) for t in ctx.to_save if t is not None):
        pack, unpack = _saved_hooks.STACK[-1]
        ctx._packed = [None if e[0] == "none" else
                       (pack(args[e[1]] if e[0] == "input" else result[e[1]] if e[0] == "output" else e[1]), unpack)
                       for e in ctx._saved]


def _unpacked(p: tuple) -> Tensor:
    t = p[1](p[0])
    if not isinstance(t, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(t).__name__}")
    return t


# ---------------------------------------------------------------------------- once_differentiable

class _DelayedError(Function):
    """What ``once_differentiable`` puts behind a backward's results under ``create_graph``: differentiating
    them again raises torch's error."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        return tuple(a.clone() for a in args) if len(args) != 1 else args[0].clone()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


_DelayedError._backward_cls.__name__ = "Error"
_DelayedError._backward_cls.name = lambda self: "torch::autograd::Error"  # type: ignore[attr-defined]
_DelayedError._backward_cls.__repr__ = lambda self: f"<Error object at {id(self):#x}>"  # type: ignore[method-assign]


def once_differentiable(fn: Callable) -> Callable:
    """Decorate a ``backward`` that is not differentiable itself: it runs without recording; differentiating
    its results again raises torch's error. symgrad treats it as a numeric rule (never traced)."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not is_grad_enabled() or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        fake = [o.detach().requires_grad_(True) if isinstance(o, Tensor) else o for o in outs]
        tensors = [o for o in fake if isinstance(o, Tensor)]
        wrapped = _DelayedError.apply(*tensors)
        wrapped = list(wrapped) if isinstance(wrapped, tuple) else [wrapped]
        res = tuple(wrapped.pop(0) if isinstance(o, Tensor) else o for o in fake)
        return res if isinstance(outputs, tuple) else res[0]

    wrapper._sg_numeric = True  # type: ignore[attr-defined]
    return wrapper


class InplaceFunction(Function):
    """torch's legacy base class with an ``inplace`` flag; use ``Function``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace
