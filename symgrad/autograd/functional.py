"""``torch.autograd.functional`` over symgrad: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``vhp``, ``hvp``.

Same signatures and result nesting as torch (a tensor for a tensor argument, tuples for tuples).
Without ``create_graph`` the values come from symgrad's compiled sweeps; with it, from eager
``autograd.grad(..., create_graph=True)`` so the results can be differentiated again.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..compiler.transforms import DerivativeFunction
from ..compiler.transforms import jvp as _jvp
from ..compiler.transforms import vjp as _vjp
from ..eager import autograd
from ..eager.basic import stack
from ..eager.tensor import Tensor


def _as_tuple(x: Any) -> tuple[bool, tuple]:
    if isinstance(x, (tuple, list)):
        return True, tuple(x)
    return False, (x,)


def _check_tensors(xs: tuple, what: str, fn_name: str) -> None:
    for i, x in enumerate(xs):
        if not isinstance(x, Tensor):
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the value at index {i} has type {type(x)}.")


def _outputs(func: Callable, inputs: tuple) -> tuple[bool, tuple]:
    is_tuple, outs = _as_tuple(func(*inputs))
    _check_tensors(outs, "outputs of the user-provided function", "the user-provided function")
    return is_tuple, outs


def _strict_check(func: Callable, inputs: tuple, hessian: bool = False) -> None:
    d = DerivativeFunction(lambda *a: func(*a), "hessian" if hessian else "jacobian", tuple(range(len(inputs))))
    pattern = d.sparsity(*inputs)
    cols = np.cumsum([0] + [x.numel() for x in inputs])
    for j in range(len(inputs)):
        if pattern[:, cols[j]:cols[j + 1]].nnz == 0:
            raise RuntimeError(f"Output 0 of the user-provided function is independent of input {j}. This is not "
                               "allowed in strict mode.")


def _eager_jacobian(func: Callable, inputs: tuple, create_graph: bool) -> tuple[bool, list[list[Tensor]]]:
    ins = tuple(x if x.requires_grad else x.detach().requires_grad_(True) for x in inputs)
    out_tuple, outs = _outputs(func, ins)
    blocks = []
    for out in outs:
        flat = out.reshape(-1)
        rows: list[list[Any]] = [[] for _ in ins]
        for i in range(flat.shape[0]):
            gs = autograd.grad(flat[i], ins, retain_graph=True, create_graph=create_graph, allow_unused=True)
            for j, (g, x) in enumerate(zip(gs, ins)):
                rows[j].append(g if g is not None else x.new_zeros(x.shape) if hasattr(x, "new_zeros")
                               else Tensor(np.zeros(x.shape, dtype=x.dtype.np)))
        block = []
        for j, x in enumerate(ins):
            if rows[j]:
                block.append(stack(rows[j]).reshape(tuple(out.shape) + tuple(x.shape)))
            else:
                block.append(Tensor(np.zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype.np)))
        blocks.append(block)
    return out_tuple, blocks


def _nest(blocks: list[list[Any]], out_tuple: bool, in_tuple: bool) -> Any:
    rows = [tuple(b) if in_tuple else b[0] for b in blocks]
    return tuple(rows) if out_tuple else rows[0]


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """``torch.autograd.functional.jacobian``."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise RuntimeError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                           'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                           'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError(
            'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not '
            'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.')
    in_tuple, ins = _as_tuple(inputs)
    _check_tensors(ins, "inputs", "jacobian")
    if strict:
        _strict_check(func, ins)
    if create_graph:
        out_tuple, blocks = _eager_jacobian(func, ins, True)
        return _nest(blocks, out_tuple, in_tuple)
    d = DerivativeFunction(lambda *a: func(*a), "jacobian", tuple(range(len(ins))),
                           reverse=strategy == "reverse-mode")
    res = d(*ins)
    sig, _ = d._signature(ins)
    blocks = [list(r) for r in (res if sig.multi else (res,))]
    out = _nest(blocks, sig.multi, in_tuple)
    if strategy == "forward-mode" and in_tuple:  # torch's forward-mode result nests lists here
        out = [list(r) for r in out] if sig.multi else list(out)
    return out


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """``torch.autograd.functional.hessian`` (``func`` returns a single-element tensor)."""
    in_tuple, ins = _as_tuple(inputs)
    _check_tensors(ins, "inputs", "hessian")
    if strict:
        _strict_check(func, ins, hessian=True)
    if create_graph:
        xs = tuple(x if x.requires_grad else x.detach().requires_grad_(True) for x in ins)
        out = func(*xs)
        if out.numel() != 1:
            raise RuntimeError("The function given in hessian should return a single Tensor with a single element.")
        grads = autograd.grad(out.reshape(()), xs, create_graph=True, allow_unused=True)
        grads = tuple(g if g is not None else Tensor(np.zeros(x.shape, dtype=x.dtype.np)) for g, x in zip(grads, xs))
        _, blocks = _eager_jacobian(lambda *a: grads, xs, True)
        return _nest(blocks, in_tuple, in_tuple)

    def scalar(*a: Any) -> Any:
        out = func(*a)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given in hessian should return a single Tensor with a single element.")
        return out.reshape(())
    res = DerivativeFunction(scalar, "hessian", tuple(range(len(ins))))(*ins)
    blocks = [list(r) for r in res]
    return _nest(blocks, in_tuple, in_tuple)


def _default_v(v: Any, ins: tuple) -> Any:
    """``v`` may be left out for a single one-element input (torch's rule): it is then 1."""
    if v is not None:
        return v
    if len(ins) != 1 or ins[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                           "single Tensor with a single element.")
    return Tensor(np.ones(tuple(ins[0].shape), dtype=ins[0].dtype.np))


def _v_tuple(v: Any, like: tuple, what: str) -> tuple:
    _, vs = _as_tuple(v)
    if len(vs) != len(like):
        raise RuntimeError(f"The given v should contain a single Tensor per {what}.")
    for i, (a, b) in enumerate(zip(vs, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {b.shape} but got {a.shape}.")
    return vs


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.vjp``: ``(func(inputs), v^T J)``."""
    in_tuple, ins = _as_tuple(inputs)
    _check_tensors(ins, "inputs", "vjp")
    if strict:
        _strict_check(func, ins)
    out, back = _vjp(lambda *a: func(*a), *ins)
    out_tuple, outs = _as_tuple(out)
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        v = Tensor(np.ones(tuple(outs[0].shape), dtype=outs[0].dtype.np))
    vs = _v_tuple(v, outs, "output")
    if create_graph:
        xs = tuple(x if x.requires_grad else x.detach().requires_grad_(True) for x in ins)
        _, outs_e = _outputs(func, xs)
        gs = autograd.grad(outs_e, xs, vs, create_graph=True, allow_unused=True)
        res = tuple(g if g is not None else Tensor(np.zeros(x.shape, dtype=x.dtype.np)) for g, x in zip(gs, xs))
    else:
        res = back(*vs)
    return (out if out_tuple else outs[0]), (res if in_tuple else res[0])


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.jvp``: ``(func(inputs), J v)`` (forward mode on the DAG)."""
    in_tuple, ins = _as_tuple(inputs)
    _check_tensors(ins, "inputs", "jvp")
    vs = _v_tuple(_default_v(v, ins), ins, "input")
    if strict:
        _strict_check(func, ins)
    if create_graph:
        raise NotImplementedError("jvp(create_graph=True) is not supported; use sg.autograd.grad twice "
                                  "(the double-backward trick) for a differentiable J v")
    out, tan = _jvp(lambda *a: func(*a), ins, vs)
    return out, tan


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.vhp``: ``(func(inputs), v^T H)``."""
    in_tuple, ins = _as_tuple(inputs)
    _check_tensors(ins, "inputs", "vhp")
    vs = _v_tuple(_default_v(v, ins), ins, "input")
    if strict:
        _strict_check(func, ins, hessian=True)
    xs = tuple(x.detach().requires_grad_(True) for x in ins)
    out = func(*xs)
    if not isinstance(out, Tensor) or out.numel() != 1:
        raise RuntimeError("The function given in hvp should return a single Tensor with a single element.")
    grads = autograd.grad(out.reshape(()), xs, create_graph=True, allow_unused=True)
    dot = None
    for g, w in zip(grads, vs):
        if g is not None:
            term = (g * w).sum()
            dot = term if dot is None else dot + term
    if dot is None or not dot.requires_grad:
        res = tuple(Tensor(np.zeros(x.shape, dtype=x.dtype.np)) for x in xs)
    else:
        hs = autograd.grad(dot, xs, create_graph=create_graph, allow_unused=True)
        res = tuple(h if h is not None else Tensor(np.zeros(x.shape, dtype=x.dtype.np)) for h, x in zip(hs, xs))
    value = out.detach() if not create_graph else out
    return value, (res if in_tuple else res[0])


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.hvp``: ``(func(inputs), H v)`` (equal to ``vhp``: H is symmetric)."""
    return vhp(func, inputs, v, create_graph, strict)
