"""Activation modules: one per activation of ``sg.nn.functional``, with torch's arguments and ``extra_repr``."""
from __future__ import annotations

import warnings
from typing import Any

from ...eager import functional
from ...eager.tensor import Tensor
from .. import functional as F
from .. import init as nn_init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softplus", "SiLU", "GELU", "ELU", "LeakyReLU",
           "LogSigmoid", "Hardtanh", "ReLU6", "Mish", "SELU", "CELU", "Hardsigmoid", "Hardswish", "Softshrink",
           "Hardshrink", "Threshold", "Softsign", "Tanhshrink", "Softmin", "Softmax2d", "GLU", "PReLU"]


class _Inplace(Module):
    """An activation whose only option is ``inplace`` (shown as ``inplace=True`` when set)."""

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """``max(x, 0)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.relu(input, inplace=self.inplace)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.mish(input, inplace=self.inplace)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.sigmoid(input)


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.tanh(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.logsigmoid(input)


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``."""

    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class LeakyReLU(Module):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise."""

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class GELU(Module):
    """``x * Phi(x)`` (``approximate='tanh'``: torch's tanh approximation)."""

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta`` (``x`` where ``beta x > threshold``)."""

    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """``exp(x) / sum(exp(x), dim)``."""

    __constants__ = ["dim"]

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``x - logsumexp(x, dim)``."""

    __constants__ = ["dim"]

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.selu(input, self.inplace)


class CELU(Module):
    """``x`` for ``x > 0``, ``alpha * (exp(x / alpha) - 1)`` otherwise."""

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class Hardsigmoid(_Inplace):
    """``min(max(x + 3, 0), 6) / 6`` (torch's repr does not show ``inplace``)."""

    def extra_repr(self) -> str:
        return ""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    """``x * min(max(x + 3, 0), 6) / 6`` (torch's repr does not show ``inplace``)."""

    def extra_repr(self) -> str:
        return ""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardswish(input, self.inplace)


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""

    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` outside ``[-lambd, lambd]``, 0 inside."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """``value`` where ``x <= threshold``, else ``x``."""

    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace_str}"


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.tanhshrink(input)


class Softmin(Module):
    """``softmax(-x, dim)``."""

    __constants__ = ["dim"]

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of a ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class GLU(Module):
    """``a * sigmoid(b)``, ``a`` and ``b`` the halves of the input along ``dim``."""

    __constants__ = ["dim"]

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` for ``x > 0``, ``weight * x`` otherwise; ``weight`` (``num_parameters`` values, ``init`` each) is
    learnt."""

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(functional.empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight ``init``."""
        nn_init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
