"""``torch.nn.functional``'s activations on symgrad tensors.

Each is one elementwise registry op (``ops/elementwise.py``) with torch's ``grad_fn`` name, so it
records, differentiates, compiles and prints like ``sg.exp``; ``relu6`` is ``hardtanh(0, 6)`` as in
torch. ``inplace=True`` writes the result into ``input`` (torch's in-place ``elu_``/``leaky_relu_``
record ``EluBackward1``/``LeakyReluBackward1``; here the out-of-place names).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..core import dtypes
from ..eager import basic
from ..eager.base import _py
from ..eager.composite import _named
from ..eager.edges import set_edges
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import REGISTRY

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "softplus", "silu", "gelu", "elu", "leaky_relu",
           "logsigmoid", "hardtanh", "relu6", "mish", "selu", "celu", "hardsigmoid", "hardswish", "softshrink",
           "hardshrink", "threshold", "softsign", "tanhshrink", "softmin", "glu", "prelu"]


def _act(op: str, input: Tensor, inplace: bool = False, **attrs: Any) -> Tensor:  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    attrs = {k: _py(v) for k, v in attrs.items()}
    if inplace:
        return input._inplace(op, **attrs)
    return _apply(REGISTRY[op], input, **attrs)


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(x, 0)."""
    return _act("relu", input, inplace)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + exp(-x))."""
    return _act("sigmoid", input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """tanh(x)."""
    return _act("tanh", input)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """exp(x) / sum(exp(x), dim) (torch's implicit dim when ``dim`` is None, with its warning)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """x - logsumexp(x, dim)."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return input.log_softmax(dim, dtype=dtype)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold."""
    return _act("nn_softplus", input, beta=beta, threshold=threshold)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * sigmoid(x)."""
    return _act("silu", input, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """x * Phi(x), Phi the standard normal CDF (``approximate='tanh'``: torch's tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _act("gelu", input, **({"approximate": "tanh"} if approximate == "tanh" else {}))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _act("elu", input, inplace, alpha=alpha)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """x for x > 0, negative_slope * x otherwise."""
    return _act("leaky_relu", input, inplace, negative_slope=negative_slope)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """log(sigmoid(x)), computed as min(x, 0) - log1p(exp(-|x|))."""
    return _act("logsigmoid", input)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x clamped to [min_val, max_val]; the gradient is 0 at and beyond the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _act("hardtanh", input, inplace, min_val=min_val, max_val=max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """hardtanh(x, 0, 6) (torch records ``HardtanhBackward0``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * tanh(softplus(x))."""
    return _act("mish", input, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """scale * elu(x, alpha) with torch's SELU constants (torch records ``EluBackward0``)."""
    return _act("elu", input, inplace, alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _act("elu", input, inplace, alpha=alpha, input_scale=1.0 / alpha, fn="CeluBackward0")


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(x + 3, 0), 6) / 6."""
    return _act("hardsigmoid", input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * min(max(x + 3, 0), 6) / 6."""
    return _act("hardswish", input, inplace)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        big = float(np.finfo(np.dtype(input.dtype.name)).max) if input.is_floating_point() else float("inf")
        raise RuntimeError(f"lambda must be in range [0, {big:g}] for input dtype "
                           f"{dtypes.torch_type_name(input.dtype)}, but found {float(_py(lambd)):g}")
    return _act("softshrink", input, lambd=lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x outside [-lambd, lambd], 0 inside."""
    return _act("hardshrink", input, lambd=lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """value where x <= threshold, else x."""
    return _act("threshold", input, inplace, threshold=threshold, value=value)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """x - tanh(x)."""
    return input - input.tanh()


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """softmax(-x, dim)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return (-input).softmax(dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """a * sigmoid(b), a and b the halves of ``input`` along ``dim``."""
    if not input.is_floating_point():
        raise NotImplementedError(f"\"glu_cpu\" not implemented for '{dtypes.torch_type_name(input.dtype)}'")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return set_edges(_named(a * b.sigmoid(), "GluBackward0"), input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """x for x > 0, weight * x otherwise (``weight``: one value, or one per channel, dim 1)."""
    if input.dim() == 0:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.dim() > 1 else 1
    n = weight.numel()
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                           f"and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.dtype != input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {dtypes.torch_type_name(input.dtype)} and "
                           f"{dtypes.torch_type_name(weight.dtype)}")
    shape = [1] * input.dim()
    if input.dim() > 1:
        shape[1] = n
    w = weight.view(*shape) if input.dim() > 1 else weight.view(-1)
    return set_edges(_named(basic.where(input > 0, input, w * input), "PreluKernelBackward0"), input, w)


from .attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402, F401
from .conv_ops import *  # noqa: E402, F401, F403  (conv1d/2d/3d, conv_transpose*, unfold, fold: nn/conv_ops.py)
from .ctc import ctc_loss  # noqa: E402, F401
from .divergence import kl_div  # noqa: E402, F401
from .extra_ops import (  # noqa: E402, F401
    alpha_dropout,
    channel_shuffle,
    feature_alpha_dropout,
    gumbel_softmax,
    local_response_norm,
    pdist,
    triplet_margin_with_distance_loss,
)
from .feature_dropout import dropout1d, dropout2d, dropout3d, feature_dropout  # noqa: E402, F401
from .layers import *  # noqa: E402, F401, F403  (linear, dropout, normalize, ...: symgrad/nn/layers.py)
from .losses import *  # noqa: E402, F401, F403  (mse_loss, cross_entropy, ...: symgrad/nn/losses.py)
from .margin_losses import *  # noqa: E402, F401, F403  (margin / embedding / likelihood losses, pairwise_distance)
from .modules.embedding_bag import embedding_bag  # noqa: E402, F401
from .modules.sparse import embedding  # noqa: E402, F401
from .multi_losses import multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss  # noqa: E402, F401
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, rms_norm  # noqa: E402, F401
from .pooling_ops import *  # noqa: E402, F401, F403  (pooling, interpolate, pixel_shuffle: nn/pooling_ops.py)
from .sampling import affine_grid, grid_sample  # noqa: E402, F401
