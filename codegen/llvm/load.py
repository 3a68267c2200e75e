"""JIT-compile an emitted module with llvmlite (MCJIT, the new pass manager at O3, the host CPU) and wrap it in a
Python caller with ``emit_numba``'s calling convention (arrays and 0-d values in; a tuple out: 0-d outputs as
Python scalars, other outputs fresh arrays, a param returned as given; with ``out_params``, those outputs are
written into the extra arguments).

The caller passes ``id(a)`` of each array (the kernel reads the data pointer and checks the layout) through a
``ctypes.PYFUNCTYPE`` prototype (the GIL stays held); the 0-d outputs come back in slots of per-thread ctypes arrays.
A call whose arguments fail the kernel's check is retried once with C-contiguous copies of the right dtype.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import threading
import time
from typing import Any, Callable

import llvmlite.binding as llvm
import numpy as np

from ..ir import Kernel, Unsupported, literal
from . import emit as _emit
from . import lines as _lines
from .emit import Module, emit_llvm

_lock = threading.Lock()
_state: dict[str, Any] = {}
_serial = itertools.count()
_CTYPES = {"double": ctypes.c_double, "float": ctypes.c_float, "i64": ctypes.c_int64, "i8": ctypes.c_uint8,
           "obj": ctypes.c_int64}


def _init() -> Any:
    """llvmlite's binding, the target machine and the execution engine (once per process)."""
    got = _state.get("llvm")
    if got is not None:
        return got
    _check_layout()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                      opt=3, codemodel="jitdefault")
    for sym in ("malloc", "free", "sin"):
        if not llvm.address_of_symbol(sym):
            lib = ctypes.util.find_library("m")
            if lib:
                llvm.load_library_permanently(lib)
            break
    _state["tm"] = tm
    _state["modules"] = []
    _state["llvm"] = llvm
    return llvm


def _check_layout() -> None:
    """The kernels read numpy's array and descriptor structs at fixed offsets (``emit``'s ``DATA`` ... ``TYPE_NUM``):
    check them on an array here, and refuse every kernel where they do not hold (another numpy or Python ABI)."""
    a = np.zeros((2, 3))
    at = lambda base, off, ct: ct.from_address(base + off).value  # noqa: E731
    ok = (ctypes.sizeof(ctypes.c_void_p) == 8 and at(id(a), _emit.DATA, ctypes.c_uint64) == a.ctypes.data
          and at(id(a), _emit.NDIM, ctypes.c_int32) == 2
          and at(at(id(a), _emit.DIMS, ctypes.c_uint64), 8, ctypes.c_int64) == 3
          and at(id(a), _emit.DESCR, ctypes.c_uint64) == id(a.dtype)
          and at(id(a.dtype), _emit.TYPE_NUM, ctypes.c_int32) == a.dtype.num
          and at(id(a), _emit.FLAGS, ctypes.c_int32) & _emit.C_CONTIGUOUS)
    if not ok:
        raise Unsupported("llvm: numpy's array layout is not the one the kernels read")


def compile_kernel(kernel: Kernel, out_params: tuple[int, ...] = ()) -> tuple[Callable, Module, float]:
    """``kernel`` emitted (``emit_llvm``) and compiled: the callable, the module, and the seconds emitting took.
    Raises ``Unsupported`` for IR outside the backend's class."""
    t0 = time.perf_counter()
    mod = emit_llvm(kernel, tuple(out_params))
    t1 = time.perf_counter()
    return compile_module(mod), mod, t1 - t0


def compile_module(mod: Module) -> Callable:
    """The module's function, compiled and wrapped (see the module docstring). Raises ``Unsupported`` when a libm
    function it calls is not in the process."""
    addr = _compile(mod.text, mod.name, libm=True)
    groups = sorted({g for g, _ in mod.slots.values()})
    proto = ctypes.PYFUNCTYPE(ctypes.c_int32, *([_CTYPES[kind] for _, kind in mod.args]
                                                + [ctypes.c_int64] * sum(1 for o in mod.outputs if o[3] == "array")
                                                + [ctypes.c_void_p] * len(groups)))
    cfunc = proto(addr)
    return _caller(mod, cfunc)


def compile_ir(text: str, name: str) -> int:
    """The address of function ``name`` of the LLVM IR ``text`` (no libm calls), compiled into this process's
    engine at O3. Raises ``Unsupported`` where numpy's array layout is not the one the kernels read."""
    return _compile(text, name, libm=False)


def _compile(text: str, name: str, libm: bool) -> int:
    """Function ``name`` of ``text`` (renamed to a fresh symbol) compiled at O3 into the one engine: its address."""
    with _lock:
        llvm = _init()
        tag = f"sg{next(_serial)}"
        text = text.replace(f"@{name}(", f"@{tag}(")
        if libm:
            for sym in sorted(_lines.LIBM & set(_called(text))):
                if not llvm.address_of_symbol(sym):
                    raise Unsupported(f"llvm: the libm function {sym} is not in this process")
        tm = _state["tm"]
        m = llvm.parse_assembly(text)
        m.triple = tm.triple
        m.data_layout = str(tm.target_data)
        m.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(m, pb)
        ee = _state.get("ee")
        if ee is None:
            ee = _state["ee"] = llvm.create_mcjit_compiler(m, tm)
        else:
            ee.add_module(m)
        ee.finalize_object()
        _state["modules"].append(m)
        return ee.get_function_address(tag)


def _called(text: str) -> list[str]:
    return [line.split("@", 1)[1].split("(", 1)[0] for line in text.splitlines() if line.startswith("declare")]


def _slot_arrays(mod: Module) -> Callable[[], tuple]:
    """A new thread's arrays for the 0-d outputs (doubles, int64s) and their addresses."""
    counts = {g: sum(1 for x, _ in mod.slots.values() if x == g) for g in ("f", "i")}

    def make() -> tuple:
        f = (ctypes.c_double * max(counts["f"], 1))()
        i = (ctypes.c_int64 * max(counts["i"], 1))()
        return f, i, ctypes.addressof(f), ctypes.addressof(i)
    return make


def _caller(mod: Module, cfunc: Any) -> Callable:
    params = [q for q, _ in mod.args]
    names = [f"a{j}" for j in range(len(params))]
    extra = [f"b{j}" for j in range(len(mod.out_params))]
    ns: dict[str, Any] = {"_cf": cfunc, "_id": id, "_empty": np.empty, "_float": float, "_int": int,
                          "_bool": bool}
    conv = {"double": "_float", "float": "_float", "i64": "_int", "i8": "_bool", "obj": "_id"}
    call = [f"{conv[kind]}({n})" for n, (_, kind) in zip(names, mod.args)]
    body, ret = [], []
    by_out = dict(zip(mod.out_params, extra))
    for j, (name, shape, dtype, kind) in enumerate(mod.outputs):
        if kind == "param":
            ret.append(names[[q.name for q in params].index(name)])
        elif kind == "literal":
            ns[f"_l{j}"] = _literal_value(name)
            ret.append(f"_l{j}")
        elif kind == "scalar":
            group, slot = mod.slots[j]
            x = f"s{group}[{slot}]"
            ret.append(x if group == "f" else f"_bool({x})" if dtype in ("bool", "bool_") else x)
        else:
            if j in by_out:
                o = by_out[j]
            else:
                o = f"o{j}"
                ns[f"_d{j}"] = np.dtype(dtype)
                body.append(f"    {o} = _empty({tuple(shape)!r}, _d{j})")
            call.append(f"_id({o})")
            ret.append(o)
    groups = sorted({g for g, _ in mod.slots.values()})
    if groups:                  # per-thread slots: a call from another thread cannot overwrite this call's results
        ns["_tl"], ns["_new"] = threading.local(), _slot_arrays(mod)
        body += ["    try:", "        sf, si, pf, pi = _tl.s", "    except AttributeError:",
                 "        sf, si, pf, pi = _tl.s = _new()"]
        call += [f"p{g}" for g in groups]
    allargs = names + extra
    ns["_slow"] = lambda *a: _retry(mod, cfunc, run, a)
    src = (f"def run({', '.join(allargs)}):\n" + "\n".join(body) + ("\n" if body else "")
           + f"    if _cf({', '.join(call)}):\n        return _slow({', '.join(allargs)})\n"
           + f"    return ({', '.join(ret)}{',' if len(ret) == 1 else ''})\n")
    exec(compile(src, f"<llvm kernel {mod.name}>", "exec"), ns)  # noqa: S102 - generated above
    run = ns["run"]
    run.llvm_ir = mod.text
    run.__name__ = mod.name
    # numba's dispatcher interface, as far as callers that look an overload's entry point up use it: the caller is
    # its own entry point for every argument type (it converts 0-d arguments itself)
    run.typeof_pyval = type
    run.overloads = _EveryType(run)
    return run


class _EveryType(dict):
    """``overloads[sig].entry_point`` is the caller, whatever ``sig``."""

    def __init__(self, run: Callable) -> None:
        super().__init__()
        self.entry_point = run

    def __missing__(self, key: Any) -> Any:
        return self


_retrying = threading.local()


def _retry(mod: Module, cfunc: Any, run: Callable, args: tuple) -> Any:
    """A call whose arrays failed the kernel's check: C-contiguous copies of the kernel's dtypes, once."""
    if getattr(_retrying, "on", False):
        _fail(mod)
    fixed = []
    for a, (q, kind) in zip(args, mod.args):
        if kind == "obj":
            b = np.array(a, dtype=np.dtype(q.dtype), order="C")
            if b.shape != tuple(q.shape):
                raise TypeError(f"{mod.name}: argument {q.name} has shape {b.shape}, the kernel takes {q.shape}")
            fixed.append(b)
        else:
            fixed.append(a)
    for b, j in zip(args[len(mod.args):], mod.out_params):
        _, shape, dtype, _ = mod.outputs[j]
        if not (isinstance(b, np.ndarray) and b.shape == tuple(shape) and b.dtype == np.dtype(dtype)
                and b.flags.c_contiguous and b.flags.writeable):
            raise TypeError(f"{mod.name}: out argument for output {j} must be a writeable C-contiguous "
                            f"{dtype} array of shape {shape}")
        fixed.append(b)
    _retrying.on = True
    try:
        return run(*fixed)
    finally:
        _retrying.on = False


def _fail(mod: Module) -> Any:
    raise TypeError(f"{mod.name}: the arguments do not match the kernel's layout")


def _literal_value(name: str) -> Any:
    lit = literal(name)
    if lit in ("True", "False"):
        return lit == "True"
    return float(lit) if any(c in lit for c in ".eE") else int(lit)
