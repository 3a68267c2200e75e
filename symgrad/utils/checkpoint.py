"""``torch.utils.checkpoint``: ``checkpoint`` and ``checkpoint_sequential`` with torch's values, gradients and
graph.

``use_reentrant=True`` (torch's default when it is not given, with torch's warning) is torch's scheme: the
function runs under ``no_grad``, the output's ``grad_fn`` is ``<CheckpointFunctionBackward>``, and the backward
recomputes the function from the saved inputs (with the forward's random state, as ``preserve_rng_state``
asks) and backpropagates through the recomputation, so parameters used inside get their gradients then;
inputs that don't require grad give an output that doesn't either. ``use_reentrant=False`` computes the
function normally: the graph holds its intermediate values (no memory is saved, which is the only difference
from torch's recomputation), so ``autograd.grad`` and keyword arguments work as in torch. While tracing
(``sg.compile``, ``sg.grad``, ``sg.func`` transforms) both compute the function normally. Not reproduced:
``use_reentrant=False`` with ``preserve_rng_state=False`` and random ops inside (torch's recomputation then
draws new numbers; here the forward's are kept), and torch's error for ``autograd.grad`` through a reentrant
checkpoint (here it works, and the parameters inside get ``.grad`` as from ``backward``).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..autograd.function import Function
from ..core import context as _trace
from ..eager.autograd import backward as _backward
from ..eager.base import is_traced
from ..eager.grad_mode import enable_grad, no_grad
from ..eager.random import fork_rng, get_rng_state, set_rng_state
from ..eager.tensor import Tensor
from ..nn.modules.container import Sequential

__all__ = ["checkpoint", "checkpoint_sequential", "detach_variable"]

_NOT_PASSED = ("the use_reentrant parameter should be passed explicitly. {since}use_reentrant=False is recommended, "
               "but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to "
               "docs for more details on the differences between the two variants.")


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tensors of ``inputs`` detached, each keeping its ``requires_grad``; other values unchanged."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            x = d
        out.append(x)
    return tuple(out)


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without a graph, backward by recomputation."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        if not any(a.requires_grad for a in args if isinstance(a, Tensor)):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors, strict=True):
            inputs[i] = t
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=False) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(d.grad if isinstance(d, Tensor) else None for d in detached))


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None, context_fn: Any = None,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` as torch's activation checkpoint returns it (see the module docstring);
    ``preserve_rng_state=`` (default True) is one of ``kwargs``, as in torch."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: " + _NOT_PASSED.format(
            since="Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "),
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not None or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if _trace.active is None and not any(is_traced(a) for a in args):
            return CheckpointFunction.apply(function, preserve, *args)
    return function(*args, **kwargs)  # non-reentrant, or traced (sg.compile, sg.grad, func transforms): plain


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,  # noqa: A002
                          **kwargs: Any) -> Any:
    """Run ``functions`` (an ``nn.Sequential`` or a list of callables) in ``segments`` chunks, each but the
    last through ``checkpoint`` (torch's segmentation)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: " + _NOT_PASSED.format(
            since="In version 2.9 we will raise an exception if use_reentrant is not passed. "), stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run(start: int, end: int, fns: list) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = fns[j](x)
            return x
        return forward

    fns = list(functions.children()) if isinstance(functions, Sequential) else list(functions)
    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end, fns), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(fns) - 1, fns)(input)


