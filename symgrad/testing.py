"""``torch.testing``: ``assert_close`` with torch's per-dtype default tolerances and its mismatch messages
(tensors, Python numbers, and sequences / mappings of them)."""
from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from .core import dtypes
from .eager.base import TensorBase
from .eager.functional import as_tensor

__all__ = ["assert_close", "assert_allclose"]

#: torch's ``_DTYPE_PRECISIONS``: dtype -> (rtol, atol); other dtypes compare exactly
_PRECISIONS = {dtypes.float16: (0.001, 1e-05), dtypes.float32: (1.3e-06, 1e-05), dtypes.float64: (1e-07, 1e-07)}


def _mismatch(ident: str, extra: str | None, abs_diff: Any, abs_idx: Any, atol: float, rel_diff: Any,
              rel_idx: Any, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind: str, diff: Any, idx: Any, tol: float) -> str:
        msg = f"{kind.title()} difference: {diff}" if idx is None else \
            f"Greatest {kind} difference: {diff} at index {idx}"
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{ident} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol) + diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = builtins.abs(actual - expected)
    rel_diff = builtins.float("inf") if expected == 0 else abs_diff / builtins.abs(expected)
    return _mismatch("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None, rtol)


def _first_max(a: np.ndarray) -> int:
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, np.bool_)
    return builtins.int(np.argmax(nan)) if nan.any() else builtins.int(np.argmax(a))


def _tensor_msg(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float, atol: float) -> str:
    n = matches.size
    bad = n - builtins.int(matches.sum())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    af, ef, mf = a.ravel(), e.ravel(), matches.ravel()
    if a.dtype.kind != "f":
        af, ef = af.astype(np.int64), ef.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        abs_diff = np.abs(af - ef)
        abs_diff[mf] = 0
        rel_diff = abs_diff / np.abs(ef)
        if a.dtype.kind != "f":  # an integer true division gives the default float dtype, as torch's
            fl = dtypes.get_default_dtype().np
            rel_diff = abs_diff.astype(fl) / np.abs(ef).astype(fl)
        rel_diff[mf] = 0
    ia, ir = _first_max(abs_diff), _first_max(rel_diff)
    return _mismatch("Tensor-likes", extra, abs_diff[ia].item(), _idx(np.unravel_index(ia, a.shape)), atol,
                     rel_diff[ir].item(), _idx(np.unravel_index(ir, a.shape)), rtol)


def _idx(t: tuple) -> tuple[int, ...]:
    return tuple(builtins.int(v) for v in t)


def _compare_tensors(actual: TensorBase, expected: TensorBase, rtol: float | None, atol: float | None,
                     equal_nan: builtins.bool, check_dtype: builtins.bool) -> str | None:
    if tuple(actual.shape) != tuple(expected.shape):
        return f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}."
    if actual.dtype != expected.dtype:
        if check_dtype:
            return f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}."
    if rtol is None or atol is None:
        pa, pe = _PRECISIONS.get(actual.dtype, (0.0, 0.0)), _PRECISIONS.get(expected.dtype, (0.0, 0.0))
        rtol, atol = builtins.max(pa[0], pe[0]), builtins.max(pa[1], pe[1])
    common = dtypes.promote_types(actual.dtype, expected.dtype).np
    a = np.asarray(actual.detach()._data).astype(common)
    e = np.asarray(expected.detach()._data).astype(common)
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            matches = a == e
            fin = np.isfinite(a) & np.isfinite(e)
            close = np.abs(a - e) <= a.dtype.type(atol) + a.dtype.type(rtol) * np.abs(e)
            matches = matches | (fin & close)
            if equal_nan:
                matches = matches | (np.isnan(a) & np.isnan(e))
    else:
        matches = a == e if rtol == 0 and atol == 0 else \
            np.abs(a.astype(np.float64) - e.astype(np.float64)) <= atol + rtol * np.abs(e.astype(np.float64))
    if matches.all():
        return None
    if a.ndim == 0:
        return _scalar_msg(a.item(), e.item(), rtol, atol)
    return _tensor_msg(a, e, matches, rtol, atol)


def _compare(actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: builtins.bool,
             check_dtype: builtins.bool) -> tuple[type, str] | None:
    number = (builtins.bool, builtins.int, builtins.float)
    if isinstance(actual, TensorBase) and isinstance(expected, TensorBase):
        msg = _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype)
        return None if msg is None else (AssertionError, msg)
    if isinstance(actual, number) and isinstance(expected, number):
        if check_dtype and type(actual) is not type(expected):
            return AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}."
        if rtol is None:
            rtol, atol = (1e-07, 1e-07) if isinstance(actual, builtins.float) or isinstance(expected, builtins.float) \
                else (0.0, 0.0)
        a, e = builtins.float(actual), builtins.float(expected)
        if a == e or (equal_nan and a != a and e != e) or builtins.abs(a - e) <= atol + rtol * builtins.abs(e):
            return None
        return AssertionError, _scalar_msg(actual, expected, rtol, atol)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            return AssertionError, (f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                                    f"{sorted(set(expected) - set(actual))}\nExtra keys in the actual mapping: "
                                    f"{sorted(set(actual) - set(expected))}")
        for key in actual:
            r = _compare(actual[key], expected[key], rtol, atol, equal_nan, check_dtype)
            if r is not None:
                return r[0], f"{r[1]}\n\nThe failure occurred for item [{key!r}]"
        return None
    seq = (Sequence,)
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            return AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
        for k, (x, y) in enumerate(zip(actual, expected)):
            r = _compare(x, y, rtol, atol, equal_nan, check_dtype)
            if r is not None:
                return r[0], f"{r[1]}\n\nThe failure occurred for item [{k}]"
        return None
    return TypeError, (f"No comparison pair was able to handle inputs of type {_type_name(actual)} and "
                       f"{_type_name(expected)}.")


def _type_name(x: Any) -> str:
    return "<class 'torch.Tensor'>" if isinstance(x, TensorBase) else str(type(x))


def assert_close(actual: Any, expected: Any, *, allow_subclasses: builtins.bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: builtins.bool = False, check_device: builtins.bool = True,
                 check_dtype: builtins.bool = True, check_layout: builtins.bool = True,
                 check_stride: builtins.bool = False, msg: str | Callable[[str], str] | None = None) -> None:
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close (``|a - e| <= atol + rtol * |e|``),
    with torch's default tolerances per dtype and its mismatch message."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    r = _compare(actual, expected, rtol, atol, equal_nan, check_dtype)
    if r is None:
        return
    kind, text = r
    if kind is AssertionError and msg is not None:
        text = msg(text) if callable(msg) else msg
    raise kind(text)


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: builtins.bool = True, msg: str = "") -> None:
    """torch's deprecated ``assert_allclose``: ``assert_close`` without the dtype check, NaNs equal."""
    if not isinstance(actual, TensorBase):
        actual = _as_tensor(actual)
    if not isinstance(expected, TensorBase):
        expected = _as_tensor(expected, actual)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)


def _as_tensor(x: Any, like: TensorBase | None = None) -> Any:
    return as_tensor(x, dtype=None if like is None else like.dtype)
