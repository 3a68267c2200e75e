"""``Tensor``: the class users get, declared in one place as the sum of its method families.

``TensorBase`` (``eager/base.py``) holds the storage and plain attributes; each family of methods is one mixin
in ``eager/methods/``. Ops return this class (``concrete=True``); ``compiler.tracing.Tracer`` subclasses it.
"""
from __future__ import annotations

from .base import Size, TensorBase  # noqa: F401  (Size: torch.Size)
from .linalg_ops import LinalgMethods
from .methods.autograd import AutogradMethods
from .methods.convert import ConversionMethods
from .methods.inplace import InPlaceMethods
from .methods.math import MathMethods, TorchMathMethods
from .methods.random import RandomMethods
from .methods.reduce import ReductionMethods
from .methods.select import SelectionMethods
from .methods.shape import ShapeMethods
from .more_ops import MoreMethods
from .toplevel_ops import ToplevelMethods


class Tensor(AutogradMethods, ConversionMethods, MathMethods, TorchMathMethods, ReductionMethods, ShapeMethods,
             SelectionMethods, InPlaceMethods, RandomMethods, MoreMethods, LinalgMethods, ToplevelMethods, TensorBase,
             concrete=True):
    """A multi-dimensional array that records the operations applied to it.

    >>> import symgrad as sg
    >>> x = sg.ones(2, 2, requires_grad=True)
    >>> out = (3 * (x + 2) ** 2).mean()
    >>> out.backward()
    >>> x.grad
    tensor([[4.5000, 4.5000],
            [4.5000, 4.5000]])
    """

    __slots__ = ()
