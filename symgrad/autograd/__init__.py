"""``torch.autograd``'s namespace: ``backward``, ``grad`` and ``functional`` (jacobian, hessian, vjp, ...)."""
from __future__ import annotations

from ..eager.autograd import AccumulateGrad, GradFn, backward, grad
from . import functional

__all__ = ["AccumulateGrad", "GradFn", "backward", "functional", "grad"]
