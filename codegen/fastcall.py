"""A guarded call in machine code: ``entry(*args)`` when the call has exactly ``nargs`` positional arguments, each
exactly a Python ``float``, and no keywords; ``general(*args, **kwargs)`` otherwise.

A compiled function called on Python floats (W4: ``a*b + sin(a)``) spends 0.20 µs in numba's entry point and,
through a generated Python ``__call__`` that checks the arguments first, 0.46 µs in all (measured on the 2-core
development machine; a Python frame alone costs about 0.15 µs there). ``guarded(entry, general, nargs)`` returns
a builtin function whose C-level body, compiled from LLVM IR by llvmlite, does the checks and passes the caller's
argument tuple on, so the only Python-level work left is the interpreter's own call. A builtin is no
descriptor: as a class's ``__call__`` it is called with the instance's arguments and without the instance.

The body reads CPython's object header (``ob_type``) and tuple layout (``ob_size``, ``ob_item``) at fixed offsets;
``available()`` checks them on live objects and is False where they differ (a debug or free-threaded build),
and then nothing here is used. This module imports neither numba nor symgrad.
"""
from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any

OB_TYPE, OB_SIZE, OB_ITEM = 8, 16, 24
METH_VARARGS_KEYWORDS = 0x0003

_checked: bool | None = None
_defs: list[Any] = []        # the PyMethodDef structs: they must outlive every function made from them


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


def available() -> bool:
    """Whether this interpreter's objects have the layout the guarded call reads (checked once)."""
    global _checked
    if _checked is None:
        t = (1.5, "x", None)
        at = lambda addr: ctypes.c_ssize_t.from_address(addr).value  # noqa: E731
        _checked = bool(
            ctypes.sizeof(ctypes.c_void_p) == 8 and getattr(sys, "_is_gil_enabled", lambda: True)()
            and at(id(1.5) + OB_TYPE) == id(float) and at(id(t) + OB_TYPE) == id(tuple)
            and at(id(t) + OB_SIZE) == 3 and at(id(t) + OB_ITEM) == id(t[0]) and at(id(t) + OB_ITEM + 16) == id(None))
    return _checked


def _api(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


Pack = "int | tuple[Pack, ...]"


def _pack_lines(pack: Any, counter: list[int]) -> tuple[list[str], str]:
    """Instructions building ``pack`` (an index into the entry's result tuple ``%r``, or a tuple of packs) as a
    new reference; the value's name."""
    k = counter[0]
    counter[0] += 1
    if isinstance(pack, int):
        return [f"  %i{k}p = getelementptr i8, ptr %r, i64 {OB_ITEM + 8 * pack}",
                f"  %i{k} = load ptr, ptr %i{k}p",
                f"  call void inttoptr (i64 {_api('Py_IncRef')} to ptr)(ptr %i{k})"], f"%i{k}"
    lines = [f"  %tup{k} = call ptr inttoptr (i64 {_api('PyTuple_New')} to ptr)(i64 {len(pack)})",
             f"  %tup{k}null = icmp eq ptr %tup{k}, null",
             f"  br i1 %tup{k}null, label %fail, label %tup{k}ok",
             f"tup{k}ok:"]
    for j, sub in enumerate(pack):
        more, name = _pack_lines(sub, counter)
        lines += more + [f"  %tup{k}s{j} = getelementptr i8, ptr %tup{k}, i64 {OB_ITEM + 8 * j}",
                         f"  store ptr {name}, ptr %tup{k}s{j}"]
    return lines, f"%tup{k}"


def _ir(nargs: int, pack: Any = None) -> str:
    """The body: ``self`` is the tuple (entry, general); ``pack`` (None: the entry's result as it is) rearranges
    the entry's result tuple."""
    call, size = _api("PyObject_Call"), _api("PyDict_Size")
    lines = [
        "define ptr @guarded(ptr %self, ptr %args, ptr %kw) {",
        "entry:",
        "  %nokw = icmp eq ptr %kw, null",
        "  br i1 %nokw, label %count, label %kwsize",
        "kwsize:",
        f"  %n = call i64 inttoptr (i64 {size} to ptr)(ptr %kw)",
        "  %kw0 = icmp eq i64 %n, 0",
        "  br i1 %kw0, label %count, label %slow",
        "count:",
        f"  %szp = getelementptr i8, ptr %args, i64 {OB_SIZE}",
        "  %sz = load i64, ptr %szp",
        f"  %ok = icmp eq i64 %sz, {nargs}",
        "  br i1 %ok, label %a0, label %slow",
    ]
    for i in range(nargs):
        nxt = f"a{i + 1}" if i + 1 < nargs else "fast"
        lines += [
            f"a{i}:",
            f"  %p{i} = getelementptr i8, ptr %args, i64 {OB_ITEM + 8 * i}",
            f"  %o{i} = load ptr, ptr %p{i}",
            f"  %tp{i} = getelementptr i8, ptr %o{i}, i64 {OB_TYPE}",
            f"  %t{i} = load i64, ptr %tp{i}",
            f"  %f{i} = icmp eq i64 %t{i}, {id(float)}",
            f"  br i1 %f{i}, label %{nxt}, label %slow",
        ]
    lines += [
        "fast:",
        f"  %ep = getelementptr i8, ptr %self, i64 {OB_ITEM}",
        "  %e = load ptr, ptr %ep",
        f"  %r = call ptr inttoptr (i64 {call} to ptr)(ptr %e, ptr %args, ptr null)",
    ]
    if pack is None:
        lines.append("  ret ptr %r")
    else:
        built, name = _pack_lines(pack, [0])
        decref = f"  call void inttoptr (i64 {_api('Py_DecRef')} to ptr)(ptr %r)"
        lines += ["  %rnull = icmp eq ptr %r, null",
                  "  br i1 %rnull, label %raised, label %pack",
                  "raised:",
                  "  ret ptr null",
                  "pack:", *built, decref, f"  ret ptr {name}",
                  "fail:", decref, "  ret ptr null"]     # (a tuple already made leaks: only on out-of-memory)
    lines += [
        "slow:",
        f"  %gp = getelementptr i8, ptr %self, i64 {OB_ITEM + 8}",
        "  %g = load ptr, ptr %gp",
        f"  %r2 = call ptr inttoptr (i64 {call} to ptr)(ptr %g, ptr %args, ptr %kw)",
        "  ret ptr %r2",
        "}",
    ]
    return "\n".join(lines) + "\n"


_new = ctypes.pythonapi.PyCFunction_NewEx
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]
_bodies: dict[tuple, int] = {}


def guarded(entry: Callable[..., Any], general: Callable[..., Any], nargs: int, name: str = "guarded",
            pack: Any = None) -> Any:
    """The builtin (module docstring); None where ``available()`` is False or llvmlite cannot compile it.
    ``pack``: what the fast path returns of the entry's result tuple ``r``: None (``r``), an index ``i`` (``r[i]``),
    or a tuple of packs (a new tuple of those), e.g. ``(0, (1, 2))`` for ``(r[0], (r[1], r[2]))``."""
    if not available() or nargs < 1:
        return None
    addr = _bodies.get((nargs, pack))
    if addr is None:
        try:
            from .llvm.load import compile_ir  # deferred: llvmlite only for the first guarded call
            addr = _bodies[(nargs, pack)] = compile_ir(_ir(nargs, pack), "guarded")
        except Exception:  # noqa: BLE001 - no llvmlite, or a layout it refuses: the Python path stays
            return None
    d = _MethodDef(name.encode(), addr, METH_VARARGS_KEYWORDS, None)
    _defs.append(d)
    return _new(ctypes.addressof(d), (entry, general), None)
