"""``torch.autograd.functional`` over symgrad: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``vhp``, ``hvp``.

As in torch, ``func`` runs eagerly on tensors (so Python control flow on values is fine) and the eager
engine differentiates it: one ``autograd.grad`` per output element for a Jacobian, ``create_graph=True``
for second order, the double-backward trick for ``jvp`` / ``hvp``. Signatures, result nesting (a tensor
for a tensor argument, tuples for tuples), ``strict`` checks and error texts are torch's. ``vectorize``
gives the same values (symgrad computes the rows one by one); ``strategy="forward-mode"`` takes torch's
checks and nesting, its values come from the same reverse sweeps. The compiled, traced transforms stay in
``sg.jacobian`` / ``sg.hessian`` / ``sg.func``.
"""
from __future__ import annotations

from typing import Any, Callable

from ..eager import autograd
from ..eager.basic import stack
from ..eager.functional import zeros_like
from ..eager.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..eager.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# ----------------------------------------------------------------------------- helpers (torch's semantics)

def _as_tuple(inp: Any, arg_name: str | None = None, fn_name: str | None = None) -> tuple[bool, tuple]:
    """(whether ``inp`` was a tuple, ``inp`` as a tuple); with names, checks that it holds tensors."""
    if arg_name is None:
        if isinstance(inp, (tuple, list)):
            return True, tuple(inp)
        return False, (inp,)
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i} has type" if is_tuple else f"the given {arg_name} has type"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} {type(el)}.")
    return is_tuple, items


def _unpack(res: Any, to_unpack: bool | tuple[bool, bool]) -> Any:
    """Undo ``_as_tuple`` on a result (and one level of nesting for a pair of flags)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
        return res
    return res if to_unpack else res[0]


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the inputs: a differentiable view where the caller's graph must flow on
    (``create_graph``), detached leaves otherwise."""
    out = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            out.append(inp.view_as(inp))
        else:
            out.append(inp.detach().requires_grad_(need_graph))
    return tuple(out)


def _grad_postprocess(items: tuple, create_graph: bool) -> tuple:
    if items and isinstance(items[0], Tensor):
        return items if create_graph else tuple(t.detach() for t in items)
    return tuple(_grad_postprocess(t, create_graph) for t in items)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (a, b) in enumerate(zip(v, other)):
        if tuple(a.shape) != tuple(b.shape):
            prefix = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.size()} but got {a.size()}.")


def _check_requires_grad(items: tuple, input_type: str, strict: bool) -> None:
    """torch's ``strict`` errors for outputs / gradients that do not depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(items):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if t.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} is "
                               "independent of the input. This is not allowed in strict mode. You should ensure "
                               "that your function is thrice differentiable and that the hessian depends on the "
                               "inputs.")
        if input_type == "jacobian":
            raise RuntimeError("While computing the hessian, found that the jacobian of the user-provided function "
                               f"with respect to input {i} is independent of the input. This is not allowed in "
                               "strict mode. You should ensure that your function is twice differentiable and "
                               "that the jacobian depends on the inputs (this would be violated by a linear "
                               "function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                           "must be computed in a differentiable manner from the input when running in strict "
                           "mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, create_graph: bool = False,
                   retain_graph: bool | None = None) -> tuple:
    """``autograd.grad`` over the outputs that require grad (None for every input when none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    return autograd.grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                         allow_unused=True)


_ZERO_MSG = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MSG[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_or_default(v: Any, like: tuple, is_like_tuple: bool, create_graph: bool, fn_name: str, msg: str) -> tuple:
    if v is not None:
        _, vs = _as_tuple(v, "v", fn_name)
        vs = _grad_preprocess(vs, create_graph=create_graph, need_graph=False)
        _validate_v(vs, like, is_like_tuple)
        return vs
    if len(like) != 1 or like[0].numel() != 1:
        raise RuntimeError(msg)
    return None  # autograd.grad's implicit 1 for a one-element tensor


_V_OUT_MSG = ("The vector v can only be None if the user-provided function returns a single Tensor with a single "
              "element.")
_V_IN_MSG = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a "
             "single element.")


# ----------------------------------------------------------------------------- vjp / jvp

def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.vjp``: ``(func(inputs), v^T J)``."""
    with enable_grad():
        in_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _grad_preprocess(ins, create_graph=create_graph, need_graph=True)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outs, "outputs", strict)
        vs = _v_or_default(v, outs, out_tuple, create_graph, "vjp", _V_OUT_MSG)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(outs, ins, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, ins, strict, create_graph, "back")
    return (_unpack(_grad_postprocess(outs, create_graph), out_tuple),
            _unpack(_grad_postprocess(res, create_graph), in_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.jvp``: ``(func(inputs), J v)`` by the double-backward trick."""
    with enable_grad():
        in_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _grad_preprocess(ins, create_graph=create_graph, need_graph=True)
        vs = _v_or_default(v, ins, in_tuple, create_graph, "jvp", _V_IN_MSG)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        # the backward is linear in these cotangents: their value (zero) never shows in the result
        cots = tuple(zeros_like(o, requires_grad=True) for o in outs)
        grad_ins = _autograd_grad(outs, ins, cots, create_graph=True)
        _check_requires_grad(grad_ins, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(grad_ins, cots, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, outs, strict, create_graph, "back_trick")
    return (_unpack(_grad_postprocess(outs, create_graph), out_tuple),
            _unpack(_grad_postprocess(res, create_graph), out_tuple))


# ----------------------------------------------------------------------------- jacobian / hessian

def _reverse_rows(outs: tuple, ins: tuple, create_graph: bool, strict: bool) -> tuple:
    """The Jacobian blocks ``[output][input]`` from one reverse sweep per output element."""
    jac = []
    for i, out in enumerate(outs):
        rows: list[list[Tensor]] = [[] for _ in ins]
        flat = out.reshape(-1)
        for j in range(out.numel()):
            vj = _autograd_grad((flat[j],), ins, retain_graph=True, create_graph=create_graph)
            for k, (g, x) in enumerate(zip(vj, ins)):
                if g is not None:
                    if strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                           "This is not allowed in strict mode when create_graph=True.")
                    rows[k].append(g)
                else:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    rows[k].append(zeros_like(x))
        block = []
        for k, x in enumerate(ins):
            block.append(stack(rows[k], dim=0).view(tuple(out.shape) + tuple(x.shape)))
        jac.append(tuple(block))
    return tuple(jac)


def _jacfwd(func: Callable, inputs: Any, strict: bool, vectorize: bool, keep_graph: bool = False) -> Any:
    """``strategy="forward-mode"``: torch's checks and list nesting; one Jacobian column per input element
    by the double-backward trick (the forward tangents, zeros' signs included). ``keep_graph``: the columns
    stay differentiable (torch's forward-over-reverse Hessian returns them so)."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    in_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                  "implemented for `vectorize=True`.")
    keep = keep_graph or any(x.requires_grad for x in ins)
    with enable_grad():
        xs = tuple(x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True) for x in ins)
        out_tuple, outs = _as_tuple(func(*xs), "outputs")
        cots = tuple(zeros_like(o, requires_grad=True) for o in outs)
        grad_ins = _autograd_grad(outs, xs, cots, create_graph=True)
        jac: list[list[Tensor]] = [[] for _ in outs]
        for k, x in enumerate(xs):
            cols: list[list[Tensor]] = [[] for _ in outs]
            for j in range(x.numel()):
                basis = [zeros_like(y) for y in xs]
                basis[k].view(-1)[j] = 1
                tans = _autograd_grad(grad_ins, cots, tuple(basis), create_graph=keep, retain_graph=True)
                for i, (t, o) in enumerate(zip(tans, outs)):
                    cols[i].append(t if t is not None else zeros_like(o))
            for i, o in enumerate(outs):
                block = stack(cols[i], dim=0) if cols[i] else zeros_like(o).expand((0, *o.shape))
                block = block.permute(*range(1, block.ndim), 0).reshape(tuple(o.shape) + tuple(x.shape))
                jac[i].append(block if keep else block.detach())
    return _unpack(jac, (out_tuple, in_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """``torch.autograd.functional.jacobian``: blocks of shape ``out.shape + input.shape``."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        in_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _grad_preprocess(ins, create_graph=create_graph, need_graph=True)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        jac = _reverse_rows(outs, ins, create_graph, strict and not vectorize)
        jac = _grad_postprocess(jac, create_graph)
        return _unpack(jac, (out_tuple, in_tuple))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """``torch.autograd.functional.hessian`` of a function returning a one-element tensor."""
    in_tuple, ins = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp: Tensor) -> Tensor:
        out = func(*inp)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp: Tensor) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    if outer_jacobian_strategy == "forward-mode" and not create_graph:
        res = _jacfwd(jac_func, ins, strict, vectorize, keep_graph=True)
    else:
        res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict, vectorize=vectorize,
                       strategy=outer_jacobian_strategy)
    return _unpack(res, (in_tuple, in_tuple))


# ----------------------------------------------------------------------------- vhp / hvp

def _scalar_output(func: Callable, ins: tuple, strict: bool, fn_name: str) -> tuple:
    out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outs, "outputs", strict)
    if out_tuple or not isinstance(outs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return out_tuple, outs


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.vhp``: ``(func(inputs), v^T H)``."""
    with enable_grad():
        in_tuple, ins = _as_tuple(inputs, "inputs", "vhp")
        ins = _grad_preprocess(ins, create_graph=create_graph, need_graph=True)
        vs = _v_or_default(v, ins, in_tuple, create_graph, "vhp", _V_IN_MSG)
        out_tuple, outs = _scalar_output(func, ins, strict, "vhp")
        jac = _autograd_grad(outs, ins, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(jac, ins, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, ins, strict, create_graph, "double_back")
    return (_unpack(_grad_postprocess(outs, create_graph), out_tuple),
            _unpack(_grad_postprocess(res, create_graph), in_tuple))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """``torch.autograd.functional.hvp``: ``(func(inputs), H v)`` by the double-backward trick."""
    with enable_grad():
        in_tuple, ins = _as_tuple(inputs, "inputs", "hvp")
        ins = _grad_preprocess(ins, create_graph=create_graph, need_graph=True)
        vs = _v_or_default(v, ins, in_tuple, create_graph, "hvp", _V_IN_MSG)
        out_tuple, outs = _scalar_output(func, ins, strict, "hvp")
        jac = _autograd_grad(outs, ins, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(zeros_like(x, requires_grad=True) for x in ins)
        double_back = _autograd_grad(jac, ins, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(double_back, grad_jac, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, ins, strict, create_graph, "double_back_trick")
    return (_unpack(_grad_postprocess(outs, create_graph), out_tuple),
            _unpack(_grad_postprocess(res, create_graph), in_tuple))
