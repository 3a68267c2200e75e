"""Tensor printing: torch-identical ``repr``/``str`` strings and the print options."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "PrintOptions",
    "get_printoptions",
    "printoptions",
    "set_printoptions",
    "tensor_repr",
]


@dataclasses.dataclass
class PrintOptions:
    """Tensor print options: the fields and defaults of ``torch.set_printoptions``."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


# The process-wide options used when ``tensor_repr`` is not given any.
_OPTIONS = PrintOptions()

# profile name -> (precision, threshold, edgeitems, linewidth), as in torch.
_PROFILES: dict[str, tuple[int, float, int, int]] = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}

# Dtypes never named in a non-empty tensor's repr (besides the default float dtype).
_IMPLICIT_DTYPES = frozenset({"int64", "bool"})


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set the global print options, exactly like ``torch.set_printoptions``.

    ``profile`` ("default", "short" or "full") is applied first and the other non-None
    arguments override it; ``sci_mode`` is always assigned (None: chosen automatically).
    An unknown profile name is ignored, as torch does.
    """
    if profile is not None and profile in _PROFILES:
        (
            _OPTIONS.precision,
            _OPTIONS.threshold,
            _OPTIONS.edgeitems,
            _OPTIONS.linewidth,
        ) = _PROFILES[profile]
    if precision is not None:
        _OPTIONS.precision = precision
    if threshold is not None:
        _OPTIONS.threshold = threshold
    if edgeitems is not None:
        _OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTIONS.linewidth = linewidth
    _OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current global print options, as a dict ``set_printoptions`` accepts."""
    return dataclasses.asdict(_OPTIONS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Context manager that temporarily applies ``set_printoptions(**kwargs)``."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Picks the element style (int/fixed/scientific) and the common element width."""

    def __init__(self, values: np.ndarray, opts: PrintOptions) -> None:
        self.floating = values.dtype.kind == "f"
        self.precision = opts.precision
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if values.size == 0:
            return
        if not self.floating:
            if values.dtype.kind == "b":
                self.width = 5 if not values.all() else 4
            else:
                lengths = (len(str(int(values.min()))), len(str(int(values.max()))))
                self.width = max(self.width, *lengths)
            return

        finite = values[np.isfinite(values) & (values != 0)]
        if finite.size == 0:
            return
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        magnitudes = np.abs(finite)
        smallest = float(magnitudes.min())
        largest = float(magnitudes.max())
        if opts.sci_mode is None:
            self.sci_mode = (
                largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
            )
        else:
            self.sci_mode = opts.sci_mode

        # Decimal rounding is monotonic, so the widest string comes from an extreme
        # value of either sign (an 'e' exponent is longest at either end of the range).
        candidates: list[float] = []
        for part in (finite[finite > 0], finite[finite < 0]):
            if part.size:
                candidates += [float(part.min()), float(part.max())]
        if self.sci_mode:
            lengths = [len(f"{v:.{self.precision}e}") for v in candidates]
        elif self.int_mode:
            # the trailing "." that marks a float is counted too
            lengths = [len(f"{v:.0f}") + 1 for v in candidates]
        else:
            lengths = [len(f"{v:.{self.precision}f}") for v in candidates]
        self.width = max(self.width, *lengths)

    def format(self, value: Any) -> str:
        """One element (a Python scalar) right-aligned to the common width."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{self.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{self.precision}f}"
        return text.rjust(self.width)


def _summarized(data: np.ndarray, edgeitems: int) -> np.ndarray:
    """The elements a summarised print shows, flattened (they decide the format)."""
    if data.ndim == 0:
        return data.reshape(-1)
    if edgeitems == 0:
        # every row prints as "..." then, so no element decides anything
        return data.reshape(-1)[:0]
    for axis, size in enumerate(data.shape):
        if size > 2 * edgeitems:
            keep = np.r_[0:edgeitems, size - edgeitems : size]
            data = np.take(data, keep, axis=axis)
    return data.reshape(-1)


def _vector_str(
    data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter, opts: PrintOptions
) -> str:
    element_length = fmt.width + 2  # ", " between elements
    per_line = max(1, math.floor((opts.linewidth - indent) / element_length))
    edge = opts.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and data.shape[0] > 2 * edge:
        items = (
            [fmt.format(v) for v in data[:edge].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in data[-edge:].tolist()]
        )
    else:
        items = [fmt.format(v) for v in data.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(
    data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter, opts: PrintOptions
) -> str:
    if data.ndim == 0:
        return fmt.format(data.item())
    if data.ndim == 1:
        return _vector_str(data, indent, summarize, fmt, opts)
    edge = opts.edgeitems
    size = data.shape[0]
    if summarize and size > 2 * edge:
        parts = (
            [
                _nested_str(data[i], indent + 1, summarize, fmt, opts)
                for i in range(edge)
            ]
            + ["..."]
            + [
                _nested_str(data[i], indent + 1, summarize, fmt, opts)
                for i in range(size - edge, size)
            ]
        )
    else:
        parts = [_nested_str(row, indent + 1, summarize, fmt, opts) for row in data]
    separator = "," + "\n" * (data.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def _body_str(data: np.ndarray, indent: int, opts: PrintOptions) -> str:
    summarize = data.size > opts.threshold
    shown = _summarized(data, opts.edgeitems) if summarize else data.reshape(-1)
    fmt = _Formatter(shown, opts)
    return _nested_str(data, indent, summarize, fmt, opts)


def _add_suffixes(text: str, suffixes: list[str], indent: int, linewidth: int) -> str:
    pieces = [text]
    # torch's measure of the last line (its length + 2 when it is the only line)
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            last_line_len += len(suffix) + 2
    pieces.append(")")
    return "".join(pieces)


def tensor_repr(
    data: np.ndarray,
    *,
    dtype_name: str,
    is_default_dtype: bool,
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    options: PrintOptions | None = None,
) -> str:
    """What torch's ``repr(tensor)`` (= ``str(tensor)``) gives for a tensor of ``data``.

    ``dtype_name`` is torch's dtype name without ``torch.`` (e.g. ``"float64"``);
    ``is_default_dtype`` says whether the dtype equals the current default float dtype.
    ``requires_grad=True`` is printed only when ``grad_fn_name`` is None; otherwise
    ``grad_fn=<grad_fn_name>`` is. ``options`` defaults to the global print options.
    """
    opts = _OPTIONS if options is None else options
    array = np.asarray(data)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot format a tensor of numpy dtype {array.dtype}")
    dtype_text = "dtype=torch." + dtype_name.removeprefix("torch.")
    prefix = "tensor("
    indent = len(prefix)
    suffixes: list[str] = []
    if array.size == 0:
        # torch shows the shape unless it is (0,), and the dtype unless it is the
        # default float dtype (an empty tensor gives no hint that it holds int64 or
        # bool)
        if array.ndim != 1:
            suffixes.append(f"size={tuple(array.shape)}")
        if not is_default_dtype:
            suffixes.append(dtype_text)
        body = "[]"
    else:
        if not opts.edgeitems:
            suffixes.append(f"size={tuple(array.shape)}")
        if not (
            is_default_dtype or dtype_name.removeprefix("torch.") in _IMPLICIT_DTYPES
        ):
            suffixes.append(dtype_text)
        body = _body_str(array, indent, opts)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, opts.linewidth)
