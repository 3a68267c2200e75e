"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` with torch's parameters, initialisation (kaiming_uniform_ with
``a=sqrt(5)``, then the bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))), padding modes and reprs."""
from __future__ import annotations

import math
from typing import Any

from ...eager import functional
from ...eager.base import Size
from ...eager.tensor import Tensor
from .. import conv_ops, init
from ..layers import pad
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvNd(Module):
    """The shared constructor of convolutions (torch's ``_ConvNd``)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]
    _nd = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int, bias: bool, padding_mode: str,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        nd = self._nd
        kernel_size = conv_ops.ntuple(kernel_size, nd)
        stride = conv_ops.ntuple(stride, nd)
        dilation = conv_ops.ntuple(dilation, nd)
        padding = padding if isinstance(padding, str) else conv_ops.ntuple(padding, nd)
        output_padding = conv_ops.ntuple(output_padding, nd)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            valid_padding_strings = {"same", "valid"}  # printed in the set's order, as torch
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}  # printed in the set's order, as torch
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            rev = [0, 0] * nd
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(nd - 1, -1, -1)):
                    total = d * (k - 1)
                    rev[2 * i], rev[2 * i + 1] = total // 2, total - total // 2
            self._reversed_padding_repeated_twice = rev
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(functional.empty((*shape, *kernel_size), dtype=dtype))
        if bias:
            self.bias = Parameter(functional.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default initialisation (see the module docstring)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:  # noqa: A002
        conv = getattr(conv_ops, f"conv{self._nd}d")
        if self.padding_mode != "zeros":
            padded = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """The convolution of ``input`` with ``weight`` (plus ``bias``)."""
        return self._conv_forward(input, self.weight, self.bias)


def _conv_class(nd: int) -> type:
    def __init__(self: Any, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        _ConvNd.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)

    doc = f"{nd}-d convolution (cross-correlation) over (N, C_in, *spatial) inputs, torch's ``nn.Conv{nd}d``."
    return type(f"Conv{nd}d", (_ConvNd,), {"__init__": __init__, "_nd": nd, "__doc__": doc,
                                           "__module__": __name__})


Conv1d = _conv_class(1)
Conv2d = _conv_class(2)
Conv3d = _conv_class(3)


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions' shared part (torch's ``_ConvTransposeNd``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:  # noqa: A002
        nd = self._nd
        if output_size is None:
            return self.output_padding
        non_spatial = 2 if input.ndim == nd + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                             f"{non_spatial + nd} elements (got {len(output_size)})")
        mins = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        maxs = [mins[d] + self.stride[d] - 1 for d in range(nd)]
        for size, lo, hi in zip(output_size, mins, maxs):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {mins} to "
                                 f"{maxs} (for an input of {Size(input.shape[2:])})")
        return tuple(output_size[d] - mins[d] for d in range(nd))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        """The transposed convolution of ``input`` (``output_size`` picks the output padding)."""
        conv = getattr(conv_ops, f"conv_transpose{self._nd}d")
        return conv(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                    self.groups, self.dilation)


def _transpose_class(nd: int) -> type:
    doc = f"{nd}-d transposed convolution (the gradient of Conv{nd}d), torch's ``nn.ConvTranspose{nd}d``."
    return type(f"ConvTranspose{nd}d", (_ConvTransposeNd,), {"_nd": nd, "__doc__": doc, "__module__": __name__})


ConvTranspose1d = _transpose_class(1)
ConvTranspose2d = _transpose_class(2)
ConvTranspose3d = _transpose_class(3)
