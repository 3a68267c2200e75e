"""torch 2.13's creation ranges, element for element, as numpy arrays.

    ``arange(start, end=None, step=1, dtype=None, num_threads=None)``   ``torch.arange``
    ``linspace(start, end, steps, dtype=None)``                         ``torch.linspace``
    ``logspace(start, end, steps, base=10.0, dtype=None)``              ``torch.logspace``
    ``range_(start, end, step=1, dtype=None)``                          ``torch.range`` (deprecated, inclusive)

``start``/``end``/``step`` are Python (or numpy) numbers; an int is an integral Scalar to torch, a float a
floating one. ``dtype=None`` follows torch: ``arange`` gives int64 for all-integral arguments, the others (and
``arange`` with any float) give float32, torch's default dtype. Errors are torch's (type and message).

How torch computes the elements (and so how this module does):

* ``arange``: the length is ``ceil((end - start) / step)`` in double (int64 output: integer ceil-division on
  the arguments truncated to int64). Elements are ``start + step*i`` in the accumulate type (double for
  float32/float64, float for float16, int64 for integers, wrapping on the cast down), but torch's kernel is
  vectorised: inside each ``parallel_for`` chunk (GRAIN_SIZE 32768, split over the intra-op threads) blocks of
  two 256-bit vectors take ``base = start + step*i`` rounded to the dtype and then ``base + k*step`` per lane;
  only each chunk's tail uses the scalar formula. On AVX2/AVX512 builds both multiply-adds are fused.
  Large float ranges therefore depend on the thread count: ``num_threads`` (default
  :func:`get_num_threads`, the physical cores torch would use; :func:`set_num_threads` changes it).
* ``linspace``: ``step = (end - start) / (steps - 1)`` in the dtype (double for integer dtypes), elements
  ``start + step*i`` below ``steps // 2`` and ``end - step*(steps - 1 - i)`` from there on (fused on AVX2/AVX512).
* ``logspace``: ``pow(base, start + step*i)`` in double with the same halfway split (glibc's ``pow``).
* ``range_``: ``size = trunc((end - start) / step) + 1`` in the accumulate type, elements ``start + i*step``.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from typing import Any

import numpy as np

from symgrad.core.rng import _fma32, _fma64_numpy, _kernels, _paths

__all__ = ["arange", "get_num_threads", "linspace", "logspace", "range_", "set_num_threads"]

_GRAIN = 32768
_VEC_BYTES = 32  # torch runs this kernel with 256-bit vectors (the AVX2 kernel, also on AVX512 hosts)
_INT64_MAX = (1 << 63) - 1
_FLOATS = ("float16", "float32", "float64")
_INTS = ("int8", "int16", "int32", "int64", "uint8")
_TORCH_NAMES = {
    "float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "int16": "Short", "int32": "Int",
    "int64": "Long", "uint8": "Byte", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip
# the type names c10::Scalar::to<T>() reports when a value overflows T
_CONVERT_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double", "int8": "int8_t", "int16": "int16_t",
                  "int32": "int", "int64": "int64_t", "uint8": "uint8_t"}  # fmt: skip

_num_threads: int | None = None


@functools.lru_cache(maxsize=1)
def _physical_cores() -> int:
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1
    cores: set[tuple[str, str]] = set()
    try:
        info: dict[str, str] = {}
        blocks: dict[int, tuple[str, str]] = {}
        with open("/proc/cpuinfo") as fh:
            for line in list(fh) + [""]:
                if not line.strip():
                    if "processor" in info:
                        core = (info.get("physical id", "0"), info.get("core id", info["processor"]))
                        blocks[int(info["processor"])] = core
                    info = {}
                    continue
                k, _, v = line.partition(":")
                info[k.strip()] = v.strip()
        cores = {blocks[c] for c in cpus if c in blocks}
    except (OSError, ValueError):
        pass
    return max(1, len(cores) or len(cpus))


def get_num_threads() -> int:
    """Intra-op threads torch would split large ranges over (``$OMP_NUM_THREADS`` or the physical cores)."""
    if _num_threads is not None:
        return _num_threads
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return _physical_cores()


def set_num_threads(n: int | None) -> None:
    """Set the thread count used to reproduce torch's chunking (``None``: back to the default)."""
    global _num_threads
    _num_threads = None if n is None else max(1, int(n))


# ------------------------------------------------------------------------------------------- scalars


def _is_integral(x: Any) -> bool:
    return isinstance(x, (bool, int, np.integer, np.bool_))


def _num(x: Any) -> int | float:
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x)
    raise TypeError(f"expected a real number, got {type(x).__name__}")


def _dtype(dtype: Any, kernel: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.name not in _FLOATS + _INTS:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TORCH_NAMES.get(dt.name, dt.name)}\'')
    return dt


def _overflow(dt_name: str) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {_CONVERT_NAMES[dt_name]} without overflow")


def _to(x: int | float, dt_name: str) -> int | float:
    """``c10::Scalar::to<T>()``: checked conversion (raises torch's overflow error), truncating floats to ints."""
    if dt_name in _FLOATS:
        if isinstance(x, int):
            x = float(x)
        if math.isinf(x) or math.isnan(x):
            return x
        lim = float(np.finfo(dt_name).max)
        if x < -lim or x > lim:
            raise _overflow(dt_name)
        if dt_name == "float64":
            return x
        return float(np.array(x).astype(np.float32).astype(_np_float(dt_name)))  # c10::Half converts via float
    ii = np.iinfo(dt_name)
    lo, hi = int(ii.min), int(ii.max)
    if isinstance(x, float):
        # c10's check compares against the limits converted to double (so 2**63 passes for int64)
        if math.isnan(x) or math.isinf(x) or x < float(lo) or x > float(hi):
            raise _overflow(dt_name)
        if x >= 2.0**63:  # == 2**63 is in range for the check but not for the cast; x86 gives INT64_MIN
            return -(1 << 63)
        v = int(x)  # truncation toward zero
    else:
        v = x
        if dt_name == "uint8":
            if v > hi or (v < 0 and -v > hi):
                raise _overflow(dt_name)
        elif v < lo or v > hi:
            raise _overflow(dt_name)
    if dt_name == "uint8":
        return v & 0xFF
    return v


def _np_float(name: str) -> Any:
    return {"float16": np.float16, "float32": np.float32, "float64": np.float64}[name]


def _wrap_int(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    """int64 (two's complement) values cast down to ``dt`` like C++'s static_cast (wraps)."""
    return v.astype(np.int64).astype(dt)


def _double_to(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    """static_cast<scalar_t>(double) as compiled for x86: floats round (half via float), ints truncate via
    cvttsd2si (64-bit for int64, 32-bit then wrap for narrower types)."""
    if dt.name == "float16":
        return v.astype(np.float32).astype(np.float16)
    if dt.name in _FLOATS:
        return v.astype(dt)
    with np.errstate(invalid="ignore"):
        if dt.name == "int64":
            return v.astype(np.int64)
        return v.astype(np.int32).astype(dt)


def _fmt(x: int | float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _check_bounds(start: int | float, end: int | float, step: int | float) -> None:
    ds, de, dst = float(start), float(end), float(step)
    if not (dst > 0 or dst < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(ds) and math.isfinite(de)):
        raise RuntimeError(f"unsupported range: {_fmt(ds)} -> {_fmt(de)}")
    if not ((dst > 0 and de >= ds) or (dst < 0 and de <= ds)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def _wrap64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _fma(a: np.ndarray, b: Any, c: Any, name: str) -> np.ndarray:
    """Fused a*b + c in float32 or float64 (exact)."""
    if name == "float32":
        return _fma32(a, b, c)
    return _fma64_numpy(a, b, c)


# ------------------------------------------------------------------------------------------- arange


def arange(
    start: Any, end: Any = None, step: Any = 1, dtype: Any = None, num_threads: int | None = None
) -> np.ndarray:
    """``torch.arange(start, end, step, dtype=dtype)`` (``arange(end)`` when ``end`` is None)."""
    if end is None:
        start, end = 0, start
    integral = _is_integral(start) and _is_integral(end) and _is_integral(step)
    s, e, st = _num(start), _num(end), _num(step)
    if dtype is None:
        dtype = np.int64 if integral else np.float32
    dt = _dtype(dtype, "arange_cpu")
    name = dt.name
    _check_bounds(s, e, st)
    if name == "int64":
        xs, xe, xst = (_to(v, "int64") for v in (s, e, st))
        if xst == 0:
            raise ValueError("step must be nonzero")
        sgn = (xst > 0) - (xst < 0)
        num = _wrap64(_wrap64(xe - xs) + xst - sgn)
        q = abs(num) // abs(xst)
        size_d = float(q if (num >= 0) == (xst > 0) else -q)  # C++ integer division truncates toward zero
    else:
        with np.errstate(all="ignore"):
            size_d = _ceil_div(float(s), float(e), float(st))
    if not (size_d >= 0 and size_d <= float(_INT64_MAX)):
        raise RuntimeError("invalid size, possible overflow?")
    n = int(size_d)
    if name in _INTS:
        xs = _to(s, "int64")
        xst = _to(st, "int64")
        if n == 0:
            return np.empty(0, dt)
        idx = np.arange(n, dtype=np.int64)
        with np.errstate(over="ignore"):
            vals = np.int64(xs) + np.int64(xst) * idx  # wraps like int64 arithmetic
        return _wrap_int(vals, dt)
    acc = "float32" if name == "float16" else "float64"
    xs = float(_to(s, acc))
    xst = float(_to(st, acc))
    if n == 0:
        return np.empty(0, dt)
    return _arange_float(xs, xst, n, dt, get_num_threads() if num_threads is None else int(num_threads))


def _ceil_div(s: float, e: float, st: float) -> float:
    q = (e - s) / st
    return math.ceil(q) if math.isfinite(q) else q


_EXACT = {"float16": (11, 24), "float32": (24, 149), "float64": (53, 1022)}  # (significand bits, 2**-k floor)


def _arange_exact(start: float, step: float, n: int, dt: np.dtype) -> np.ndarray | None:
    """The elements when every ``start + step*i`` is exactly representable in ``dt``, else None.

    Then each formula torch's kernel uses (scalar, vector lanes off a rounded base, fused or not) yields the
    exact value, so plain integer arithmetic reproduces it. Covers integer-valued and short dyadic steps.
    """
    if not (math.isfinite(start) and math.isfinite(step)):
        return None
    digits, min_exp = _EXACT[dt.name]
    ps, qs = start.as_integer_ratio()
    pt, qt = step.as_integer_ratio()
    q = max(qs, qt)  # both powers of two
    if q > 1 << min_exp:
        return None
    a, b = ps * (q // qs), pt * (q // qt)
    if max(abs(a), abs(a + b * (n - 1))) >= 1 << digits:
        return None
    k = a + b * np.arange(n, dtype=np.int64)
    return (k.astype(np.float64) / float(q)).astype(dt)


def _arange_float(start: float, step: float, n: int, dt: np.dtype, threads: int) -> np.ndarray:
    exact = _arange_exact(start, step, n, dt)
    if exact is not None:
        return exact
    fused = _paths()[1]
    acc = np.float32 if dt.name == "float16" else np.float64
    accn = "float32" if dt.name == "float16" else "float64"
    a_start, a_step = acc(start), acc(step)
    lanes = _VEC_BYTES // dt.itemsize
    block = 2 * lanes
    # which elements are vector lanes: per parallel_for chunk, whole 2-vector blocks from the chunk start
    nt = max(1, min(threads, -(-n // _GRAIN)))
    chunk = -(-n // nt)
    idx = np.arange(n, dtype=np.int64)
    pos = idx % chunk  # position inside its chunk
    cend = np.minimum((idx // chunk + 1) * chunk, n)
    csize = cend - (idx - pos)
    in_vec = pos < (csize // block) * block
    lane = pos % lanes

    def mul_add(i: np.ndarray) -> np.ndarray:  # start + step*i in the accumulate type
        fi = i.astype(acc)
        with np.errstate(over="ignore", invalid="ignore"):
            if fused:
                return _fma(fi, a_step, a_start, accn)
            return fi * a_step + a_start

    out = np.empty(n, dt)
    with np.errstate(over="ignore", invalid="ignore"):
        scal = ~in_vec
        if scal.any():
            out[scal] = _cast(mul_add(idx[scal]), dt)
        if in_vec.any():
            vi = idx[in_vec]
            base = _cast(mul_add(vi - lane[in_vec]), dt).astype(acc)  # Vectorized::arange(base, step) lanes
            ln = lane[in_vec].astype(acc)
            lanes_v = _fma(ln, a_step, base, accn) if fused else ln * a_step + base
            out[in_vec] = _cast(lanes_v, dt)
    return out


def _cast(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return v.astype(dt)


# ------------------------------------------------------------------------------------------- linspace / logspace


def _steps(steps: Any) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"steps must be an int, got {type(steps).__name__}")
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return steps


def linspace(start: Any, end: Any, steps: int, dtype: Any = None) -> np.ndarray:
    """``torch.linspace(start, end, steps, dtype=dtype)``."""
    steps = _steps(steps)
    dt = _dtype(np.float32 if dtype is None else dtype, "linspace_cpu")
    s, e = _num(start), _num(end)
    name = dt.name
    if steps == 0:
        return np.empty(0, dt)
    if steps == 1:
        return np.array([_to(s, name)], dtype=np.float64 if name in _FLOATS else np.int64).astype(dt)
    fused = _paths()[1]
    xs, xe = _to(s, name), _to(e, name)
    i = np.arange(steps, dtype=np.int64)
    half = steps // 2
    lo = i < half
    k = (steps - 1 - i).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        if name in _INTS:
            step = (float(xe) - float(xs)) / (steps - 1)
            fs, fe = np.float64(xs), np.float64(xe)
            if fused:
                # the second half is vfnmadd: -(step*k) + end (a NaN step keeps its sign)
                v = np.where(lo, _fma64_numpy(np.float64(step), i.astype(np.float64), fs),
                             _fma64_numpy(-k.astype(np.float64), np.float64(step), fe))  # fmt: skip
            else:
                v = np.where(lo, fs + step * i.astype(np.float64), fe - step * k.astype(np.float64))
            return _double_to(v, dt)
        if name == "float16":
            h = np.float16
            step = h(h(h(xe) - h(xs)) / h(steps - 1))
            a = h(xs) + h(step * i.astype(h))
            b = h(xe) - h(step * k.astype(h))
            return np.where(lo, a, b).astype(dt)
        f = _np_float(name)
        fs, fe = f(xs), f(xe)
        step = f(f(fe - fs) / f(steps - 1))
        if fused:
            a = _fma(i.astype(f), step, fs, name)
            b = _fma(-k.astype(f), step, fe, name)  # vfnmadd: -(step*k) + end (a NaN step keeps its sign)
        else:
            a = fs + step * i.astype(f)
            b = fe - step * k.astype(f)
        return np.where(lo, a, b).astype(dt)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, dtype: Any = None) -> np.ndarray:
    """``torch.logspace(start, end, steps, base, dtype=dtype)``."""
    steps = _steps(steps)
    dt = _dtype(np.float32 if dtype is None else dtype, "logspace_cpu")
    s, e = _num(start), _num(end)
    base = float(base)
    name = dt.name
    if steps == 0:
        return np.empty(0, dt)
    if steps == 1:
        v = _pow(np.array([base]), np.array([float(s)]))
        return np.array([_to(float(v[0]), name)], dtype=np.float64 if name in _FLOATS else np.int64).astype(dt)
    xs, xe = _to(s, name), _to(e, name)
    if name in _FLOATS:
        f = _np_float(name)
        diff = float(f(f(xe) - f(xs)))
        fs, fe = float(f(xs)), float(f(xe))
    else:
        diff = float(xe - xs)
        fs, fe = float(xs), float(xe)
    step = diff / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    with np.errstate(over="ignore", invalid="ignore"):
        expo = np.where(np.arange(steps) < half, fs + step * i, fe - step * (steps - 1 - i))
        return _double_to(_pow(np.full(steps, base), expo), dt)


def _pow(b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """glibc's pow elementwise (numpy's SIMD power differs by an ulp)."""
    k = _kernels()
    if k is not None and hasattr(k, "pow64"):
        out = np.empty_like(x)
        k.pow64(b, x, out)
        return out
    res = []
    for bb, xx in zip(b.tolist(), x.tolist()):
        try:
            res.append(math.pow(bb, xx))
        except OverflowError:
            res.append(math.inf if bb > 0 or float(xx).is_integer() and int(xx) % 2 == 0 else -math.inf)
        except ValueError:
            res.append(math.nan)
    return np.array(res, np.float64)


# ------------------------------------------------------------------------------------------- range


def range_(start: Any, end: Any, step: Any = 1, dtype: Any = None) -> np.ndarray:
    """``torch.range(start, end, step, dtype=dtype)``: deprecated, includes ``end``; warns like torch."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    dt = _dtype(np.float32 if dtype is None else dtype, "range_cpu")
    s, e, st = _num(start), _num(end), _num(step)
    name = dt.name
    if name in _INTS:
        xs, xe, xst = (_to(v, "int64") for v in (s, e, st))
        _check_bounds(s, e, st)
        if xst == 0:
            raise ZeroDivisionError("integer division by zero (torch.range crashes with SIGFPE here)")
        d = _wrap64(xe - xs)
        q = abs(d) // abs(xst)
        n = (q if (d >= 0) == (xst > 0) else -q) + 1
        if n <= 0:
            return np.empty(0, dt)
        with np.errstate(over="ignore"):
            vals = np.int64(xs) + np.arange(n, dtype=np.int64) * np.int64(xst)
        return _wrap_int(vals, dt)
    acc = "float32" if name == "float16" else "float64"
    f = _np_float(acc)
    xs, xe, xst = (f(_to(v, acc)) for v in (s, e, st))
    _check_bounds(s, e, st)
    with np.errstate(all="ignore"):
        size = f(f(f(xe - xs) / xst) + f(1))
    if not math.isfinite(float(size)) or float(size) >= 2.0**63:
        raise RuntimeError("invalid size, possible overflow?")
    n = int(size)
    if n <= 0:
        return np.empty(0, dt)
    with np.errstate(over="ignore", invalid="ignore"):
        vals = xs + np.arange(n, dtype=np.int64).astype(f) * xst
        return vals.astype(dt)
