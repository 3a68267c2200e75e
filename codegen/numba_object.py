"""numba kernels' machine code kept as object files and run through llvmlite alone: a warm start without numba.

A numba cache hit costs a process ``import numba`` (0.3 s on an idle machine) before the machine code loads,
though loading it needs none of numba's Python side: the object code of a ``njit`` function calls numba's C
helpers (``_helperlib``, ``_dynfunc``, the NRT in ``_nrt_python``), the Python C API and libm, and a parallel
one the threading layer's C functions. So when numba compiles or loads a signature of a kernel that
``codegen.cache.load_kernel`` loaded, the cache guard (``codegen.numba_cache``) also writes that signature's
object code, the names of its CPython wrapper and environments, and the symbols it needs, to
``<cache>/__pycache__/<kernel file stem>.<function>.sgo``. A later process that finds this file gets a
``LightKernel`` from ``load_kernel``: its calls with a signature in the file run the object code, linked by
llvmlite's MCJIT against numba's three C extensions (loaded as extension modules, without the ``numba``
package), with the CPython wrapper numba compiled; numba is imported only for what the file does not hold
(a new signature, or any other attribute of the dispatcher, which the kernel then delegates to). Measured
on W2 (serial kernel, 2 cores shared by other jobs): the first hot call of a warm process 0.28 s -> 0.04 s.

Soundness: an entry is used only when everything numba's own cache would check holds, and more. The file
is checksummed (a damaged one is dropped); its header names the numba and llvmlite versions, the Python
ABI, the sizes and times of numba's C extensions, and numba's codegen tuple (target triple, CPU name, CPU
features), all compared with this process's; the file name carries the kernel source's hash and the
function name, and each entry is keyed by the exact argument types numba's dispatcher would give the
call (dtype, ndim, layout, read-only, aligned; Python and numpy scalars). Anything else goes to numba.
Before linking, every undefined symbol of the object is looked up; one that would not resolve sends the
signature to numba (MCJIT would otherwise abort the process). numba settings that change the machine
code or the threading layer (``NUMBA_DISABLE_JIT``, ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``,
``NUMBA_ENABLE_AVX``, a ``.numba_config.yaml`` in the working folder, a threading layer other than omp or
workqueue) turn the object cache off; so does ``SYMGRAD_NUMBA_OBJECTS=0``. Only ELF (Linux) objects are
written. A parallel kernel starts the threading layer numba would choose (``NUMBA_THREADING_LAYER`` /
``_PRIORITY``, ``NUMBA_NUM_THREADS``), which numba reuses if it is imported later.

Where numba is imported later in the process nothing conflicts: numba's extension modules are the ones
already loaded (CPython keeps single-phase extension modules per file), numba registers the same symbols,
and its own ``numba_unpickle`` replaces the stand-in registered here for code it links afterwards.
"""
from __future__ import annotations

import builtins
import ctypes
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import pickle
import re
import struct
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .files import locked, unlink, write_atomic

log = logging.getLogger("symgrad.codegen")

__all__ = ["LightKernel", "enabled", "object_file", "save_compiled", "save_loaded", "open_kernel"]

_MAGIC = b"symgrad numba object cache 1\n"
_FALSE = ("0", "false", "no", "off")

# numpy's array flag bits numba's typeof reads (C / F contiguous, writeable: not alignment, which it ignores)
_C, _F, _WRITEABLE = 0x1, 0x2, 0x400
_FLAGS = _C | _F | _WRITEABLE
_I64 = 1 << 63
_SCALAR_KINDS = "biufc"


class Unusable(Exception):
    """The object cache cannot serve this kernel or signature here (the reason is the message)."""


def enabled() -> bool:
    """The object cache is on: ``SYMGRAD_NUMBA_OBJECTS`` not off, and no numba setting that changes what it
    would load (see the module docstring)."""
    if os.environ.get("SYMGRAD_NUMBA_OBJECTS", "").strip().lower() in _FALSE:
        return False
    if os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0"):
        return False
    if any(os.environ.get(k) for k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX")):
        return False
    return not os.path.isfile(".numba_config.yaml") and sys.platform.startswith("linux")


def object_file(kernel_path: Path, name: str) -> Path:
    """Where the object cache of function ``name`` of the kernel file ``kernel_path`` lives."""
    return kernel_path.parent / "__pycache__" / f"{kernel_path.stem}.{name}.sgo"


# ====================================================================== argument types

_NATIVE = {np.dtype(t).str: np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                                   np.uint16, np.uint32, np.uint64, np.float32, np.float64,
                                                   np.complex64, np.complex128)}
#: Python scalar types numba types as these numpy dtypes (int: when it fits in an int64)
_PY_SCALARS = {float: np.dtype(np.float64).str, int: np.dtype(np.int64).str, bool: np.dtype(np.bool_).str,
               complex: np.dtype(np.complex128).str}
_NP_SCALARS = {dt.type: s for s, dt in _NATIVE.items()}


def arg_key(a: Any) -> tuple | None:
    """The type numba's dispatcher gives argument ``a``, as plain values: ``("a", dtype, ndim, layout,
    readonly, aligned)`` for an ndarray (aligned is always true: numba types an unaligned array as an
    aligned one), ``("s", dtype)`` for a scalar; None for anything else."""
    t = type(a)
    if t is np.ndarray:
        dt = a.dtype
        if dt.str not in _NATIVE or _NATIVE[dt.str] != dt:
            return None
        fl = a.flags
        return ("a", dt.str, a.ndim, "C" if fl.c_contiguous else "F" if fl.f_contiguous else "A",
                not fl.writeable, True)
    s = _PY_SCALARS.get(t) or _NP_SCALARS.get(t)
    if s is None or (t is int and not -_I64 <= a < _I64):
        return None
    return ("s", s)


def _fast_key(a: Any) -> Any:
    """What a call looks up per argument (cheaper than ``arg_key``: the dtype object, ndim and flag bits)."""
    t = type(a)
    if t is np.ndarray:
        return (a.dtype, a.ndim, a.flags.num & _FLAGS)
    if t is int and not -_I64 <= a < _I64:
        return None
    return t


def _fast_variants(key: tuple) -> list:
    """Every ``_fast_key`` of an argument whose ``arg_key`` is ``key``."""
    if key[0] == "a":
        _, s, ndim, layout, readonly, aligned = key
        if not aligned:                           # numba never types a value so
            return []
        base = 0 if readonly else _WRITEABLE
        bits = {"C": [_C, _C | _F], "F": [_F], "A": [0]}[layout]
        return [(_NATIVE[s], ndim, base | b) for b in bits]
    out = [_NATIVE[key[1]].type]
    out += [t for t, s in _PY_SCALARS.items() if s == key[1]]
    return out


def _expand(key: tuple, limit: int = 64) -> list[tuple]:
    """The tuples of ``_fast_key`` values a call with the argument types ``key`` can show."""
    combos: list[tuple] = [()]
    for k in key:
        combos = [c + (v,) for c in combos for v in _fast_variants(k)][:limit]
    return combos


def numba_key(t: Any) -> tuple | None:
    """``arg_key``'s form of a numba type (None for one it has no form for). Needs numba (already loaded)."""
    from numba.core import types as nt  # deferred: numba is loaded where its types are given
    from numba.np.numpy_support import as_dtype  # deferred: as above

    try:
        if type(t) is nt.Array:
            dt = as_dtype(t.dtype)
            return ("a", dt.str, t.ndim, t.layout, not t.mutable, bool(t.aligned)) if dt.str in _NATIVE else None
        if isinstance(t, (nt.Boolean, nt.Integer, nt.Float, nt.Complex)) and not isinstance(t, nt.Literal):
            s = as_dtype(t).str
            return ("s", s) if s in _NATIVE else None
    except Exception:  # noqa: BLE001 - a type numpy has no dtype for
        return None
    return None


def numba_type(key: tuple) -> Any:
    """The numba type of an ``arg_key`` (imports numba)."""
    import numba  # deferred: only a signature numba must compile needs its types
    from numba.core import types as nt  # deferred: as above

    dt = numba.from_dtype(np.dtype(key[1]))
    if key[0] == "a":
        return nt.Array(dt, key[2], key[3], readonly=key[4], aligned=key[5])
    return dt


# ====================================================================== what the file must match

def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _ext_path(pkg: Path, rel: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = pkg / f"{rel}{suffix}"
        if p.exists():
            return p
    return None


_EXTS = {"numba._helperlib": "_helperlib", "numba._dynfunc": "_dynfunc",
         "numba.core.runtime._nrt_python": "core/runtime/_nrt_python"}


def _version_of(path: Path, pattern: str) -> str:
    m = re.search(pattern, path.read_text()) if path.exists() else None
    return m.group(1) if m else "?"


_ABI: str | None = None


def abi_tag() -> str:
    """numba's and llvmlite's versions, the Python ABI and numba's C extensions (paths, sizes, times)."""
    global _ABI
    if _ABI is None:
        nb, ll = _package_dir("numba"), _package_dir("llvmlite")
        if nb is None or ll is None:
            raise Unusable("numba or llvmlite is not installed")
        parts = [sys.implementation.cache_tag, sys.platform,
                 _version_of(nb / "_version.py", r'"version":\s*"([^"]+)"'),
                 _version_of(ll / "_version.py", r"version_version\s*=\s*'([^']+)'")]
        for rel in _EXTS.values():
            p = _ext_path(nb, rel)
            if p is None:
                raise Unusable(f"numba's {rel} extension not found")
            st = p.stat()
            parts.append(f"{p}:{st.st_size}:{st.st_mtime_ns}")
        _ABI = "|".join(parts)
    return _ABI


# ====================================================================== ELF: what an object needs

def undefined_symbols(obj: bytes) -> list[str] | None:
    """The undefined symbols of a 64-bit little-endian ELF relocatable object; None if it is not one."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for s in secs:
        if s[1] != 2:                                   # SHT_SYMTAB
            continue
        strtab = secs[s[6]][4]
        for j in range(s[5] // 24):
            st_name, _info, _other, shndx, _value, _size = struct.unpack_from("<IBBHQQ", obj, s[4] + 24 * j)
            if shndx == 0 and st_name:
                start = strtab + st_name
                names.add(obj[start:obj.index(b"\0", start)].decode())
    return sorted(names)


# ====================================================================== the file

def _read(path: Path) -> dict | None:
    """The verified content of an object-cache file; None if absent; a damaged one is removed."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    head = len(_MAGIC) + 65
    if raw[:len(_MAGIC)] == _MAGIC and len(raw) > head:
        digest, body = raw[len(_MAGIC):head - 1], raw[head:]
        if hashlib.sha256(body).hexdigest().encode() == digest:
            try:
                content = pickle.loads(body)  # noqa: S301 - our own checksummed file, like numba's cache
                if isinstance(content, dict) and isinstance(content.get("entries"), dict):
                    return content
            except Exception:  # noqa: BLE001 - unreadable: treated as damaged
                pass
    log.debug("numba object cache %s is damaged: removed", path)
    unlink(path)
    return None


def _write(path: Path, content: dict) -> None:
    body = pickle.dumps(content, protocol=4)
    write_atomic(path, _MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def _store(path: Path, key: tuple, entry: dict, magic: tuple) -> None:
    """Add ``entry`` for the argument types ``key`` to the object-cache file (under its lock)."""
    header = {"abi": abi_tag(), "magic": magic}
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(str(path) + ".lock"):
        content = _read(path)
        if content is None or {k: content.get(k) for k in header} != header:
            content = {**header, "entries": {}}
        content["entries"][key] = entry
        _write(path, content)


def has_entry(path: Path, key: tuple) -> bool:
    content = _read(path)
    return content is not None and key in content["entries"]


def _entry(obj: bytes, wrapper: str, qualname: str, env: Any, envs: list, reload_init: list) -> dict:
    """An entry from what numba compiled (raises ``Unusable`` for what the object cache does not take)."""
    undefined = undefined_symbols(obj)
    if undefined is None:
        raise Unusable("not an ELF object")
    parallel = False
    for fn in reload_init or ():
        if getattr(fn, "__name__", "") != "_reload_parfors":
            raise Unusable(f"reload hook {fn!r}")
        parallel = True
    consts = []
    by_name = {env.env_name: env, **{e.env_name: e for e in envs}}
    for e in by_name.values():
        data = pickle.dumps(list(e.consts), protocol=4)
        if b"numba" in data:
            raise Unusable("an environment constant refers to numba")
        consts.append((e.env_name, data))
    return {"object": obj, "wrapper": wrapper, "qualname": qualname, "env": env.env_name, "envs": consts,
            "undefined": undefined, "parallel": parallel}


def _check_compiled(objectmode: bool, lifted: Any, args: tuple) -> tuple:
    if objectmode or lifted:
        raise Unusable("object mode or lifted loops")
    key = tuple(numba_key(t) for t in args)
    if any(k is None for k in key):
        raise Unusable(f"argument types {args}")
    return key


def save_compiled(path: Path, sig: tuple, cres: Any) -> None:
    """Write the object cache entry of a signature numba just compiled (numba is loaded)."""
    key = _check_compiled(cres.objectmode, cres.lifted, tuple(cres.signature.args))
    entry = _entry(cres.library._get_compiled_object(), cres.fndesc.llvm_cpython_wrapper_name,
                   cres.fndesc.qualname, cres.environment, list(cres._find_referenced_environments()),
                   list(cres.reload_init or ()))
    _store(path, key, entry, tuple(cres.library.codegen.magic_tuple()))


def save_loaded(path: Path, data: tuple, magic: tuple) -> None:
    """Write the entry of a signature numba loaded from its own cache (``data``: numba's reduced result)."""
    libdata, fndesc, env, signature, objectmode, lifted, _typeann, reload_init, envs = data
    if libdata[1] != "object":
        raise Unusable(f"numba cached {libdata[1]}, not object code")
    key = _check_compiled(objectmode, lifted, tuple(signature.args))
    if has_entry(path, key):
        return
    _store(path, key, _entry(libdata[2][0], fndesc.llvm_cpython_wrapper_name, fndesc.qualname, env, list(envs),
                             list(reload_init or ())), tuple(magic))


# ====================================================================== the runtime (once per process)

#: ``numba_unpickle(data, n, hashed)`` as LLVM IR: the object memoised under the data's address in a dict, else
#: the Python fallback's result (a ctypes callback would cost microseconds per returned array: numba boxes each
#: array with the unpickled ``ndarray`` type). ``{memo}`` / ``{fallback}``: the objects' addresses.
_UNPICKLE_IR = """
declare ptr @PyLong_FromVoidPtr(ptr)
declare ptr @PyLong_FromLong(i64)
declare ptr @PyDict_GetItem(ptr, ptr)
declare void @Py_IncRef(ptr)
declare void @Py_DecRef(ptr)
declare ptr @PyObject_CallFunctionObjArgs(ptr, ...)
define ptr @symgrad_numba_unpickle(ptr %data, i32 %n, ptr %hashed) {{
entry:
  %key = call ptr @PyLong_FromVoidPtr(ptr %data)
  %bad = icmp eq ptr %key, null
  br i1 %bad, label %fail, label %look
look:
  %memo = inttoptr i64 {memo} to ptr
  %hit = call ptr @PyDict_GetItem(ptr %memo, ptr %key)
  %miss = icmp eq ptr %hit, null
  br i1 %miss, label %load, label %found
found:
  call void @Py_IncRef(ptr %hit)
  call void @Py_DecRef(ptr %key)
  ret ptr %hit
load:
  %fn = inttoptr i64 {fallback} to ptr
  %n64 = sext i32 %n to i64
  %nobj = call ptr @PyLong_FromLong(i64 %n64)
  %r = call ptr (ptr, ...) @PyObject_CallFunctionObjArgs(ptr %fn, ptr %key, ptr %nobj, ptr null)
  call void @Py_DecRef(ptr %key)
  call void @Py_DecRef(ptr %nobj)
  ret ptr %r
fail:
  ret ptr null
}}
"""


class _Runtime:
    """llvmlite's JIT with numba's C helpers registered: what the object code of a kernel calls."""

    def __init__(self) -> None:
        t0 = time.perf_counter()
        import llvmlite.binding as ll  # deferred: llvmlite loads LLVM (tens of ms); only a cache hit needs it

        self.ll = ll
        ll.initialize_native_target()
        ll.initialize_native_asmprinter()
        self.magic = (ll.get_process_triple(), ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten())
        self.abi = abi_tag()
        nb = _package_dir("numba")
        assert nb is not None
        self.numba_dir = nb
        helper = self._ext("numba._helperlib")
        self.dynfunc = self._ext("numba._dynfunc")
        nrt = self._ext("numba.core.runtime._nrt_python")
        symbols = {"_Py_NoneStruct": id(None)}
        for obj in builtins.__dict__.values():
            if isinstance(obj, type) and issubclass(obj, BaseException):
                symbols[f"PyExc_{obj.__name__}"] = id(obj)
        for helpers in (helper.c_helpers, self.dynfunc.c_helpers):
            symbols.update((f"numba_{k}", v) for k, v in helpers.items())
        symbols.update((k if k.startswith("_") else f"NRT_{k}", v) for k, v in nrt.c_helpers.items())
        self.math = dict(helper.c_helpers)         # libm as numba binds it (CPython's), by its plain names
        self.target = ll.Target.from_triple(self.magic[0])
        self.tm_options = dict(cpu=self.magic[1], features=self.magic[2], opt=3, reloc="static",
                               codemodel="jitdefault", jit=True)
        self._memo: dict[int, Any] = {}
        self._keep: list = []
        if not ll.address_of_symbol("numba_unpickle"):    # numba's own, if numba registered it already
            symbols["numba_unpickle"] = self._unpickler()
        for name, addr in symbols.items():
            ll.add_symbol(name, addr)
        self.symbols = set(symbols)
        self.threads: str | None = None
        self.module = types.ModuleType("symgrad_numba_objects")
        self.init_s = time.perf_counter() - t0

    def _unpickler(self) -> int:
        """The address of a ``numba_unpickle`` compiled from ``_UNPICKLE_IR`` (memo and fallback kept alive)."""
        ll = self.ll
        fallback = self._unpickle
        mod = ll.parse_assembly(_UNPICKLE_IR.format(memo=id(self._memo), fallback=id(fallback)))
        tm = self.target.create_target_machine(**{**self.tm_options, "opt": 2})
        engine = ll.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        self._keep += [engine, tm, mod, fallback]
        return engine.get_function_address("symgrad_numba_unpickle")

    def _ext(self, name: str, rel: str | None = None) -> Any:
        """numba's C extension ``name`` (the loaded module if numba is imported; else loaded alone)."""
        if name in sys.modules:
            return sys.modules[name]
        path = _ext_path(self.numba_dir, rel or _EXTS[name])
        if path is None:
            raise ImportError(f"{name} not found")
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        # CPython registered it; removing it lets a later ``import numba`` import it as numba's submodule
        # (same module contents, from CPython's per-file copy: the C state is not initialised twice)
        sys.modules.pop(name, None)
        return mod

    def _unpickle(self, data: int, n: int) -> Any:
        """The fallback of ``numba_unpickle``: constants and exceptions pickled into the object code,
        memoised by address as numba's are (the data belong to linked code, which is never unloaded)."""
        obj = self._memo[data] = pickle.loads(ctypes.string_at(data, n))  # noqa: S301 - the kernel's own data
        return obj

    def start_threads(self) -> None:
        """The threading layer numba would choose, started as numba starts it (for parallel kernels)."""
        if self.threads is not None:
            return
        par = sys.modules.get("numba.np.ufunc.parallel")
        if par is not None:                         # numba is here: its own start-up
            par._launch_threads()
            self.threads = str(par._threading_layer)
            return
        layer = os.environ.get("NUMBA_THREADING_LAYER", "default").strip().lower()
        prio = os.environ.get("NUMBA_THREADING_LAYER_PRIORITY", "tbb omp workqueue").split()
        if sorted(prio) != ["omp", "tbb", "workqueue"]:
            raise Unusable("NUMBA_THREADING_LAYER_PRIORITY is not a permutation of tbb omp workqueue")
        if layer == "default":
            order = prio
        elif layer in ("omp", "workqueue"):
            order = [layer]
        else:
            raise Unusable(f"threading layer {layer!r} is numba's to start")
        lib, chosen = None, ""
        for backend in order:
            if backend == "tbb":
                try:
                    ctypes.CDLL("libtbb.so.12")
                except OSError:
                    continue                       # numba skips tbb too
                raise Unusable("the tbb threading layer is numba's to start")
            try:
                lib, chosen = self._ext_layer(backend), backend
                break
            except ImportError:
                continue
        if lib is None:
            raise Unusable("no threading layer")
        ll = self.ll
        names = ["parallel_for", "do_scheduling_signed", "do_scheduling_unsigned", "allocate_sched",
                 "deallocate_sched", "get_num_threads", "set_num_threads", "get_thread_id",
                 "set_parallel_chunksize", "get_parallel_chunksize", "get_sched_size"]
        for name in names:
            ll.add_symbol("numba_parallel_for" if name == "parallel_for" else name, getattr(lib, name))
            self.symbols.add("numba_parallel_for" if name == "parallel_for" else name)
        count = _num_threads()
        ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.launch_threads)(count)
        ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.set_num_threads)(count)
        self.threads = chosen

    def _ext_layer(self, backend: str) -> Any:
        rel = "np/ufunc/omppool" if backend == "omp" else "np/ufunc/workqueue"
        return self._ext("numba." + rel.replace("/", "."), rel)

    def link(self, entry: dict, modname: str) -> tuple[Callable, float]:
        """The Python-callable CPython wrapper of ``entry``'s object code (linked in an engine of its own)."""
        t0 = time.perf_counter()
        ll = self.ll
        if entry["parallel"]:
            self.start_threads()
        tm = self.target.create_target_machine(**self.tm_options)
        # (creating an engine makes the process's own symbols searchable, as MCJIT's linking will search them)
        engine = ll.create_mcjit_compiler(ll.parse_assembly(""), tm)
        for name in entry["undefined"]:
            if name in self.math and name not in self.symbols:
                ll.add_symbol(name, self.math[name])
                self.symbols.add(name)
            if name not in self.symbols and not ll.address_of_symbol(name):
                raise Unusable(f"symbol {name} would not resolve")
        objf = ll.ObjectFileRef.from_data(entry["object"])
        engine.add_object_file(objf)
        engine.finalize_object()
        envs = []
        main = None
        for name, data in entry["envs"]:
            env = self.dynfunc.Environment({"__name__": modname})
            env.consts[:] = pickle.loads(data)  # noqa: S301 - checksummed, numba-free (checked when written)
            addr = engine.get_global_value_address(name)
            if addr:
                ctypes.c_void_p.from_address(addr).value = id(env)
            envs.append(env)
            if name == entry["env"]:
                main = env
        fnptr = engine.get_function_address(entry["wrapper"])
        if not fnptr or main is None:
            raise Unusable("the wrapper or its environment is missing from the object")
        qual = entry["qualname"].split(".")[-1]
        fn = self.dynfunc.make_function(self.module, qual, f"compiled wrapper for {entry['qualname']!r} (object cache)",
                                        fnptr, main, (engine, tm, objf, envs))
        return fn, time.perf_counter() - t0


_RUNTIME: _Runtime | None = None
_RUNTIME_LOCK = threading.RLock()


def _runtime() -> _Runtime:
    global _RUNTIME
    if _RUNTIME is None:
        with _RUNTIME_LOCK:
            if _RUNTIME is None:
                _RUNTIME = _Runtime()
    return _RUNTIME


def _num_threads() -> int:
    try:
        default = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        default = max(1, os.cpu_count() or 1)
    try:
        return int(os.environ.get("NUMBA_NUM_THREADS", "")) or default
    except ValueError:
        return default


# ====================================================================== the kernel

class _Overload:
    __slots__ = ("entry_point",)

    def __init__(self, entry_point: Callable) -> None:
        self.entry_point = entry_point


class _Overloads:
    """``kernel.overloads``: signatures (``typeof_pyval`` results, or numba types) -> an object with the
    overload's ``entry_point``. An entry of the object cache counts (it is linked when looked up)."""

    def __init__(self, kernel: LightKernel) -> None:
        self._k = kernel

    def _key(self, sig: Any) -> tuple | None:
        sig = tuple(sig)
        if all(isinstance(s, tuple) for s in sig):
            return sig
        if "numba" in sys.modules:
            key = tuple(s if isinstance(s, tuple) else numba_key(s) for s in sig)
            return None if None in key else key
        return None

    def __getitem__(self, sig: Any) -> Any:
        key = self._key(sig)
        fn = self._k._entry_fn(key) if key is not None else None
        if fn is not None:
            return _Overload(fn)
        if self._k._dispatcher is None:          # a dispatcher not made yet has no overloads
            raise KeyError(sig)
        return self._k._dispatcher.overloads[self._k._numba_sig(sig)]

    def __contains__(self, sig: Any) -> bool:
        try:
            self[sig]
        except KeyError:
            return False
        return True

    def get(self, sig: Any, default: Any = None) -> Any:
        try:
            return self[sig]
        except KeyError:
            return default


class _Stats:
    """``kernel._cache``: the object cache's events and counters, with the dispatcher's once it exists."""

    def __init__(self, kernel: LightKernel) -> None:
        self._k = kernel

    def _guard(self) -> Any:
        d = self._k._dispatcher
        return None if d is None else getattr(d, "_cache", None)

    @property
    def events(self) -> list[dict]:
        return self._k._events + list(getattr(self._guard(), "events", None) or ())

    def _count(self, attr: str) -> int:
        return getattr(self._guard(), attr, 0)

    @property
    def loads(self) -> int:
        return self._k._loads + self._count("loads")

    @property
    def compiles(self) -> int:
        return self._count("compiles")

    @property
    def rejected(self) -> int:
        return self._k._rejected + self._count("rejected")


class LightKernel:
    """A numba kernel whose signatures in the object cache run without numba; numba's dispatcher (imported,
    and made from the kernel file, when first needed) takes every other call and attribute.

    ``typeof_pyval``, ``compile``, ``overloads`` and ``_cache.events`` answer as a dispatcher's do for the
    cached signatures (in ``arg_key`` form), so callers that drive a dispatcher drive this too."""

    def __init__(self, label: str, modname: str, entries: dict, materialize: Callable[[], Any]) -> None:
        self.label = label
        self._modname = modname
        self._entries = entries              # arg_key tuple -> entry (not linked yet)
        self._linked: dict[tuple, Callable] = {}
        self._table: dict[tuple, Callable] = {}
        self._materialize = materialize
        self._dispatcher: Any = None
        self._refused: set[tuple] = set()
        self._lock = threading.RLock()
        self._events: list[dict] = []
        self._loads = 0
        self._rejected = 0
        self._synced = False
        self.overloads = _Overloads(self)
        self._cache = _Stats(self)

    def __repr__(self) -> str:
        return (f"<symgrad LightKernel {self.label}: {len(self._linked)} of {len(self._entries)} cached "
                "signatures linked>")

    # ------------------------------------------------------------------ calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = None if kwargs else self._table.get(tuple([_fast_key(a) for a in args]))
        if fn is None:
            return self._slow(args, kwargs)
        return fn(*args)

    def _slow(self, args: tuple, kwargs: dict) -> Any:
        key = tuple(arg_key(a) for a in args)
        fn = self._entry_fn(key) if None not in key and not kwargs else None
        if fn is None:
            return self.dispatcher(*args, **kwargs)
        return fn(*args)

    def _entry_fn(self, key: tuple) -> Callable | None:
        """The linked function of the cached signature ``key`` (linked on first use); None if not cached here."""
        fn = self._linked.get(key)
        if fn is not None or key not in self._entries or key in self._refused:
            return fn
        with self._lock:
            if key in self._linked:
                return self._linked[key]
            t0 = time.perf_counter()
            try:
                rt = _runtime()
                fn, link_s = rt.link(self._entries[key], self._modname)
            except Exception as exc:  # noqa: BLE001 - numba takes the signature: compiled or loaded its way
                self._refused.add(key)
                self._rejected += 1
                log.debug("numba %s(%s): object cache not usable (%s); numba takes it", self.label,
                          _fmt(key), exc)
                return None
            self._linked[key] = fn
            for fast in _expand(key):
                self._table[fast] = fn
            self._loads += 1
            total = time.perf_counter() - t0
            self._events.append({"event": "load", "sig": _fmt(key), "init_s": total - link_s, "load_s": link_s,
                                 "how": "object cache"})
            log.debug("numba %s(%s): loaded from the disk cache (object code through llvmlite, no numba import); "
                      "runtime init %.1f ms, link %.1f ms", self.label, _fmt(key), 1e3 * (total - link_s),
                      1e3 * link_s)
            return fn

    # ------------------------------------------------------------------ a dispatcher's interface
    def typeof_pyval(self, a: Any) -> Any:
        key = arg_key(a)
        return key if key is not None else self.dispatcher.typeof_pyval(a)

    def compile(self, sig: Any) -> Any:
        """Make the signature callable: linked from the object cache when there, else numba's compile."""
        key = self.overloads._key(sig)
        if key is not None and self._entry_fn(key) is not None:
            return self._linked[key]
        return self.dispatcher.compile(self._numba_sig(sig))

    def cached(self, desc: Any) -> bool:
        """Link the signature ``desc`` (``arg_key`` tuples, or ``kernels.background.describe``'s, whose arrays
        are taken as aligned) from the object cache if it is there: True when it then runs without numba."""
        key = tuple(tuple(d) + (True,) if d[0] == "a" and len(d) == 5 else tuple(d) for d in desc)
        return self._entry_fn(key) is not None

    def ready(self, desc: Any) -> bool:
        """The signature ``desc`` (as ``cached`` takes it) is linked already: calls run it with no work first."""
        key = tuple(tuple(d) + (True,) if d[0] == "a" and len(d) == 5 else tuple(d) for d in desc)
        return key in self._linked

    def link_cached(self) -> int:
        """Link every signature of the object cache now (a later call of one finds it ready); how many linked."""
        return sum(self._entry_fn(key) is not None for key in list(self._entries))

    def _numba_sig(self, sig: Any) -> tuple:
        return tuple(numba_type(s) if isinstance(s, tuple) else s for s in sig)

    @property
    def light_signatures(self) -> list[tuple]:
        """The signatures (``arg_key`` form) running from the object cache in this process."""
        return list(self._linked)

    @property
    def dispatcher(self) -> Any:
        """numba's dispatcher of this kernel (imports numba and the kernel module the first time)."""
        if self._dispatcher is None:
            with self._lock:
                if self._dispatcher is None:
                    self._dispatcher = self._materialize()
        return self._dispatcher

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("_dispatcher", "_lock", "_linked", "_synced"):
            raise AttributeError(attr)
        d = self.dispatcher
        if not self._synced:                  # introspection sees the signatures this kernel ran
            self._synced = True
            for key in list(self._linked):
                try:
                    d.compile(self._numba_sig(key))
                except Exception as exc:  # noqa: BLE001 - introspection only
                    log.debug("numba %s: could not give the dispatcher %s: %s", self.label, _fmt(key), exc)
        return getattr(d, attr)


def _fmt(key: tuple) -> str:
    out = []
    for k in key:
        if k is None:
            out.append("?")
        elif k[0] == "a":
            out.append(f"{'readonly ' if k[4] else ''}array({np.dtype(k[1]).name}, {k[2]}d, {k[3]})")
        else:
            out.append(np.dtype(k[1]).name)
    return ", ".join(out)


def open_kernel(kernel_path: Path, name: str, modname: str, label: str,
                materialize: Callable[[], Any]) -> LightKernel | None:
    """A ``LightKernel`` for function ``name`` of the kernel file, if its object cache has entries usable
    in this process; else None (the caller imports the kernel and numba as usual)."""
    path = object_file(kernel_path, name)
    if not path.exists():
        return None
    content = _read(path)
    if not content or not content["entries"]:
        return None
    try:
        rt = _runtime()
        abi = rt.abi
    except Exception as exc:  # noqa: BLE001 - no llvmlite here, or numba's files moved: numba's own path
        log.debug("numba object cache unavailable: %s", exc)
        return None
    if content.get("abi") != abi or tuple(content.get("magic") or ()) != rt.magic:
        log.debug("numba object cache %s was written for another numba or CPU: not used", path)
        return None
    return LightKernel(label, modname, content["entries"], materialize)
