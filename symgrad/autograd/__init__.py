"""``torch.autograd``'s namespace: ``backward``, ``grad``, ``functional`` (jacobian, hessian, vjp, ...),
``gradcheck`` / ``gradgradcheck``, anomaly mode and the legacy ``Variable``."""
from __future__ import annotations

from ..eager.anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from ..eager.autograd import AccumulateGrad, GradFn, backward, grad
from . import functional
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["AccumulateGrad", "GradFn", "GradcheckError", "Variable", "backward", "gradcheck",
           "gradgradcheck", "detect_anomaly", "functional", "grad",
           "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "set_detect_anomaly"]
