"""torch's CPU reduction orders in numpy: sums, means, products and running sums that round as torch 2.13's do.

Eager symgrad evaluates ``sum`` / ``mean`` / ``prod`` / ``cumsum`` with these functions (the ops' numpy ``eval``, and
the generated numpy code of eager backward programs, which imports this module), so float32 and float64 results are
bit-identical to torch's CPU kernels. Compiled kernels keep their own, faster order. Other dtypes go to numpy (integer
sums are exact either way; float16 is not reproduced).

What torch does, and so what this module does:

* **The iterator.** A reduction is a ``TensorIterator`` over the input's dims: size-1 dims dropped, the reduced dims
  first (innermost) ordered by input stride, then the kept dims by output stride (the output is contiguous),
  adjacent dims merged where their strides chain. The kernel is called once per index of the dims beyond the first
  two (the slab ``size0 x size1``), and each call adds (``*out += v``) or multiplies into the output, which starts at
  0 (sum) or 1 (prod).
* **sum** (``cascade_sum``, ``aten/src/ATen/native/cpu/SumKernel.cpp``), in the dtype (no wider accumulator for
  float32). ``multi_row_sum`` adds ``size`` rows in chunks of ``step = 2**max(4, ceil_log2(size) // 4)`` (each chunk
  a running sum from 0), chunk sums into groups of ``step``, groups into super-groups, the super-group sums one after
  the other; the leftover rows are a running sum, and the result ``((rest + chunks) + groups) + super-groups``.
  ``row_sum`` splits a row into 4 interleaved accumulators (``ilp_factor``), sums them with ``multi_row_sum``, adds
  the leftover elements to the first and folds the other three into it. The slab's case:
  - reduced dim contiguous and at least one vector long: each row as ``Vectorized`` lanes (``row_sum`` over vectors),
    then a running sum of the scalar tail followed by the lanes;
  - else kept dim contiguous and at least one vector wide: columns in groups of 4 vectors through
    ``multi_row_sum``, the others through ``row_sum`` (down the rows);
  - else the same two per row (reduced dim of the smaller stride) or per groups of 4 columns, on scalars.
* **prod** (``binary_kernel_reduce_vec``, ``cpu/Reduce.h``): a contiguous reduced dim runs 4 vector accumulators
  over blocks of ``4 * lanes`` elements (multiplied ``(a0*a1)*(a2*a3)``, then the lanes one after the other), and
  multiplies the tail in one by one; a contiguous kept dim multiplies down the rows (blocks of 4 vectors, then each
  remaining column); anything else multiplies element by element.
* **Vectors** are 256 bits (8 float32 / 4 float64 lanes): these kernels are registered for torch's AVX2 build, and
  torch runs that one on AVX512 hosts too; its default (non-AVX) build's ``Vectorized`` is 32 bytes as well.
* **Threads.** Below ``GRAIN`` (32768) elements, or on one thread, the iteration is serial as above. A full
  reduction of a larger contiguous tensor is split into ``num_threads`` chunks (torch's ``two_pass_reduction``: one
  partial result per thread, reduced again at the end); ``set_thread_count`` names the function giving torch's
  thread count (symgrad installs its own). Larger reductions over some dims split the kept dims only, at
  boundaries that keep the vector groups, so the order is the serial one (except non-contiguous kept columns).
* **mean** is ``sum / n`` (torch's CPU ``mean`` is ``sum_out(...).div_(n)``), in the dtype.
* **cumsum** accumulates float32 in float64 (torch's CPU scan uses ``acc_type<float, false>``, a double), rounding
  each prefix to float32.

Every sequential step (a running sum or product along one axis) is ``ufunc.reduce`` over an axis that is not the
array's innermost (numpy then adds element after element; it sums pairwise only along the innermost axis), or
``ufunc.accumulate`` where nothing else is left.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import ir

#: bytes of torch's ``Vectorized<T>`` for these kernels
VECTOR_BYTES = 32
#: torch's ``at::internal::GRAIN_SIZE``: fewer elements reduce serially
GRAIN = 32768

_FLOATS = (np.float32, np.float64)
_WHOLE_1D = (None, 0, -1, (0,), (-1,))
_thread_count: Callable[[], int] = lambda: 1


def set_thread_count(fn: Callable[[], int]) -> None:
    """Install the function giving torch's intra-op thread count (the chunks of large full reductions)."""
    global _thread_count
    _thread_count = fn


# ------------------------------------------------------------------------------------------- sequential steps
# Arrays are (batch, rows, lanes): a step folds the rows (axis 1), lane by lane. numpy's ``ufunc.reduce`` folds an
# axis one element after the other unless it is the innermost one (there ``add`` sums pairwise), so the rows axis is
# kept outside the lanes axis, or the fold is an ``accumulate``.

def _fold(y: np.ndarray, op: np.ufunc) -> np.ndarray:
    """``op`` folded along axis 1 in order, ``((y0 op y1) op y2) ...``: a new (batch, lanes) array."""
    k = y.shape[1]
    if k == 1:
        return y[:, 0].copy()
    if k == 2:
        return op(y[:, 0], y[:, 1])
    b, _, m = y.shape
    if m == 1:
        return op.accumulate(y, axis=1)[:, -1]
    if m < 256 and b > 32 and y.size >= 1 << 15:
        # few lanes, many batches: numpy's inner loop would be the short lanes axis; a transposed copy (rows
        # outermost) makes it long, copied row by row as opaque blocks of ``m`` elements where they are contiguous
        if y.strides[2] == y.itemsize and y.flags.aligned:
            blocks = y.view(np.dtype((np.void, m * y.itemsize))).reshape(b, k)
            t = np.ascontiguousarray(blocks.T).view(y.dtype).reshape(k, b * m)
        else:
            t = np.ascontiguousarray(y.transpose(1, 0, 2)).reshape(k, b * m)
        return op.reduce(t, axis=0).reshape(b, m)
    if abs(y.strides[2]) >= abs(y.strides[1]):
        y = np.ascontiguousarray(y)
    return op.reduce(y, axis=1)


def _fold_last(y: np.ndarray, op: np.ufunc) -> np.ndarray:
    """``op`` folded along the last axis in order."""
    if y.shape[-1] == 1:
        return y[..., 0]
    return op.accumulate(y, axis=-1)[..., -1]


def _ceil_log2(n: int) -> int:
    return 1 if n <= 2 else (n - 1).bit_length()


def _chunks(y: np.ndarray, step: int) -> np.ndarray:
    """Running sums of consecutive chunks of ``step`` rows (the row count a multiple of ``step``)."""
    b, k, m = y.shape
    c = y.reshape(b * (k // step), step, m)
    return _fold(c, np.add).reshape(b, k // step, m)


def multi_row_sum(y: np.ndarray) -> np.ndarray:
    """torch's ``multi_row_sum``: the rows of ``y`` (axis 1) summed in its 4-level cascade, lane by lane; a new
    (batch, lanes) array."""
    size = y.shape[1]
    step = 1 << max(4, _ceil_log2(size) // 4)
    nc = size // step
    if nc == 0:
        return _fold(y, np.add)
    out = _fold(y[:, nc * step:], np.add) if size > nc * step else None
    c = _chunks(y[:, :nc * step], step)                 # chunk sums
    ng = nc // step
    parts = [c[:, ng * step:]]                           # chunks of the unfinished group
    if ng:
        b = _chunks(c[:, :ng * step], step)              # group sums
        ns = ng // step
        parts.append(b[:, ns * step:])                   # groups of the unfinished super-group
        if ns:
            parts.append(_chunks(b[:, :ns * step], step))  # super-group sums, added one after the other
    for p in parts:
        if p.shape[1]:
            s = _fold(p, np.add)
            out = s if out is None else np.add(out, s, out=out)
    return out


def row_sum(y: np.ndarray) -> np.ndarray:
    """torch's ``row_sum``: axis 1 of ``y`` as 4 interleaved accumulators through ``multi_row_sum``, the leftover
    rows added to the first, then the other three folded into it; a new (batch, lanes) array."""
    b, size, m = y.shape
    k = size // 4
    if not k:
        return _fold(y, np.add)
    part = multi_row_sum(y[:, :4 * k].reshape(b, k, 4 * m)).reshape(b, 4, m)
    for i in range(4 * k, size):
        part[:, 0] += y[:, i]
    return np.add.reduce(part, axis=1) if m > 1 else ((part[:, 0] + part[:, 1]) + part[:, 2]) + part[:, 3]


def _lanes(itemsize: int) -> int:
    return VECTOR_BYTES // itemsize


# ------------------------------------------------------------------------------------------- slabs

def _sum_slab(x: np.ndarray, s0: int, s1: int) -> np.ndarray:
    """One ``cascade_sum`` call: ``x`` is (batch, size1, size0) with dim 0 reduced; the value per (batch, j)."""
    b, size1, size0 = x.shape
    v = VECTOR_BYTES // x.itemsize
    if s0 == x.itemsize and size0 >= v:                      # vectorized_inner_sum
        nv = size0 // v
        lanes = row_sum(x[:, :, :nv * v].reshape(b * size1, nv, v))
        if size0 > nv * v:                                   # the scalar tail first, then the lanes
            lanes = np.concatenate([x[:, :, nv * v:].reshape(b * size1, -1), lanes], axis=1)
        return np.add.accumulate(lanes, axis=1)[:, -1].reshape(b, size1)
    y = x.swapaxes(1, 2)                                     # (batch, size0, size1): the columns are the lanes
    if s1 == x.itemsize and size1 >= v:                      # vectorized_outer_sum
        width = 4 * v
    elif s0 < s1:                                            # scalar_inner_sum
        return row_sum(np.ascontiguousarray(y))
    else:                                                    # scalar_outer_sum
        width = 4
    g = size1 // width * width
    if g == size1:
        return multi_row_sum(y)
    if g == 0:
        return row_sum(y)
    return np.concatenate([multi_row_sum(y[:, :, :g]), row_sum(y[:, :, g:])], axis=1)


def _prod_slab(x: np.ndarray, s0: int, s1: int, o1: int, dst: np.ndarray) -> np.ndarray:
    """One ``binary_kernel_reduce_vec`` call for ``*``: ``dst`` (batch, size1), or (batch,) when dim 1 is reduced
    too, with the slab's factors multiplied in, in torch's order."""
    b, size1, size0 = x.shape
    v = VECTOR_BYTES // x.itemsize
    j_kept = dst.ndim == 2
    if s0 == x.itemsize:                                     # vectorized_inner_reduction
        count = size0 // (4 * v)
        if count:
            blocks = x[:, :, :count * 4 * v].reshape(b * size1, count, 4 * v)
            acc = _fold(blocks, np.multiply).reshape(b * size1, 4, v)
            lanes = _fold_last((acc[:, 0] * acc[:, 1]) * (acc[:, 2] * acc[:, 3]), np.multiply)[:, None]
            if size0 > count * 4 * v:                        # the lanes' product, then the tail one by one
                lanes = np.concatenate([lanes, x[:, :, count * 4 * v:].reshape(b * size1, -1)], axis=1)
            x = lanes.reshape(b, size1, -1)
    elif j_kept and o1 == x.itemsize and s1 == x.itemsize:  # vectorized_outer_reduction
        g = size1 // (4 * v) * (4 * v)
        y = x.swapaxes(1, 2)
        out = np.empty_like(dst)
        if g:
            out[:, :g] = dst[:, :g] * _fold(y[:, :, :g], np.multiply)  # each column's product, times dst
        if g < size1:
            out[:, g:] = _fold(np.concatenate([dst[:, None, g:], y[:, :, g:]], axis=1), np.multiply)
        return out
    if not j_kept:                                           # dim 1 reduced: its rows one after the other
        x = x.reshape(b, 1, -1)
        dst = dst[:, None]
    out = _fold_last(np.concatenate([dst[:, :, None], x], axis=2), np.multiply)
    return out if j_kept else out[:, 0]


# ------------------------------------------------------------------------------------------- the iterator

def _iterator(shape: tuple, strides: tuple, itemsize: int, axes: tuple) -> list[list[int]]:
    """torch's ``TensorIterator`` dims for reducing ``axes``: ``[size, in_stride, out_stride]`` (bytes), innermost
    first, reduced dims (out stride 0) before kept ones, adjacent dims merged."""
    nd = len(shape)
    out = [0] * nd
    s = itemsize
    for d in range(nd - 1, -1, -1):  # the output is contiguous over the kept dims
        if d not in axes:
            out[d] = s
            s *= shape[d]
    perm = [d for d in range(nd - 1, -1, -1) if shape[d] != 1]

    def should_swap(d0: int, d1: int) -> int:
        o0, o1 = out[d0], out[d1]
        if (o0 == 0) != (o1 == 0):
            return 1 if o1 == 0 else -1
        for s0, s1 in ((o0, o1), (strides[d0], strides[d1])):
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, len(perm)):  # TensorIterator's insertion sort, ambiguous comparisons left in place
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    dims: list[list[int]] = []
    for d in perm:
        if dims and dims[-1][0] * dims[-1][1] == strides[d] and dims[-1][0] * dims[-1][2] == out[d]:
            dims[-1][0] *= shape[d]
        else:
            dims.append([shape[d], strides[d], out[d]])
    return dims


def _normalize(ndim: int, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted({int(d) % ndim for d in axes})) if ndim else ()


class _Plan:
    """How one (shape, strides, axes) reduces: the iterator, the view of the input it walks (reduced outer dims,
    then batch, size1, size0) and where the values go."""

    def __init__(self, a: np.ndarray, axis: int | Sequence[int] | None, keepdims: bool) -> None:
        axes = _normalize(a.ndim, axis)
        self.axes = axes
        if keepdims:
            self.out_shape = tuple(1 if d in axes else s for d, s in enumerate(a.shape))
        else:
            self.out_shape = tuple(s for d, s in enumerate(a.shape) if d not in axes)
        self.size = 1
        for n in self.out_shape:
            self.size *= n
        self.trivial = a.size == 0 or self.size == 0 or a.size == self.size or any(s < 0 for s in a.strides)
        if self.trivial:
            return
        dims = _iterator(a.shape, a.strides, a.itemsize, axes)
        self.dims = dims
        if len(dims) == 1:
            dims = dims + [[1, 0, 0]]
        (n0, self.s0, _), (n1, self.s1, self.o1) = dims[0], dims[1]
        outer = dims[2:]
        red = [d for d in outer if d[2] == 0][::-1]     # slowest first: numpy's index order is torch's DimCounter's
        kept = [d for d in outer if d[2] != 0][::-1]
        order = red + kept + [dims[1], dims[0]]
        self.red = tuple(d[0] for d in red)
        batch = 1
        for d in kept:
            batch *= d[0]
        self.slab = (batch, n1, n0)
        self.j_kept = self.o1 != 0
        self.dst_shape = tuple(d[0] for d in kept) + ((n1,) if self.j_kept else ())
        self.dst_strides = tuple(d[2] for d in kept) + ((self.o1,) if self.j_kept else ())
        self.shape = tuple(d[0] for d in order)
        self.strides = tuple(d[1] for d in order)
        self.mem: tuple | None = None           # a dense input is viewed by reshape and transpose
        if (a.flags.c_contiguous or a.flags.f_contiguous) and all(d[1] > 0 for d in order if d[0] > 1):
            by = sorted(range(len(order)), key=lambda k: -order[k][1])
            perm = tuple(by.index(k) for k in range(len(order)))
            self.mem = (tuple(order[k][0] for k in by), None if perm == tuple(range(len(order))) else perm)
        c, s = [], a.itemsize
        for n in reversed(self.dst_shape):
            c.append(s)
            s *= n
        self.dst_c = tuple(reversed(c)) == self.dst_strides  # the values land in C order: a reshape

    def view(self, a: np.ndarray) -> np.ndarray:
        if self.mem is None:
            return as_strided(a, self.shape, self.strides)
        v = a.ravel(order="K").reshape(self.mem[0])
        return v if self.mem[1] is None else v.transpose(self.mem[1])


_PLANS: dict = {}


def _plan(a: np.ndarray, axis: int | Sequence[int] | None, keepdims: bool) -> _Plan:
    key = (a.shape, a.strides, a.itemsize, axis if not isinstance(axis, list) else tuple(axis), keepdims)
    p = _PLANS.get(key)
    if p is None:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        p = _PLANS[key] = _Plan(a, axis, keepdims)
    return p


# ------------------------------------------------------------------------------------------- the driver

def _run(a: np.ndarray, p: _Plan, op: np.ufunc) -> np.ndarray:
    """The serial iteration: every slab folded into the output in torch's order; (batch, size1) or (batch,)."""
    view = p.view(a)
    b, n1, n0 = p.slab
    dshape = (b, n1) if p.j_kept else (b,)
    if op is np.add:
        if not p.red:
            x = _sum_slab(view.reshape(p.slab), p.s0, p.s1)
            return x + 0.0 if p.j_kept else _fold_last(np.concatenate([np.zeros((b, 1), a.dtype), x], 1), np.add)
        dst = np.zeros(dshape, a.dtype)
        for r in np.ndindex(*p.red):
            x = _sum_slab(view[r].reshape(p.slab), p.s0, p.s1)
            dst = dst + x if p.j_kept else _fold_last(np.concatenate([dst[:, None], x], axis=1), np.add)
        return dst
    dst = np.ones(dshape, a.dtype)
    for r in (np.ndindex(*p.red) if p.red else ((),)):
        dst = _prod_slab(view[r].reshape(p.slab), p.s0, p.s1, p.o1, dst)
    return dst


# 2-d versions of the steps above for small and mid-sized arrays, where numpy's per-call cost dominates: (rows, lanes)
# with the lanes contiguous and at least 2 of them, so that ``add.reduce`` over axis 0 folds row after row

def _seq2(y: np.ndarray) -> np.ndarray:
    k = y.shape[0]
    if k == 1:
        return y[0].copy()
    return y[0] + y[1] if k == 2 else np.add.reduce(y, axis=0)


def _rows_sum(y: np.ndarray) -> np.ndarray:
    """``multi_row_sum`` of (rows, lanes)."""
    k, m = y.shape
    step = 1 << max(4, _ceil_log2(k) // 4)
    nc = k // step
    if nc == 0:
        return _seq2(y)
    if nc >= step * step or (y.size >= 1 << 15 and m < 256):
        return multi_row_sum(y[None])[0]                   # super-groups, or big: the batched version
    c = _chunk_sums(y[:nc * step], nc, step)
    ng = nc // step
    out = _seq2(y[nc * step:]) if k > nc * step else None
    for part in (c[ng * step:], np.add.reduce(c[:ng * step].reshape(ng, step, m), axis=1) if ng else c[:0]):
        if part.shape[0]:
            out = _seq2(part) if out is None else out + _seq2(part)
    return out


def _chunk_sums(y: np.ndarray, nc: int, step: int) -> np.ndarray:
    """Running sums of ``nc`` chunks of ``step`` rows of (rows, lanes): with few lanes, numpy's inner loop (the
    lanes) is short, so the rows are first copied chunk-row outermost, as opaque blocks of one row each."""
    m = y.shape[1]
    if m < 64 and nc >= 8 and y.strides == (m * y.itemsize, y.itemsize) and y.flags.aligned:
        rows = y.view(np.dtype((np.void, m * y.itemsize))).reshape(nc, step)
        t = np.ascontiguousarray(rows.T).view(y.dtype).reshape(step, nc * m)
        return np.add.reduce(t, axis=0).reshape(nc, m)
    return np.add.reduce(y.reshape(nc, step, m), axis=1)


def _row_sum2(y: np.ndarray) -> np.ndarray:
    """``row_sum`` down (rows, lanes)."""
    k, m = y.shape
    q = k // 4
    if not q:
        return _seq2(y)
    part = _rows_sum(y[:4 * q].reshape(q, 4 * m)).reshape(4, m)
    for i in range(4 * q, k):
        part[0] += y[i]
    return np.add.reduce(part, axis=0)


def _cols_sum(x: np.ndarray) -> np.ndarray:
    """``cascade_sum`` over axis 0 of a C-contiguous (rows, cols), both at least 2: ``vectorized_outer_sum`` (or
    ``scalar_outer_sum`` below one vector of columns)."""
    c = x.shape[1]
    v = VECTOR_BYTES // x.itemsize
    width = 4 * v if c >= v else 4
    g = c // width * width
    if g == c:
        return _rows_sum(x)
    rest = _row_sum2(np.ascontiguousarray(x[:, g:])) if c - g > 1 else _flat_row_sum(x[:, g])
    return np.concatenate((_rows_sum(x[:, :g]), rest)) if g else rest


def _flat_row_sum(x: np.ndarray) -> np.ndarray:
    """``row_sum`` of one strided column, as a 1-element array."""
    return _row_sum2(np.ascontiguousarray(x)[:, None].repeat(2, axis=1))[:1]


def _inner_sum(x: np.ndarray) -> np.ndarray:
    """``cascade_sum`` over axis 1 of a C-contiguous (rows, cols), both at least 2 (one transposed copy: the rows
    become the lanes)."""
    c = x.shape[1]
    v = VECTOR_BYTES // x.itemsize
    t = np.ascontiguousarray(x.T)
    if c < v:                                               # scalar_inner_sum: each row a scalar row_sum
        return _row_sum2(t)
    nv = c // v
    lanes = _row_sum2(t[:nv * v].reshape(nv, v * x.shape[0])).reshape(v, x.shape[0])
    if c > nv * v:                                          # the scalar tail, then the lanes
        lanes = np.concatenate((t[nv * v:], lanes))
    return _seq2(lanes)


def _flat_sum(x: np.ndarray) -> np.ndarray:
    """``cascade_sum`` of a contiguous 1-d array of at least one vector (``vectorized_inner_sum``, one row); 0-d."""
    n = x.shape[0]
    v = VECTOR_BYTES // x.itemsize
    nv = n // v
    k = nv >> 2
    if k:
        part = _rows_sum(x[:4 * k * v].reshape(k, 4 * v))
        if not part.flags.writeable or part.base is not None:
            part = part.copy()
        for i in range(4 * k, nv):
            part[:v] += x[i * v:(i + 1) * v]
        lanes = np.add.reduce(part.reshape(4, v), axis=0)
    else:
        lanes = x[:v].copy()
        for i in range(1, nv):
            lanes += x[i * v:(i + 1) * v]
    if n > nv * v:
        lanes = np.concatenate((x[nv * v:], lanes))
    return np.add.accumulate(lanes)[-1] + x.dtype.type(0)


def _reduce(a: np.ndarray, axis: int | Sequence[int] | None, keepdims: bool, op: np.ufunc, serial: bool = False
            ) -> np.ndarray:
    p = _plan(a, axis, keepdims)
    if p.trivial:
        ident = 0 if op is np.add else 1
        if a.size == 0 or p.size == 0:
            return np.full(p.out_shape, ident, a.dtype)
        if a.size == p.size:  # nothing to reduce (only size-1 dims): the identity combined with each element
            return op(np.full(p.out_shape, ident, a.dtype), a.reshape(p.out_shape))
        # negative strides: torch has none, such a value is a contiguous copy there
        return _reduce(np.ascontiguousarray(a), axis, keepdims, op, serial)
    if p.size == 1 and len(p.dims) == 1:
        if a.size >= GRAIN and not serial and _thread_count() > 1:
            return _two_pass(a, p.dims[0], op, _thread_count()).reshape(p.out_shape)
        if op is np.add and p.dims[0][1] == a.itemsize and a.size >= VECTOR_BYTES // a.itemsize:
            return np.asarray(_flat_sum(a.ravel(order="K"))).reshape(p.out_shape)
    dst = _run(a, p, op)
    if p.dst_c:
        return dst.reshape(p.out_shape)
    out = np.zeros(p.size, a.dtype)
    as_strided(out, p.dst_shape, p.dst_strides)[...] = dst.reshape(p.dst_shape)
    return out.reshape(p.out_shape)


def _two_pass(a: np.ndarray, dim: list[int], op: np.ufunc, threads: int) -> np.ndarray:
    """torch's ``two_pass_reduction`` of a 1-d iteration: one partial result per ``parallel_for`` chunk (OpenMP's
    static split over ``threads``), then those reduced as a tensor of ``threads`` elements."""
    n, stride, _ = dim
    used = min(threads, -(-n // GRAIN))  # at::parallel_for: at most one chunk per GRAIN elements
    chunk = -(-n // used)
    flat = as_strided(a, (n,), (stride,))
    buffer = np.zeros(threads, a.dtype) if op is np.add else np.ones(threads, a.dtype)
    for t in range(used):
        part = flat[t * chunk:min(n, (t + 1) * chunk)]
        buffer[t] = _reduce(part, None, False, op, serial=True)
    return _reduce(buffer, None, False, op, serial=True)


# ------------------------------------------------------------------------------------------- public

def _sum(a: np.ndarray, axis: int | Sequence[int] | None, keepdims: bool) -> np.ndarray:
    """``torch_sum`` of a float32 / float64 array: the direct paths for contiguous 1-d and 2-d, else the iterator."""
    if a.ndim == 1 and a.strides[0] == a.itemsize and VECTOR_BYTES // a.itemsize <= a.size < GRAIN \
            and axis in _WHOLE_1D:
        out = _flat_sum(a)
        return out.reshape(1) if keepdims else np.asarray(out)
    if a.ndim == 2 and a.flags.c_contiguous and a.shape[0] > 1 and a.shape[1] > 1 and a.size < 1 << 16:
        ax = _normalize(2, axis)
        if len(ax) == 1:
            out = (_cols_sum(a) if ax == (0,) else _inner_sum(a)) + a.dtype.type(0)
            return out.reshape((1, -1) if ax == (0,) else (-1, 1)) if keepdims else out
    return _reduce(a, axis, keepdims, np.add)


def torch_sum(a: np.ndarray, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> np.ndarray:
    """``a.sum(axis)`` as torch's CPU ``sum`` computes it (float32 / float64; other dtypes: ``numpy.sum``)."""
    a = np.asarray(a)
    if a.dtype.type not in _FLOATS:
        dt = np.int64 if a.dtype.kind in "biu" else None
        return np.asarray(np.sum(a, axis=axis, keepdims=keepdims, dtype=dt))
    with np.errstate(all="ignore"):  # inf - inf and overflow are quiet, as in torch
        return _sum(a, axis, keepdims)


def torch_mean(a: np.ndarray, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> np.ndarray:
    """``a.mean(axis)`` as torch's CPU ``mean``: its ``sum`` divided by the count, in the dtype."""
    a = np.asarray(a)
    if a.dtype.type not in _FLOATS:
        return np.asarray(np.mean(a, axis=axis, keepdims=keepdims))
    n = 1
    for d in _normalize(a.ndim, axis):
        n *= a.shape[d]
    with np.errstate(all="ignore"):
        return np.asarray(np.true_divide(_sum(a, axis, keepdims), a.dtype.type(n)))


def torch_prod(a: np.ndarray, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> np.ndarray:
    """``a.prod(axis)`` as torch's CPU ``prod`` computes it (float32 / float64; other dtypes: ``numpy.prod``)."""
    a = np.asarray(a)
    if a.dtype.type not in _FLOATS:
        dt = np.int64 if a.dtype.kind in "biu" else None
        return np.asarray(np.prod(a, axis=axis, keepdims=keepdims, dtype=dt))
    with np.errstate(all="ignore"):
        return _reduce(a, axis, keepdims, np.multiply)


def torch_cumsum(a: np.ndarray, axis: int, reverse: bool = False) -> np.ndarray:
    """Running sum along ``axis`` as torch's CPU ``cumsum``: float32 accumulated in float64, each prefix rounded
    (``reverse``: from the end, torch's ``flip(cumsum(flip))``)."""
    a = np.asarray(a)
    dt = a.dtype if a.dtype.kind in "fc" else np.dtype(np.int64)
    acc = np.float64 if dt == np.float32 else dt
    if a.ndim == 0:
        return a.astype(dt, copy=True)
    if reverse:
        return np.flip(np.cumsum(np.flip(a, axis), axis=axis, dtype=acc), axis).astype(dt)
    return np.cumsum(a, axis=axis, dtype=acc).astype(dt, copy=False)


# ------------------------------------------------------------------------------------------- which kernels

def rounds_otherwise_in_numba(kernel: ir.Kernel) -> bool:
    """Whether the numba kernel of ``kernel`` reduces in another order than its numpy code with ``torch_order``: a
    float sum, mean, product, running sum or matrix product (numba's fused loops have their own order). Elementwise
    code rounds alike in both, except transcendentals (numba calls libm, numpy has SIMD versions of some)."""
    for st in kernel.body:
        if getattr(st, "dtype", "") not in ("float32", "float64"):
            continue
        if isinstance(st, ir.Reduce) and st.kind in ("sum", "mean", "prod"):
            return True
        if isinstance(st, (ir.CumSum, ir.MatMul)):
            return True
    return False
