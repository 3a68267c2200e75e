"""``@compile``: trace once per signature, derive on the DAG, emit and load kernels; ``grad`` / ``value_and_grad``."""
from __future__ import annotations

import builtins
import functools
import inspect
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from codegen import fastcall as _fastcall
from codegen import threads as _threads

from ..core import dtypes
from ..core.graph import Node, substitute
from ..derive.reverse import backward_graph
from ..derive.sparsity import dependency
from ..eager.base import _is_number
from ..eager.formula import CompiledFormulas
from ..eager.grad_mode import enable_grad, is_grad_enabled
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..kernels import program as _program
from ..kernels import stats as _stats
from ..kernels.program import Program
from ..kernels.roll import roll_loops
from ..ops import A, apply
from ..ops import source as _src
from ..ops.compiled import compiled_call, compiled_grad
from .notebook import markdown as _notebook_markdown
from .tracing import Signature, Tracer, _as_node, _const_tracer, gradient_nodes, leaf, trace, trace_signature

log = logging.getLogger("symgrad")

STATS = {"traces": 0, "kernels": 0}


@dataclass
class _Entry:
    """One traced signature: its kernel program and what calling it needs."""

    prog: Program            # the kernel pipeline: numpy kernel fn(list_of_arrays), numba once hot
    leaves: list[Node]
    out: Node
    grads: list[Node | None] = field(default_factory=list)
    tree: Any = None         # how the extra outputs (fn mode's tuple, grad modes' aux) nest; None: there are none
    runners: dict = field(default_factory=dict)   # id(numba kernel) -> (kernel, what runs it: codegen.threads)

    @property
    def fn(self) -> Callable:
        return self.prog.fn

    @property
    def source(self) -> str:
        return self.prog.source

    @property
    def kernel(self) -> Any:
        return self.prog.kernel

    @property
    def consts(self) -> list:
        """Values of closed-over constants, passed after the arguments."""
        return self.prog.consts

    @property
    def out_specs(self) -> list:
        """(dtype, shape) per output."""
        return self.prog.specs

    @property
    def jit(self) -> Callable | None:
        """The numba kernel, once the signature is hot (None before, or where numba refuses the IR)."""
        return self.prog.jit

    @property
    def jit_source(self) -> str:
        return self.prog.jit_source

    @property
    def jit_out(self) -> Callable | None:
        """The numba kernel writing the gradients into the caller's arrays (``out=``), once compiled."""
        return self.prog.compiled(range(1, len(self.out_specs)))




_MISSING = object()     # an argument not given to a generated fast-path __call__

# ---- arguments another module computes (compiler/dask.py registers dask arrays)
#: (claims(args) -> bool, run(compiled_function, args, out) -> result), tried in order by ``__call__``
ARGUMENT_HANDLERS: list[tuple[Callable[[Sequence[Any]], bool], Callable[..., Any]]] = []
# ----


def _runner(e: _Entry, jit: Callable) -> Callable:
    """What runs the numba kernel ``jit`` of ``e``: a parallel kernel on all threads or on the calling thread
    alone, whichever has been faster lately (``codegen.threads``); any other kernel as it is."""
    got = e.runners.get(id(jit))
    if got is not None and got[0] is jit:
        return got[1]
    run = _threads.adaptive(jit, e.prog.jit_source)
    if run is None:         # its threads are not started yet (before its first call): ask again next call
        return jit
    e.runners[id(jit)] = (jit, run)
    return run


def _kernel_args(e: _Entry, names: list[str], call_args: list, ns: dict[str, Any]) -> list[str]:
    """The kernel's arguments in a generated fast path: the caller's (``names``), then closed-over
    constants bound into the namespace ``ns``."""
    kargs = []
    for q in e.kernel.params:
        if q.index < len(names):
            kargs.append(names[q.index])
        else:
            kargs.append(f"_c{q.index}")
            ns[f"_c{q.index}"] = call_args[len(kargs) - 1]
    return kargs


def kernel_source(kernel: Any, numpy_source: str, backend: str | None) -> str:
    """A kernel's source for ``backend``: None is the one that runs once hot (numba where it takes the IR)."""
    if backend not in (None, "numpy", "numba"):
        raise ValueError(f"backend must be 'numpy' or 'numba', not {backend!r}")
    if backend == "numpy" or (backend is None and _program.BACKEND != "numba"):
        return numpy_source
    from codegen.numba import emit_numba  # deferred: imports numba
    if backend == "numba":
        return emit_numba(kernel)
    try:
        return emit_numba(kernel)
    except Exception:  # noqa: BLE001 - the numba emitter refuses this IR: the numpy kernel stays in use
        return numpy_source


def bind_positional(fn: Callable, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
    """``fn(*args, **kwargs)``'s arguments as a positional tuple (``argnums`` count positions): keywords
    fill their parameter's place, skipped parameters before them take their defaults."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise TypeError(f"keyword arguments need an inspectable signature: pass them positionally to {fn!r}") from None
    bound = sig.bind(*args, **kwargs)     # raises Python's own TypeError for a wrong call
    out: list[Any] = []
    params = list(sig.parameters.values())
    for k, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            out.extend(bound.arguments.get(p.name, ()))
            continue
        if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
            if p.name in bound.arguments:
                raise TypeError(f"sg.compile passes arguments by position: the keyword-only parameter "
                                f"'{p.name}' of {getattr(fn, '__name__', fn)} cannot be given (give it a "
                                "default and leave it, or make it positional)")
            continue
        if p.name in bound.arguments:
            out.append(bound.arguments[p.name])
        elif any(q.name in bound.arguments for q in params[k + 1:]
                 if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)):
            out.append(p.default)         # a later argument was given: this one takes its default
        else:
            break
    return tuple(out)


@functools.cache
def _tracer_type() -> type:
    return Tracer


def _argnums(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _kind(a: Any) -> tuple:
    if isinstance(a, Tensor):
        return ("sg", a.dtype.name, tuple(a.shape))
    if _is_number(a) and not isinstance(a, np.ndarray):
        return ("py", "float64", ())
    try:
        arr = np.asarray(a)
    except ValueError as exc:            # ragged nested lists
        raise TypeError(f"a compiled function's arguments must be arrays, numbers or tensors: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"a compiled function's arguments must be arrays, numbers or tensors, not "
                        f"{type(a).__name__} ({a!r:.60}): close over other values instead (a lambda, "
                        "functools.partial or a default argument)")
    if arr.dtype.kind in "iub" and arr.ndim == 0:
        return ("py", "float64", ())
    return ("np", dtypes.from_numpy_dtype(arr.dtype if arr.dtype.kind == "f" else np.float64).name, arr.shape)


class CompiledFunction:
    """A traced, symbolically differentiated, code-generated function (see ``symgrad.compile``)."""

    def __init__(self, fn: Callable, mode: str = "fn", argnums: int | Sequence[int] = 0,
                 has_aux: bool = False) -> None:
        self.fn = fn
        self.mode = mode
        self.has_aux = bool(has_aux)
        self.argnums = _argnums(argnums)
        self._single = isinstance(argnums, int)
        self._entries: dict[tuple, _Entry] = {}
        self._fast: Callable | None = None    # the generated all-float __call__, once installed
        functools.update_wrapper(self, fn, updated=())
        target = fn.fn if isinstance(fn, CompiledFunction) else fn
        try:
            self.params = list(inspect.signature(target).parameters)
        except (TypeError, ValueError):
            self.params = []

    def __repr__(self) -> str:
        return f"<symgrad.{self.mode} of {getattr(self.fn, '__name__', self.fn)}>"

    _repr_markdown_ = _notebook_markdown    # notebooks: its signatures, their kernels, the last one's formulas

    # ------------------------------------------------------------------ tracing
    def _name(self, i: int) -> str:
        return self.params[i] if i < len(self.params) else f"arg{i}"

    def _trace_symbolic(self, args: Sequence[Any]) -> Any:
        """Called with tracers inside another trace: record into it (grad of grad composes)."""
        if self.mode == "fn":
            return self.fn(*args)
        args = list(args)
        alias: dict[int, Node] = {}
        for i in self.argnums:
            a = args[i]
            node = a._node if isinstance(a, Tracer) else _const_tracer(a)._node
            n = apply("fused", node, expr=A[0], dtype=node.dtype)
            n.requires_grad = True
            alias[i] = n
            args[i] = Tracer.wrap(n)
        out, aux = self._split_aux(self.fn(*args))
        out_node = _as_node(out)
        grads = self._derive(out_node, [alias[i] for i in self.argnums])
        gts = tuple(Tracer.wrap(g) for g in grads)
        g = gts[0] if self._single else gts
        if self.has_aux:
            return (g, aux) if self.mode == "grad" else ((out, aux), g)
        return g if self.mode == "grad" else (out, g)

    def _split_aux(self, out: Any) -> tuple[Any, Any]:
        """``(main, aux)`` of a ``has_aux`` function's result (JAX's convention); ``(out, None)`` otherwise."""
        if not self.has_aux:
            return out, None
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            got = (f"a {type(out).__name__} of length {len(out)}" if isinstance(out, (tuple, list)) else
                   "a single tensor" if isinstance(out, Tensor) else type(out).__name__)
            raise TypeError(f"has_aux=True needs the function to return a pair (output, aux), got {got}")
        return out[0], out[1]

    def _derive(self, out: Node, wrt: Sequence[Node]) -> list[Node]:
        if out.shape != ():
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {out.shape}")
        seed = Node(_src.scalar, (), (("value", 1),), (), out.dtype, value=1)
        grads, _ = backward_graph([out], [seed], wrt)
        res = []
        for w, g in zip(wrt, grads):
            if g is None:
                z = Node(_src.scalar, (), (("value", 0),), (), w.dtype, value=0)
                g = apply("expand", z, shape=w.shape) if w.shape else apply("fused", z, expr=A[0], dtype=w.dtype)
            res.append(g)
        return res

    def _build(self, kinds: Sequence[tuple]) -> _Entry:
        t0 = time.perf_counter()
        diff = set(self.argnums) if self.mode != "fn" else set()
        leaves = [leaf(k[2], dtypes.from_any(k[1]), self._name(i), i in diff) for i, k in enumerate(kinds)]
        with enable_grad():     # the caller's no_grad() is not the traced function's
            out = trace(self.fn, leaves)
        STATS["traces"] += 1
        out, aux = self._split_aux(out)
        tree = None
        if self.mode == "fn" and isinstance(out, (tuple, list)):
            extra, tree = _flatten(out, "the compiled function's result")
            if not extra:
                raise TypeError("a compiled function must return a tensor or a number, not an empty sequence")
            out_node, extra = extra[0], extra[1:]
        else:
            out_node, extra = _as_node(out), []
            if self.has_aux:
                extra, tree = _flatten(aux, "aux")
        out_node, *extra = roll_loops([out_node, *extra])     # unrolled Python loops rolled back into loops
        outs = [out_node]
        grads: list = []
        t1 = time.perf_counter()
        if self.mode != "fn":
            grads = self._derive(out_node, [leaves[i]._node for i in self.argnums])
            outs = outs + grads
        outs = outs + extra
        t2 = time.perf_counter()
        _stats.count("traces")
        _stats.add_time("trace", t1 - t0)
        _stats.add_time("derive", t2 - t1)
        what = f"{self.mode} of {getattr(self.fn, '__name__', 'f')}"
        prog = Program(self.mode, [(lv._node, "v", i) for i, lv in enumerate(leaves)], outs,
                       doc=what, prefix="compiled", what=what, signature=self._signature_text(kinds),
                       reason=self._reason(kinds), times={"trace": t1 - t0, "derive": t2 - t1})
        STATS["kernels"] += 1
        log.debug("compiled %s for %s: trace+derive %.1f ms, lower+emit+load %.1f ms (%s)", self.mode, kinds,
                  1e3 * (t2 - t0), 1e3 * prog.build_s, prog.path)
        return _Entry(prog, [lv._node for lv in leaves], out_node, grads, tree=tree)

    def _signature_text(self, kinds: Sequence[tuple]) -> str:
        """``(x: float64[1000], y: float)``: the argument signature as the compile log shows it."""
        parts = []
        for i, k in enumerate(kinds):
            shape = ",".join(map(str, k[2]))
            parts.append(f"{self._name(i)}: " + ("float" if k[0] == "py" else f"{k[1]}[{shape}]"))
        return "(" + ", ".join(parts) + ")"

    def _reason(self, kinds: Sequence[tuple]) -> str:
        """Why this signature is traced: the first call, or how it differs from the nearest one traced already."""
        if not self._entries:
            return "first call"
        names = ("argument types", "dtype", "shape")    # per argument: (py / np / sg, dtype, shape)
        best: list[str] | None = None
        for key in self._entries:
            if len(key) != len(kinds):
                continue
            diff = [n for j, n in enumerate(names) if any(a[j] != b[j] for a, b in zip(key, kinds))]
            if best is None or len(diff) < len(best):
                best = diff
        if best is None:
            return "new number of arguments"
        return "new " + " and ".join(best[::-1]) if best else "new signature"

    def _entry(self, args: Sequence[Any]) -> tuple[_Entry, list[tuple]]:
        kinds = [_kind(a) for a in args]
        key = tuple(kinds)
        e = self._entries.get(key)
        if e is None:
            e = self._entries[key] = self._build(kinds)
        return e, kinds

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        # once installed, the all-float fast path is a subclass's __call__ (_install_fast)
        if kwargs:
            args = bind_positional(self.fn, args, kwargs)
        spec = _dict_spec(args)
        if spec is not None:
            if out is not None:
                raise TypeError("out= is not available with dict arguments")
            return self._call_dicts(spec, args)
        for claims, run in ARGUMENT_HANDLERS:   # ---- dask arrays (compiler/dask.py)
            if claims(args):
                return run(self, args, out)     # ----
        if out is not None:
            return self._call_out(args, out)
        tensors = False
        for a in args:
            if isinstance(a, Tensor):
                if isinstance(a, _tracer_type()):
                    return self._trace_symbolic(args)
                tensors = True
        if tensors and any(isinstance(a, Tensor) and a.requires_grad for a in args) and is_grad_enabled():
            return self._call_tensors(args)
        e, kinds = self._entry(args)
        arrays = [np.asarray(a._data if isinstance(a, Tensor) else a, dtype=dtypes.from_any(k[1]).np)
                  for a, k in zip(args, kinds)] + e.consts
        all_py = all(k[0] == "py" for k in kinds)
        jit = None
        if e.prog.hot():          # the numba kernel, once compiled (background mode: the numpy one until then)
            kargs = [float(a) for a in arrays[:len(args)]] + arrays[len(args):] if all_py else arrays
            call_args = [kargs[q.index] for q in e.kernel.params]       # constants stay arrays
            jit = e.prog.kernel_for(call_args)
        if jit is not None:       # numba's kernels raise no floating-point warnings
            raw = _runner(e, jit)(*call_args)
            if not tensors:
                if self._fast is None and all_py and all(type(a) is float for a in args):
                    self._install_fast(e, jit, call_args, raw, len(args))
                elif args and all(type(a) is np.ndarray for a in args):
                    self._install_fast_arrays(e, _runner(e, jit), args, call_args, raw)
        else:
            with np.errstate(all="ignore"):
                raw = e.fn(arrays)
        outs = []
        owner = [None] + (list(self.argnums) if self.mode != "fn" else [])
        owner += [None] * (len(e.out_specs) - len(owner))     # a tuple result's or aux's further outputs
        for (dt, shape), r, i in zip(e.out_specs, raw, owner):
            r = np.asarray(r, dtype=dt.np)
            if r.shape != shape:
                r = np.broadcast_to(r, shape)
            kind = kinds[i][0] if i is not None else ("py" if all_py else "np")
            if kind == "py":
                outs.append(float(r))
            elif tensors:
                outs.append(Tensor(np.array(r)))
            else:
                if not r.flags.writeable or any(r is a or (r.base is not None and r.base is a) for a in arrays):
                    r = np.array(r)
                outs.append(r[()] if r.ndim == 0 else r)
        if self.mode == "fn":
            return outs[0] if e.tree is None else _unflatten(e.tree, iter(outs))
        k = 1 + len(self.argnums)
        grads = tuple(outs[1:k])
        g = grads[0] if self._single else grads
        if self.has_aux:
            aux = _unflatten(e.tree, iter(outs[k:]))
            return (g, aux) if self.mode == "grad" else ((outs[0], aux), g)
        return g if self.mode == "grad" else (outs[0], g)

    def _call_out(self, args: Sequence[Any], out: Any) -> Any:
        """``grad`` / ``value_and_grad`` writing the gradients into ``out`` (one array, or one per argnums
        entry) and returning them; the hot numba kernel writes into them directly."""
        if self.mode == "fn":
            raise TypeError("out= takes gradient arrays: use it with sg.grad or sg.value_and_grad")
        if self.has_aux:
            raise TypeError("out= is not available with has_aux=True")
        if any(isinstance(a, Tracer) for a in args):
            raise TypeError("out= cannot be used while tracing")
        bufs = (out,) if self._single else out
        if not isinstance(bufs, (tuple, list)) or len(bufs) != len(self.argnums):
            raise TypeError(f"out= must be a tuple of {len(self.argnums)} arrays, one per entry of argnums="
                            f"{self.argnums}")
        e, kinds = self._entry(args)
        arrays = [np.asarray(a._data if isinstance(a, Tensor) else a, dtype=dtypes.from_any(k[1]).np)
                  for a, k in zip(args, kinds)] + e.consts
        for k, (buf, i) in enumerate(zip(bufs, self.argnums)):
            dt, shape = e.out_specs[k + 1]
            what = "out" if self._single else f"out[{k}]"
            if not isinstance(buf, np.ndarray):
                raise TypeError(f"{what} must be a numpy array, not {type(buf).__name__}")
            if buf.shape != shape:
                raise ValueError(f"{what} has shape {buf.shape}, but the gradient with respect to argument {i} "
                                 f"has shape {shape}")
            if buf.dtype != dt.np:
                raise ValueError(f"{what} has dtype {buf.dtype}, but the gradient with respect to argument {i} "
                                 f"has dtype {dt.np}")
            if not (buf.flags.c_contiguous and buf.flags.writeable):
                raise ValueError(f"{what} must be a writeable, C-contiguous array")
            if any(np.may_share_memory(buf, a) for a in arrays) or any(
                    np.may_share_memory(buf, b) for b in bufs[:k]):
                raise ValueError(f"{what} overlaps an argument or another output array")
        jit = None
        if e.prog.hot():          # the kernel variant writing the gradients into ``bufs``, once compiled
            call_args = [arrays[q.index] for q in e.kernel.params] + list(bufs)
            jit = e.prog.kernel_for(call_args, out_params=range(1, len(e.out_specs)))
        with np.errstate(all="ignore"):
            if jit is not None:
                raw = _runner(e, jit)(*call_args)
            else:
                raw = e.fn(arrays)
        for buf, r in zip(bufs, raw[1:]):
            if r is not buf:
                buf[...] = r
        g = bufs[0] if self._single else tuple(bufs)
        if self.mode == "grad":
            return g
        dt = e.out_specs[0][0]
        if all(k[0] == "py" for k in kinds):
            value: Any = float(raw[0])
        elif any(k[0] == "sg" for k in kinds):
            value = Tensor(np.array(raw[0], dtype=dt.np))
        else:
            value = np.asarray(raw[0], dtype=dt.np)[()]
        return value, g

    def _packed(self, outs: list[str]) -> str:
        """The return expression of a generated fast path over the kernel results ``outs`` (source text)."""
        grads = outs[1:]
        g = grads[0] if self._single and grads else "(" + "".join(x + ", " for x in grads) + ")"
        return {"fn": outs[0], "grad": g, "value_and_grad": f"{outs[0]}, {g}"}[self.mode]

    def _install_fast(self, e: _Entry, jit: Any, call_args: list, raw: Any, nargs: int) -> None:
        """Give this instance a generated ``__call__`` (a one-off subclass) sending ``nargs`` Python floats
        to the entry point of the numba overload that just ran (when all its results are Python floats, as
        the general path's), anything else to the general path; argument order and constants baked in."""
        try:
            sig = tuple(jit.typeof_pyval(a) for a in call_args)
            entry = jit.overloads[sig].entry_point
        except (AttributeError, KeyError, TypeError):
            return
        if (e.tree is not None or not isinstance(raw, tuple) or len(raw) != len(e.out_specs)
                or not all(type(r) is float and dt.np == np.float64 and shape == ()
                           for r, (dt, shape) in zip(raw, e.out_specs))):
            return
        names = [f"a{i}" for i in range(nargs)]
        ns: dict[str, Any] = {"_entry": entry}
        kargs = _kernel_args(e, names, call_args, ns)
        result = self._packed([f"r[{k}]" for k in range(len(e.out_specs))])
        if result == "r[0], r[1]" and len(e.out_specs) == 2:
            result = "r"        # the kernel's own pair (value, gradient): nothing to pack
        self._install_call(names, [f"type({n}) is float" for n in names],
                           [f"r = _entry({', '.join(kargs)})", f"return {result}"], ns, "fast path")
        if kargs == names:              # checks and packing in machine code (codegen.fastcall)
            g: Any = 1 if self._single else tuple(range(1, len(e.out_specs)))
            pack = {"fn": 0, "grad": g, "value_and_grad": (0, g)}[self.mode]
            native = _fastcall.guarded(entry, functools.partial(CompiledFunction.__call__, self), nargs,
                                       getattr(self.fn, "__name__", "compiled"),
                                       None if pack == tuple(range(len(e.out_specs))) else pack)
            if native is not None:
                self.__class__.__call__ = native

    def _install_call(self, names: list[str], guards: list[str], fast: list[str], ns: dict[str, Any],
                      label: str) -> None:
        """Give this instance a generated ``__call__`` (a one-off subclass) running the lines ``fast`` when
        every guard holds (and no other argument, keyword or ``out=`` is given), else the general path.
        Positional-only parameters, sentinel defaults: no tuple to unpack on the fast path."""
        ns.update(_general=CompiledFunction.__call__, _M=_MISSING)
        guard = " and ".join([*guards, "out is None", "not rest", "not kw"])
        body = "".join(f"        {line}\n" for line in fast)
        src = (f"def __call__(self, {''.join(n + '=_M, ' for n in names)}/, *rest, out=None, **kw):\n"
               f"    if {guard}:\n{body}"
               f"    return _general(self, *[a for a in ({''.join(n + ', ' for n in names)}) if a is not _M], *rest,"
               f" out=out, **kw)\n")
        exec(builtins.compile(src, f"<symgrad {label} of {self!r}>", "exec"), ns)  # noqa: S102 - generated above
        call = ns["__call__"]
        call.__doc__ = CompiledFunction.__call__.__doc__
        self._fast = call
        self.__class__ = type(CompiledFunction.__name__, (CompiledFunction,),
                              {"__call__": call, "__module__": __name__, "__qualname__": "CompiledFunction"})

    def _install_fast_arrays(self, e: _Entry, jit: Any, args: Sequence[np.ndarray], call_args: list,
                             raw: Any) -> None:
        """The array counterpart of ``_install_fast``: a generated ``__call__`` that looks the arguments'
        (shape, dtype) pairs up in a table of hot signatures and runs that signature's generated caller
        (the numba dispatcher, results packed as the general path packs them: 0-d results as numpy
        scalars); anything else takes the general path. A signature enters the table only when every
        array result is a fresh array of the expected shape and dtype."""
        nargs = len(args)
        table = self.__dict__.get("_fast_table")
        if self._fast is not None and (table is None or self.__dict__.get("_fast_nargs") != nargs):
            return                                      # the float fast path, or another arity, holds it
        if e.tree is not None or not isinstance(raw, tuple) or len(raw) != len(e.out_specs):
            return
        ns: dict[str, Any] = {"_jit": jit}
        packed = []
        for k, (r, (dt, shape)) in enumerate(zip(raw, e.out_specs)):
            if shape == ():
                if not isinstance(r, (float, np.floating)):
                    return
                ns[f"_t{k}"] = dt.np.type
                packed.append(f"_t{k}(r[{k}])")
            else:
                if (not isinstance(r, np.ndarray) or r.shape != shape or r.dtype != dt.np or not r.flags.writeable
                        or any(r is a or r.base is a for a in call_args)):
                    return
                packed.append(f"r[{k}]")
        names = [f"a{i}" for i in range(nargs)]
        kargs = _kernel_args(e, names, call_args, ns)
        result = self._packed(packed)
        src = (f"def run({', '.join(names)}):\n"
               f"    r = _jit({', '.join(kargs)})\n"
               f"    return {result}\n")
        exec(builtins.compile(src, f"<symgrad array fast path of {self!r}>", "exec"), ns)  # noqa: S102 - generated
        if table is None:
            table = self.__dict__["_fast_table"] = {}
            self.__dict__["_fast_nargs"] = nargs
            key = "".join(f"{n}.shape, {n}.dtype, " for n in names)
            self._install_call(names, [f"type({n}) is _nd" for n in names],
                               [f"run = _table.get(({key}))", "if run is not None:",
                                f"    return run({', '.join(names)})"],
                               {"_table": table, "_nd": np.ndarray}, "array dispatch")
        table[tuple(x for a in args for x in (a.shape, a.dtype))] = ns["run"]

    def _call_tensors(self, args: Sequence[Any]) -> Any:
        """Tensor arguments that require grad: one recorded node (``CompiledFunctionBackward``) whose
        backward multiplies the upstream gradient by the gradients the compiled ``value_and_grad``
        kernel computed with the value; its gradients are nodes whose own VJP rebuilds the traced
        derivative on the inputs (second order, ``create_graph``). A non-scalar result's VJP is the
        traced derivative rebuilt on the inputs."""
        if self.has_aux:
            raise NotImplementedError("has_aux=True with sg.Tensor arguments that require grad: pass arrays or "
                                      "detached tensors, or record the aux eagerly")
        kinds = tuple(_kind(a) for a in args)
        leaves, out_node = self._traced(kinds)
        if self.mode != "fn" and out_node.shape != ():
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {out_node.shape}")
        plain = [a.detach() if isinstance(a, Tensor) else a for a in args]
        rg = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
        ins = [a if isinstance(a, Tensor) or _is_number(a) else Tensor(np.asarray(a)) for a in args]
        attrs = {"rebuild": self._rebuilt, "kinds": kinds}
        grads: list = []
        if out_node.shape == ():
            value, gs = self._value_and_grad(rg)(*plain)
            grads = [Tensor(np.asarray(g._data)) for g in gs]     # the kernel's gradients, saved as constants
            value = value._data
        else:
            value = CompiledFunction(self.fn, "fn")(*plain)._data
        out = _apply(compiled_call, Tensor(np.asarray(value, dtype=out_node.dtype.np)), *ins, *grads,
                     nargs=len(args), saved=rg if grads else (), **attrs)
        if self.mode == "fn":
            return out
        by_arg = dict(zip(rg, grads))
        gts = tuple(_apply(compiled_grad, by_arg[i], *ins, which=i, **attrs) if i in by_arg
                    else self._value_and_grad((i,))(*plain)[1][0] for i in self.argnums)
        g = gts[0] if self._single else gts
        return g if self.mode == "grad" else (out, g)

    def _value_and_grad(self, argnums: tuple[int, ...]) -> CompiledFunction:
        """``value_and_grad`` of the traced function for ``argnums`` (one per tuple, kept)."""
        vgs = self.__dict__.setdefault("_vgs", {})
        if argnums not in vgs:
            vgs[argnums] = CompiledFunction(self.fn, "value_and_grad", argnums)
        return vgs[argnums]

    def _traced(self, kinds: tuple) -> tuple[list[Node], Node]:
        """The traced leaves (all requiring grad) and result for these argument kinds (traced once)."""
        traces = self.__dict__.setdefault("_traces", {})
        if kinds not in traces:
            lvs = [leaf(k[2], dtypes.from_any(k[1]), self._name(i), True) for i, k in enumerate(kinds)]
            t0 = time.perf_counter()
            with enable_grad():
                out = trace(self.fn, lvs)
            STATS["traces"] += 1
            _stats.count("traces")
            _stats.add_time("trace", time.perf_counter() - t0)
            if isinstance(out, (tuple, list)):
                raise NotImplementedError("a compiled function returning several results, called with tensors "
                                          "that require grad: call it with arrays (or detached tensors)")
            traces[kinds] = ([lv._node for lv in lvs], _as_node(out))
        return traces[kinds]

    def _rebuilt(self, kinds: tuple, inputs: Sequence[Node], seed: Node, which: int | None) -> list[Node | None]:
        """The traced derivative rebuilt on ``inputs``: the VJP of the result (``which`` None) or of its
        gradient with respect to argument ``which``, for the cotangent ``seed``."""
        leaves, out = self._traced(kinds)
        root = out
        if which is not None:
            root = self._derive(out, [leaves[which]])[0]
        stand = Node(_src.const, (), (), seed.shape, seed.dtype)
        grads, _ = backward_graph([root], [stand], leaves)
        mapping = {lv.id: x for lv, x in zip(leaves, inputs)}
        mapping[stand.id] = seed
        return [None if gr is None or not x.requires_grad else substitute(gr, mapping)
                for gr, x in zip(grads, inputs)]

    # ------------------------------------------------------------------ dict arguments
    def _flat(self, spec: tuple) -> CompiledFunction:
        """The compiled function of the flattened arguments for one structure of dict arguments (kept): each
        dict entry is an argument of its own, named by its key; ``argnums`` picking a dict picks its entries."""
        flats = self.__dict__.setdefault("_flats", {})
        if spec in flats:
            return flats[spec]
        for i in self.argnums:
            if i >= len(spec):
                raise IndexError(f"argnums {i} is out of range for a call with {len(spec)} arguments")
        starts, names = [], []
        for i, keys in enumerate(spec):
            starts.append(len(names))
            names.extend([self._name(i)] if keys is None else [str(k) for k in keys])
        if len(set(names)) < len(names):  # keys repeated across arguments: qualify them by the argument's name
            names = [n for i, keys in enumerate(spec) for n in
                     ([self._name(i)] if keys is None else [f"{self._name(i)}[{k!r}]" for k in keys])]
        fn = self.fn

        def flat(*xs: Any) -> Any:
            it = iter(xs)
            return fn(*[next(it) if keys is None else {k: next(it) for k in keys} for keys in spec])

        flat.__name__ = getattr(fn, "__name__", "f")
        argnums = tuple(j for i in self.argnums
                        for j in range(starts[i], starts[i] + (1 if spec[i] is None else len(spec[i]))))
        f = flats[spec] = CompiledFunction(flat, self.mode, argnums, self.has_aux)
        f.params = names
        return f

    def _call_dicts(self, spec: tuple, args: Sequence[Any]) -> Any:
        """A call with dict arguments: the flattened function's result, each dict argument's gradient a dict
        with its keys (as JAX's pytrees and ``torch.func`` give them)."""
        res = self._flat(spec)(*_flat_args(spec, args))
        if self.mode == "fn":
            return res
        if self.mode == "grad":
            g, head = res if self.has_aux else (res, None)   # head: the aux
        else:
            head, g = res                                     # head: the value, or (value, aux)
        it = iter(g)
        per = [next(it) if spec[i] is None else {k: next(it) for k in spec[i]} for i in self.argnums]
        grads = per[0] if self._single else tuple(per)
        if self.mode == "grad":
            return (grads, head) if self.has_aux else grads
        return head, grads

    # ------------------------------------------------------------------ inspection
    def source(self, *args: Any, backend: str | None = None) -> str:
        """The source of the kernel that runs for these example arguments' signature once it is hot: the
        fused-loop numba kernel unless numba can't take it (or ``SYMGRAD_BACKEND=numpy``);
        ``backend="numpy"`` for the generated numpy kernel the first call runs, ``"numba"`` for numba's."""
        spec = _dict_spec(args)
        if spec is not None:
            return self._flat(spec).source(*_flat_args(spec, args), backend=backend)
        e, _ = self._entry(args)
        return kernel_source(e.kernel, e.source, backend)

    def formulas(self, *args: Any) -> Any:
        """Forward and gradient formulas for these example arguments (printable, ``.latex()``); a dict
        argument's entries are named by their keys."""
        spec = _dict_spec(args)
        if spec is not None:
            return self._flat(spec).formulas(*_flat_args(spec, args))
        if self.mode == "fn" and self._entry(args)[0].tree is not None:
            raise TypeError("formulas() shows one result and its gradient: this function returns several; "
                            "wrap the one to show (sg.compile(lambda *a: f(*a)[0]).formulas(...))")
        grad_fn = self if self.mode != "fn" else CompiledFunction(self.fn, "value_and_grad",
                                                                  tuple(range(len(args))))
        e, kinds = grad_fn._entry(args)
        names = [self._name(i) for i in range(len(args))]
        return CompiledFormulas(e.out, e.grads, [names[i] for i in grad_fn.argnums],
                                getattr(self.fn, "__name__", "f"), names)

    def jacobian_sparsity(self, *args: Any, argnums: int | Sequence[int] | None = None) -> Any:
        """The exact structural pattern of the Jacobian of this function's output w.r.t. ``argnums``
        (default: this function's) at these example arguments, as a boolean ``scipy.sparse`` matrix
        (output elements × argument elements, flattened)."""
        sig, wrt = self._pattern_trace(args, argnums)
        return dependency(sig.outs, wrt).astype(bool)

    def hessian_sparsity(self, *args: Any, argnums: int | Sequence[int] | None = None) -> Any:
        """The exact structural pattern of the Hessian of this scalar function w.r.t. ``argnums``
        (default: this function's), as a boolean ``scipy.sparse`` matrix."""
        sig, wrt = self._pattern_trace(args, argnums)
        return dependency(gradient_nodes(sig, wrt), wrt).astype(bool)

    def _pattern_trace(self, args: Sequence[Any], argnums: Any) -> tuple[Signature, list[Node]]:
        nums = self.argnums if argnums is None else _argnums(argnums)
        for i in nums:
            if i >= len(args):
                raise IndexError(f"argnums {i} is out of range for a call with {len(args)} arguments")
        sig = trace_signature(self.fn, [_kind(a) for a in args], [self._name(i) for i in range(len(args))], set(nums))
        return sig, [sig.leaves[i] for i in nums]


def _dict_spec(args: Sequence[Any]) -> tuple | None:
    """Per argument, the keys of a dict argument (None for any other); None when no argument is a dict."""
    if not any(isinstance(a, Mapping) for a in args):
        return None
    return tuple(tuple(a) if isinstance(a, Mapping) else None for a in args)


def _flat_args(spec: tuple, args: Sequence[Any]) -> list[Any]:
    return [v for a, keys in zip(args, spec) for v in ((a,) if keys is None else (a[k] for k in keys))]


def _flatten(tree: Any, what: str) -> tuple[list[Node], Any]:
    """The nodes of a (nested) tuple / list / dict of results, and the structure to rebuild it."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(x, what) for x in tree]
        return [n for p in parts for n in p[0]], (type(tree), [p[1] for p in parts])
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [_flatten(tree[k], what) for k in keys]
        return [n for p in parts for n in p[0]], (dict, keys, [p[1] for p in parts])
    try:
        return [_as_node(tree)], None
    except TypeError:
        raise TypeError(f"{what} must be tensors or numbers (in tuples, lists or dicts), not "
                        f"{type(tree).__name__}") from None


def _unflatten(tree: Any, values: Any) -> Any:
    if tree is None:
        return next(values)
    if tree[0] is dict:
        return {k: _unflatten(t, values) for k, t in zip(tree[1], tree[2])}
    return tree[0](_unflatten(t, values) for t in tree[1])


def compile(fn: Callable | None = None) -> Any:  # noqa: A001
    """Trace ``fn`` once per argument signature and run generated kernels.

    >>> import symgrad as sg, numpy as np
    >>> @sg.compile
    ... def loss(x, y):
    ...     return (sg.sin(x) * sg.exp(-y**2)).sum()
    >>> round(loss(np.zeros(3), np.ones(3)), 6)
    0.0
    """
    if fn is None:
        return compile
    return CompiledFunction(fn, "fn")
