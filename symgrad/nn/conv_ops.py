"""Convolutions as registry-op compositions: ``F.conv1d/2d/3d``, ``F.conv_transpose1d/2d/3d``, ``F.unfold`` and
``F.fold``.

im2col is one strided slice per kernel tap (``x[:, :, i*d:i*d+s*(o-1)+1:s, ...]``), stacked to ``(N, C, K, *o)``,
whose reshape to ``(N, C*K, L)`` is free; the convolution is then one (batched) ``matmul`` with the weight as
``(O, C*K)`` (``(groups, O/g, C/g*K)`` with groups). Gradients come from the existing VJPs (the slices' writes
into zeros, the matmul's products), so they are exact and differentiable again. The transposed convolution and
``fold`` are the adjoint: a matmul, then one ``index_add`` scatter of the columns (static integer arrays,
overlaps summing)."""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ..eager.basic import stack
from ..eager.composite import _ALL, _arr, _fused, _index, _named
from ..eager.edges import set_edges
from ..eager.record import _apply
from ..eager.tensor import Tensor
from ..ops import REGISTRY
from .layers import _add, pad

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "unfold",
           "fold"]


def ntuple(v: Any, n: int) -> tuple[int, ...]:
    """An int (or a one-element sequence) repeated ``n`` times, or a sequence of ``n`` ints, as a tuple."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1 and n != 1:
            return tuple(int(v[0]) for _ in range(n))
        return tuple(int(e) for e in v)
    return tuple(int(v) for _ in range(n))


def window_spec(lead: int, idx: Sequence[np.ndarray]) -> list:
    """The index spec picking ``x[..., idx_0[k0, o0], idx_1[k1, o1], ...]`` from the dims after the first ``lead``
    ones, as ``(..., k0, k1, ..., o0, o1, ...)``: each ``idx_j`` (shape ``(k_j, o_j)``) reshaped so that the arrays
    broadcast to ``(k0, ..., o0, ...)``."""
    nd = len(idx)
    spec = [_ALL] * lead
    for j, a in enumerate(idx):
        shape = [1] * (2 * nd)
        shape[j], shape[nd + j] = a.shape
        spec.append(_arr(np.asarray(a).reshape(shape)))
    return spec


def windows(x: Tensor, idx: Sequence[np.ndarray], fn: str = "IndexBackward0") -> Tensor:
    """``x``'s windows along its last ``len(idx)`` dims (see ``window_spec``), one ``index`` node."""
    return _index(x, window_spec(x.ndim - len(idx), idx), fn)


def strided_windows(x: Tensor, k: Sequence[int], o: Sequence[int], stride: Sequence[int],
                    dilation: Sequence[int]) -> Tensor:
    """``x``'s regular windows along its last ``len(k)`` dims as ``(..., K, *o)`` (``K = prod(k)``, taps in
    row-major order): one strided slice per tap, stacked. Their adjoints are slice writes, cheaper than the
    scatter-add (``numpy.add.at``) of one integer-array index: 1.6x on a conv layer's backward."""
    taps = strided_taps(x, k, o, stride, dilation)
    lead = x.ndim - len(k)
    return taps[0].unsqueeze(lead) if len(taps) == 1 else stack(taps, lead)


def strided_taps(x: Tensor, k: Sequence[int], o: Sequence[int], stride: Sequence[int],
                 dilation: Sequence[int]) -> list[Tensor]:
    """The ``prod(k)`` strided slices of ``x`` (shape ``(..., *o)``) that ``strided_windows`` stacks."""
    lead = x.ndim - len(k)
    taps = []
    for tap in np.ndindex(*k):
        spec = [_ALL] * lead + [("s", t * d, t * d + (n - 1) * s + 1, s if s != 1 else None)
                                for t, n, s, d in zip(tap, o, stride, dilation)]
        taps.append(_index(x, spec, "SliceBackward0"))
    return taps


def strided_positions(k: int, o: int, stride: int, dilation: int) -> np.ndarray:
    """``(k, o)`` positions ``i * dilation + j * stride`` of the kernel tap ``i`` of window ``j``."""
    return np.arange(k)[:, None] * dilation + np.arange(o)[None, :] * stride


def _need(who: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _flat_pad(pads: Sequence[tuple[int, int]]) -> list[int]:
    """(before, after) per spatial dim, first dim first, as ``F.pad``'s list (last dim first)."""
    out: list[int] = []
    for before, after in reversed(pads):
        out += [before, after]
    return out


def _zero_pad(x: Tensor, pads: Sequence[tuple[int, int]], value: float = 0.0) -> Tensor:
    return pad(x, _flat_pad(pads), value=value) if any(b or a for b, a in pads) else x


_SCALAR = {"float64": ("Double", "double"), "float32": ("Float", "float"), "float16": ("Half", "c10::Half"),
           "bfloat16": ("BFloat16", "c10::BFloat16"), "int64": ("Long", "long int"), "int32": ("Int", "int")}


def _check_dtypes(x: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's checks: the bias's dtype first (``Input type (double) and bias type (float) ...``), then the
    weight's (``expected scalar type Double but found Float``)."""
    def names(t: Tensor) -> tuple[str, str]:
        return _SCALAR.get(t.dtype.np.name, (t.dtype.np.name, t.dtype.np.name))

    if bias is not None and bias.dtype != x.dtype:
        raise RuntimeError(f"Input type ({names(x)[1]}) and bias type ({names(bias)[1]}) should be the same")
    if weight.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {names(x)[0]} but found {names(weight)[0]}")


def _add_bias(out: Tensor, bias: Tensor | None, nd: int, fn: str) -> Tensor:
    if bias is None:
        return _named(out, fn) if out.requires_grad else out
    b = bias.reshape((bias.shape[0],) + (1,) * nd)
    if out.is_floating_point() and b.is_floating_point():
        return _fused(_add(), out, b, fn=fn)
    return _named(out + b, fn)


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,  # noqa: A002
          groups: int, nd: int) -> Tensor:
    who = f"conv{nd}d"
    _need(who, input)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {who}, but got input of "
                           f"size: {list(input.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input "
                           f"{list(input.shape)}, but got {weight.ndim}-dimensional weight of size "
                           f"{list(weight.shape)} instead")
    x = input.unsqueeze(0) if input.ndim == nd + 1 else input
    k = tuple(weight.shape[2:])
    stride, dilation = ntuple(stride, nd), ntuple(dilation, nd)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = [(d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2) for d, kk in zip(dilation, k)]
            if any(b != a for b, a in pads):
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                              "zero-padded copy of the input be created", stacklevel=3)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = [(p, p) for p in ntuple(padding, nd)]
        if any(p < 0 for p, _ in pads):
            raise RuntimeError("negative padding is not supported")
    n, c = x.shape[0], x.shape[1]
    o_ch, cg = weight.shape[0], weight.shape[1]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if c != cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o_ch % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(weight.shape)}] instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o_ch):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{o_ch} elements, but got bias of size {list(bias.shape)} instead")
    _check_dtypes(x, weight, bias)
    padded = [x.shape[2 + j] + pads[j][0] + pads[j][1] for j in range(nd)]
    eff = [dilation[j] * (k[j] - 1) + 1 for j in range(nd)]
    if any(e > p for e, p in zip(eff, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    o = [(padded[j] - eff[j]) // stride[j] + 1 for j in range(nd)]
    cols = strided_windows(_zero_pad(x, pads), k, o, stride, dilation)
    kk, ll = math.prod(k), math.prod(o)
    if groups == 1:
        out = weight.reshape(o_ch, c * kk) @ cols.reshape(n, c * kk, ll)
    else:
        out = weight.reshape(groups, o_ch // groups, cg * kk) @ cols.reshape(n, groups, cg * kk, ll)
    out = set_edges(_add_bias(out.reshape(n, o_ch, *o), bias, nd, "ConvolutionBackward0"), x, weight, bias)
    return out.squeeze(0) if input.ndim == nd + 1 else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,  # noqa: A002
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d cross-correlation of ``input`` (N, C, L) with ``weight`` (O, C/groups, k) (torch's ``F.conv1d``)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,  # noqa: A002
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d cross-correlation of ``input`` (N, C, H, W) with ``weight`` (O, C/groups, kh, kw) (``F.conv2d``)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,  # noqa: A002
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-d cross-correlation of ``input`` (N, C, D, H, W) with ``weight`` (O, C/groups, kd, kh, kw)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def scatter_windows(cols: Tensor, idx: Sequence[np.ndarray], shape: Sequence[int]) -> Tensor:
    """The adjoint of ``windows``: zeros of ``shape`` with each column of ``cols`` (``(..., k..., o...)``) added at
    its window's positions (one ``index_add`` node; overlaps sum)."""
    spec = window_spec(cols.ndim - 2 * len(idx), idx)
    return _apply(REGISTRY["index_add"], cols, index=tuple(spec), shape=tuple(int(s) for s in shape))


def _crop(x: Tensor, pads: Sequence[tuple[int, int]], sizes: Sequence[int]) -> Tensor:
    if not any(b or a for b, a in pads) and list(x.shape[-len(sizes):]) == list(sizes):
        return x
    lead = x.ndim - len(sizes)
    spec = [_ALL] * lead + [("s", b, b + s, None) for (b, _), s in zip(pads, sizes)]
    return _index(x, spec, "SliceBackward0")


def _conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,  # noqa: A002
                    output_padding: Any, groups: int, dilation: Any, nd: int) -> Tensor:
    who = f"conv_transpose{nd}d"
    _need(who, input)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {who}, but got input of "
                           f"size: {list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == nd + 1 else input
    stride, dilation = ntuple(stride, nd), ntuple(dilation, nd)
    padding, output_padding = ntuple(padding, nd), ntuple(output_padding, nd)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            # torch runs 1-d as 2-d (height 0 / 1 / 1)
            vals = [("output_padding", output_padding, 0), ("stride", stride, 1), ("dilation", dilation, 1)]
            names = ["depth", "height", "width"][-max(nd, 2):]
            parts = [f"{what}_{nm}: {((lead,) * (nd == 1) + tuple(v))[j]}"
                     for what, v, lead in vals for j, nm in enumerate(names)]
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               + " ".join(parts))
    n, c = x.shape[0], x.shape[1]
    if weight.shape[0] != c:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {c} channels instead")
    cog = weight.shape[1]
    o_ch = cog * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o_ch):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {o_ch} elements, but got bias of size {list(bias.shape)} instead")
    _check_dtypes(x, weight, bias)
    k = tuple(weight.shape[2:])
    i = tuple(x.shape[2:])
    full = [(i[j] - 1) * stride[j] + dilation[j] * (k[j] - 1) + 1 + output_padding[j] for j in range(nd)]
    sizes = [full[j] - 2 * padding[j] for j in range(nd)]
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, i))}). Calculated output size per "
                           f"channel: ({' x '.join(map(str, sizes))}). Output size is too small")
    kk, ll = math.prod(k), math.prod(i)
    w = weight.reshape(groups, c // groups, cog * kk).transpose(-1, -2)
    cols = (w @ x.reshape(n, groups, c // groups, ll)).reshape(n, o_ch, *k, *i)
    idx = [strided_positions(k[j], i[j], stride[j], dilation[j]) for j in range(nd)]
    out = _crop(scatter_windows(cols, idx, (n, o_ch, *full)), [(p, p) for p in padding], sizes)
    out = set_edges(_add_bias(out, bias, nd, "ConvolutionBackward0"), x, weight, bias)
    return out.squeeze(0) if input.ndim == nd + 1 else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed 1-d convolution (the gradient of ``conv1d`` with respect to its input); weight
    (C_in, C_out/groups, k)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed 2-d convolution; weight (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed 3-d convolution; weight (C_in, C_out/groups, kd, kh, kw)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:  # noqa: A002
    """im2col: the sliding blocks of ``input`` (N, C, H, W) as columns, (N, C*kh*kw, L)."""
    _need("unfold", input)
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input.unsqueeze(0) if input.ndim == 3 else input
    k, d, p, s = (ntuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    padded = [x.shape[2 + j] + 2 * p[j] for j in range(2)]
    o = [(padded[j] - (d[j] * (k[j] - 1) + 1)) // s[j] + 1 for j in range(2)]
    if any(v <= 0 for v in o):
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the "
                           f"array of sliding blocks as ({o[0]}, {o[1]}), but its components must be at least one.")
    cols = windows(_zero_pad(x, [(v, v) for v in p]), [strided_positions(k[j], o[j], s[j], d[j]) for j in range(2)])
    out = _named(cols.reshape(x.shape[0], x.shape[1] * k[0] * k[1], o[0] * o[1]), "Im2ColBackward0")
    return out.squeeze(0) if input.ndim == 3 else out


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
         stride: Any = 1) -> Tensor:
    """col2im: columns (N, C*kh*kw, L) summed back into an image (N, C, *output_size), overlaps adding."""
    _need("fold", input)
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.ndim}D)")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    out_sz, k, d, p, s = (ntuple(v, 2) for v in (output_size, kernel_size, dilation, padding, stride))
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size=({k[0]}, {k[1]}).")
    full = [out_sz[j] + 2 * p[j] for j in range(2)]
    o = [(full[j] - (d[j] * (k[j] - 1) + 1)) // s[j] + 1 for j in range(2)]
    if x.shape[2] != o[0] * o[1]:
        raise RuntimeError(f"Given output_size=({out_sz[0]}, {out_sz[1]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected "
                           f"size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{o[0]} * {o[1]} = {o[0] * o[1]}, but got input.size(2)={x.shape[2]}.")
    c = x.shape[1] // kk
    cols = x.reshape(x.shape[0], c, k[0], k[1], o[0], o[1])
    idx = [strided_positions(k[j], o[j], s[j], d[j]) for j in range(2)]
    out = _crop(scatter_windows(cols, idx, (x.shape[0], c, *full)), [(v, v) for v in p], out_sz)
    out = _named(out, "Col2ImBackward0") if out.requires_grad else out
    return out.squeeze(0) if input.ndim == 2 else out
