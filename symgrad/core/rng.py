"""torch's CPU random generator (PyTorch 2.13), bit for bit, as numpy arrays.

Everything here works on numpy arrays and plain Python numbers; nothing imports the rest of symgrad.
Each function takes a :class:`Generator`, fills its result in C (memory) order the way torch's serial CPU
kernels do, and returns a new numpy array whose bits equal torch's for the same generator history.

Engine
    ``Generator(seed=67280421310721)``   ``torch.Generator()`` (same default seed); methods ``manual_seed``,
    ``seed``, ``initial_seed``, ``get_state`` / ``set_state`` (torch's 5056-byte layout), ``clone``, and the
    raw streams ``random_u32(n)`` / ``random_u64(n)`` (``CPUGeneratorImpl::random`` / ``random64``).
    ``default_generator``                ``torch.default_generator`` (seeded non-deterministically at import,
    as torch's is); ``torch.manual_seed(s)`` is ``default_generator.manual_seed(s)``.

Distributions (``shape`` is a tuple or int, ``dtype`` a numpy dtype or name)
    ``uniform(gen, shape, dtype, low=0, high=1)``       ``torch.rand`` / ``rand_like`` / ``Tensor.uniform_``
    ``normal(gen, shape, dtype, mean=0, std=1, contiguous=True)``
                                                        ``torch.randn`` / ``randn_like`` / ``Tensor.normal_``
                                                        / ``torch.normal(mean: float, std: float, size)``;
                                                        ``contiguous=False`` selects the scalar path torch
                                                        takes for non-contiguous tensors (values still
                                                        returned in memory order)
    ``normal_tensor(gen, mean, std)``                   ``torch.normal(mean_tensor, std)`` with a tensor
                                                        mean and/or std (``z*std + mean``, torch's order)
    ``randint(gen, low, high, shape, dtype=int64)``     ``torch.randint(low, high, size)``; torch's
                                                        ``randint(high, size)`` is ``low=0``;
                                                        ``randint_like(t, low, high)`` uses ``t``'s dtype
    ``random_(gen, shape, dtype, from_=None, to=None)`` ``Tensor.random_()`` (dtype default ranges),
                                                        ``random_(to)`` (``from_=0``), ``random_(from, to)``,
                                                        ``random_(from, None)``
    ``randperm(gen, n, dtype=int64)``                   ``torch.randperm``
    ``bernoulli(gen, p, shape=None, dtype=None)``       float ``p``: ``Tensor.bernoulli_(p)`` /
                                                        ``torch.bernoulli(t, p)``; array ``p``:
                                                        ``torch.bernoulli(p)`` / ``Tensor.bernoulli_(p_t)``
    ``dropout_mask(gen, shape, dtype, p)`` / ``dropout(gen, x, p, training=True)``
                                                        ``F.dropout`` on CPU (``mask/(1-p)``, then ``x*mask``);
                                                        feature dropout = ``dropout_mask`` on the noise shape
    ``exponential(gen, shape, dtype, lambd=1)``         ``Tensor.exponential_``
    ``geometric(gen, shape, dtype, p)``                 ``Tensor.geometric_``
    ``cauchy(gen, shape, dtype, median=0, sigma=1)``    ``Tensor.cauchy_``
    ``log_normal(gen, shape, dtype, mean=1, std=2)``    ``Tensor.log_normal_``
    ``multinomial(gen, probs, num_samples, replacement=False)``  ``torch.multinomial``

``*_like`` variants are the same calls with the other tensor's shape and dtype. Empty results consume no
draws in torch, nor here (a cached normal is kept as well). Argument errors are raised with torch's
exception type and message.

Dtypes: float32, float64 and float16 for the real-valued distributions; every integer dtype, bool and the
floats for ``randint``/``random_``/``bernoulli``. bfloat16 has no numpy dtype and is not provided.

CPU paths. torch 2.13 picks kernels by CPU capability (``torch.backends.cpu.get_cpu_capability()``):
``cpu_capability()`` returns ``"avx512"``, ``"avx2"`` or ``"default"`` from ``$SYMGRAD_CPU_CAPABILITY``, else
``$ATEN_CPU_CAPABILITY`` (capped by the hardware, as torch does), else the /proc/cpuinfo flags.  On AVX2 and
AVX512 builds float32 ``normal_`` with >= 16 contiguous elements runs torch's AVX2 Cephes kernel, and the
compiler contracts ``a*b + c`` into fused multiply-adds in the generic kernels (``uniform_`` with a range,
the scalar normal path with mean/std, ``cauchy_``, ``log_normal_``); the ``default`` build does neither.
The 16-wide normal fills (float64, and float32 without AVX2) call ``std::fma`` explicitly on every build.
aarch64 builds are modelled as ``default`` kernels with contraction (GCC contracts there by default); that
combination was not checked against a real aarch64 torch.

MKL. ``bernoulli_(float p)`` and dropout follow torch's non-MKL kernel (one double uniform per element,
``u < p``), which is what torch 2.13 runs on AMD CPUs (checked here) and on builds without MKL. On Intel
CPUs, MKL-enabled torch builds draw from MKL's VSL stream instead (a different mask, not reproduced here);
``exponential_`` may take an MKL path there too. Both were verified on an AMD host only.

Speed: the transcendental steps must be glibc's ``log``/``log1p``/``sin``/``cos``/``tan``/``exp``
(``logf``/``sinf``/``cosf`` for float32) to match torch's bits, and numpy's SIMD versions differ by an ulp, so
those loops are compiled with numba (imported lazily, on first use). Without numba the same results come
from slower pure-Python / numpy code (``SYMGRAD_RNG_NUMBA=0`` forces that path).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import os
import platform
import struct
import types as pytypes
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_SEED",
    "STATE_SIZE",
    "Generator",
    "bernoulli",
    "cauchy",
    "cpu_capability",
    "default_generator",
    "dropout",
    "dropout_mask",
    "exponential",
    "geometric",
    "log_normal",
    "multinomial",
    "normal",
    "normal_tensor",
    "randint",
    "random_",
    "randperm",
    "uniform",
]

#: ``torch.Generator()``'s seed (``default_rng_seed_val``).
DEFAULT_SEED = 67280421310721
#: ``len(torch.Generator().get_state())``.
STATE_SIZE = 5056

_N = 624
_U32 = np.uint32
_U64 = np.uint64
_F32 = np.float32
_F64 = np.float64
_TWO_PI = 2.0 * math.pi  # c10::pi<double> doubled (exact)


# ===================================================================================== CPU capability

_CAP_ORDER = {"default": 0, "avx2": 1, "avx512": 2}


@functools.lru_cache(maxsize=1)
def _hardware_capability() -> str:
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686"):
        return "default"
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "default"
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "fma"} <= flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    return "default"


def cpu_capability() -> str:
    """The CPU capability torch would dispatch to here: ``"avx512"``, ``"avx2"`` or ``"default"``."""
    env = os.environ.get("SYMGRAD_CPU_CAPABILITY", "").strip().lower()
    if env:
        if env not in _CAP_ORDER:
            raise ValueError(f"SYMGRAD_CPU_CAPABILITY must be one of default, avx2, avx512; got {env!r}")
        return env
    hw = _hardware_capability()
    aten = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if aten in _CAP_ORDER and _CAP_ORDER[aten] < _CAP_ORDER[hw]:
        return aten
    return hw


def _paths() -> tuple[bool, bool]:
    """(float32 normal uses the AVX2 kernel, generic kernels are FMA-contracted)."""
    cap = cpu_capability()
    if cap != "default":
        return True, True
    arm = platform.machine().lower() in ("aarch64", "arm64") and not os.environ.get("SYMGRAD_CPU_CAPABILITY")
    return False, arm


# ===================================================================================== the engine


def _temper(y: np.ndarray) -> np.ndarray:
    y = y.astype(_U32)
    y ^= y >> _U32(11)
    y ^= (y << _U32(7)) & _U32(0x9D2C5680)
    y ^= (y << _U32(15)) & _U32(0xEFC60000)
    y ^= y >> _U32(18)
    return y


def _init_genrand(seed32: int) -> np.ndarray:
    key = np.empty(_N, _U32)
    x = seed32
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        key[j] = x
    return key


def _as_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    s = int(seed)
    if s < -(1 << 63) or s >= (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return s & 0xFFFFFFFFFFFFFFFF


class Generator:
    """torch's ``CPUGeneratorImpl``: an MT19937 engine plus the cached double and float normals.

    The u32 stream comes from ``numpy.random.MT19937`` (same recurrence, same tempering); torch's
    ``left``/``next`` bookkeeping is derived from numpy's position so that :meth:`get_state` is
    byte-identical to ``torch.Generator.get_state()`` after the same history.
    """

    __slots__ = ("_bg", "_seed", "_left0", "_next0", "_k", "_pending", "_normal_double", "_normal_float")

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self._bg = np.random.MT19937(0)
        self.manual_seed(seed)

    # ------------------------------------------------------------------ seeding and state

    def manual_seed(self, seed: int) -> Generator:
        """Seed like ``torch.Generator.manual_seed`` (``s`` and ``s + 2**32`` share a stream); returns self."""
        s = _as_seed(seed)
        self._seed = s
        legacy = getattr(self._bg, "_legacy_seeding", None)
        if legacy is not None:
            legacy(s & 0xFFFFFFFF)  # numpy's init_genrand, pos = 624
        else:  # pragma: no cover - numpy without the legacy seeder
            self._bg.state = {"bit_generator": "MT19937", "state": {"key": _init_genrand(s & 0xFFFFFFFF), "pos": _N}}
        self._mark(left=1, next_=0)
        self._normal_double: float | None = None
        self._normal_float: float | None = None
        return self

    def seed(self) -> int:
        """Re-seed from the OS entropy pool (64 bits, like torch) and return the new seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed last set (as an unsigned 64-bit integer, like torch)."""
        return self._seed

    def _mark(self, left: int, next_: int, pending: np.ndarray | None = None) -> None:
        # torch's (left, next) right after seeding / set_state; while fewer than `left` draws have been taken
        # since then, torch still reports left - k, next + k (its array has not twisted yet).
        self._left0 = left
        self._next0 = next_
        self._k = 0
        self._pending = np.empty(0, _U32) if pending is None else pending

    def get_state(self) -> bytes:
        """torch's 5056-byte ``CPUGeneratorImplState`` (``torch.Generator.get_state().numpy().tobytes()``)."""
        st = self._bg.state["state"]
        key, pos = st["key"], int(st["pos"])
        if self._k < self._left0:
            left, nxt = self._left0 - self._k, self._next0 + self._k
        else:
            left, nxt = _N + 1 - pos, pos
        buf = bytearray(STATE_SIZE)
        struct.pack_into("<QiiQ", buf, 0, self._seed, left, 1, nxt)
        buf[24 : 24 + 8 * _N] = np.asarray(key, "<u8").tobytes()
        nd = self._normal_double
        struct.pack_into("<dddi", buf, 24 + 8 * _N, 0.0, 0.0 if nd is None else nd, 0.0, nd is not None)
        nf = self._normal_float
        struct.pack_into("<f?", buf, 24 + 8 * _N + 28, 0.0 if nf is None else nf, nf is not None)
        return bytes(buf)

    def set_state(self, state: bytes | bytearray | np.ndarray) -> Generator:
        """Restore a state from :meth:`get_state` or ``torch.Generator.get_state()`` bytes; returns self."""
        if isinstance(state, np.ndarray):
            if state.dtype != np.uint8:
                raise TypeError("RNG state must be a torch.ByteTensor")
            raw = state.tobytes()
        elif isinstance(state, (bytes, bytearray, memoryview)):
            raw = bytes(state)
        else:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if len(raw) != STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input RNG state size to be "
                f"{len(raw)}"
            )
        seed, left, seeded, nxt = struct.unpack_from("<QiiQ", raw, 0)
        nxt &= 0xFFFFFFFF  # torch keeps next_ as uint32
        if not (seeded != 0 and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(raw, "<u8", _N, 24).astype(_U32)  # torch copies the u64 words into u32 slots
        _, normal_y, _, normal_valid = struct.unpack_from("<dddi", raw, 24 + 8 * _N)
        nf, nf_valid = struct.unpack_from("<f?", raw, 24 + 8 * _N + 28)
        pending = None
        if left == 1 or left + nxt == _N + 1:
            pos = _N if left == 1 else nxt
        else:
            # torch will read state[next .. next+left-2] before its next twist (a state no torch history
            # produces, but set_state accepts it); serve those words first, then twist as usual.
            if nxt + left - 1 > _N:
                raise ValueError("this mt19937 state makes torch read past its state array")
            pending = _temper(key[nxt : nxt + left - 1])
            pos = _N
        self._bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._seed = seed
        self._mark(left, nxt, pending)
        self._normal_double = float(normal_y) if normal_valid else None
        self._normal_float = float(_F32(nf)) if nf_valid else None
        return self

    def clone(self) -> Generator:
        """An independent generator with the same state and seed."""
        g = Generator.__new__(Generator)
        g._bg = np.random.MT19937(0)
        g.set_state(self.get_state())
        return g

    # ------------------------------------------------------------------ raw streams

    def _raw(self, n: int) -> np.ndarray:
        """The next ``n`` u32 outputs, held in a uint64 array (numpy's ``random_raw`` layout)."""
        n = int(n)
        if n <= 0:
            return np.empty(0, _U64)
        self._k += n
        head = self._pending
        if head.size:
            take = min(n, head.size)
            self._pending = head[take:]
            first = head[:take].astype(_U64)
            return first if take == n else np.concatenate([first, self._bg.random_raw(n - take)])
        return self._bg.random_raw(n)

    def random_u32(self, n: int) -> np.ndarray:
        """The next ``n`` outputs of ``CPUGeneratorImpl::random()`` as uint32."""
        return self._raw(n).astype(_U32)

    def random_u64(self, n: int) -> np.ndarray:
        """The next ``n`` outputs of ``random64()``: ``(first << 32) | second`` as uint64."""
        u = self._raw(2 * int(n))
        return (u[0::2] << _U64(32)) | u[1::2]

    def __repr__(self) -> str:
        return f"<symgrad.core.rng.Generator seed={self._seed}>"


default_generator = Generator()
default_generator.seed()


# ===================================================================================== small helpers


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def _numel(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


_TORCH_NAMES = {
    "float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "int16": "Short", "int32": "Int",
    "int64": "Long", "uint8": "Byte", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip
_CPP_NAMES = {
    "float16": "c10::Half", "float32": "float", "float64": "double", "int8": "signed char", "int16": "short int",
    "int32": "int", "int64": "long int", "uint8": "unsigned char", "uint16": "short unsigned int",
    "uint32": "unsigned int", "uint64": "long unsigned int", "bool": "bool",
}  # fmt: skip
_FLOATS = ("float16", "float32", "float64")
_DIGITS = {"float16": 11, "float32": 24, "float64": 53}


def _dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.name not in _TORCH_NAMES:
        raise TypeError(f"unsupported dtype {dt}")
    return dt


def _torch_name(dt: np.dtype) -> str:
    return _TORCH_NAMES.get(dt.name, dt.name)


def _not_implemented(kernel: str, dt: np.dtype) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{_torch_name(dt)}\'')


def _float_dtype(dtype: Any, kernel: str) -> np.dtype:
    dt = _dtype(dtype)
    if dt.name not in _FLOATS:
        raise _not_implemented(kernel, dt)
    return dt


def _g(x: float) -> str:
    """A double as C++'s ``operator<<`` prints it (torch's error messages)."""
    return f"{x:g}"


def _to_dtype(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``static_cast<scalar_t>`` of doubles: c10::Half converts through float."""
    if dt.name == "float16":
        return v.astype(_F32).astype(dt)
    return v.astype(dt)


def _u24(gen: Generator, n: int) -> np.ndarray:
    """``uniform_real_distribution<float>(0, 1)``: 24 random bits times 2**-24, one draw each."""
    raw = gen._raw(n)
    k = _kernels()
    if k is not None and raw.size:
        out = np.empty(raw.size, _F32)
        k.u24_from_raw(raw, out)
        return out
    return (raw.astype(_U32) & _U32(0xFFFFFF)).astype(_F32) * _F32(2.0**-24)


def _u53(gen: Generator, n: int) -> np.ndarray:
    """``uniform_real_distribution<double>(0, 1)``: 53 bits of ``random64()`` times 2**-53, two draws each."""
    raw = gen._raw(2 * int(n))
    k = _kernels()
    if k is not None and raw.size:
        out = np.empty(raw.size // 2, _F64)
        k.u53_from_raw(raw, out)
        return out
    return (((raw[0::2] << _U64(32)) | raw[1::2]) & _U64((1 << 53) - 1)).astype(_F64) * 2.0**-53


# ===================================================================================== exact fused multiply-add


def _fma32(a: Any, b: Any, c: Any) -> np.ndarray:
    """Correctly rounded float32 ``a*b + c`` (one rounding, like ``vfmadd``) with numpy only.

    Proof of exactness.  (1) ``p = a*b`` in float64 is exact: two 24-bit significands give at most 48 bits,
    and float32 magnitudes (2**-149 .. 2**128) keep the product inside float64's normal range.  (2)
    ``s = p + c`` in float64 is rounded once, to 53 bits.  Rounding ``s`` to float32 then gives RN32(p + c)
    unless ``s`` landed exactly on a midpoint between two float32 neighbours while ``p + c`` itself is not
    that midpoint: float32 midpoints are float64 numbers, and RN64 is monotone, so otherwise ``p + c`` and
    ``s`` lie strictly inside the same gap between consecutive midpoints (or are the same midpoint).
    (3) A float64 value in float32's normal range is such a midpoint iff its low 29 significand bits are
    ``1 << 28``; for those few elements the exact error ``(p + c) - s`` comes from TwoSum (exact in float64),
    and moving ``s`` one float64 ulp toward it puts it strictly on the correct side without crossing any
    other float32 boundary (a float64 ulp is 2**-29 of a float32 ulp).  Results below float32's normal range
    are recomputed in exact rational arithmetic.
    """
    a = np.asarray(a, _F32)
    b = np.asarray(b, _F32)
    c = np.asarray(c, _F32)
    p = a.astype(_F64) * b  # exact (float32 operands promoted)
    s = np.asarray(p + c)
    bits = s.view(_U64)
    low = bits & _U64(0x1FFFFFFF)
    sus = (low == _U64(0x10000000)) | ((bits & _U64(0x7FF0000000000000)) < _U64(897 << 52)) & (low != 0)
    if not sus.any():  # (the second test catches nonzero results below float32's normal range)
        return s.astype(_F32)
    shape = s.shape
    s = s.reshape(-1)
    idx = np.flatnonzero(sus)
    P = np.broadcast_to(p, shape).reshape(-1)[idx]
    C = np.broadcast_to(c, shape).reshape(-1)[idx].astype(_F64)
    S = s[idx]
    bb = S - P
    err = (P - (S - bb)) + (C - bb)  # TwoSum: the exact p + c - S
    fixed = np.where(err == 0, S, np.nextafter(S, np.where(err > 0, np.inf, -np.inf)))
    out = s.astype(_F32)
    out[idx] = fixed.astype(_F32)
    tiny = np.abs(S) < 2.0**-126
    if tiny.any():
        A = np.broadcast_to(a, shape).reshape(-1)[idx]
        B = np.broadcast_to(b, shape).reshape(-1)[idx]
        for t in np.flatnonzero(tiny):
            exact = Fraction(float(A[t])) * Fraction(float(B[t])) + Fraction(float(C[t]))
            out[idx[t]] = _round_fraction32(exact)
    return out.reshape(shape)


def _round_fraction32(v: Fraction) -> np.float32:
    """Round an exact rational to the nearest float32 (ties to even)."""
    if v == 0:
        return _F32(0.0)
    lo = _F32(float(v))  # float() of a Fraction is correctly rounded to double; then to float32 (may be off)
    lo_f = Fraction(float(lo))
    if lo_f == v:
        return lo
    other = np.nextafter(lo, _F32(np.inf) if v > lo_f else _F32(-np.inf))
    d1, d2 = abs(v - lo_f), abs(v - Fraction(float(other)))
    if d1 != d2:
        return lo if d1 < d2 else other
    return lo if int(lo.view(_U32)) & 1 == 0 else other


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = 134217729.0 * a  # 2**27 + 1 (Veltkamp)
    hi = t - (t - a)
    return hi, a - hi


def _fma64_numpy(a: Any, b: Any, c: Any) -> np.ndarray:
    """Correctly rounded float64 ``a*b + c`` with numpy only (Boldo & Melquiond's emulated FMA).

    ``uh + ul = a*b`` exactly (Dekker's product), ``th + tl = c + uh`` exactly (TwoSum), ``v`` = ``tl + ul``
    rounded to odd, and ``RN(th + v)`` is the correctly rounded ``a*b + c`` (IEEE Trans. Computers 57(4),
    2008). Elements outside the error-free domain (huge or tiny magnitudes) use exact rationals.
    """
    a, b, c = np.broadcast_arrays(np.asarray(a, _F64), np.asarray(b, _F64), np.asarray(c, _F64))
    with np.errstate(over="ignore", invalid="ignore"):
        uh = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
        th, tl = _two_sum(c, uh)
        v, e = _two_sum(tl, ul)
        odd = (e != 0) & ((v.view(np.int64) & 1) == 0)
        v = np.where(odd, np.nextafter(v, np.where(e > 0, np.inf, -np.inf)), v)
        r = th + v
    bad = (np.abs(a) >= 2.0**995) | (np.abs(b) >= 2.0**995) | ((uh != 0) & (np.abs(uh) < 2.0**-960))
    bad |= ~np.isfinite(r)
    if bad.any():
        r = np.array(r, copy=True)
        for i in zip(*np.nonzero(bad)):
            x, y, z = float(a[i]), float(b[i]), float(c[i])
            if math.isfinite(x) and math.isfinite(y) and math.isfinite(z):
                exact = Fraction(x) * Fraction(y) + Fraction(z)
                try:
                    r[i] = float(exact)  # correctly rounded
                except OverflowError:
                    r[i] = math.inf if exact > 0 else -math.inf
            else:
                r[i] = x * y + z
    return r


def _affine64(v: np.ndarray, std: float, mean: float, fused: bool) -> np.ndarray:
    """``v*std + mean`` in double, fused (one rounding) or as two roundings."""
    if std == 1.0:
        return v + mean  # fma(v, 1, m) == v + m; also turns -0 into +0 as fma does
    if not fused:
        return v * std + mean
    k = _kernels()
    if k is not None:
        out = np.empty_like(v)
        k.affine64(v, float(std), float(mean), out)
        return out
    return _fma64_numpy(v, std, mean)


# ===================================================================================== compiled kernels

# float32 constants of torch's avx_mathfun.h (Cephes), as _mm256_set1_ps stores them
_C_SQRTHF = _F32(0.707106781186547524)
_C_LOG = tuple(
    _F32(v)
    for v in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
              -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
)  # fmt: skip
_C_LP0, _C_LP1, _C_LP2, _C_LP3, _C_LP4, _C_LP5, _C_LP6, _C_LP7, _C_LP8 = _C_LOG
_C_Q1 = _F32(-2.12194440e-4)
_C_Q2 = _F32(0.693359375)
_C_DP1 = _F32(-0.78515625)
_C_DP2 = _F32(-2.4187564849853515625e-4)
_C_DP3 = _F32(-3.77489497744594108e-8)
_C_S0 = _F32(-1.9515295891e-4)
_C_S1 = _F32(8.3321608736e-3)
_C_S2 = _F32(-1.6666654611e-1)
_C_C0 = _F32(2.443315711809948e-005)
_C_C1 = _F32(-1.388731625493765e-003)
_C_C2 = _F32(4.166664568298827e-002)
_C_FOPI = _F32(1.27323954473516)
_F32_ONE = _F32(1.0)
_F32_ZERO = _F32(0.0)
_F32_HALF = _F32(0.5)
_F32_M2 = _F32(-2.0)
_F32_TWO_PI = _F32(_TWO_PI)  # _mm256_set1_ps(2.0f * c10::pi<double>)
_F32_2M24 = _F32(2.0**-24)
_I1, _I2, _I4, _I23, _I127 = (np.int32(v) for v in (1, 2, 4, 23, 127))
_I_INV1 = np.int32(~1)
_I_INV_MANT = np.int32(~0x7F800000)
_I_HALF_EXP = np.int32(0x3F000000)
_U64_M24 = _U64(0xFFFFFF)
_U64_M21 = _U64(0x1FFFFF)

_KERNELS: Any = None  # None: not built yet; False: numba unavailable; else a namespace of compiled kernels


def _kernels() -> Any:
    """numba-compiled kernels, built on first use; ``None`` when numba is missing or disabled."""
    global _KERNELS
    if os.environ.get("SYMGRAD_RNG_NUMBA", "1") == "0":
        return None
    if _KERNELS is None:
        try:
            _KERNELS = _build_kernels()
        except ImportError:
            _KERNELS = False
    return _KERNELS or None


def _build_kernels() -> Any:
    # numba is imported here, lazily, because torch's bits need glibc's own log/log1p/sin/cos/tan/exp (and
    # logf/sinf/cosf) -- numpy's SIMD implementations differ from glibc by an ulp -- and an exact fused
    # multiply-add; numba compiles loops that call the C library and emit llvm.fma, at numpy speed.
    import numba  # deferred: numba (see above)
    from llvmlite import ir  # deferred: numba's code generator
    from numba import types  # deferred: numba
    from numba.extending import intrinsic  # deferred: numba

    @intrinsic
    def fma(typingctx, a, b, c):  # noqa: ARG001 - numba's intrinsic signature
        if not (isinstance(a, types.Float) and a == b and b == c):
            return None

        def codegen(context, builder, sig, args):  # noqa: ARG001
            return builder.fma(args[0], args[1], args[2])

        return a(a, b, c), codegen

    @intrinsic
    def f32_bits(typingctx, x):  # noqa: ARG001
        if x != types.float32:
            return None

        def codegen(context, builder, sig, args):  # noqa: ARG001
            return builder.bitcast(args[0], ir.IntType(32))

        return types.int32(types.float32), codegen

    @intrinsic
    def bits_f32(typingctx, x):  # noqa: ARG001
        if x != types.int32:
            return None

        def codegen(context, builder, sig, args):  # noqa: ARG001
            return builder.bitcast(args[0], ir.FloatType())

        return types.float32(types.int32), codegen

    # The kernels reach the intrinsics as module globals (not closure cells) so numba can cache them on disk.
    globals().update(_nb_fma=fma, _nb_f32_bits=f32_bits, _nb_bits_f32=bits_f32)
    jit = numba.njit(cache=True, nogil=True, error_model="numpy")
    ns = pytypes.SimpleNamespace()

    @jit
    def boxmuller_pairs(u, out):
        # normal_distribution<double>: u1 then u2; r = sqrt(-2 log1p(-u2)); cache r*sin, return r*cos
        for i in range(u.size // 2):
            u1 = u[2 * i]
            u2 = u[2 * i + 1]
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = _TWO_PI * u1
            out[2 * i] = r * math.cos(theta)
            out[2 * i + 1] = r * math.sin(theta)

    @jit
    def affine64(v, std, mean, out):
        for i in range(v.size):
            out[i] = _nb_fma(v[i], std, mean)  # noqa: F821

    @jit
    def fill16_f64(d, mean, std):
        # NormalFill16<double>: 8 Box-Muller pairs per block of 16 uniforms, explicit std::fma
        for b in range(d.size // 16):
            o = 16 * b
            for j in range(8):
                u1 = 1.0 - d[o + j]
                u2 = d[o + j + 8]
                radius = math.sqrt(-2.0 * math.log(u1))
                theta = _TWO_PI * u2
                d[o + j] = _nb_fma(radius * math.cos(theta), std, mean)  # noqa: F821
                d[o + j + 8] = _nb_fma(radius * math.sin(theta), std, mean)  # noqa: F821

    @jit
    def fill16_f32(d, mean, std):
        # NormalFill16<float> without AVX2: logf/cosf/sinf, theta computed in double and rounded
        for b in range(d.size // 16):
            o = 16 * b
            for j in range(8):
                u1 = _F32_ONE - d[o + j]
                u2 = d[o + j + 8]
                radius = math.sqrt(_F32_M2 * math.log(u1))
                theta = np.float32(_TWO_PI * np.float64(u2))
                d[o + j] = _nb_fma(radius * math.cos(theta), std, mean)  # noqa: F821
                d[o + j + 8] = _nb_fma(radius * math.sin(theta), std, mean)  # noqa: F821

    @jit
    def fill16_avx2(d, mean, std):
        # normal_fill_16_AVX2, one lane per j (LLVM vectorises the j loop): log256_ps / sincos256_ps with the
        # FMA contractions GCC applies to avx_mathfun.h; int32 arithmetic and bit operations as the intrinsics
        for b in range(d.size // 16):
            o = 16 * b
            for j in range(8):
                u1 = _F32_ONE - d[o + j]
                u2 = d[o + j + 8]
                # log256_ps(u1); u1 in [2**-24, 1], so the denormal cut-off and the NaN mask are no-ops
                bits = _nb_f32_bits(u1)  # noqa: F821
                e = np.float32(np.int32((bits >> _I23) - _I127)) + _F32_ONE
                x = _nb_bits_f32(np.int32((bits & _I_INV_MANT) | _I_HALF_EXP))  # noqa: F821
                mask = x < _C_SQRTHF
                tmp = x if mask else _F32_ZERO
                x = x - _F32_ONE
                e = e - (_F32_ONE if mask else _F32_ZERO)
                x = x + tmp
                z = x * x
                y = _nb_fma(_C_LP0, x, _C_LP1)  # noqa: F821
                y = _nb_fma(y, x, _C_LP2)  # noqa: F821
                y = _nb_fma(y, x, _C_LP3)  # noqa: F821
                y = _nb_fma(y, x, _C_LP4)  # noqa: F821
                y = _nb_fma(y, x, _C_LP5)  # noqa: F821
                y = _nb_fma(y, x, _C_LP6)  # noqa: F821
                y = _nb_fma(y, x, _C_LP7)  # noqa: F821
                y = _nb_fma(y, x, _C_LP8)  # noqa: F821
                y = y * x
                y = _nb_fma(y, z, e * _C_Q1)  # noqa: F821
                y = _nb_fma(-z, _F32_HALF, y)  # noqa: F821
                lg = _nb_fma(e, _C_Q2, x + y)  # noqa: F821
                radius = np.float32(math.sqrt(_F32_M2 * lg))
                # sincos256_ps(theta); theta >= 0, so the sine's input sign bit is 0
                t = _F32_TWO_PI * u2
                q = np.int32(t * _C_FOPI)  # cvttps: truncation
                q = np.int32((q + _I1) & _I_INV1)
                yy = np.float32(q)
                xx = _nb_fma(yy, _C_DP1, t)  # noqa: F821
                xx = _nb_fma(yy, _C_DP2, xx)  # noqa: F821
                xx = _nb_fma(yy, _C_DP3, xx)  # noqa: F821
                zz = xx * xx
                yc = _nb_fma(_C_C0, zz, _C_C1)  # noqa: F821
                yc = _nb_fma(yc, zz, _C_C2)  # noqa: F821
                yc = yc * zz
                yc = _nb_fma(yc, zz, -(zz * _F32_HALF))  # noqa: F821
                yc = yc + _F32_ONE
                ys = _nb_fma(_C_S0, zz, _C_S1)  # noqa: F821
                ys = _nb_fma(ys, zz, _C_S2)  # noqa: F821
                ys = ys * zz
                ys = _nb_fma(ys, xx, xx)  # noqa: F821
                poly = (q & _I2) == 0
                ysin2 = ys if poly else _F32_ZERO
                ysin1 = _F32_ZERO if poly else yc
                sn = ysin1 + ysin2
                cs = (yc - ysin1) + (ys - ysin2)
                sn = -sn if (q & _I4) != 0 else sn  # xor with the swapped sign bit
                cs = -cs if ((~(q - _I2)) & _I4) != 0 else cs
                d[o + j] = _nb_fma(radius * cs, std, mean)  # noqa: F821
                d[o + j + 8] = _nb_fma(radius * sn, std, mean)  # noqa: F821

    @jit
    def u24_from_raw(raw, out):
        for i in range(raw.size):
            out[i] = np.float32(raw[i] & _U64_M24) * _F32_2M24

    @jit
    def u53_from_raw(raw, out):
        # ((first << 32 | second) & (2**53 - 1)) * 2**-53, exactly
        for i in range(out.size):
            out[i] = (np.float64(raw[2 * i] & _U64_M21) * 4294967296.0 + np.float64(raw[2 * i + 1])) * 2.0**-53

    @jit
    def affine32(x, a, b, out):
        for i in range(x.size):
            out[i] = _nb_fma(x[i], a, b)  # noqa: F821

    @jit
    def libm64(x, op, a, b, fused, out):
        for i in range(x.size):
            v = x[i]
            if op == 0:  # exponential: -1/lambda * log1p(-u)
                out[i] = a * math.log1p(-v)
            elif op == 1:  # geometric: ceil(log(u) / log1p(-p)), a = log1p(-p)
                out[i] = np.ceil(math.log(v) / a)
            elif op == 2:  # cauchy: median + sigma * tan(pi * (u - 0.5)), a = median, b = sigma
                t = math.tan(math.pi * (v - 0.5))
                out[i] = _nb_fma(b, t, a) if fused else a + b * t  # noqa: F821
            else:  # exp (log_normal)
                out[i] = math.exp(v)

    @jit
    def pow64(b, x, out):
        for i in range(x.size):
            out[i] = math.pow(b[i], x[i])

    @jit
    def perm_swap(r, z):
        for i in range(z.size):
            j = i + z[i]
            t = r[i]
            r[i] = r[j]
            r[j] = t

    @jit
    def perm_inside_out(r, z):
        for i in range(z.size):
            j = z[i]
            r[i] = r[j]
            r[j] = i

    for f in (boxmuller_pairs, affine64, affine32, fill16_f64, fill16_f32, fill16_avx2, u24_from_raw, u53_from_raw,
              libm64, pow64, perm_swap, perm_inside_out):  # fmt: skip
        setattr(ns, f.__name__, f)
    return ns


# ---------------------------------------------------------------- pure-Python / numpy fallbacks (no numba)


@functools.lru_cache(maxsize=1)
def _libm() -> Any:
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name in ("logf", "sinf", "cosf"):
        f = getattr(lib, name)
        f.restype = ctypes.c_float
        f.argtypes = [ctypes.c_float]
    return lib


def _py_boxmuller_pairs(u: np.ndarray) -> np.ndarray:
    out = np.empty_like(u)
    for i in range(u.size // 2):
        r = math.sqrt(-2.0 * math.log1p(-float(u[2 * i + 1])))
        theta = _TWO_PI * float(u[2 * i])
        out[2 * i] = r * math.cos(theta)
        out[2 * i + 1] = r * math.sin(theta)
    return out


def _py_fill16_f64(d: np.ndarray, mean: float, std: float) -> None:
    blocks = d.reshape(-1, 16)
    u1 = 1.0 - blocks[:, :8].ravel()
    u2 = blocks[:, 8:].ravel()
    rc = np.empty_like(u1)
    rs = np.empty_like(u1)
    for i in range(u1.size):
        radius = math.sqrt(-2.0 * math.log(float(u1[i])))
        theta = _TWO_PI * float(u2[i])
        rc[i] = radius * math.cos(theta)
        rs[i] = radius * math.sin(theta)
    blocks[:, :8] = _fma64_numpy(rc, std, mean).reshape(-1, 8)
    blocks[:, 8:] = _fma64_numpy(rs, std, mean).reshape(-1, 8)


def _py_fill16_f32(d: np.ndarray, mean: np.float32, std: np.float32) -> None:
    lib = _libm()
    blocks = d.reshape(-1, 16)
    u1 = _F32_ONE - blocks[:, :8].ravel()
    u2 = blocks[:, 8:].ravel()
    lg = np.array([lib.logf(float(v)) for v in u1], _F32)
    radius = np.sqrt(_F32_M2 * lg)
    theta = (_TWO_PI * u2.astype(_F64)).astype(_F32)
    cs = np.array([lib.cosf(float(v)) for v in theta], _F32)
    sn = np.array([lib.sinf(float(v)) for v in theta], _F32)
    blocks[:, :8] = _fma32(radius * cs, std, mean).reshape(-1, 8)
    blocks[:, 8:] = _fma32(radius * sn, std, mean).reshape(-1, 8)


def _np_log256(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.int32)
    imm0 = (bits >> 23) - 127
    x = ((bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)).view(_F32)
    e = imm0.astype(_F32) + _F32_ONE
    mask = x < _C_SQRTHF
    tmp = np.where(mask, x, _F32_ZERO)
    x = x - _F32_ONE
    e = e - np.where(mask, _F32_ONE, _F32_ZERO)
    x = x + tmp
    z = x * x
    y = _fma32(_C_LP0, x, _C_LP1)
    for coef in _C_LOG[2:]:
        y = _fma32(y, x, coef)
    y = y * x
    y = _fma32(y, z, e * _C_Q1)
    y = _fma32(-z, _F32_HALF, y)
    return _fma32(e, _C_Q2, x + y)


def _np_sincos256(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = t * _C_FOPI
    q = y.astype(np.int32)  # truncation, like cvttps
    q = (q + 1) & ~1
    y = q.astype(_F32)
    x = _fma32(y, _C_DP1, t)
    x = _fma32(y, _C_DP2, x)
    x = _fma32(y, _C_DP3, x)
    z = x * x
    yc = _fma32(_C_C0, z, _C_C1)
    yc = _fma32(yc, z, _C_C2)
    yc = yc * z
    yc = _fma32(yc, z, -(z * _F32_HALF))
    yc = yc + _F32_ONE
    ys = _fma32(_C_S0, z, _C_S1)
    ys = _fma32(ys, z, _C_S2)
    ys = ys * z
    ys = _fma32(ys, x, x)
    poly = (q & 2) == 0
    ysin2 = np.where(poly, ys, _F32_ZERO)
    ysin1 = np.where(poly, _F32_ZERO, yc)
    s = ysin1 + ysin2
    c = (yc - ysin1) + (ys - ysin2)
    s = np.where((q & 4) != 0, -s, s)
    c = np.where(((~(q - 2)) & 4) != 0, -c, c)
    return s, c


def _np_fill16_avx2(d: np.ndarray, mean: np.float32, std: np.float32) -> None:
    """normal_fill_16_AVX2 on all blocks at once, in numpy float32 with exact FMAs (:func:`_fma32`)."""
    blocks = d.reshape(-1, 16)
    radius = np.sqrt(_F32_M2 * _np_log256(_F32_ONE - blocks[:, :8]))
    s, c = _np_sincos256(_F32_TWO_PI * blocks[:, 8:])
    blocks[:, :8] = _fma32(radius * c, std, mean)
    blocks[:, 8:] = _fma32(radius * s, std, mean)


# ===================================================================================== uniform


def uniform(gen: Generator, shape: Any, dtype: Any = np.float32, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """``torch.rand`` / ``Tensor.uniform_(low, high)``: one uniform per element, in memory order."""
    dt = _float_dtype(dtype, "check_uniform_bounds")
    shape = _shape(shape)
    low, high = float(low), float(high)
    finfo = np.finfo(dt)
    lo_lim, hi_lim = float(finfo.min), float(finfo.max)
    cname = _CPP_NAMES[dt.name]
    if not (lo_lim <= low <= hi_lim):
        raise RuntimeError(f"from is out of bounds for {cname}")
    if not (lo_lim <= high <= hi_lim):
        raise RuntimeError(f"to is out of bounds for {cname}")
    if not low <= high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(low)} > to={_g(high)}")
    if not (high - low) <= hi_lim:
        raise RuntimeError(
            f"uniform_ expects to-from <= std::numeric_limits<{_torch_name(dt)}>::max(), but found to={_g(high)} "
            f"and from={_g(low)} which result in to-from to exceed the limit"
        )
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    fused = _paths()[1]
    if dt.name == "float64":
        x = _u53(gen, n)
        if low == 0.0 and high == 1.0:
            v = x
        else:
            v = _affine64(x, high - low, low, fused)
        to_s, from_s = high, low
    else:  # opmath float for float32 and float16
        x = _u24(gen, n)
        f, t = _F32(low), _F32(high)
        if f == 0 and t == 1:
            v = x  # x*1 + 0 needs no rounding
        elif fused:
            k = _kernels()
            if k is not None:
                v = np.empty_like(x)
                k.affine32(x, t - f, f, v)
            else:
                v = _fma32(x, t - f, f)
        else:
            v = x * (t - f) + f
        v = v.astype(dt)
        to_s, from_s = _to_dtype(np.array(high), dt), _to_dtype(np.array(low), dt)
    if not (low == 0.0 and high == 1.0 and dt.name != "float16"):  # float32/64 rand() never reaches 1
        v = np.where(v == to_s, from_s, v).astype(dt)  # a value rounded up to `to` is replaced by `from`
    return v.reshape(shape)


# ===================================================================================== normal


def _scalar_normals(gen: Generator, n: int) -> np.ndarray:
    """n raw N(0, 1) doubles from ``normal_distribution<double>``, using and refilling the cached normal."""
    out = np.empty(n, _F64)
    if n == 0:
        return out
    start = 0
    if gen._normal_double is not None:
        out[0] = gen._normal_double
        gen._normal_double = None
        start = 1
    m = n - start
    if m:
        npairs = (m + 1) // 2
        u = _u53(gen, 2 * npairs)
        k = _kernels()
        if k is not None:
            pairs = np.empty_like(u)
            k.boxmuller_pairs(u, pairs)
        else:
            pairs = _py_boxmuller_pairs(u)
        out[start:] = pairs[:m]
        if m % 2:
            gen._normal_double = float(pairs[-1])
    return out


def _fill_normal_float(
    gen: Generator, n: int, mean: np.float32, std: np.float32, avx2: bool, buffered: bool
) -> np.ndarray:
    """normal_fill for float32 (``buffered=False``) or float16 (opmath float in a 16-element buffer)."""
    nb = n // 16
    k = _kernels()

    def fill(block: np.ndarray) -> None:
        if k is not None:
            (k.fill16_avx2 if avx2 else k.fill16_f32)(block, mean, std)
        elif avx2:
            _np_fill16_avx2(block, mean, std)
        else:
            _py_fill16_f32(block, mean, std)

    d = _u24(gen, nb * 16 if buffered else n)
    if nb:
        fill(d[: nb * 16])
    if buffered:
        d = np.concatenate([d, np.empty(n - nb * 16, _F32)])
    if n % 16:
        tail = _u24(gen, 16)
        fill(tail)
        d[n - 16 :] = tail
    return d


def normal(
    gen: Generator,
    shape: Any,
    dtype: Any = np.float32,
    mean: float = 0.0,
    std: float = 1.0,
    contiguous: bool = True,
) -> np.ndarray:
    """``torch.randn`` / ``Tensor.normal_(mean, std)`` / ``torch.normal(mean, std, size)``.

    torch picks one of three kernels: the scalar Box-Muller in double with the cached normal (fewer than 16
    elements, or a non-contiguous tensor: ``contiguous=False``), the 16-wide fill in double, or the float32
    fill (AVX2 Cephes kernel or libm ``logf/cosf/sinf``, per :func:`cpu_capability`).
    """
    dt = _float_dtype(dtype, "normal_kernel_cpu")
    shape = _shape(shape)
    mean, std = float(mean), float(std)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    avx2, fused = _paths()
    if n >= 16 and contiguous:
        if dt.name == "float64":
            d = _u53(gen, n)
            k = _kernels()
            fill = k.fill16_f64 if k is not None else _py_fill16_f64
            nb = n // 16
            if nb:
                fill(d[: nb * 16], mean, std)
            if n % 16:
                tail = _u53(gen, 16)
                fill(tail, mean, std)
                d[n - 16 :] = tail
            return d.reshape(shape)
        d = _fill_normal_float(gen, n, _F32(mean), _F32(std), avx2, buffered=dt.name == "float16")
        return d.astype(dt).reshape(shape)
    v = _affine64(_scalar_normals(gen, n), std, mean, fused)
    return _to_dtype(v, dt).reshape(shape)


def normal_tensor(gen: Generator, mean: Any, std: Any) -> np.ndarray:
    """``torch.normal(mean, std)`` where ``mean`` and/or ``std`` are arrays (a float for the other one).

    torch fills the broadcast output with ``normal_(0, std)`` (float ``std``) or ``normal_(0, 1)``, then
    computes ``z*std`` and ``+ mean`` as separate roundings; the output dtype is ``mean``'s when it is an
    array, else ``std``'s.
    """
    m_arr = isinstance(mean, np.ndarray)
    s_arr = isinstance(std, np.ndarray)
    if not (m_arr or s_arr):
        raise TypeError("normal_tensor needs an array mean or std; use normal() for two floats")
    out_dt = _float_dtype((mean if m_arr else std).dtype, "normal_kernel_cpu")
    if s_arr:
        if std.size and not bool(np.min(std) >= 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not float(std) >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(float(std))}")
    if m_arr and s_arr:
        shape = _broadcast_shape(mean.shape, std.shape)
    elif m_arr:
        shape = mean.shape
    else:
        shape = std.shape
    if m_arr and not s_arr:
        z = normal(gen, shape, out_dt, 0.0, float(std))
        return _inplace(z, mean, np.add)
    z = normal(gen, shape, out_dt, 0.0, 1.0)
    z = _inplace(z, std, np.multiply)
    if m_arr:
        return _inplace(z, mean, np.add)
    return _inplace(z, np.asarray(float(mean), out_dt), np.add)


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            pos = max(len(a), len(b)) - i
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {pos}"
            )
        out.append(x if y == 1 else y)
    return tuple(reversed(out))


def _inplace(out: np.ndarray, other: np.ndarray, op: Any) -> np.ndarray:
    """``out.op_(other)``: computed in the promoted float type, stored back in ``out``'s dtype."""
    ct = np.result_type(out.dtype, np.asarray(other).dtype)
    return op(out.astype(ct), np.asarray(other).astype(ct)).astype(out.dtype)


# ===================================================================================== integers


def _update_from(frm: int, digits: int, dt: np.dtype) -> int:
    plus1 = int(_cast_int64_to_float(frm + 1, dt))
    if plus1 < frm:
        v = abs(frm + 1)
        nbits = v.bit_length() - 1 if v else 0
        frm = plus1 + (1 << (nbits - digits + 1))
    return frm


def _update_to(to: int, digits: int, dt: np.dtype) -> int:
    minus1 = int(_cast_int64_to_float(to - 1, dt))
    if minus1 >= to:
        v = abs(to - 1)
        nbits = v.bit_length() - 1 if v else 0
        to = minus1 - (1 << (nbits - digits + 1))
    return to


def _cast_int64_to_float(v: int, dt: np.dtype) -> float:
    """``static_cast<int64_t>(static_cast<scalar_t>(v))`` for a float scalar_t."""
    x = np.array(v, np.int64).astype(_F32 if dt.name == "float16" else dt)
    if dt.name == "float16":
        x = x.astype(np.float16)
    f = float(x)
    if not math.isfinite(f):
        return float(-(1 << 63))
    return float(max(min(int(f), (1 << 63) - 1), -(1 << 63)))


def _check_from_to_in_range(frm: int, to_inc: int, dt: np.dtype) -> None:
    cname = _CPP_NAMES[dt.name]
    if dt.name in _FLOATS:
        fi = np.finfo(dt)
        lo, hi = float(fi.min), float(fi.max)
        if not lo <= float(frm) <= hi:
            raise RuntimeError(f"from is out of bounds for {cname}")
        if not lo <= float(to_inc) <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {cname}")
        digits = _DIGITS[dt.name]
        for var, name in ((frm, "from"), (to_inc, "to - 1")):
            if var < -(1 << digits) or var > (1 << digits):
                warnings.warn(
                    f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations {cname} can "
                    "support discrete uniform distribution only within this range. This warning will become an "
                    "error in version 1.7 release, please fix the code in advance",
                    UserWarning,
                    stacklevel=3,
                )
        return
    if dt.name == "bool":
        lo, hi = 0, 1
    elif dt.name == "uint64":
        lo, hi = 0, (1 << 63) - 1
    else:
        ii = np.iinfo(dt)
        lo, hi = int(ii.min), int(ii.max)
    if not lo <= frm <= hi:
        raise RuntimeError(f"from is out of bounds for {cname}")
    if not lo <= to_inc <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {cname}")


def _from_uint64(vals: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``static_cast<scalar_t>(static_cast<int64_t>(v))`` for uint64 words holding int64 bit patterns."""
    s = vals.view(np.int64)
    if dt.name == "bool":
        return s != 0
    if dt.name == "float16":
        return s.astype(_F32).astype(dt)
    return s.astype(dt)


def _draw_range(gen: Generator, n: int, rng: int) -> np.ndarray:
    """``random() % range`` (or ``random64() % range`` once range >= 2**28) as uint64."""
    if rng >= 1 << 28:
        return gen.random_u64(n) % _U64(rng)
    return gen._raw(n) % _U64(rng)


def random_(
    gen: Generator, shape: Any, dtype: Any = np.int64, from_: int | None = None, to: int | None = None
) -> np.ndarray:
    """``Tensor.random_()``, ``random_(to)`` (``from_=0``), ``random_(from, to)`` and ``random_(from, None)``.

    With neither bound: the dtype's default range (``[0, 2**mantissa]`` for floats, ``[0, max]`` for
    integers, one or two draws per element).
    """
    dt = _dtype(dtype)
    shape = _shape(shape)
    n = _numel(shape)
    if from_ is None and to is None:
        return _random_default(gen, shape, n, dt)
    frm = 0 if from_ is None else int(from_)
    if to is not None:
        to = int(to)
        if not frm < to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if dt.name in _FLOATS:
            digits = _DIGITS[dt.name]
            frm = _update_from(frm, digits, dt)
            to = _update_to(to, digits, dt)
            if not frm < to:
                raise RuntimeError(
                    f"random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={frm} "
                    f">= to={to}"
                )
        _check_from_to_in_range(frm, to - 1, dt)
        if n == 0:
            return np.empty(shape, dt)
        rng = (to - frm) & 0xFFFFFFFFFFFFFFFF
    elif frm != -(1 << 63):
        if dt.name in _FLOATS:
            digits = _DIGITS[dt.name]
            to_inc = 1 << digits
            frm = _update_from(frm, digits, dt)
            if not frm < to_inc:
                raise RuntimeError(
                    "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but "
                    f"got from={frm} > to_inc={to_inc}"
                )
        elif dt.name == "bool":
            to_inc = 1
        else:
            to_inc = int(np.iinfo(dt).max) if dt.name != "uint64" else -1  # torch's int64 cast of UINT64_MAX
        _check_from_to_in_range(frm, to_inc, dt)
        if n == 0:
            return np.empty(shape, dt)
        rng = (to_inc - frm + 1) & 0xFFFFFFFFFFFFFFFF
    else:
        if dt.name not in ("int64", "float32", "float64"):
            if n == 0:
                return np.empty(shape, dt)
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")
        if n == 0:
            return np.empty(shape, dt)
        return _from_uint64(gen.random_u64(n), dt).reshape(shape)
    vals = _draw_range(gen, n, rng) + _U64(frm & 0xFFFFFFFFFFFFFFFF)  # wraps mod 2**64 like torch's uint64 sum
    return _from_uint64(vals, dt).reshape(shape)


def _random_default(gen: Generator, shape: tuple[int, ...], n: int, dt: np.dtype) -> np.ndarray:
    if dt.name in ("uint16", "uint32", "uint64") or dt.kind == "c":
        raise _not_implemented("random_kernel_cpu", dt)
    if n == 0:
        return np.empty(shape, dt)
    if dt.name == "bool":
        return ((gen.random_u32(n) & _U32(1)) != 0).reshape(shape)
    if dt.name in ("float64", "int64"):
        mod = (1 << 53) + 1 if dt.name == "float64" else 1 << 63
        vals = gen.random_u64(n) % _U64(mod)
    else:
        mod = (1 << _DIGITS[dt.name]) + 1 if dt.name in _FLOATS else int(np.iinfo(dt).max) + 1
        vals = gen._raw(n) % _U64(mod)
    return _from_uint64(vals, dt).reshape(shape)


def randint(gen: Generator, low: int, high: int, shape: Any, dtype: Any = np.int64) -> np.ndarray:
    """``torch.randint(low, high, size, dtype=...)`` (``randint(high, size)`` is ``low=0``)."""
    return random_(gen, shape, dtype, int(low), int(high))


def randperm(gen: Generator, n: int, dtype: Any = np.int64) -> np.ndarray:
    """``torch.randperm(n)``: torch's CPU Fisher-Yates (``random() % (n-i)`` swaps; ``random64`` for huge n)."""
    dt = _dtype(dtype)
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dt.name == "bool" or dt.kind == "c":
        raise _not_implemented("randperm", dt)
    if dt.name in _FLOATS:
        limit = {"float16": (2049, "2049", "Half"), "float32": ((1 << 24) + 1, "2^24+1", "Float"),
                 "float64": ((1 << 53) + 1, "2^53+1", "Double")}[dt.name]  # fmt: skip
        if n > limit[0]:
            raise RuntimeError(f"n cannot be greater than {limit[1]} for {limit[2]} type.")
    else:
        ii = np.iinfo(dt)
        if (n - 1 if n > 0 else n) > ii.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")
    r = np.arange(n, dtype=np.int64)
    k = _kernels()
    if n < (2**32 - 1) // 20:
        if n > 1:
            z = gen._raw(n - 1).view(np.int64) % np.arange(n, 1, -1, dtype=np.int64)
            if k is not None:
                k.perm_swap(r, z)
            else:
                rl = r.tolist()
                for i, zi in enumerate(z.tolist()):
                    j = i + zi
                    rl[i], rl[j] = rl[j], rl[i]
                r = np.array(rl, np.int64)
    else:  # pragma: no cover - needs > 214 million elements
        z = (gen.random_u64(n) % np.arange(1, n + 1, dtype=_U64)).astype(np.int64)
        if k is not None:
            k.perm_inside_out(r, z)
        else:
            for i in range(n):
                j = int(z[i])
                r[i] = r[j]
                r[j] = i
    if dt.name == "float16":
        return r.astype(_F32).astype(dt)
    return r.astype(dt)


# ===================================================================================== bernoulli and dropout


def bernoulli(gen: Generator, p: Any, shape: Any = None, dtype: Any = None) -> np.ndarray:
    """Bernoulli draws, torch's non-MKL CPU kernels.

    float ``p`` (``Tensor.bernoulli_(p)``, ``torch.bernoulli(t, p)``): one double uniform per element,
    ``u < p``; ``shape`` and ``dtype`` (default float32) give the output.  Array ``p``
    (``torch.bernoulli(p)``, ``Tensor.bernoulli_(p_tensor)``): per element a double uniform when ``p`` is
    float64, else a float uniform (one draw), ``u < p``; ``p`` is broadcast to ``shape`` (default
    ``p.shape``) and the output dtype defaults to ``p``'s.
    """
    if isinstance(p, np.ndarray):
        pdt = p.dtype
        if pdt.name not in _FLOATS:
            raise _not_implemented("bernoulli_tensor_cpu_p_", pdt)
        shape = p.shape if shape is None else _shape(shape)
        dt = pdt if dtype is None else _dtype(dtype)
        if dt.kind == "c":
            raise _not_implemented("bernoulli_tensor_cpu_self_", dt)
        pb = np.broadcast_to(p, shape).ravel()
        n = pb.size
        ok = (pb >= 0) & (pb <= 1)
        bad = np.flatnonzero(~ok)
        if bad.size:  # torch checks each p as it reaches it: the earlier elements have drawn already
            i = int(bad[0])
            _ = _u53(gen, i) if pdt.name == "float64" else _u24(gen, i)
            raise RuntimeError(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
                "If so, please report an enhancement request to PyTorch.)"
            )
        if n == 0:
            return np.empty(shape, dt)
        if pdt.name == "float64":
            mask = _u53(gen, n) < pb
        else:
            mask = _u24(gen, n) < pb.astype(_F32)
        return mask.astype(dt).reshape(shape)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    dt = np.dtype(_F32) if dtype is None else _dtype(dtype)
    if dt.kind == "c" or dt.name in ("uint16", "uint32", "uint64"):
        raise _not_implemented("bernoulli_scalar_cpu_", dt)
    shape = _shape(() if shape is None else shape)
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    return (_u53(gen, n) < p).astype(dt).reshape(shape)


def _check_dropout_p(p: float) -> float:
    p = float(p)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def dropout_mask(gen: Generator, shape: Any, dtype: Any, p: float) -> np.ndarray:
    """The multiplier ``F.dropout`` applies on CPU: ``bernoulli_(1 - p) / (1 - p)`` in ``dtype``.

    Draws only for ``0 < p < 1`` and a non-empty shape (ones for ``p == 0``, zeros for ``p == 1``).
    """
    p = _check_dropout_p(p)
    dt = _float_dtype(dtype, "bernoulli_scalar_cpu_")
    shape = _shape(shape)
    if p == 0.0 or _numel(shape) == 0:
        return np.ones(shape, dt)
    if p == 1.0:
        return np.zeros(shape, dt)
    q = 1.0 - p
    noise = bernoulli(gen, q, shape, dt)
    return (noise / np.asarray(q, dt)).astype(dt)


def dropout(gen: Generator, x: np.ndarray, p: float = 0.5, training: bool = True) -> np.ndarray:
    """``torch.nn.functional.dropout(x, p, training)`` on CPU: ``x * (mask / (1 - p))``."""
    p = _check_dropout_p(p)
    x = np.asarray(x)
    if not training or p == 0.0 or x.size == 0:
        return x.copy()
    return (x * dropout_mask(gen, x.shape, x.dtype, p)).astype(x.dtype)


# ===================================================================================== other distributions


def _libm_op(x: np.ndarray, op: int, a: float = 0.0, b: float = 0.0, fused: bool = False) -> np.ndarray:
    k = _kernels()
    out = np.empty_like(x)
    if k is not None:
        k.libm64(x, op, float(a), float(b), fused, out)
        return out
    xs = x.tolist()
    if op == 0:
        vals = [a * math.log1p(-v) for v in xs]
    elif op == 1:
        vals = [math.ceil(math.log(v) / a) if v > 0 else math.inf for v in xs]
    elif op == 2:
        t = np.array([math.tan(math.pi * (v - 0.5)) for v in xs])
        return _fma64_numpy(b, t, a) if fused else a + b * t
    else:
        vals = []
        for v in xs:
            try:
                vals.append(math.exp(v))
            except OverflowError:
                vals.append(math.inf)
    return np.array(vals, _F64).reshape(x.shape)


def exponential(gen: Generator, shape: Any, dtype: Any = np.float32, lambd: float = 1.0) -> np.ndarray:
    """``Tensor.exponential_(lambd)``: ``-1/lambd * log1p(-u)`` per element, u a double uniform."""
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    dt = _float_dtype(dtype, "exponential_cpu")
    shape = _shape(shape)
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    return _to_dtype(_libm_op(_u53(gen, n), 0, -1.0 / lambd), dt).reshape(shape)


def geometric(gen: Generator, shape: Any, dtype: Any = np.float32, p: float = 0.5) -> np.ndarray:
    """``Tensor.geometric_(p)``: ``ceil(log(u) / log1p(-p))`` per element, u a double uniform."""
    p = float(p)
    if not (0.0 < p < 1.0):
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    dt = _dtype(dtype)
    if dt.name == "bool" or dt.kind == "c" or dt.name in ("uint16", "uint32", "uint64"):
        raise _not_implemented("geometric_cpu", dt)
    shape = _shape(shape)
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    v = _libm_op(_u53(gen, n), 1, math.log1p(-p))
    if dt.name in _FLOATS:
        return _to_dtype(v, dt).reshape(shape)
    with np.errstate(invalid="ignore"):
        return v.astype(np.int64).astype(dt).reshape(shape)


def cauchy(
    gen: Generator, shape: Any, dtype: Any = np.float32, median: float = 0.0, sigma: float = 1.0
) -> np.ndarray:
    """``Tensor.cauchy_(median, sigma)``: ``median + sigma * tan(pi * (u - 0.5))`` in double."""
    median, sigma = float(median), float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    dt = _float_dtype(dtype, "cauchy_cpu")
    shape = _shape(shape)
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    return _to_dtype(_libm_op(_u53(gen, n), 2, median, sigma, _paths()[1]), dt).reshape(shape)


def log_normal(
    gen: Generator, shape: Any, dtype: Any = np.float32, mean: float = 1.0, std: float = 2.0
) -> np.ndarray:
    """``Tensor.log_normal_(mean, std)``: ``exp(z*std + mean)`` with z from the scalar (cached) normal stream."""
    mean, std = float(mean), float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    dt = _float_dtype(dtype, "log_normal_cpu")
    shape = _shape(shape)
    n = _numel(shape)
    if n == 0:
        return np.empty(shape, dt)
    z = _affine64(_scalar_normals(gen, n), std, mean, _paths()[1])
    return _to_dtype(_libm_op(z, 3), dt).reshape(shape)


# ===================================================================================== multinomial


def multinomial(gen: Generator, probs: np.ndarray, num_samples: int, replacement: bool = False) -> np.ndarray:
    """``torch.multinomial(probs, num_samples, replacement)`` on CPU (int64 result).

    Without replacement, or for one sample: ``q = exponential_(1)`` over ``probs``' shape, then the top-k
    (argmax for k = 1) of ``probs / q`` along the last dim (ties resolved exactly as libstdc++'s
    nth_element / partial_sort / sort order them in torch's topk).  With replacement: per row, the
    normalised cumulative sum in ``probs``' dtype and a binary search for each double uniform.
    """
    probs = np.asarray(probs)
    n_sample = int(num_samples)
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if probs.dtype.name not in _FLOATS:
        name = _torch_name(probs.dtype)
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {name}")
    if n_sample <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = probs.shape[-1]
    if not replacement and n_sample > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n_cat > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    rows = probs.reshape(-1, n_cat)
    out_shape = (n_sample,) if probs.ndim == 1 else (rows.shape[0], n_sample)
    if rows.shape[0] == 0:
        return np.empty(out_shape, np.int64)
    if not replacement or n_sample == 1:
        if probs.size:
            if not bool((np.max(probs) < np.inf) & (np.min(probs) >= 0)):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            sums = rows.sum(axis=1, dtype=probs.dtype)
            if bool(np.any(sums == 0)):
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        q = exponential(gen, rows.shape, probs.dtype, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (rows / q).astype(probs.dtype)
        if n_sample == 1:
            idx = _argmax_rows(ratio)[:, None]
        else:
            idx = np.stack([_topk_row(r, n_sample) for r in ratio])
        return idx.reshape(out_shape)
    res = np.empty((rows.shape[0], n_sample), np.int64)
    acc = _F32 if probs.dtype.name == "float16" else probs.dtype
    for i, row in enumerate(rows):
        r = row.astype(acc)
        if np.any(r < 0):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if not np.all(np.isfinite(r)):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
        cum = np.cumsum(r, dtype=acc)  # sequential float accumulation, as torch's loop
        total = cum[-1]
        if not total > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cum = (cum / total).astype(acc)
        cum[-1] = 1
        u = _u53(gen, n_sample)
        res[i] = np.searchsorted(cum.astype(_F64), u, side="left")
    return res.reshape(out_shape)


def _argmax_rows(a: np.ndarray) -> np.ndarray:
    nan = np.isnan(a)
    idx = np.argmax(a, axis=1)
    has_nan = nan.any(axis=1)
    if has_nan.any():
        idx = np.where(has_nan, np.argmax(nan, axis=1), idx)
    return idx.astype(np.int64)


def _topk_row(vals: np.ndarray, k: int) -> np.ndarray:
    """Indices of torch's CPU ``topk(k, largest=True, sorted=True)`` for one row."""
    n = vals.size
    nan = np.isnan(vals)
    key = np.where(nan, np.inf, vals)
    order = np.lexsort((np.arange(n), -key, ~nan))  # NaN first, then descending
    top = order[:k]
    # Without ties touching the first k (or the k-th boundary) the answer is unique; otherwise replay the
    # libstdc++ algorithms torch calls.
    kv = key[order]
    nanv = nan[order]
    tied = (kv[1:] == kv[:-1]) & (nanv[1:] == nanv[:-1])
    if not tied[: min(k, n - 1)].any():
        return top.astype(np.int64)
    return np.array(_stl_topk(vals.tolist(), k), np.int64)


def _stl_topk(vals: list[float], k: int) -> list[int]:
    n = len(vals)
    q = [(v, i) for i, v in enumerate(vals)]

    def comp(x: tuple[float, int], y: tuple[float, int]) -> bool:
        return (math.isnan(x[0]) and not math.isnan(y[0])) or x[0] > y[0]

    if k * 64 <= n:
        _stl_heap_select(q, 0, k, n, comp)
        _stl_sort_heap(q, 0, k, comp)
    else:
        _stl_nth_element(q, 0, k - 1, n, comp)
        _stl_sort(q, 0, k - 1, comp)
    return [q[j][1] for j in range(k)]


def _stl_adjust_heap(a: list, first: int, hole: int, length: int, value: Any, comp: Any) -> None:
    top = hole
    second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if comp(a[first + second], a[first + second - 1]):
            second -= 1
        a[first + hole] = a[first + second]
        hole = second
    if (length & 1) == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        a[first + hole] = a[first + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and comp(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _stl_make_heap(a: list, first: int, last: int, comp: Any) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _stl_adjust_heap(a, first, parent, length, a[first + parent], comp)
        if parent == 0:
            return
        parent -= 1


def _stl_pop_heap(a: list, first: int, last: int, result: int, comp: Any) -> None:
    value = a[result]
    a[result] = a[first]
    _stl_adjust_heap(a, first, 0, last - first, value, comp)


def _stl_heap_select(a: list, first: int, middle: int, last: int, comp: Any) -> None:
    _stl_make_heap(a, first, middle, comp)
    for i in range(middle, last):
        if comp(a[i], a[first]):
            _stl_pop_heap(a, first, middle, i, comp)


def _stl_sort_heap(a: list, first: int, last: int, comp: Any) -> None:
    while last - first > 1:
        last -= 1
        _stl_pop_heap(a, first, last, last, comp)


def _stl_move_median_to_first(a: list, result: int, x: int, y: int, z: int, comp: Any) -> None:
    if comp(a[x], a[y]):
        if comp(a[y], a[z]):
            a[result], a[y] = a[y], a[result]
        elif comp(a[x], a[z]):
            a[result], a[z] = a[z], a[result]
        else:
            a[result], a[x] = a[x], a[result]
    elif comp(a[x], a[z]):
        a[result], a[x] = a[x], a[result]
    elif comp(a[y], a[z]):
        a[result], a[z] = a[z], a[result]
    else:
        a[result], a[y] = a[y], a[result]


def _stl_unguarded_partition(a: list, first: int, last: int, pivot: int, comp: Any) -> int:
    while True:
        while comp(a[first], a[pivot]):
            first += 1
        last -= 1
        while comp(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _stl_partition_pivot(a: list, first: int, last: int, comp: Any) -> int:
    mid = first + (last - first) // 2
    _stl_move_median_to_first(a, first, first + 1, mid, last - 1, comp)
    return _stl_unguarded_partition(a, first + 1, last, first, comp)


def _stl_linear_insert(a: list, last: int, comp: Any) -> None:
    val = a[last]
    nxt = last - 1
    while comp(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _stl_insertion_sort(a: list, first: int, last: int, comp: Any) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if comp(a[i], a[first]):
            val = a[i]
            a[first + 1 : i + 1] = a[first:i]
            a[first] = val
        else:
            _stl_linear_insert(a, i, comp)


def _stl_nth_element(a: list, first: int, nth: int, last: int, comp: Any) -> None:
    if first == last or nth == last:
        return
    depth = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _stl_heap_select(a, first, nth + 1, last, comp)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _stl_partition_pivot(a, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _stl_insertion_sort(a, first, last, comp)


def _stl_introsort_loop(a: list, first: int, last: int, depth: int, comp: Any) -> None:
    while last - first > 16:
        if depth == 0:
            _stl_heap_select(a, first, last, last, comp)
            _stl_sort_heap(a, first, last, comp)
            return
        depth -= 1
        cut = _stl_partition_pivot(a, first, last, comp)
        _stl_introsort_loop(a, cut, last, depth, comp)
        last = cut


def _stl_sort(a: list, first: int, last: int, comp: Any) -> None:
    if last - first < 2:
        return
    _stl_introsort_loop(a, first, last, 2 * ((last - first).bit_length() - 1), comp)
    if last - first > 16:
        _stl_insertion_sort(a, first, first + 16, comp)
        for i in range(first + 16, last):
            _stl_linear_insert(a, i, comp)
    else:
        _stl_insertion_sort(a, first, last, comp)
