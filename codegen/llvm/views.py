"""The LLVM emitter's views: reshapes, transposes, broadcasts and indexing of values as index maps over buffers (no
copies), buffers materialised where a value must be one, and copies into outputs."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..numba import scalar
from .values import SCALAR_LIMIT, Buf, Idx, Mapped, Sc, Value, c_strides, object_array, storage

if TYPE_CHECKING:
    from .emit import Emitter


class Views:
    """``Emitter``'s methods for views and buffers (a mixin: they use its ``fresh``/``bind``/``load``/``store``)."""

    def lookup(self, vals: dict, name: str) -> Value:
        v = vals.get(name)
        if v is not None:
            return v
        lit = ir.literal(name)
        if lit is None:
            raise ir.Unsupported(f"llvm: no value named {name!r}")
        dtype = "bool" if lit in ("True", "False") else "float64" if any(c in lit for c in ".eE") else "int64"
        text = lit if dtype == "bool" else f"numpy.{dtype}({lit})"
        return Sc(object_array([text], ()), dtype)

    def view(self, st: Any, a: Value) -> Value:
        """A view statement (Index, Reshape, Transpose, Broadcast) of ``a``."""
        shape = tuple(st.shape)
        in_shape = tuple(a.shape)
        n_in = math.prod(in_shape)
        if math.prod(shape) <= SCALAR_LIMIT:
            pos = self.positions(st, np.arange(n_in, dtype=np.int64).reshape(in_shape))
            elems = [self.get(a, tuple(int(i) for i in np.unravel_index(int(p), in_shape)) if in_shape else ())
                     for p in pos.reshape(-1)]
            return Sc(object_array(elems, shape), a.dtype)
        if isinstance(a, Sc):
            a = self.to_buf(a)
        if isinstance(a, Buf):
            b = self.buf_view(st, a)
            if b is not None:
                return b
        return Mapped(a, self.index_map(st, in_shape), shape, a.dtype)

    @staticmethod
    def positions(st: Any, pos: np.ndarray) -> np.ndarray:
        if isinstance(st, ir.Index):
            return np.asarray(pos[scalar._index(st.index)])
        if isinstance(st, ir.Reshape):
            return pos.reshape(tuple(st.shape))
        if isinstance(st, ir.Transpose):
            return np.transpose(pos, [int(x) % max(pos.ndim, 1) for x in st.axes])
        return np.broadcast_to(pos, tuple(st.shape))

    @staticmethod
    def norm_index(spec: tuple, in_shape: tuple) -> list:
        """The index as per-input-dim entries: ("i", k), ("s", start, step, n) and ("n",) (new axes)."""
        n_consumed = sum(1 for e in spec if e[0] in ("i", "s", "a"))
        out: list = []
        d = 0
        for e in spec:
            if e[0] == "e":
                for _ in range(len(in_shape) - n_consumed):
                    out.append(("s", 0, 1, in_shape[d]))
                    d += 1
            elif e[0] == "n":
                out.append(("n",))
            elif e[0] == "i":
                k = int(e[1])
                out.append(("i", k + in_shape[d] if k < 0 else k))
                d += 1
            elif e[0] == "s":
                start, stop, step = (None if v is None else int(v) for v in e[1:])
                r = range(*slice(start, stop, step).indices(in_shape[d]))
                out.append(("s", r.start, r.step, len(r)))
                d += 1
            else:
                raise ir.Unsupported("llvm: an integer-array index of a large value")
        while d < len(in_shape):
            out.append(("s", 0, 1, in_shape[d]))
            d += 1
        return out

    def buf_view(self, st: Any, a: Buf) -> Buf | None:
        shape = tuple(st.shape)
        if isinstance(st, ir.Index):
            off: Idx = a.offset
            strides = []
            d = 0
            for e in self.norm_index(st.index, a.shape):
                if e[0] == "n":
                    strides.append(0)
                    continue
                s = a.strides[d]
                d += 1
                if e[0] == "i":
                    off = self.iadd(off, e[1] * s)
                else:
                    off = self.iadd(off, e[1] * s)
                    strides.append(s * e[2])
            return Buf(a.ptr, a.dtype, shape, tuple(strides), off)
        if isinstance(st, ir.Transpose):
            axes = [int(x) % len(a.shape) for x in st.axes]
            return Buf(a.ptr, a.dtype, shape, tuple(a.strides[x] for x in axes), a.offset)
        if isinstance(st, ir.Broadcast):
            lead = len(shape) - len(a.shape)
            strides = [0] * lead + [0 if n == 1 else s for n, s in zip(a.shape, a.strides)]
            return Buf(a.ptr, a.dtype, shape, tuple(strides), a.offset)
        if isinstance(st, ir.Reshape):
            live = [(n, s) for n, s in zip(a.shape, a.strides) if n != 1]
            if all(s == c for (_, s), c in zip(live, c_strides(tuple(n for n, _ in live)))):
                return Buf(a.ptr, a.dtype, shape, c_strides(shape), a.offset)
        return None

    def index_map(self, st: Any, in_shape: tuple):
        if isinstance(st, ir.Index):
            spec = self.norm_index(st.index, in_shape)

            def fn(em: Emitter, idx: tuple) -> tuple:
                out, it = [], iter(idx)
                for e in spec:
                    if e[0] == "n":
                        next(it)
                    elif e[0] == "i":
                        out.append(e[1])
                    else:
                        out.append(em.iadd(e[1], em.imul(next(it), e[2])))
                return tuple(out)
            return fn
        if isinstance(st, ir.Transpose):
            axes = [int(x) % len(in_shape) for x in st.axes]
            inv = [axes.index(d) for d in range(len(axes))]
            return lambda em, idx: tuple(idx[inv[d]] for d in range(len(axes)))
        if isinstance(st, ir.Broadcast):
            lead = len(st.shape) - len(in_shape)
            return lambda em, idx: tuple(0 if n == 1 else i for n, i in zip(in_shape, idx[lead:]))
        shape = tuple(st.shape)

        def reshape(em: Emitter, idx: tuple) -> tuple:
            flat: Idx = 0
            for i, s in zip(idx, c_strides(shape)):
                flat = em.iadd(flat, em.imul(i, s))
            out = []
            for n, s in zip(in_shape, c_strides(in_shape)):
                if isinstance(flat, int):
                    out.append(flat // s % n)
                else:
                    q = em.fn.op(f"udiv i64 {flat}, {s}") if s != 1 else flat
                    out.append(em.fn.op(f"urem i64 {q}, {n}") if n != math.prod(in_shape) // s else q)
            return tuple(out)
        return reshape

    # ------------------------------------------------------------------ memory
    def to_buf(self, v: Value) -> Buf:
        """``v`` stored into memory of its own (a stack array for a scalar value)."""
        n = math.prod(v.shape)
        st = storage(v.dtype)
        if isinstance(v, Sc) and n <= 4096:
            p = f"%a{len(self.allocas)}"
            self.allocas.append(f"  {p} = alloca {st}, i64 {max(n, 1)}")
            for j, e in enumerate(v.elems.reshape(-1)):
                self.store(p, v.dtype, j, e)
            return Buf(p, v.dtype, tuple(v.shape), c_strides(tuple(v.shape)))
        p = self.malloc(n, v.dtype)
        self.copy_into(p, v)
        return Buf(p, v.dtype, tuple(v.shape), c_strides(tuple(v.shape)))

    def malloc(self, n: int, dtype: str) -> str:
        """A buffer for ``n`` elements, allocated once per call after the argument checks (a buffer made inside a
        loop body is rewritten by every step: only the carry, scalars, passes values from one step to the next)."""
        size = max(n, 1) * (1 if storage(dtype) == "i8" else 4 if dtype == "float32" else 8)
        p = f"%m{len(self.mallocs)}"
        self.fn.declare("malloc", "ptr", ["i64"])
        self.hoisted.append(f"  {p} = call ptr @malloc(i64 {size})")
        self.mallocs.append(p)
        return p

    def copy_into(self, ptr: str, v: Value) -> None:
        shape = tuple(v.shape)
        if isinstance(v, Sc):
            for j, e in enumerate(v.elems.reshape(-1)):
                self.store(ptr, v.dtype, j, e)
            return
        cs = c_strides(shape)

        def body(idx: tuple) -> None:
            off: Idx = 0
            for i, s in zip(idx, cs):
                off = self.iadd(off, self.imul(i, s))
            self.store(ptr, v.dtype, off, self.get(v, idx))
        self.nest(shape, body)

    # ------------------------------------------------------------------ loops
