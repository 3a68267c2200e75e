"""Module backward hooks (``register_full_backward_hook`` / ``register_full_backward_pre_hook``), as torch builds
them: the module's tensor inputs and outputs pass through an identity ``autograd.Function``
(``BackwardHookFunction``, the outputs' ``grad_fn``), whose node hooks see the gradients flowing out of and into
the module and may replace them.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable, Sequence

from ..autograd.function import Function
from ..eager.grad_mode import is_grad_enabled
from ..eager.tensor import Tensor

__all__ = ["BackwardHook", "BackwardHookFunction"]


class BackwardHookFunction(Function):
    """The identity on tensors; the inputs that do not require grad are marked non-differentiable."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *args: Any) -> Any:
        return args


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the symgrad package


def _warn_user(msg: str) -> None:
    """A UserWarning pointing at the first line outside symgrad (the user's ``backward()`` call)."""
    level, f = 1, sys._getframe(0)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG):
        f, level = f.f_back, level + 1
    warnings.warn(msg, UserWarning, stacklevel=level)


def _pack_with_none(indices: Sequence[int], values: Sequence[Any], size: int) -> tuple:
    res: list[Any] = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


class BackwardHook:
    """Runs a module's backward pre-hooks on its ``grad_output`` and its backward hooks on
    ``(grad_input, grad_output)`` (tuples with one entry per positional argument / output, None for
    non-tensors), once both are known."""

    def __init__(self, module: Any, user_hooks: Sequence[Callable], user_pre_hooks: Sequence[Callable]) -> None:
        self.module = module
        self.user_hooks = list(user_hooks)
        self.user_pre_hooks = list(user_pre_hooks)
        self.grad_outputs: tuple | None = None
        self.n_outputs = -1
        self.output_tensors_index: list[int] | None = None
        self.n_inputs = -1
        self.input_tensors_index: list[int] | None = None

    def _apply_on_tensors(self, fn: Callable, args: tuple) -> tuple[tuple, list[int] | None]:
        """``args`` with their tensors passed through one ``BackwardHookFunction`` (``fn`` gets its grad_fn);
        unchanged when none requires grad."""
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        if len(new) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        fns = [t.grad_fn for t in new if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not fns:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue with a code sample to "
                               "reproduce this.")
        fn(fns[0])
        out = list(args)
        for i, v in zip(idx, new):
            out[i] = v
        return tuple(out), idx

    def setup_input_hook(self, args: tuple) -> tuple:
        """The module's arguments, wired to call the backward hooks with the gradients they receive."""

        def fn(grad_fn: Any) -> None:
            def hook(grad_input: tuple, _: tuple) -> Any:
                if self.grad_outputs is None:
                    return None  # the gradient reached the inputs without passing through the outputs
                res = _pack_with_none(self.input_tensors_index or [], grad_input, self.n_inputs)
                for user_hook in self.user_hooks:
                    out = user_hook(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    if len(out) != len(res):
                        raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                           f"{len(out)}, but expected {len(res)}")
                    res = out
                self.grad_outputs = None
                return tuple(res[i] for i in self.input_tensors_index or [])

            grad_fn.register_hook(hook)

        res, idx = self._apply_on_tensors(fn, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, args: Any) -> Any:
        """The module's output(s), wired to run the pre-hooks on the gradients flowing into the module."""

        def fn(grad_fn: Any) -> None:
            def hook(_: tuple, grad_output: tuple) -> Any:
                self.grad_outputs = _pack_with_none(self.output_tensors_index or [], grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        got = user_pre_hook(self.module, self.grad_outputs)
                        if got is None:
                            continue
                        if len(got) != expected:
                            raise RuntimeError("Backward pre hook returned an invalid number of grad_output, got "
                                               f"{len(got)}, but expected {expected}")
                        self.grad_outputs = got
                local = self.grad_outputs
                if self.input_tensors_index is None:  # no input requires grad: call the hooks now
                    _warn_user("Full backward hook is firing when gradients are computed with respect to module "
                               "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                               "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for "
                               "more details.")
                    grad_inputs = _pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(e is None for e in res)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                if local is not None:
                    return tuple(local[i] for i in self.output_tensors_index or [])
                return None

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]
