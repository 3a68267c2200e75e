"""``torch.func``'s names over symgrad's transforms, so ``torch.func`` code ports by renaming.

Each returns a function of tensors (or numpy arrays / floats) computed by symgrad's compiled
kernels: ``grad``, ``grad_and_value``, ``jacrev``, ``jacfwd``, ``hessian``, ``vjp``, ``jvp``;
``vmap`` maps any function over a batch dimension (see its docstring).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NoReturn, Sequence

import numpy as np

from .batching import STATS, Unbatchable, batched_call
from .compiler.function import CompiledFunction
from .compiler.transforms import DerivativeFunction, jvp, vjp
from .core.pytree import TreeSpec, _children, tree_flatten, tree_unflatten  # noqa: F401  (torch.func's names)
from .eager.basic import cat, stack
from .eager.random import get_rng_state, set_rng_state
from .eager.record import _apply
from .eager.tensor import Tensor
from .nn.utils import functional_call  # noqa: F401  (torch.func.functional_call)
from .ops import REGISTRY

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]


def _compiled(func: Callable, mode: str, argnums: int | Sequence[int], has_aux: bool = False) -> Any:
    return CompiledFunction(func, mode, argnums, has_aux)


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad``: the gradient of a scalar function w.r.t. ``argnums`` (``(gradient, aux)`` with
    ``has_aux``: ``func`` returns ``(output, aux)``)."""
    return _compiled(func, "grad", argnums, has_aux)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``torch.func.grad_and_value``: ``(gradient, value)`` (note torch's order); with ``has_aux``
    ``(gradient, (value, aux))``."""
    vg = _compiled(func, "value_and_grad", argnums, has_aux)

    def grad_and_value_fn(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        value, g = vg(*args, **kwargs)
        return g, value
    return grad_and_value_fn


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0) -> DerivativeFunction:
    """``torch.func.jacrev``: the Jacobian from reverse sweeps (one per output element)."""
    return DerivativeFunction(func, "jacobian", argnums, reverse=True)


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0) -> DerivativeFunction:
    """``torch.func.jacfwd``: the Jacobian from forward sweeps (one per input element)."""
    return DerivativeFunction(func, "jacobian", argnums, reverse=False)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> DerivativeFunction:
    """``torch.func.hessian``."""
    return DerivativeFunction(func, "hessian", argnums)


def _broadcast_to_and_flatten(prefix: Any, spec: TreeSpec) -> list | None:
    """``prefix`` (a tree whose leaves stand for whole subtrees of ``spec``) expanded to one entry per leaf
    of ``spec``; None where the structures do not match."""
    out: list = []

    def walk(p: Any, s: TreeSpec) -> bool:
        node = _children(p)
        if node is None:
            out.extend([p] * s.num_leaves)
            return True
        kids, context = node
        if s.is_leaf or s.type is not type(p) or len(kids) != len(s.children):
            return False
        if isinstance(p, dict):
            if set(context) != set(s.context):
                return False
            return all(walk(p[k], c) for k, c in zip(s.context, s.children))
        return all(walk(k, c) for k, c in zip(kids, s.children))
    return out if walk(prefix, spec) else None


# ----------------------------------------------------------------------------- vmap

def _get_name(func: Callable) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_out_dims(out_dims: Any, func: Callable) -> None:
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                             "a python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


def _batch_size(flat_in_dims: list, flat_args: list) -> int:
    sizes = [a.shape[d] for d, a in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _process_inputs(in_dims: Any, args: tuple, func: Callable) -> tuple[int, list, list, TreeSpec]:
    """torch's checks of ``in_dims`` against the arguments: (batch size, flat in_dims, flat args, structure)."""
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         "(potentially nested) tuple matching the structure of inputs, got: "
                         f"{type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        if d is not None and (d < -arg.dim() or d >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_in_dims[i] = d % arg.dim()
    return _batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args, spec


def _flat_out_dims(out: Any, out_dims: Any, spec: TreeSpec, func: Callable) -> list:
    def incompatible() -> NoReturn:
        raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                         f"with the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {spec}.")
    if isinstance(out, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = _broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        incompatible()
    return flat


def _same_value(items: list) -> bool:
    first = items[0]
    if all(x is first for x in items):
        return True
    if not isinstance(first, Tensor):
        return all(x == first for x in items)
    return all(isinstance(x, Tensor) and x.shape == first.shape and x.dtype == first.dtype
               and np.array_equal(x._data, first._data) for x in items)


def _combine(name: str, examples: list, out_dim: int | None) -> Any:
    """One output leaf from its per-example values: stacked along ``out_dim``, or (None) the unbatched value."""
    if out_dim is None:
        if isinstance(examples[0], Tensor) and not _same_value(examples):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return examples[0]
    if not isinstance(examples[0], Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(examples[0])}. "
                         "Did you mean to set out_dims= to None for output?")
    return stack(examples, dim=out_dim)


def _run_examples(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, spec: TreeSpec,
                  randomness: str, kwargs: dict) -> list:
    """``func`` on each example (the batched arguments indexed along their in_dim; a batch of size 0 runs
    one example of zeros, so the outputs have a structure)."""
    state = get_rng_state() if randomness != "different" else None
    outs = []
    for b in range(max(batch_size, 1)):
        if randomness == "same" and b:
            set_rng_state(state)
        if batch_size:
            args = [a.select(d, b) if d is not None else a for a, d in zip(flat_args, flat_in_dims)]
        else:
            args = [a.new_zeros(a.shape[:d] + a.shape[d + 1:]) if d is not None else a
                    for a, d in zip(flat_args, flat_in_dims)]
        outs.append(func(*tree_unflatten(args, spec), **kwargs))
    if randomness == "error" and not np.array_equal(get_rng_state()._data, state._data):
        set_rng_state(state)
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")
    return outs


def _unbatch(name: str, value: Any, batched: bool, out_dim: int | None, batch_size: int) -> Any:
    """One output of the batched path with its batch dimension moved to ``out_dim`` (torch's checks)."""
    if out_dim is None:
        if batched:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return value
    if not isinstance(value, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(value)}. "
                         "Did you mean to set out_dims= to None for output?")
    rank = value.ndim - (1 if batched else 0)
    if not -(rank + 1) <= out_dim <= rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-(rank + 1)}, {rank}], but got "
                         f"{out_dim})")
    if not batched:
        value = _apply(REGISTRY["expand"], value.unsqueeze(0), shape=(batch_size,) + tuple(value.shape))
    d = out_dim % (rank + 1)
    if d:
        dims = list(range(1, rank + 1))
        dims.insert(d, 0)
        value = _apply(REGISTRY["permute"], value, dims=tuple(dims), fn="PermuteBackward0")
    return value


def _flat_vmap(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, spec: TreeSpec,
               out_dims: Any, randomness: str, kwargs: dict) -> Any:
    """The batched path (trace once, replay on the batch) where it applies; one call per example otherwise."""
    try:
        out, out_spec, values = batched_call(func, batch_size, flat_in_dims, flat_args, spec, tree_unflatten,
                                             tree_flatten, kwargs)
    except Unbatchable:
        STATS["looped"] += 1
        return _looped_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)
    dims = _flat_out_dims(out, out_dims, out_spec, func)
    name = _get_name(func)
    res = [_unbatch(name, v, b, d, batch_size) for (v, b), d in zip(values, dims)]
    if not _agrees(func, res, dims, out_spec, flat_in_dims, flat_args, spec, kwargs):
        STATS["mismatch"] += 1
        STATS["looped"] += 1
        return _looped_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)
    STATS["batched"] += 1
    return tree_unflatten(res, out_spec)


def _agrees(func: Callable, res: list, dims: list, out_spec: TreeSpec, flat_in_dims: list, flat_args: list,
            spec: TreeSpec, kwargs: dict) -> bool:
    """Whether the batched results' first example is what ``func`` gives on the first example eagerly: the
    check that no code read a traced value's placeholder data (a seed handed to the eager engine, a traced
    value copied into a new tensor, ...), in which case vmap runs one call per example instead."""
    args = [a.select(d, 0) if d is not None else a for a, d in zip(flat_args, flat_in_dims)]
    ref, ref_spec = tree_flatten(func(*tree_unflatten(args, spec), **kwargs))
    if ref_spec != out_spec:
        return False
    for r, v, d in zip(ref, res, dims):
        if d is not None:
            v = v.select(d, 0)
        if isinstance(r, Tensor) != isinstance(v, Tensor):
            return False
        if not isinstance(r, Tensor):
            if not (r is v or r == v):
                return False
            continue
        a, b = np.asarray(v._data), np.asarray(r._data)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            with np.errstate(all="ignore"):
                if not np.allclose(a, b, rtol=1e-4, atol=1e-6, equal_nan=True):
                    return False
        elif not np.array_equal(a, b):
            return False
    return True


def _looped_vmap(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, spec: TreeSpec,
                 out_dims: Any, randomness: str, kwargs: dict) -> Any:
    outs = _run_examples(func, batch_size, flat_in_dims, flat_args, spec, randomness, kwargs)
    flat0, out_spec = tree_flatten(outs[0])
    dims = _flat_out_dims(outs[0], out_dims, out_spec, func)
    per_leaf = [[] for _ in flat0]
    for o in outs:
        leaves, s = tree_flatten(o)
        if s != out_spec:
            raise ValueError(f"vmap({_get_name(func)}, ...): `{_get_name(func)}` returned outputs of different "
                             "structures for different examples")
        for k, leaf in enumerate(leaves):
            per_leaf[k].append(leaf)
    name = _get_name(func)
    res = [_combine(name, ex, d) for ex, d in zip(per_leaf, dims)]
    if batch_size == 0:
        res = [r.narrow(d, 0, 0) if d is not None else r for r, d in zip(res, dims)]
    return tree_unflatten(res, out_spec)


def _chunked_vmap(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, spec: TreeSpec,
                  out_dims: Any, randomness: str, chunk_size: int, kwargs: dict) -> Any:
    """torch's ``chunk_size``: the batch in chunks, each vmapped, the results concatenated along out_dims."""
    state = get_rng_state() if randomness == "same" else None
    results = []
    for start in range(0, batch_size, chunk_size):
        n = min(chunk_size, batch_size - start)
        chunk = [a.narrow(d, start, n) if d is not None else a for a, d in zip(flat_args, flat_in_dims)]
        if state is not None:
            set_rng_state(state)
        results.append(_flat_vmap(func, n, flat_in_dims, chunk, spec, out_dims, randomness, kwargs))
    if not results:
        return _flat_vmap(func, 0, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)
    flat0, out_spec = tree_flatten(results[0])
    dims = _broadcast_to_and_flatten(out_dims, out_spec) if not isinstance(results[0], Tensor) else [
        out_dims[0] if isinstance(out_dims, tuple) else out_dims]
    per_leaf = list(zip(*[tree_flatten(r)[0] for r in results]))
    return tree_unflatten([cat(list(ch), dim=d) if d is not None else ch[0] for ch, d in zip(per_leaf, dims)],
                          out_spec)


def vmap(func: Callable, in_dims: int | tuple = 0, out_dims: int | tuple | None = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``torch.func.vmap``: ``func`` mapped over a dimension of its inputs.

    ``in_dims`` (an int, or a tuple nested like the arguments, None for an argument not mapped) picks the
    mapped dimension of each input; ``out_dims`` where it goes in each output. The mapped function runs
    once per example (the inputs indexed along their in_dim) and the results are stacked, so everything
    composes: ``vmap(sg.func.grad(loss), in_dims=(None, 0, 0))`` gives per-example gradients, tensors that
    require grad get gradients through it, Python control flow on values works (torch refuses it).
    ``randomness``: "error" raises torch's error when ``func`` draws from the global generator, "same" gives
    every example the same draws, "different" independent ones. ``chunk_size`` runs the batch in chunks
    (the results are concatenated, as in torch).

    >>> import symgrad as sg
    >>> sg.func.vmap(sg.dot)(sg.ones(3, 2), sg.ones(3, 2))
    tensor([2., 2., 2.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, spec = _process_inputs(in_dims, args, func)
        if chunk_size is not None:
            return _chunked_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness, chunk_size,
                                 kwargs)
        return _flat_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)
    return wrapped

