"""``torch.autograd``'s namespace: ``backward``, ``grad``, ``functional`` (jacobian, hessian, vjp, ...),
``Function`` (custom forward / backward), ``gradcheck`` / ``gradgradcheck``, anomaly mode and the legacy
``Variable``."""
from __future__ import annotations

from ..eager.anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from ..eager.autograd import AccumulateGrad, GradFn, backward, grad
from . import function, functional, graph
from .function import Function, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["AccumulateGrad", "Function", "GradFn", "GradcheckError", "Variable", "backward", "gradcheck",
           "gradgradcheck", "detect_anomaly", "function", "functional", "grad", "graph",
           "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "once_differentiable", "set_detect_anomaly"]
