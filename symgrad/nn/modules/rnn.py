"""``RNN``, ``LSTM``, ``GRU`` (``num_layers``, ``batch_first``, ``bidirectional``, inter-layer ``dropout``, LSTM
``proj_size``, unbatched and ``PackedSequence`` inputs) and ``RNNCell`` / ``LSTMCell`` / ``GRUCell``, with torch's
parameter names, creation order and initialisation (every parameter ``U(-1/sqrt(hidden), 1/sqrt(hidden))`` in
registration order, so a seeded model has torch's weights). The recurrences are compositions of registry ops in
torch's CPU order (the input projection of a whole layer first, then per step ``linear(h, w_hh, b_hh) + x_proj[t]``),
one Python iteration per time step, so they record, differentiate and print like any other module. A
``PackedSequence`` runs as torch's packed CPU layers: the input projection of all packed rows first, then per step
the rows of the sequences still running (a finished sequence's state kept aside, the reverse direction taking
sequences in as they start)."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Callable

from ...core import dtypes
from ...eager import basic, functional
from ...eager.composite import _named
from ...eager.tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _rnn_step(act: Callable[[Tensor], Tensor]) -> Callable[..., Any]:
    def step(xp: Tensor, state: tuple[Tensor, ...], w_hh: Tensor, b_hh: Tensor | None,
             w_hr: Tensor | None = None) -> tuple[Tensor, ...]:
        return (act(F.linear(state[0], w_hh, b_hh) + xp),)
    return step


def _lstm_step(xp: Tensor, state: tuple[Tensor, ...], w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None = None) -> tuple[Tensor, ...]:
    h, c = state
    i, f, g, o = (F.linear(h, w_hh, b_hh) + xp).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(xp: Tensor, state: tuple[Tensor, ...], w_hh: Tensor, b_hh: Tensor | None,
              w_hr: Tensor | None = None) -> tuple[Tensor, ...]:
    h = state[0]
    xr, xz, xn = xp.chunk(3, 1)
    hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r = (hr + xr).sigmoid()
    z = (hz + xz).sigmoid()
    n = (xn + hn * r).tanh()
    return ((h - n) * z + n,)


_STEPS: dict[str, Callable[..., Any]] = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _rnn_step(F.tanh),
                                         "RNN_RELU": _rnn_step(F.relu)}


class RNNBase(Module):
    """The multi-layer recurrent network shared by ``RNN``, ``LSTM`` and ``GRU`` (``mode`` names the cell)."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(functional.empty(shape, dtype=dtype)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in torch's order."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (cuDNN's packed weights), as torch on CPU."""

    def reset_parameters(self) -> None:
        """Every parameter ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _real_hidden(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def check_input(self, input: Tensor, batch_sizes: Any = None) -> None:  # noqa: A002
        """torch's dtype, rank and feature-size checks."""
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Any = None) -> tuple[int, int, int]:  # noqa: A002
        """``(num_layers * num_directions, batch, hidden or proj size)``."""
        batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), batch, self._real_hidden())

    def check_hidden_size(self, hx: Tensor, expected: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """The hidden state has the expected shape."""
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(expected, list(hx.size())))

    def _prepare(self, input: Tensor, hx: Any, name: str) -> tuple[Tensor, bool]:  # noqa: A002
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, batched

    def _zeros(self, input: Tensor, size: int) -> Tensor:
        batch = input.size(0) if self.batch_first else input.size(1)
        return functional.zeros(self.num_layers * (2 if self.bidirectional else 1), batch, size, dtype=input.dtype)

    def _run(self, input: Tensor, states: list[Tensor],  # noqa: A002
             batch_first: bool | None = None) -> tuple[Tensor, list[Tensor]]:
        """The layers over ``input`` (time-major after ``batch_first``, the module's unless given); ``states`` are
        the stacked initial states (h, and c for LSTM). Returns the last layer's outputs and the stacked final
        states."""
        batch_first = self.batch_first if batch_first is None else batch_first
        step = _STEPS[self.mode]
        x = input.transpose(0, 1) if batch_first else input
        steps = x.size(0)
        dirs = 2 if self.bidirectional else 1
        finals: list[list[Tensor]] = [[] for _ in states]
        # torch's CPU LSTM runs float32 without projections through oneDNN: each layer's output is one node
        mkldnn = self.mode == "LSTM" and self.proj_size == 0 and x.dtype == dtypes.float32
        for layer in range(self.num_layers):
            outs = []
            for direction in range(dirs):
                k = layer * dirs + direction
                params = [getattr(self, n) for n in self._all_weights[k]]
                w_ih, w_hh = params[0], params[1]
                b_ih, b_hh = (params[2], params[3]) if self.bias else (None, None)
                w_hr = params[-1] if self.proj_size > 0 else None
                xp = F.linear(x, w_ih, b_ih)
                state = tuple(s[k] for s in states)
                ys: list[Any] = [None] * steps
                order = range(steps - 1, -1, -1) if direction == 1 else range(steps)
                for t in order:
                    state = step(xp[t], state, w_hh, b_hh, w_hr)
                    ys[t] = state[0]
                out = basic.stack(ys)
                if mkldnn:
                    out = _named(out, "MkldnnRnnLayerBackward0")
                outs.append(out)
                for f, s in zip(finals, state):
                    f.append(s)
            x = basic.cat(outs, 2) if dirs == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        if batch_first:  # torch's RNN and GRU return a transpose of another overload than LSTM's
            x = x.transpose(0, 1) if self.mode == "LSTM" else _named(x.transpose(0, 1), "TransposeBackward1")
        return x, [basic.stack(f) for f in finals]

    def _packed_direction(self, xp: Tensor, sizes: list[int], state: tuple[Tensor, ...], reverse: bool,
                          weights: tuple[Any, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
        """One direction of a layer over packed rows ``xp`` (already projected): torch's ``PackedLayer`` /
        ``ReversedPackedLayer``. Returns the packed outputs and the final states in batch order."""
        step = _STEPS[self.mode]
        outs: list[Tensor] = []
        if not reverse:
            done: list[tuple[Tensor, ...]] = []
            offset, last = 0, sizes[0]
            for b in sizes:
                if b < last:  # sequences b..last ended at the previous step
                    done.append(tuple(s[b:last] for s in state))
                    state = tuple(s[:b] for s in state)
                state = step(xp[offset:offset + b], state, *weights)
                outs.append(state[0])
                offset, last = offset + b, b
            done.append(state)
            done.reverse()
            final = tuple(basic.cat([d[i] for d in done], 0) for i in range(len(state)))
            return basic.cat(outs, 0), final
        initial, offset, last = state, xp.size(0), sizes[-1]
        state = tuple(s[:last] for s in initial)
        for b in reversed(sizes):
            if b > last:  # sequences last..b start here, from their initial state
                state = tuple(basic.cat([s, i[last:b]], 0) for s, i in zip(state, initial))
            state = step(xp[offset - b:offset], state, *weights)
            outs.append(state[0])
            offset, last = offset - b, b
        outs.reverse()
        return basic.cat(outs, 0), state

    def _run_packed(self, data: Tensor, sizes: list[int], states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        """The layers over packed ``data`` (``sizes``: the batch size of each step)."""
        dirs = 2 if self.bidirectional else 1
        finals: list[list[Tensor]] = [[] for _ in states]
        x = data
        for layer in range(self.num_layers):
            outs = []
            for direction in range(dirs):
                k = layer * dirs + direction
                params = [getattr(self, n) for n in self._all_weights[k]]
                b_ih, b_hh = (params[2], params[3]) if self.bias else (None, None)
                w_hr = params[-1] if self.proj_size > 0 else None
                xp = F.linear(x, params[0], b_ih)
                out, state = self._packed_direction(xp, sizes, tuple(s[k] for s in states), direction == 1,
                                                    (params[1], b_hh, w_hr))
                outs.append(out)
                for f, s in zip(finals, state):
                    f.append(s)
            x = basic.cat(outs, -1) if dirs == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, [basic.stack(f) for f in finals]

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple[PackedSequence, list[Tensor]]:
        """``forward`` of a ``PackedSequence``: ``hx`` (a list of stacked states, or None) is given in the batch's
        own order, permuted by ``sorted_indices``; the final states come back in that order."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        sizes = [int(b) for b in batch_sizes.tolist()]
        dirs = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            sizes_of = [self._real_hidden()] + ([self.hidden_size] if self.mode == "LSTM" else [])
            hx = [functional.zeros(dirs, sizes[0], n, dtype=data.dtype) for n in sizes_of]
        elif sorted_indices is not None:
            hx = [h.index_select(1, sorted_indices) for h in hx]
        w = self._flat_weights[0]
        if data.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({data.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({data.dtype})")
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        if self.input_size != data.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{data.size(-1)}")
        expected = [(dirs, sizes[0], self._real_hidden()), (dirs, sizes[0], self.hidden_size)]
        for k, h in enumerate(hx):
            msg = (f"Expected hidden[{k}] size {{}}, got {{}}"
                   if self.mode == "LSTM" else "Expected hidden size {}, got {}")
            self.check_hidden_size(h, expected[k], msg)
        if (self.mode == "LSTM" and self.proj_size == 0 and data.dtype == dtypes.float32
                and len(set(sizes)) == 1):
            # torch's float32 LSTM takes a packed batch of equal lengths through oneDNN as a padded one
            out, finals = self._run(data.view(len(sizes), sizes[0], -1), list(hx), batch_first=False)
            out = out.view(-1, out.size(-1))
        else:
            out, finals = self._run_packed(data, sizes, list(hx))
        if unsorted_indices is not None:
            finals = [f.index_select(1, unsorted_indices) for f in finals]
        return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), finals

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


class _SingleState(RNNBase):
    """``RNN`` and ``GRU``: one hidden state."""

    _label = ""

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
        """``(output, h_n)``: the last layer's hidden states at every step and every layer's final one."""
        if isinstance(input, PackedSequence):
            packed, (h,) = self._forward_packed(input, None if hx is None else [hx])
            return packed, h
        input, batched = self._prepare(input, hx, self._label)  # noqa: A001
        if hx is not None:
            if batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            if not batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros(input, self.hidden_size)
        self.check_input(input)
        self.check_hidden_size(hx, self.get_expected_hidden_size(input))
        out, (h,) = self._run(input, [hx])
        if not batched:
            out = out.squeeze(0 if self.batch_first else 1)
            h = h.squeeze(1)
        return out, h


class RNN(_SingleState):
    """An Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``nonlinearity='relu'``: relu)."""

    _label = "RNN"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class GRU(_SingleState):
    """A gated recurrent unit network (gates r, z, n as torch: ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``)."""

    _label = "GRU"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """A long short-term memory network (gates i, f, g, o; ``proj_size``: h projected by ``weight_hr``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Any = None) -> tuple[int, int, int]:  # noqa: A002
        """``(num_layers * num_directions, batch, hidden_size)``."""
        batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)

    def forward(self, input: Tensor,  # noqa: A002
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """``(output, (h_n, c_n))``."""
        if isinstance(input, PackedSequence):
            packed, (h, c) = self._forward_packed(input, None if hx is None else list(hx))
            return packed, (h, c)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        input, batched = self._prepare(input, hx, "LSTM")  # noqa: A001
        if hx is None:
            hx = (self._zeros(input, self._real_hidden()), self._zeros(input, self.hidden_size))
        elif batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_input(input)
        self.check_hidden_size(hx[0], self.get_expected_hidden_size(input), "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hx[1], self.get_expected_cell_size(input), "Expected hidden[1] size {}, got {}")
        out, (h, c) = self._run(input, [hx[0], hx[1]])
        if not batched:
            out = out.squeeze(0 if self.batch_first else 1)
            h, c = h.squeeze(1), c.squeeze(1)
        return out, (h, c)


class RNNCellBase(Module):
    """One step of a recurrent cell: ``weight_ih`` (chunks * hidden, input), ``weight_hh``, ``bias_ih``,
    ``bias_hh``."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(functional.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(functional.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(functional.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(functional.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Every parameter ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batch(self, name: str, input: Tensor, hx: Any) -> tuple[Tensor, bool]:  # noqa: A002
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        return (input if batched else input.unsqueeze(0)), batched

    def _zeros(self, input: Tensor) -> Tensor:  # noqa: A002
        return functional.zeros(input.size(0), self.hidden_size, dtype=input.dtype)

    def _check_sizes(self, input: Tensor, hs: tuple[Tensor, ...]) -> None:  # noqa: A002
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for k, h in enumerate(hs):
            if h.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} batch size "
                                   f"{h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}")


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``nonlinearity='relu'``: relu)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        """The next hidden state."""
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, batched = self._batch("RNNCell", input, hx)  # noqa: A001
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_sizes(input, (hx,))
        act = F.tanh if self.nonlinearity == "tanh" else F.relu
        (h,) = _rnn_step(act)(F.linear(input, self.weight_ih, self.bias_ih), (hx,), self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c')`` from ``(h, c)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
        """The next ``(h, c)``."""
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        input, batched = self._batch("LSTMCell", input, hx)  # noqa: A001
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_sizes(input, tuple(hx))
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), tuple(hx), self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        """The next hidden state."""
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, batched = self._batch("GRUCell", input, hx)  # noqa: A001
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        self._check_sizes(input, (hx,))
        (h,) = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), (hx,), self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)
