"""Jacobians, Hessians (dense or in their exact sparsity pattern), ``jvp`` and ``vjp``.

All derivatives are DAGs of registry ops: a Jacobian row is a reverse sweep seeded with a basis
cotangent, a column a forward sweep (``forward.jvp_graph``) seeded with a basis tangent; the
Hessian is the Jacobian of the gradient DAG (Hessian-vector products, reverse over reverse).
Sweeps are emitted as kernels whose seeds are run-time parameters, several seeds per kernel, so
a Jacobian costs ``min(m, n) / batch`` kernel calls. Sparse results seed each sweep with a whole
colour of structurally orthogonal rows (``sparsity.color_rows``): the Rosenbrock Hessian needs 3
sweeps at any n.
"""
from __future__ import annotations

import math
import time
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from codegen.names import comment, identifier

from ..core import dtypes
from ..core.graph import Node, toposort
from ..derive.forward import _zeros, jvp_graph
from ..derive.reverse import backward_graph
from ..derive.sparsity import color_rows, dependency
from ..eager.basic import stack
from ..eager.formula import CompiledFormulas
from ..eager.tensor import Tensor
from ..kernels import stats as _stats
from ..kernels.program import Program
from ..ops import A, apply
from ..ops import source as _src
from .function import ARGUMENT_HANDLERS, CompiledFunction, _kind, bind_positional, kernel_source
from .tracing import Signature, Tracer, _as_node, gradient_nodes, trace_signature

#: most sweeps fused into one kernel (each is a copy of the derivative graph)
MAX_BATCH = 16
#: ... and at most this many derivative-graph nodes per kernel
MAX_BATCH_NODES = 4000
#: the most output elements of a Jacobian / Hessian taken inside a traced function (one sweep each)
MAX_TRACED_ROWS = 1024


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _program(params: Sequence[Node], outs: Sequence[Node], name: str, reason: str = "",
             derive_s: float | None = None) -> Program:
    """The kernel pipeline over ``params`` (then the constants the outputs read) computing ``outs``."""
    if derive_s is not None:
        _stats.add_time("derive", derive_s)
    sig = "(" + ", ".join(f"{p.dtype.name}[{','.join(map(str, p.shape))}]" for p in params) + ")"
    return Program(identifier(name, "k_"), [(p, "v", i) for i, p in enumerate(params)], outs, doc=comment(name),
                   prefix="compiled", what=name, signature=sig, reason=reason,
                   times=None if derive_s is None else {"derive": derive_s})


def _traced(f: Callable, kinds: Sequence[tuple], names: Sequence[str], diff: set[int]) -> Signature:
    """``trace_signature`` counted and timed for ``sg.jit_stats()``."""
    t0 = time.perf_counter()
    sig = trace_signature(f, kinds, names, diff)
    _stats.count("traces")
    _stats.add_time("trace", time.perf_counter() - t0)
    return sig


def _run(prog: Program, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """One call of a sweep program: its results with their dtypes and (broadcast) shapes."""
    with np.errstate(all="ignore"):
        raw = prog.run({"v": list(arrays) + prog.consts})
    out = []
    for r, (dt, shape) in zip(raw, prog.specs):
        r = np.asarray(r, dtype=dt.np)
        out.append(r if r.shape == shape else np.broadcast_to(r, shape))
    return out


def _zeros_of(shape: tuple[int, ...], like: Node) -> Node:
    z = Node(_src.scalar, (), (("value", 0),), (), like.dtype, value=0)
    return apply("expand", z, shape=shape)


def _seed_leaf(like: Node, grad: bool = False) -> Node:
    return Node(_src.leaf, (), (), like.shape, like.dtype, requires_grad=grad)


class JacobianSweeps:
    """The Jacobian of ``outs`` w.r.t. ``wrt`` on one traced signature: dense, pattern, sparse.

    ``reverse`` sweeps give rows (seeded with cotangents of ``outs``), forward sweeps columns.
    """

    def __init__(self, params: Sequence[Node], outs: Sequence[Node], wrt: Sequence[Node], name: str,
                 reverse: bool | None = None) -> None:
        self.params, self.outs, self.wrt, self.name = list(params), list(outs), list(wrt), name
        self.m = sum(_size(o.shape) for o in outs)
        self.n = sum(_size(w.shape) for w in wrt)
        self.reverse = self.m <= self.n if reverse is None else reverse
        self._programs: dict[int, Program] = {}
        self._pattern: Any = None
        self._colors: np.ndarray | None = None
        self._cached: dict[str, Any] = {}
        self._graph_size = max(1, len(toposort(self.outs)))

    def _sweep(self) -> tuple[list[Node], list[Node]]:
        """One sweep's seed leaves and result nodes."""
        if self.reverse:
            seeds = [_seed_leaf(o) for o in self.outs]
            res, _ = backward_graph(self.outs, seeds, self.wrt)
            return seeds, [r if r is not None else _zeros(w) for r, w in zip(res, self.wrt)]
        seeds = [_seed_leaf(w) for w in self.wrt]
        res = jvp_graph(self.outs, self.wrt, seeds)
        return seeds, [r if r is not None else _zeros(o) for r, o in zip(res, self.outs)]

    def _program(self, batch: int) -> Program:
        if batch not in self._programs:
            seeds: list[Node] = []
            results: list[Node] = []
            t0 = time.perf_counter()
            for _ in range(batch):
                s, r = self._sweep()
                seeds += s
                results += r
            self._programs[batch] = _program(self.params + seeds, results, f"{self.name}_{batch}",
                                             f"{'reverse' if self.reverse else 'forward'} sweeps, batch {batch}",
                                             time.perf_counter() - t0)
        return self._programs[batch]

    def batch_for(self, k: int) -> int:
        return max(1, min(k, MAX_BATCH, MAX_BATCH_NODES // self._graph_size))

    def chunks(self, seeds: np.ndarray) -> list[tuple[int, list[np.ndarray]]]:
        """The seed rows (k × m cotangents, or k × n tangents) as kernel arguments, ``batch`` rows
        per call (the last call padded with zero seeds): [(rows in this call, arrays)]."""
        k = seeds.shape[0]
        seed_nodes = self.outs if self.reverse else self.wrt
        batch = self.batch_for(k)
        cuts = np.cumsum([0] + [_size(s.shape) for s in seed_nodes])
        out = []
        for start in range(0, k, batch):
            rows = seeds[start:start + batch]
            used = rows.shape[0]
            if used < batch:
                rows = np.concatenate([rows, np.zeros((batch - used, seeds.shape[1]))])
            out.append((used, [np.array(row[cuts[i]:cuts[i + 1]].reshape(s.shape), dtype=s.dtype.np, order="C")
                               for row in rows for i, s in enumerate(seed_nodes)]))
        return out

    def products(self, arrays: Sequence[np.ndarray], chunks: list[tuple[int, list[np.ndarray]]]) -> np.ndarray:
        """Each seed row through one sweep: a (k × n) array of rows of J (reverse), or (k × m) of
        columns (forward)."""
        res_nodes = self.wrt if self.reverse else self.outs
        width = sum(_size(r.shape) for r in res_nodes)
        k = sum(used for used, _ in chunks)
        out = np.empty((k, width), dtype=np.result_type(*[r.dtype.np for r in res_nodes]))
        if k == 0:
            return out
        batch = len(chunks[0][1]) // max(1, len(self.outs if self.reverse else self.wrt))
        prog = self._program(batch)
        arrays = list(arrays)
        per = len(res_nodes)
        row = 0
        for used, seed_arrays in chunks:
            got = _run(prog, arrays + seed_arrays)
            for b in range(used):
                if per == 1:
                    out[row] = got[b].reshape(-1)
                else:
                    out[row] = np.concatenate([np.ravel(g) for g in got[b * per:(b + 1) * per]])
                row += 1
        return out

    def dense(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        """The full m × n Jacobian."""
        if "dense" not in self._cached:
            self._cached["dense"] = self.chunks(np.eye(self.m if self.reverse else self.n))
        y = self.products(arrays, self._cached["dense"])
        return y if self.reverse else np.ascontiguousarray(y.T)

    def pattern(self) -> Any:
        """The structural pattern (m × n, 0/1 ``scipy.sparse.csr_matrix``)."""
        if self._pattern is None:
            self._pattern = dependency(self.outs, self.wrt)
        return self._pattern

    def colors(self) -> np.ndarray:
        if self._colors is None:
            p = self.pattern()
            self._colors = color_rows(p if self.reverse else p.T.tocsr())
        return self._colors

    def sparse(self, arrays: Sequence[np.ndarray]) -> Any:
        """The Jacobian's values in its structural pattern, from one sweep per colour."""
        import scipy.sparse as sps  # deferred: scipy
        p = self.pattern()
        if "sparse" not in self._cached:
            colors = self.colors()
            n_colors = int(colors.max()) + 1 if len(colors) else 0
            seeds = np.zeros((n_colors, len(colors)))
            seeds[colors, np.arange(len(colors))] = 1.0
            rows = np.repeat(np.arange(p.shape[0]), np.diff(p.indptr))
            # where each stored value sits in the (colours × width) array of compressed sweeps
            take = (colors[rows] * self.n + p.indices if self.reverse else colors[p.indices] * self.m + rows)
            self._cached["sparse"] = (self.chunks(seeds), take)
        chunks, take = self._cached["sparse"]
        y = self.products(arrays, chunks)
        return sps.csr_matrix((y.reshape(-1).take(take), p.indices.copy(), p.indptr.copy()), shape=p.shape)


def _convert(arr: np.ndarray, kinds: Sequence[tuple]) -> Any:
    if any(k[0] == "sg" for k in kinds):
        return Tensor(np.array(arr))
    if arr.ndim == 0 and all(k[0] == "py" for k in kinds):
        return float(arr)
    return np.array(arr)


class DerivativeFunction(CompiledFunction):
    """``sg.jacobian`` / ``sg.hessian`` of a function: traced once per signature, compiled sweeps."""

    def __init__(self, fn: Callable, mode: str, argnums: int | Sequence[int] = 0, sparse: bool = False,
                 reverse: bool | None = None) -> None:
        super().__init__(fn, mode, argnums)
        self.sparse = sparse
        self.reverse = reverse
        self._sigs: dict[tuple, Signature] = {}

    def __repr__(self) -> str:
        return f"<symgrad.{self.mode}{' (sparse)' if self.sparse else ''} of {getattr(self.fn, '__name__', self.fn)}>"

    def _signature(self, args: Sequence[Any]) -> tuple[Signature, list[tuple]]:
        kinds = [_kind(a) for a in args]
        for i in self.argnums:
            if i >= len(args):
                raise IndexError(f"argnums {i} is out of range for a call with {len(args)} arguments")
        key = tuple(kinds)
        sig = self._sigs.get(key)
        if sig is None:
            names = [self._name(i) for i in range(len(args))]
            sig = self._sigs[key] = _traced(self.fn, kinds, names, set(self.argnums))
        return sig, kinds

    def _sweeps(self, sig: Signature) -> JacobianSweeps:
        key = f"{self.mode}:{self.reverse}"
        s = sig.sweeps.get(key)
        if s is None:
            wrt = [sig.leaves[i] for i in self.argnums]
            name = f"{self.mode}_{getattr(self.fn, '__name__', 'f')}"
            if self.mode == "hessian":
                grads = gradient_nodes(sig, wrt)
                s = JacobianSweeps(sig.leaves, grads, wrt, name, reverse=True)
            else:
                s = JacobianSweeps(sig.leaves, sig.outs, wrt, name, reverse=self.reverse)
            sig.sweeps[key] = s
        return s

    @staticmethod
    def _arrays(args: Sequence[Any], kinds: Sequence[tuple]) -> list[np.ndarray]:
        return [np.asarray(a._data if isinstance(a, Tensor) else a, dtype=dtypes.from_any(k[1]).np)
                for a, k in zip(args, kinds)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = bind_positional(self.fn, args, kwargs)
        if any(isinstance(a, Tracer) for a in args):
            return self._trace_symbolic(args)
        for claims, run in ARGUMENT_HANDLERS:   # ---- dask arrays (compiler/dask.py)
            if claims(args):
                return run(self, args)          # ----
        sig, kinds = self._signature(args)
        sweeps = self._sweeps(sig)
        arrays = self._arrays(args, kinds)
        if self.sparse:
            return sweeps.sparse(arrays)
        full = sweeps.dense(arrays)
        rows = np.cumsum([0] + [_size(o.shape) for o in sweeps.outs])
        cols = np.cumsum([0] + [_size(w.shape) for w in sweeps.wrt])
        blocks = []
        for o, node in enumerate(sweeps.outs):
            row = tuple(_convert(full[rows[o]:rows[o + 1], cols[k]:cols[k + 1]].reshape(node.shape + w.shape), kinds)
                        for k, w in enumerate(sweeps.wrt))
            blocks.append(row[0] if self._single else row)
        if self.mode == "hessian":
            return blocks[0] if self._single else tuple(blocks)
        return tuple(blocks) if sig.multi else blocks[0]

    def _trace_symbolic(self, args: Sequence[Any]) -> Any:
        """Inside another trace (``sg.grad`` of a Jacobian, ``@sg.compile`` calling ``sg.hessian``): the
        Jacobian recorded as DAG nodes, one reverse sweep per output element with a constant basis seed."""
        if self.sparse:
            raise TypeError(f"sg.{self.mode}(sparse=True) returns a scipy.sparse matrix, which a traced "
                            "function can't use; call it outside the traced function")
        args = list(args)
        wrt: list[Node] = []
        for i in self.argnums:
            a = args[i]
            node = a._node if isinstance(a, Tracer) else _as_node(a)
            alias = apply("fused", node, expr=A[0], dtype=node.dtype)
            alias.requires_grad = True
            wrt.append(alias)
            args[i] = Tracer.wrap(alias)
        out = self.fn(*args)
        multi = isinstance(out, (tuple, list))
        outs = [_as_node(o) for o in (out if multi else (out,))]
        if self.mode == "hessian":
            if multi or outs[0].shape != ():
                raise TypeError("hessian is only defined for scalar-output functions. Output had shape: "
                                f"{'several outputs' if multi else outs[0].shape}")
            one = Node(_src.scalar, (), (("value", 1),), (), outs[0].dtype, value=1)
            grads, _ = backward_graph(outs, [one], wrt)
            outs = [g if g is not None else _zeros(w) for g, w in zip(grads, wrt)]
        total = sum(_size(o.shape) for o in outs)
        if total > MAX_TRACED_ROWS:
            raise ValueError(f"sg.{self.mode} inside a traced function builds one sweep per output element; "
                             f"{total} elements is more than {MAX_TRACED_ROWS}: call it outside the traced function")
        blocks = []
        for o in outs:
            rows: list[list[Any]] = [[] for _ in wrt]
            for i in range(_size(o.shape)):
                basis = np.zeros(_size(o.shape), dtype=o.dtype.np)
                basis[i] = 1
                seed = Node(_src.const, (), (), o.shape, o.dtype, value=basis.reshape(o.shape))
                gs, _ = backward_graph([o], [seed], wrt)
                for k, (g, w) in enumerate(zip(gs, wrt)):
                    rows[k].append(Tracer.wrap(g if g is not None else _zeros(w)))
            block = []
            for k, w in enumerate(wrt):
                shape = tuple(o.shape) + tuple(w.shape)
                block.append(stack(rows[k]).reshape(shape) if rows[k] else Tracer.wrap(_zeros_of(shape, w)))
            blocks.append(block[0] if self._single else tuple(block))
        if self.mode == "hessian":
            return blocks[0] if self._single else tuple(blocks)
        return tuple(blocks) if multi else blocks[0]

    def formulas(self, *args: Any) -> Any:
        """Formulas at this signature: the function, its gradient and the Hessian-vector product
        ``H·v`` (``hessian``), or the function and the Jacobian-vector product ``J·t`` (``jacobian``);
        printable, ``.latex()``."""
        sig, _ = self._signature(args)
        names = [self._name(i) for i in range(len(args))]
        wrt = [sig.leaves[i] for i in self.argnums]
        wnames = [names[i] for i in self.argnums]
        fname = getattr(self.fn, "__name__", "f")
        fname = "f" if fname == "<lambda>" else fname
        if self.mode == "hessian":
            out = sig.outs[0]
            one = Node(_src.scalar, (), (("value", 1),), (), out.dtype, value=1)
            grads, _ = backward_graph([out], [one], wrt)
            grads = [g if g is not None else _zeros(w) for g, w in zip(grads, wrt)]
            vs = [Node(_src.leaf, (), (), w.shape, w.dtype, name=f"v_{n}") for w, n in zip(wrt, wnames)]
            hv, _ = backward_graph(grads, vs, wrt)
            extra = [(f"(H·v)_{n}", rf"(H v)_{{{n}}}", h if h is not None else _zeros(w))
                     for n, h, w in zip(wnames, hv, wrt)]
            return CompiledFormulas(out, grads, wnames, fname, names, extra)
        ts = [Node(_src.leaf, (), (), w.shape, w.dtype, name=f"t_{n}") for w, n in zip(wrt, wnames)]
        jt = jvp_graph(sig.outs, wrt, ts)
        extra = [(f"J·t[{k}]" if sig.multi else "J·t", rf"J t_{{{k}}}" if sig.multi else "J t",
                  j if j is not None else _zeros(o)) for k, (j, o) in enumerate(zip(jt, sig.outs))]
        return CompiledFormulas(sig.outs[0], [], [], fname, names, extra)

    def sparsity(self, *args: Any) -> Any:
        """The structural pattern of the Jacobian / Hessian at this signature (``scipy.sparse``)."""
        sig, _ = self._signature(args)
        return self._sweeps(sig).pattern().astype(bool)

    def source(self, *args: Any, backend: str | None = None) -> str:
        """The source of one sweep kernel for these example arguments: the one that runs once hot by
        default (numba where it takes the IR), ``backend="numpy"`` / ``"numba"`` for either."""
        sig, _ = self._signature(args)
        sweeps = self._sweeps(sig)
        prog = sweeps._program(sweeps.batch_for(sweeps.m if sweeps.reverse else sweeps.n))
        return kernel_source(prog.kernel, prog.source, backend)



def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> CompiledFunction:
    """The gradient of a scalar function, as a compiled function (JAX's ``grad``). With ``has_aux``,
    ``f`` returns ``(output, aux)`` and the result is ``(gradient, aux)``.

    >>> import symgrad as sg
    >>> df = sg.grad(lambda a, b: a * b + sg.sin(a))
    >>> round(df(1.0, 2.0), 6)
    2.540302
    """
    return CompiledFunction(f, "grad", argnums, has_aux)


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> CompiledFunction:
    """``(f(*args), grad(f)(*args))`` from one fused kernel; with ``has_aux`` (``f`` returns ``(output, aux)``)
    ``((output, aux), gradient)``, as JAX."""
    return CompiledFunction(f, "value_and_grad", argnums, has_aux)


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, sparse: bool = False) -> DerivativeFunction:
    """The Jacobian of ``f`` w.r.t. ``argnums``, as a compiled function (JAX's ``jacrev``/``jacfwd``:
    reverse sweeps when outputs are fewer than inputs, forward sweeps otherwise).

    The result for one argument has shape ``out.shape + arg.shape``; a tuple ``argnums`` gives a tuple,
    a function returning a tuple gives a tuple (per output) of those. ``sparse=True`` returns a
    ``scipy.sparse.csr_matrix`` (all outputs' elements × all argnums' elements, flattened in order)
    holding the structural non-zeros, computed with one sweep per colour of the pattern.

    >>> import symgrad as sg, numpy as np
    >>> sg.jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return DerivativeFunction(f, "jacobian", argnums, sparse)


def hessian(f: Callable, argnums: int | Sequence[int] = 0, sparse: bool = False) -> DerivativeFunction:
    """The Hessian of a scalar ``f`` w.r.t. ``argnums`` (the Jacobian of its gradient DAG).

    Shape ``arg.shape + arg.shape``; tuple ``argnums`` give a tuple of tuples (``H[i][j]`` is
    d²f/d(arg i)d(arg j)). ``sparse=True`` returns a ``scipy.sparse.csr_matrix`` of the exact
    structural non-zeros (a banded Hessian costs a few Hessian-vector sweeps at any size).

    >>> import symgrad as sg, numpy as np
    >>> sg.hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return DerivativeFunction(f, "hessian", argnums, sparse)


# ----------------------------------------------------------------------------- jvp / vjp

def _primal_kinds(primals: Sequence[Any]) -> list[tuple]:
    return [_kind(p) for p in primals]


#: f -> {(what, kinds): (program, signature, seed leaves)}; entries go with their function
_SWEEP_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jvp_program(f: Callable, kinds: list[tuple], what: str) -> tuple[Program, Signature, list[Node]]:
    key = (what, tuple(kinds))
    try:
        per_fn = _SWEEP_CACHE.setdefault(f, {})
    except TypeError:  # not weak-referenceable: no cache
        per_fn = {}
    if key in per_fn:
        return per_fn[key]
    names = [f"x{i}" for i in range(len(kinds))]
    sig = _traced(f, kinds, names, set(range(len(kinds))))
    t0 = time.perf_counter()
    if what == "jvp":
        seeds = [_seed_leaf(w) for w in sig.leaves]
        res = jvp_graph(sig.outs, sig.leaves, seeds)
        res = [r if r is not None else _zeros(o) for r, o in zip(res, sig.outs)]
    else:
        seeds = [_seed_leaf(o) for o in sig.outs]
        res, _ = backward_graph(sig.outs, seeds, sig.leaves)
        res = [r if r is not None else _zeros(w) for r, w in zip(res, sig.leaves)]
    prog = _program(sig.leaves + seeds, sig.outs + res, f"{what}_{getattr(f, '__name__', 'f')}", "first call",
                    time.perf_counter() - t0)
    per_fn[key] = (prog, sig, seeds)
    return prog, sig, seeds


def _as_arrays(values: Sequence[Any], nodes: Sequence[Node], what: str) -> list[np.ndarray]:
    if len(values) != len(nodes):
        raise ValueError(f"{what}: expected {len(nodes)} values, got {len(values)}")
    out = []
    for v, n in zip(values, nodes):
        a = np.asarray(v._data if isinstance(v, Tensor) else v, dtype=n.dtype.np)
        if a.shape != n.shape:
            raise ValueError(f"{what}: expected shape {tuple(n.shape)}, got {tuple(a.shape)}")
        out.append(a)
    return out


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(f(*primals), J @ tangents)`` by forward mode on the DAG (as ``jax.jvp`` / ``torch.func.jvp``).

    >>> import symgrad as sg
    >>> sg.jvp(lambda x: x * x, (3.0,), (1.0,))
    (9.0, 6.0)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument of f)")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: expected {len(primals)} tangents (one per primal), got {len(tangents)}")
    kinds = _primal_kinds(primals)
    prog, sig, seeds = _jvp_program(f, kinds, "jvp")
    arrays = _as_arrays(primals, sig.leaves, "jvp primals") + _as_arrays(tangents, seeds, "jvp tangents")
    got = _run(prog, arrays)
    k = len(sig.outs)
    vals = [_convert(g, kinds) for g in got[:k]]
    tans = [_convert(g, kinds) for g in got[k:]]
    if sig.multi:
        return tuple(vals), tuple(tans)
    return vals[0], tans[0]


def vjp(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` returns one cotangent per primal (a tuple),
    by reverse accumulation on the DAG (as ``jax.vjp`` / ``torch.func.vjp``).

    >>> import symgrad as sg
    >>> out, back = sg.vjp(lambda x, y: x * y, 2.0, 5.0)
    >>> out, back(1.0)
    (10.0, (5.0, 2.0))
    """
    kinds = _primal_kinds(primals)
    prog, sig, seeds = _jvp_program(f, kinds, "vjp")
    arrays = _as_arrays(primals, sig.leaves, "vjp primals")
    zeros = [np.zeros(s.shape, dtype=s.dtype.np) for s in seeds]
    got = _run(prog, arrays + zeros)
    k = len(sig.outs)
    vals = [_convert(g, kinds) for g in got[:k]]

    def vjp_fn(*cotangents: Any) -> tuple:
        cts = cotangents[0] if (sig.multi and len(cotangents) == 1 and isinstance(cotangents[0], (tuple, list))) \
            else cotangents
        res = _run(prog, arrays + _as_arrays(cts, seeds, "vjp cotangents"))
        return tuple(_convert(g, kinds) for g in res[k:])

    return (tuple(vals) if sig.multi else vals[0]), vjp_fn
