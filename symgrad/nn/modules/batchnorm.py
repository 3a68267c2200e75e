"""``BatchNorm1d`` / ``2d`` / ``3d``: per-channel batch normalisation with torch's parameters (weight ones, bias
zeros), buffers (``running_mean`` zeros, ``running_var`` ones, ``num_batches_tracked``), momentum (None: the
cumulative average) and repr."""
from __future__ import annotations

from typing import Any

from ...compiler.tracing import Tracer
from ...core import dtypes
from ...eager import functional
from ...eager.grad_mode import no_grad
from ...eager.tensor import Tensor
from .. import init
from .. import normalization as N
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(Module):
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]
    _dims: tuple[int, ...] = ()
    _what = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(functional.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(functional.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", functional.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", functional.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", functional.tensor(0, dtype=dtypes.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """running_mean zeros, running_var ones, num_batches_tracked 0."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """The running statistics reset; weight ones, bias zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() not in self._dims:
            raise ValueError(f"expected {self._what} input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Batch statistics while training (running ones updated when tracked), running statistics in eval."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and isinstance(input, Tracer):
            N.batch_norm(input, self.running_mean, self.running_var, training=True)  # raises its TracingError
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return N.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias, bn_training,
                            factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:  # checkpoints older than num_batches_tracked
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else functional.tensor(0, dtype=dtypes.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs."""

    _dims = (2, 3)
    _what = "2D or 3D"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs."""

    _dims = (4,)
    _what = "4D"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs."""

    _dims = (5,)
    _what = "5D"
