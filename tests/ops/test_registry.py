"""The registry matrix: every registered op, checked four ways.

For each op the table ``CASES`` holds example inputs (shape variants, value domains) and a way to
build it, through symgrad's public API where it has one (the same code runs under torch), or
straight from the registry for internal ops (``fused``, ``sum_to``, ``index_add``) with a torch
equivalent beside it. Every case checks

(a) the op's numpy ``eval`` against the code generated from its lowering, and, for elementwise
    ops, against its lambdified SymPy form;
(b) its VJP, obtained through ``sg.autograd.grad(..., grad_outputs=g)``, against central finite
    differences by the inner-product test ``<vjp(g), v> == <g, jvp_fd(v)>`` in float64;
(c) for elementwise ops, its local partials against ``sympy.diff`` of its form;
(d) value, dtype, ``grad_fn`` name and gradient against torch in float32 and float64.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import sympy as sp
import torch
from conftest import FLOAT_DTYPES, assert_close, grad_fn_name, numpy_of
from registry_linalg_cases import extra_cases

import symgrad as sg
from codegen import emit_numpy, load_kernel
from symgrad.compiler.custom import CustomOp, CustomRule, is_custom
from symgrad.core import dtypes
from symgrad.core.graph import Node, toposort
from symgrad.derive.forward import jvp_graph
from symgrad.eager import composite, math_ops
from symgrad.eager.base import _arr
from symgrad.eager.record import _apply, _input_node
from symgrad.kernels.lower import lower
from symgrad.nn import functional as nn_functional
from symgrad.ops import OUT, REGISTRY, A
from symgrad.ops.index import normalize_index

SOURCE_OPS = {"leaf", "const", "scalar"}


# ---------------------------------------------------------------------------- value domains

def _any(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, shape)


def _pos(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape)


def _unit(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(-0.9, 0.9, shape)


def _away0(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Away from 0 (the kink of relu/abs and the pole of 1/x)."""
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


def _away_half(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Away from +-0.5 and 0.3, 0.1 (the clamp bounds used below)."""
    x = rng.uniform(-2.0, 2.0, shape)
    for b in (-0.5, 0.5, 0.3, 0.1):
        x = np.where(np.abs(x - b) < 0.08, x + 0.2, x)
    return x


def _log1p_dom(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(-0.5, 2.0, shape)


def _few(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Values from {-1, 0, 1}: comparisons see ties."""
    return rng.integers(-1, 2, shape).astype(np.float64)


def _with_zeros(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Some exact zeros among values away from 0 (prod's gradient rules; prod is multilinear, so
    central differences stay exact there)."""
    x = _away0(rng, shape)
    return np.where(rng.random(shape) < 0.3, 0.0, x)


def _specials(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """NaN, +-inf, zeros and ordinary numbers (the predicates)."""
    return rng.choice([np.nan, np.inf, -np.inf, 0.0, -1.5, 2.0], shape)


# ---------------------------------------------------------------------------- the table

@dataclass
class Case:
    """One way to exercise ``op``: ``fn(lib, *inputs)`` with ``lib`` = symgrad or torch."""

    op: str
    fn: Callable[..., Any]
    shapes: list[tuple[tuple, ...]]
    domains: tuple[Callable, ...]
    label: str = ""
    #: ops without a public API: no grad_fn name to compare with torch's
    internal: bool = False
    #: False for ops without a gradient (comparisons): no node is recorded, the result is a constant
    grad: bool = True
    #: the op's gradient is zero by definition (``stop_gradient``), whatever its form
    stops_gradient: bool = False
    #: finite-difference step and tolerance (linear ops with a float32 output use a big step)
    fd_h: float = 1e-6
    fd_rtol: float = 1e-6
    #: tolerance of the explicit partials against ``sympy.diff`` (torch's rule may use a rounded constant:
    #: hardsigmoid's backward multiplies by the float ``1.0f / 6.0f``, in float64 too)
    partial_rtol: float = 1e-12
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.op}:{self.label}" if self.label else self.op


BIN_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (3, 1)), ((4,), (2, 1, 4)), ((), (2, 3)), ((2, 3), ()), ((), ())]
UN_SHAPES = [((2, 3),), ((),), ((4, 1, 3),)]
SCALAR_SHAPES = [((2, 3),), ((),)]


def _bin(op: str, fn: Callable, label: str, da=_any, db=_any, shapes=None) -> Case:
    return Case(op, fn, shapes or BIN_SHAPES, (da, db), label)


def _un(op: str, fn: Callable, label: str = "", dom=_any, shapes=None) -> Case:
    return Case(op, fn, shapes or UN_SHAPES, (dom,), label)


def _fused_sg(expr: sp.Expr) -> Callable:
    def fn(lib: Any, *xs: Any) -> Any:
        return _apply(REGISTRY["fused"], *xs, expr=expr)
    return fn


def _sum_to(shape: tuple) -> Callable:
    def fn(lib: Any, x: Any) -> Any:
        if lib is torch:
            return x.sum_to_size(torch.Size(shape))
        return _apply(REGISTRY["sum_to"], x, shape=shape)
    return fn


def _numel(dims: tuple) -> Callable:
    """The element count over ``dims`` (``mean``'s divisor, read from the shape at run time)."""
    def fn(lib: Any, x: Any) -> Any:
        if lib is torch:
            return torch.tensor(math.prod(x.shape[d] for d in dims), dtype=x.dtype)
        return sys.modules["symgrad.eager.record"]._apply(REGISTRY["numel"], x, dims=dims)  # seen by _untracked_node
    return fn


def _fori(lib: Any, x: Any) -> Any:
    """A loop of four steps: one ``scan`` node in symgrad, the steps unrolled in torch."""
    if lib is torch:
        for i in range(4):
            x = x * 0.9 + torch.sin(x) * (i + 1)
        return x
    return sg.fori_loop(0, 4, lambda i, c: c * 0.9 + sg.sin(c) * (i + 1), x)


def _scan_xs(lib: Any, x: Any, xs: Any) -> Any:
    """A scan over the rows of ``xs`` (both inputs differentiated), reversed."""
    if lib is torch:
        for k in range(xs.shape[0] - 1, -1, -1):
            x = torch.tanh(x * xs[k]) + xs[k]
        return x
    return sg.scan(lambda c, r: (sg.tanh(c * r) + r, None), x, xs, reverse=True)[0]


def _compiled_body(x: Any) -> Any:
    return (x.sin() * x).sum()


_COMPILED = sg.compile(_compiled_body)


def _compiled_call(lib: Any, x: Any) -> Any:
    """A compiled function on a tensor: one ``CompiledFunctionBackward`` node (torch: the same ops)."""
    return _compiled_body(x) if lib is torch else _COMPILED(x)


def _compiled_grad(lib: Any, x: Any) -> Any:
    """``sg.grad`` of it on a tensor: the kernel's gradient, differentiable again (torch: create_graph)."""
    if lib is torch:
        return torch.autograd.grad(_compiled_body(x), x, create_graph=True)[0]
    return sg.grad(_compiled_body)(x)


def _index_add(index: Any, shape: tuple, advanced: bool) -> Callable:
    """The adjoint of ``x[index]`` on a tensor of ``shape``, applied to ``g``."""
    def fn(lib: Any, g: Any) -> Any:
        if lib is torch:
            z = torch.zeros(shape, dtype=g.dtype)
            if advanced:
                return z.index_put((torch.tensor(index),), g, accumulate=True)
            z[index] = g
            return z
        return _apply(REGISTRY["index_add"], g, index=normalize_index(index, shape), shape=shape)
    return fn


def _other_float(lib: Any, x: Any) -> Any:
    return lib.float32 if x.dtype == lib.float64 else lib.float64


def _reduction_cases(op: str) -> list[Case]:
    out = []
    variants = [None, 0, -1, 1, (0, 2), (-1, 0), (0, 1, 2)]
    for dim, keepdim in itertools.product(variants, (False, True)):
        if dim is None and not keepdim:
            fn = lambda lib, x: getattr(x, op)()
        else:
            fn = (lambda d, k: lambda lib, x: getattr(x, op)(dim=d, keepdim=k))(dim, keepdim)
        out.append(Case(op, fn, [((2, 3, 4),)], (_any,), f"dim={dim},keepdim={keepdim}"))
    # 0-d tensors: dim None, 0 and -1 are all valid
    out.append(Case(op, lambda lib, x: getattr(x, op)(), [((),)], (_any,), "0d"))
    out.append(Case(op, lambda lib, x: getattr(x, op)(0), [((),)], (_any,), "0d,dim=0"))
    out.append(Case(op, lambda lib, x: getattr(x, op)(-1, keepdim=True), [((),)], (_any,), "0d,dim=-1,keepdim"))
    # function form and a size-1 dim
    out.append(Case(op, lambda lib, x: getattr(lib, op)(x, 1), [((3, 1, 2),)], (_any,), "fn,size1"))
    return out


def _nograd(case: Case) -> Case:
    case.grad = False
    return case


def _extreme_cases(op: str) -> list[Case]:
    """amax/amin (and the full max()/min()), max/min(dim) values, argmax/argmin: several dims, keepdim, 0-d."""
    base = op[1:]  # max / min
    arg = "arg" + base
    cases = [
        Case(op, lambda lib, x: getattr(x, base)(), [((2, 3, 4),), ((),), ((5,),)], (_any,), "full"),
        Case(op, lambda lib, x: getattr(lib, base)(x), [((3, 2),)], (_any,), "fn full"),
        Case(op, lambda lib, x: getattr(x, op)(1), [((2, 3, 4),)], (_any,), "dim=1"),
        Case(op, lambda lib, x: getattr(x, op)((0, -1), keepdim=True), [((2, 3, 4),)], (_any,), "dims=(0,-1),keepdim"),
        Case(op, lambda lib, x: getattr(x, op)(), [((2, 3),), ((),)], (_any,), "dim=()"),
        Case(op, lambda lib, x: getattr(lib, op)(x, dim=-1), [((3, 1, 2),)], (_any,), "fn,size1"),
        Case(base, lambda lib, x: getattr(x, base)(1).values, [((2, 3, 4),)], (_any,), "dim=1"),
        Case(base, lambda lib, x: getattr(x, base)(-1, keepdim=True)[0], [((2, 3, 4),), ((4,),)], (_any,),
             "dim=-1,keepdim"),
        Case(base, lambda lib, x: getattr(lib, base)(x, 0).values, [((3, 2),), ((),)], (_any,), "fn dim=0"),
        Case(base, lambda lib, x: getattr(x, base)(dim=0, keepdim=True).values, [((),)], (_any,), "0d keepdim"),
        Case(arg, lambda lib, x: getattr(x, arg)(), [((2, 3, 4),), ((),)], (_any,), "flat", grad=False),
        Case(arg, lambda lib, x: getattr(x, arg)(keepdim=True), [((2, 3),)], (_any,), "flat,keepdim", grad=False),
        Case(arg, lambda lib, x: getattr(x, arg)(1), [((2, 3, 4),)], (_any,), "dim=1", grad=False),
        Case(arg, lambda lib, x: getattr(lib, arg)(x, -1, keepdim=True), [((2, 3),), ((),)], (_any,),
             "fn dim=-1,keepdim", grad=False),
    ]
    return cases


def _softmax_cases(op: str) -> list[Case]:
    return [Case(op, (lambda dd: lambda lib, x: getattr(x, op)(dd))(d), [((2, 3, 4),)], (_any,), f"dim={d}")
            for d in (0, 1, -1)] + [
        Case(op, lambda lib, x: getattr(lib, op)(x, 0), [((),), ((5,),)], (_any,), "fn"),
        Case(op, lambda lib, x: getattr(x, op)(-1, dtype=lib.float64), [((2, 3),)], (_any,), "dtype")]


def _written(index: Any) -> Callable:
    """``y = x * 1; y[index] = v`` (``v``: a tensor input, or the Python number 2.5)."""
    def fn(lib: Any, x: Any, v: Any = 2.5) -> Any:
        y = x * 1
        y[index(lib, x) if callable(index) else index] = v
        return y
    return fn


def _update_cases() -> list[Case]:
    """``index_put``: __setitem__ (basic, integer-array and mask indices), copy_, index_put, index_add."""
    return [
        Case("index_put", _written(slice(1, None)), [((4, 3), (3,)), ((4, 3), (3, 3))], (_any, _any), "x[1:] = v"),
        Case("index_put", _written((Ellipsis, slice(None, None, 2))), [((2, 5),)], (_any,), "x[..., ::2] = 2.5"),
        Case("index_put", _written((None, -1)), [((3, 2), (1, 1, 2))], (_any, _any), "x[None, -1] = v"),
        Case("index_put", _written([2, 0]), [((4, 3), (2, 3)), ((4, 3), ())], (_any, _any), "x[[2, 0]] = v"),
        Case("index_put", _written(lambda lib, x: x.detach() > 0), [((3, 4),)], (_away0,), "x[x > 0] = 2.5"),
        Case("index_put", _written(slice(None)), [((3, 2), (2,))], (_any, _any), "x[:] = v"),
        Case("index_put", lambda lib, x, v: (x * 1).copy_(v), [((3, 4), (4,)), ((2,), ())], (_any, _any), "copy_"),
        Case("index_put", lambda lib, x, v: (x * 1).copy_(v.to(_other_float(lib, v))), [((2, 3), (2, 3))],
             (_any, _any), "copy_ other dtype", fd_h=1.0),
        Case("index_put", lambda lib, x, v: x.index_put((lib.tensor([1, 1, 3]),), v, accumulate=True),
             [((4, 3), (3, 3)), ((4, 3), (3,))], (_any, _any), "index_put accumulate repeats"),
        Case("index_put", lambda lib, x, v: x.index_put((lib.tensor([0, 2]), lib.tensor([1, 0])), v),
             [((3, 2), (2,))], (_any, _any), "index_put pairs"),
        Case("index_put", lambda lib, x, v: x.index_add(1, lib.tensor([2, 0, 2]), v, alpha=2), [((2, 3), (2, 3))],
             (_any, _any), "index_add"),
    ]


CASES: list[Case] = [
    # ------------------------------------------------------------------ binary arithmetic
    _bin("add", lambda lib, x, y: x + y, "tt"),
    Case("add", lambda lib, x: x + 2.5, SCALAR_SHAPES, (_any,), "t+float"),
    Case("add", lambda lib, x: 3 + x, SCALAR_SHAPES, (_any,), "int+t"),
    _bin("add", lambda lib, x, y: lib.add(x, y, alpha=0.5), "alpha"),
    _bin("sub", lambda lib, x, y: x - y, "tt"),
    Case("sub", lambda lib, x: x - 1.5, SCALAR_SHAPES, (_any,), "t-float"),
    _bin("sub", lambda lib, x, y: x.sub(y, alpha=2), "alpha"),
    Case("rsub", lambda lib, x: 2.5 - x, SCALAR_SHAPES, (_any,), "float-t"),
    Case("rsub", lambda lib, x: 3 - x, SCALAR_SHAPES, (_any,), "int-t"),
    _bin("mul", lambda lib, x, y: x * y, "tt"),
    Case("mul", lambda lib, x: x * 2.5, SCALAR_SHAPES, (_any,), "t*float"),
    Case("mul", lambda lib, x: 3 * x, SCALAR_SHAPES, (_any,), "int*t"),
    Case("mul", lambda lib, x: 2.0 / x, SCALAR_SHAPES, (_away0,), "float/t"),
    _bin("div", lambda lib, x, y: x / y, "tt", db=_away0),
    Case("div", lambda lib, x: x / 4, SCALAR_SHAPES, (_any,), "t/int"),
    _bin("div", lambda lib, x, y: lib.div(x, y), "fn", db=_away0, shapes=BIN_SHAPES[:2]),
    _un("reciprocal", lambda lib, x: x.reciprocal(), dom=_away0),
    _un("neg", lambda lib, x: -x),
    _un("neg", lambda lib, x: lib.neg(x), "fn", shapes=UN_SHAPES[:1]),
    # ------------------------------------------------------------------ powers
    _un("pow", lambda lib, x: x ** 2, "2"),
    _un("pow", lambda lib, x: x ** 3, "3"),
    _un("pow", lambda lib, x: x ** 2.5, "2.5", dom=_pos),
    _un("pow", lambda lib, x: x ** 0.5, "0.5", dom=_pos),
    _un("pow", lambda lib, x: x ** -1, "-1", dom=_away0),
    _un("pow", lambda lib, x: x ** -2.0, "-2.0", dom=_away0),
    _un("pow", lambda lib, x: x ** 0, "0"),
    _un("pow", lambda lib, x: x.pow(2), "method"),
    _un("pow", lambda lib, x: lib.pow(x, 3), "fn"),
    _bin("pow_tensor", lambda lib, x, y: x ** y, "tt", da=_pos),
    _bin("pow_tensor", lambda lib, x, y: lib.pow(x, y), "fn", da=_pos, shapes=BIN_SHAPES[:2]),
    _un("rpow", lambda lib, x: 2.0 ** x, "2.0"),
    _un("rpow", lambda lib, x: 0.5 ** x, "0.5"),
    _un("rpow", lambda lib, x: 3 ** x, "int3"),
    # ------------------------------------------------------------------ unary functions
    _un("exp", lambda lib, x: x.exp()),
    _un("exp", lambda lib, x: lib.exp(x), "fn", shapes=UN_SHAPES[:1]),
    _un("log", lambda lib, x: x.log(), dom=_pos),
    _un("log", lambda lib, x: lib.log(x), "fn", dom=_pos, shapes=UN_SHAPES[:1]),
    _un("log1p", lambda lib, x: x.log1p(), dom=_log1p_dom),
    _un("log1p", lambda lib, x: lib.log1p(x), "fn", dom=_log1p_dom, shapes=UN_SHAPES[:1]),
    _un("sqrt", lambda lib, x: x.sqrt(), dom=_pos),
    _un("sqrt", lambda lib, x: lib.sqrt(x), "fn", dom=_pos, shapes=UN_SHAPES[:1]),
    _un("sin", lambda lib, x: x.sin()),
    _un("sin", lambda lib, x: lib.sin(x), "fn", shapes=UN_SHAPES[:1]),
    _un("cos", lambda lib, x: x.cos()),
    _un("cos", lambda lib, x: lib.cos(x), "fn", shapes=UN_SHAPES[:1]),
    _un("tan", lambda lib, x: x.tan(), dom=_unit),
    _un("tan", lambda lib, x: lib.tan(x), "fn", dom=_unit, shapes=UN_SHAPES[:1]),
    _un("tanh", lambda lib, x: x.tanh()),
    _un("tanh", lambda lib, x: lib.tanh(x), "fn", shapes=UN_SHAPES[:1]),
    _un("sigmoid", lambda lib, x: x.sigmoid()),
    _un("sigmoid", lambda lib, x: lib.sigmoid(x), "fn", shapes=UN_SHAPES[:1]),
    _un("relu", lambda lib, x: x.relu(), dom=_away0),
    _un("relu", lambda lib, x: lib.relu(x), "fn", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("abs", lambda lib, x: x.abs(), dom=_away0),
    _un("abs", lambda lib, x: lib.abs(x), "fn", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("abs", lambda lib, x: abs(x), "builtin", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("clamp", lambda lib, x: x.clamp(-0.5, 0.5), "both", dom=_away_half),
    _un("clamp", lambda lib, x: x.clamp(min=0.1), "min", dom=_away_half),
    _un("clamp", lambda lib, x: x.clamp(max=0.3), "max", dom=_away_half),
    _un("clamp", lambda lib, x: lib.clamp(x, -0.5, 0.3), "fn", dom=_away_half),
    _un("clamp", lambda lib, x: x.clamp_min(0.1), "clamp_min", dom=_away_half, shapes=UN_SHAPES[:1]),
    _un("clone", lambda lib, x: x.clone()),
    Case("to", lambda lib, x: x.to(_other_float(lib, x)), UN_SHAPES, (_any,), "other float", fd_h=1.0,
         fd_rtol=1e-6),
    Case("to", lambda lib, x: x.double() if x.dtype == lib.float32 else x.float(), UN_SHAPES[:1], (_any,),
         "double/float", fd_h=1.0, fd_rtol=1e-6),
    # ------------------------------------------------------------------ reductions
    *_reduction_cases("sum"),
    *_reduction_cases("mean"),
    *_extreme_cases("amax"),
    *_extreme_cases("amin"),
    Case("prod", lambda lib, x: x.prod(), [((2, 3),), ((),), ((6,),)], (_with_zeros,), "full"),
    Case("prod", lambda lib, x: x.prod(), [((3, 2),)], (_away0,), "full,no zeros"),
    Case("prod", lambda lib, x: lib.prod(x), [((4,),)], (_pos,), "fn"),
    *[Case("prod", (lambda dd, kk: lambda lib, x: x.prod(dd, keepdim=kk))(d, k), [((2, 3, 4),)], (_with_zeros,),
           f"dim={d},keepdim={k}") for d, k in ((0, False), (1, True), (-1, False))],
    Case("prod", lambda lib, x: x.prod(0), [((),)], (_with_zeros,), "0d,dim=0"),
    Case("prod", lambda lib, x: x.prod(1, dtype=lib.float64), [((2, 3),)], (_with_zeros,), "dtype"),
    *[Case("logsumexp", (lambda dd, kk: lambda lib, x: x.logsumexp(dd, keepdim=kk))(d, k), [((2, 3, 4),)], (_any,),
           f"dim={d},keepdim={k}") for d, k in ((0, False), (-1, True), ((0, 2), False), ((0, 1, 2), True))],
    Case("logsumexp", lambda lib, x: lib.logsumexp(x, 0), [((),), ((5,),)], (_any,), "fn"),
    *_softmax_cases("softmax"),
    *_softmax_cases("log_softmax"),
    *[Case("cumsum", (lambda dd: lambda lib, x: x.cumsum(dd))(d), [((2, 3, 4),)], (_any,), f"dim={d}")
      for d in (0, 1, -1)],
    Case("cumsum", lambda lib, x: lib.cumsum(x, 0), [((),), ((5,),)], (_any,), "fn"),
    Case("cumsum", lambda lib, x: x.cumsum(-1, dtype=lib.float64), [((2, 3),)], (_any,), "dtype"),
    Case("scan", _fori, [((3,),)], (_any,), "fori_loop", internal=True),
    Case("scan", _scan_xs, [((3,), (5, 3))], (_any, _any), "scan xs reverse", internal=True),
    Case("sum_to", _sum_to((3, 1)), [((2, 3, 4),)], (_any,), "(2,3,4)->(3,1)", internal=True),
    Case("sum_to", _sum_to(()), [((2, 3),)], (_any,), "(2,3)->()", internal=True),
    Case("sum_to", _sum_to((1, 3)), [((4, 3),)], (_any,), "(4,3)->(1,3)", internal=True),
    Case("sum_to", _sum_to((2, 1, 3)), [((5, 2, 4, 3),)], (_any,), "(5,2,4,3)->(2,1,3)", internal=True),
    # ------------------------------------------------------------------ shape ops
    Case("expand", lambda lib, x: x.expand(3, 2, 4), [((2, 1),)], (_any,), "(2,1)->(3,2,4)"),
    Case("expand", lambda lib, x: x.expand(2, -1), [((1, 3),)], (_any,), "-1"),
    Case("expand", lambda lib, x: x.expand(2, 3), [((),)], (_any,), "0d"),
    Case("expand", lambda lib, x: x.expand_as(lib.ones(4, 3, dtype=x.dtype)), [((3,),)], (_any,), "expand_as"),
    Case("expand", lambda lib, x: lib.broadcast_to(x, (2, 3)), [((1, 3),)], (_any,), "broadcast_to"),
    Case("reshape", lambda lib, x: x.view(-1), [((2, 3),)], (_any,), "view(-1)"),
    Case("reshape", lambda lib, x: x.view(3, 2), [((2, 3),)], (_any,), "view(3,2)"),
    Case("reshape", lambda lib, x: x.view(1), [((),)], (_any,), "0d view(1)"),
    Case("reshape", lambda lib, x: x.reshape(()), [((1, 1),)], (_any,), "reshape(())"),
    Case("reshape", lambda lib, x: x.reshape(2, -1), [((2, 3, 2),)], (_any,), "reshape(2,-1)"),
    Case("reshape", lambda lib, x: lib.reshape(x, (3, 4)), [((2, 6),)], (_any,), "fn"),
    Case("reshape", lambda lib, x: x.flatten(), [((2, 3, 2),)], (_any,), "flatten"),
    Case("reshape", lambda lib, x: x.flatten(1), [((2, 3, 2),)], (_any,), "flatten(1)"),
    Case("reshape", lambda lib, x: x.flatten(), [((),)], (_any,), "0d flatten"),
    Case("reshape", lambda lib, x: x.squeeze(), [((2, 1, 3, 1),)], (_any,), "squeeze"),
    Case("reshape", lambda lib, x: x.squeeze(1), [((2, 1, 3),)], (_any,), "squeeze(1)"),
    Case("reshape", lambda lib, x: x.squeeze(-1), [((2, 3, 1),)], (_any,), "squeeze(-1)"),
    Case("reshape", lambda lib, x: x.unsqueeze(0), [((2, 3),)], (_any,), "unsqueeze(0)"),
    Case("reshape", lambda lib, x: x.unsqueeze(-1), [((2, 3),)], (_any,), "unsqueeze(-1)"),
    Case("reshape", lambda lib, x: x.unsqueeze(0), [((),)], (_any,), "0d unsqueeze"),
    Case("reshape", lambda lib, x: x.view_as(lib.ones(3, 2)), [((6,),)], (_any,), "view_as"),
    Case("permute", lambda lib, x: x.permute(2, 0, 1), [((2, 3, 4),)], (_any,), "permute"),
    Case("permute", lambda lib, x: lib.permute(x, (1, 0, 2)), [((2, 3, 4),)], (_any,), "fn"),
    Case("permute", lambda lib, x: x.transpose(0, -1), [((2, 3, 4),)], (_any,), "transpose"),
    Case("permute", lambda lib, x: lib.transpose(x, 0, 1), [((2, 3),)], (_any,), "transpose fn"),
    Case("permute", lambda lib, x: x.T, [((2, 3),)], (_any,), ".T"),
    Case("permute", lambda lib, x: x.t(), [((3, 2),)], (_any,), ".t()"),
    # ------------------------------------------------------------------ joins, tilings and splits
    Case("cat", lambda lib, x, y: lib.cat([x, y]), [((2, 3), (1, 3))], (_any, _any), "dim=0"),
    Case("cat", lambda lib, x, y: lib.cat((x, y, x), -1), [((2, 3), (2, 1)), ((4,), (2,))], (_any, _any), "dim=-1"),
    Case("cat", lambda lib, x, y: lib.cat([x, y], dim=1), [((2, 2, 3), (2, 1, 3))], (_any, _any), "dim=1"),
    Case("cat", lambda lib, x: lib.cat([x]), [((3,),)], (_any,), "one"),
    Case("cat", lambda lib, x, y: lib.cat([y, x, y], 1), [((2, 3), (0,))], (_any, _any), "skips 1-d empty"),
    Case("cat", lambda lib, x, y: lib.cat([x, y.to(_other_float(lib, y))]), [((2,), (3,))], (_any, _any),
         "promote", fd_h=1.0),
    Case("stack", lambda lib, x, y: lib.stack([x, y]), [((2, 3), (2, 3)), ((), ())], (_any, _any), "dim=0"),
    Case("stack", lambda lib, x, y: lib.stack((x, y, x), -1), [((2, 3), (2, 3))], (_any, _any), "dim=-1"),
    Case("stack", lambda lib, x: lib.stack([x, x * 2], dim=1), [((3,),)], (_any,), "dim=1"),
    Case("repeat", lambda lib, x: x.repeat(2, 3), [((2, 3),), ((1, 2),)], (_any,), "(2,3)"),
    Case("repeat", lambda lib, x: x.repeat(2, 1, 2), [((3,),), ((2, 2),), ((),)], (_any,), "new dims"),
    Case("repeat", lambda lib, x: x.repeat(()), [((),)], (_any,), "0d ()"),
    Case("repeat", lambda lib, x: x.repeat(1, 0), [((2, 3),)], (_any,), "zero"),
    Case("index", lambda lib, x: x.split(2)[1], [((5, 2),)], (_any,), "split(2)"),
    Case("index", lambda lib, x: x.split(2)[-1], [((5, 2),)], (_any,), "split(2) last"),
    Case("index", lambda lib, x: lib.split(x, [1, 2], dim=-1)[1], [((2, 3),)], (_any,), "split sizes"),
    Case("index", lambda lib, x: x.chunk(3, 1)[0], [((2, 5),)], (_any,), "chunk"),
    Case("index", lambda lib, x: lib.chunk(x, 2)[1], [((3,),)], (_any,), "chunk fn"),
    Case("index", lambda lib, x: x.unbind(1)[2], [((2, 3, 2),)], (_any,), "unbind"),
    Case("index", lambda lib, x: lib.unbind(x)[0], [((2,),)], (_any,), "unbind fn"),
    # ------------------------------------------------------------------ indexing
    Case("matmul", lambda lib, a, b: a @ b, [((3,), (3,))], (_any, _any), "dot"),
    Case("matmul", lambda lib, a, b: lib.matmul(a, b), [((2, 3), (3,))], (_any, _any), "mv"),
    Case("matmul", lambda lib, a, b: a @ b, [((3,), (3, 4))], (_any, _any), "vm"),
    Case("matmul", lambda lib, a, b: a.mm(b), [((2, 3), (3, 4))], (_any, _any), "mm"),
    Case("matmul", lambda lib, a, b: a @ b, [((2, 2, 3), (3, 4))], (_any, _any), "batched, broadcast"),
    Case("matmul", lambda lib, a, b: a @ b, [((2, 1, 2, 3), (3, 3, 2))], (_any, _any), "batch broadcast both"),
    Case("index", lambda lib, x: x[1], [((3, 4),)], (_any,), "int"),
    Case("index", lambda lib, x: x[-1, 2], [((3, 4),)], (_any,), "int,int"),
    Case("index", lambda lib, x: x[1:, ::2], [((3, 4),)], (_any,), "slices"),
    Case("index", lambda lib, x: x[..., None, -1], [((2, 3, 4),)], (_any,), "ellipsis,None"),
    Case("index", lambda lib, x: x[:, 1:3], [((2, 4, 3),)], (_any,), "slice dim1"),
    Case("index", lambda lib, x: x[[0, 2, 0]], [((3, 2),)], (_any,), "int list (repeats)"),
    Case("index", lambda lib, x: x[:, lib.tensor([1, 1, 0])], [((2, 3),)], (_any,), "tensor index"),
    Case("index", lambda lib, x: x[None], [((),)], (_any,), "0d None"),
    Case("index", lambda lib, x: x[...], [((2,),)], (_any,), "ellipsis only"),
    Case("index_add", _index_add((slice(1, None), slice(None, None, 2)), (3, 4), False), [((2, 2),)], (_any,),
         "slices", internal=True),
    Case("index_add", _index_add(1, (3, 4), False), [((4,),)], (_any,), "int", internal=True),
    Case("index_add", _index_add([0, 2, 0], (3, 2), True), [((3, 2),)], (_any,), "repeats", internal=True),
    # ------------------------------------------------------------------ selection
    _bin("where", lambda lib, x, y: lib.where(x > 0, x, y), "tt", da=_away0),
    Case("where", lambda lib, x: lib.where(x < 0, x, 0.5), SCALAR_SHAPES, (_away0,), "t,float"),
    _bin("maximum", lambda lib, x, y: lib.maximum(x, y), "tt"),
    _bin("minimum", lambda lib, x, y: lib.minimum(x, y), "tt"),
    Case("stop_gradient", lambda lib, x: _apply(REGISTRY["stop_gradient"], x), UN_SHAPES, (_any,), "internal",
         internal=True, stops_gradient=True, extra={"torch": lambda a: a.detach() + 0 * a}),
    Case("compiled_call", _compiled_call, [((2, 3),), ((),)], (_any,), "sum(sin(x)*x)", internal=True),
    Case("compiled_grad", _compiled_grad, [((2, 3),), ((),)], (_any,), "grad sum(sin(x)*x)", internal=True),
    Case("numel", _numel((0, 2)), [((2, 3, 4),)], (_any,), "dims (0, 2)", internal=True, grad=False),
    Case("numel", _numel(()), [((),)], (_any,), "0-d", internal=True, grad=False),
    # ------------------------------------------------------------------ comparisons: bool results, no gradient
    *[Case(name, fn, BIN_SHAPES, (_few, _few), label, grad=False) for name, fn, label in [
        ("gt", lambda lib, x, y: x > y, ">"), ("ge", lambda lib, x, y: x >= y, ">="),
        ("lt", lambda lib, x, y: x < y, "<"), ("le", lambda lib, x, y: lib.le(x, y), "le"),
        ("eq", lambda lib, x, y: x == y, "=="), ("ne", lambda lib, x, y: x != y, "!=")]],
    Case("gt", lambda lib, x: x > 0.5, SCALAR_SHAPES, (_few,), "t>float", grad=False),
    Case("eq", lambda lib, x: x.eq(0), SCALAR_SHAPES, (_few,), "t.eq(int)", grad=False),
    # ------------------------------------------------------------------ logical ops and predicates: bool, no gradient
    _nograd(_bin("logical_and", lambda lib, x, y: (x > 0) & (y < 0), "&", da=_few, db=_few)),
    _nograd(_bin("logical_and", lambda lib, x, y: lib.logical_and(x, y), "fn floats", da=_few, db=_few)),
    _nograd(_bin("logical_or", lambda lib, x, y: (x > 0) | (y < 0), "|", da=_few, db=_few)),
    _nograd(_bin("logical_or", lambda lib, x, y: x.logical_or(y), "method floats", da=_few, db=_few)),
    _nograd(Case("logical_or", lambda lib, x: (x > 0) | True, SCALAR_SHAPES, (_few,), "| True")),
    _nograd(_bin("logical_xor", lambda lib, x, y: (x > 0) ^ (y < 0), "^", da=_few, db=_few)),
    _nograd(_bin("logical_xor", lambda lib, x, y: lib.logical_xor(x, y), "fn floats", da=_few, db=_few)),
    _nograd(_un("logical_not", lambda lib, x: ~(x > 0), "~", dom=_few)),
    _nograd(_un("logical_not", lambda lib, x: lib.logical_not(x), "fn float", dom=_few)),
    _nograd(_un("isnan", lambda lib, x: x.isnan(), dom=_specials)),
    _nograd(_un("isnan", lambda lib, x: lib.isnan(x.long()), "int", dom=_few, shapes=UN_SHAPES[:1])),
    _nograd(_un("isinf", lambda lib, x: lib.isinf(x), dom=_specials)),
    _nograd(_un("isfinite", lambda lib, x: x.isfinite(), dom=_specials)),
    _nograd(_un("isfinite", lambda lib, x: lib.isfinite(x), "fn", dom=_specials, shapes=UN_SHAPES[:1])),
    _nograd(_bin("bitwise_and", lambda lib, x, y: (x * 3).long() & (y * 3).long(), "&", da=_any, db=_any)),
    _nograd(Case("bitwise_and", lambda lib, x: (x > 0) & 1, SCALAR_SHAPES, (_few,), "bool & int")),
    _nograd(_bin("bitwise_or", lambda lib, x, y: (x * 3).long() | (y * 3).long(), "|", shapes=BIN_SHAPES[:3])),
    _nograd(Case("bitwise_or", lambda lib, x: 6 | (x * 3).int(), SCALAR_SHAPES, (_any,), "int | int32")),
    _nograd(_bin("bitwise_xor", lambda lib, x, y: (x * 3).long() ^ (y * 3).long(), "^", shapes=BIN_SHAPES[:3])),
    _nograd(_un("bitwise_not", lambda lib, x: ~(x * 3).long(), "~")),
    _nograd(_un("bitwise_not", lambda lib, x: lib.bitwise_not((x * 3).int()), "fn int32", shapes=UN_SHAPES[:1])),
    _nograd(_bin("bitwise_left_shift", lambda lib, x, y: (x * 3).long() << (y * 4).long().abs(), "<<",
                 shapes=BIN_SHAPES[:3])),
    _nograd(_bin("bitwise_left_shift", lambda lib, x, y: lib.bitwise_left_shift((x * 9).int(), (y * 9).int()),
                 "fn int32, negative and past-width counts", shapes=BIN_SHAPES[:1])),
    _nograd(_bin("bitwise_right_shift", lambda lib, x, y: (x * 99).long() >> (y * 40).long().abs(), ">>",
                 shapes=BIN_SHAPES[:3])),
    _nograd(_bin("bitwise_right_shift", lambda lib, x, y: lib.bitwise_right_shift((x * 9).to(lib.int8), (y * 12).int()),
                 "fn int8 by int32, negative and past-width counts", shapes=BIN_SHAPES[:1])),
    # ------------------------------------------------------------------ fused expressions (gradients are made of these)
    Case("fused", _fused_sg(A[0] * sp.sin(A[1]) + A[0] ** 2), BIN_SHAPES[:4], (_any, _any), "a*sin(b)+a^2",
         internal=True, extra={"torch": lambda a, b: a * torch.sin(b) + a ** 2}),
    Case("fused", _fused_sg(sp.exp(-A[0] ** 2) / (1 + A[0] ** 2)), UN_SHAPES, (_any,), "exp(-a^2)/(1+a^2)",
         internal=True, extra={"torch": lambda a: torch.exp(-a ** 2) / (1 + a ** 2)}),
    Case("fused", _fused_sg(A[0] * A[1] - A[2] / 3), [((2, 3), (3,), ())], (_any, _any, _any), "a*b-c/3",
         internal=True, extra={"torch": lambda a, b, c: a * b - c / 3}),
    # ------------------------------------------------------------------ in-place writes as functional updates
    *_update_cases(),
]

# ---------------------------------------------------------------------------- composite ops (symgrad/composite.py)
# Built from registry ops: the case's op is the one that records the result (mostly a ``fused`` node that
# carries torch's grad_fn name), checked like any other (torch, finite differences, generated code).

_INF = float("inf")

COMPOSITE_CASES: list[Case] = [
    # variance and standard deviation
    Case("fused", lambda lib, x: x.var(), [((2, 3, 4),)], (_any,), "var"),
    Case("fused", lambda lib, x: x.var(1), [((3, 4),)], (_any,), "var dim=1"),
    Case("fused", lambda lib, x: x.var((0, -1), keepdim=True), [((2, 3, 4),)], (_any,), "var dims keepdim"),
    Case("fused", lambda lib, x: lib.var(x, 0, unbiased=False), [((3, 2),)], (_any,), "var unbiased=False"),
    Case("fused", lambda lib, x: x.var(-1, correction=2), [((2, 5),)], (_any,), "var correction=2"),
    Case("fused", lambda lib, x: x.std(), [((2, 3),)], (_any,), "std"),
    Case("fused", lambda lib, x: x.std(1, keepdim=True), [((3, 4),)], (_any,), "std dim keepdim"),
    Case("fused", lambda lib, x: lib.std(x, dim=-1, correction=0), [((2, 3),), ((),)], (_any,), "std correction=0"),
    Case("fused", lambda lib, x: lib.var_mean(x, 1)[0], [((3, 4),)], (_any,), "var_mean var"),
    Case("fused", lambda lib, x: lib.var_mean(x, -1, keepdim=True)[1], [((3, 4),)], (_any,), "var_mean mean"),
    Case("fused", lambda lib, x: lib.std_mean(x, (0, 2))[0], [((2, 3, 4),)], (_any,), "std_mean std"),
    Case("fused", lambda lib, x: lib.std_mean(x)[1], [((3, 2),)], (_any,), "std_mean mean"),
    # norms
    Case("fused", lambda lib, x: x.norm(), [((3, 4),), ((),)], (_any,), "norm"),
    Case("fused", lambda lib, x: x.norm(1, dim=1), [((3, 4),)], (_away0,), "norm p=1"),
    Case("fused", lambda lib, x: x.norm(_INF, dim=-1, keepdim=True), [((3, 4),)], (_away0,), "norm p=inf"),
    Case("fused", lambda lib, x: x.norm(3, dim=(0, 1)), [((2, 3, 2),)], (_away0,), "norm p=3"),
    Case("fused", lambda lib, x: lib.norm(x, p="fro", dim=0), [((3, 4),)], (_any,), "norm fro dim"),
    Case("fused", lambda lib, x: lib.linalg.vector_norm(x), [((2, 3, 4),)], (_any,), "vector_norm"),
    Case("fused", lambda lib, x: lib.linalg.vector_norm(x, -_INF, dim=0), [((3, 4),)], (_away0,),
         "vector_norm -inf"),
    Case("fused", lambda lib, x: lib.linalg.vector_norm(x, 0.5, 1, True), [((2, 3),)], (_away0,),
         "vector_norm 0.5"),
    Case("fused", lambda lib, x: lib.linalg.norm(x), [((2, 3, 4),)], (_any,), "linalg.norm"),
    Case("fused", lambda lib, x: lib.linalg.norm(x, "fro"), [((3, 4),)], (_any,), "linalg.norm fro"),
    Case("fused", lambda lib, x: lib.linalg.norm(x, 3), [((5,),)], (_away0,), "linalg.norm vector 3"),
    Case("amax", lambda lib, x: lib.linalg.norm(x, 1), [((3, 4),)], (_away0,), "linalg.norm matrix 1"),
    Case("amax", lambda lib, x: lib.linalg.norm(x, _INF, dim=(1, 0), keepdim=True), [((3, 4),)], (_away0,),
         "linalg.norm matrix inf"),
    Case("fused", lambda lib, x, y: lib.dist(x, y), [((3, 4), (4,))], (_any, _any), "dist"),
    Case("fused", lambda lib, x, y: x.dist(y, 1), [((2, 3), (2, 3))], (_away0, _any), "dist p=1"),
    # scans
    Case("fused", lambda lib, x: x.cumprod(1), [((3, 4),)], (_with_zeros,), "cumprod"),
    Case("fused", lambda lib, x: lib.cumprod(x, -1), [((2, 3, 4),), ((),)], (_away0,), "cumprod fn"),
    Case("fused", lambda lib, x: x.cumprod(0, dtype=lib.float64), [((4,),)], (_with_zeros,), "cumprod dtype"),
    Case("fused", lambda lib, x: x.logcumsumexp(0), [((3, 4),), ((),)], (_any,), "logcumsumexp"),
    Case("fused", lambda lib, x: lib.logcumsumexp(x, -2), [((2, 3, 4),)], (_any,), "logcumsumexp fn"),
    # NaN-skipping reductions, min and max together, counts
    Case("fused", lambda lib, x: x.nansum(), [((3, 4),)], (_any,), "nansum"),
    Case("fused", lambda lib, x: lib.nansum(x, 1, keepdim=True), [((3, 4),)], (_any,), "nansum dim"),
    Case("fused", lambda lib, x: x.nanmean(), [((3, 4),)], (_any,), "nanmean"),
    Case("fused", lambda lib, x: lib.nanmean(x, -1), [((3, 4),)], (_any,), "nanmean dim"),
    Case("fused", lambda lib, x: lib.aminmax(x).min, [((3, 4),)], (_any,), "aminmax min"),
    Case("fused", lambda lib, x: x.aminmax(dim=1, keepdim=True).max, [((3, 4),)], (_any,), "aminmax max dim"),
    Case("fused", lambda lib, x: x.aminmax(dim=0)[1], [((),)], (_any,), "aminmax 0d"),
    Case("sum", lambda lib, x: x.count_nonzero(), [((3, 4),)], (_few,), "count_nonzero", grad=False),
    Case("sum", lambda lib, x: lib.count_nonzero(x, (0, -1)), [((2, 3, 4),)], (_few,), "count_nonzero dims",
         grad=False),
    # flips, rolls, triangles, diagonals
    Case("index", lambda lib, x: x.flip(0), [((3, 4),)], (_any,), "flip"),
    Case("index", lambda lib, x: lib.flip(x, (-1, 0)), [((2, 3, 4),)], (_any,), "flip dims"),
    Case("index", lambda lib, x: x.fliplr(), [((3, 4),)], (_any,), "fliplr"),
    Case("index", lambda lib, x: lib.flipud(x), [((3, 4),)], (_any,), "flipud"),
    Case("index", lambda lib, x: x.roll(1, 0), [((3, 4),)], (_any,), "roll"),
    Case("index", lambda lib, x: lib.roll(x, (1, -2), (0, -1)), [((2, 3, 4),)], (_any,), "roll dims"),
    Case("reshape", lambda lib, x: x.roll(5), [((3, 4),)], (_any,), "roll flat"),
    Case("fused", lambda lib, x: x.tril(), [((3, 4),), ((2, 3, 3),)], (_any,), "tril"),
    Case("fused", lambda lib, x: lib.triu(x, 1), [((3, 4),)], (_any,), "triu"),
    Case("fused", lambda lib, x: x.tril(-1), [((4, 3),)], (_any,), "tril -1"),
    Case("index", lambda lib, x: x.diagonal(), [((3, 4),)], (_any,), "diagonal"),
    Case("index", lambda lib, x: lib.diagonal(x, 1, -1, 0), [((2, 3, 4),)], (_any,), "diagonal dims"),
    Case("index", lambda lib, x: x.diag(-1), [((3, 4),)], (_any,), "diag 2-d"),
    Case("fused", lambda lib, x: lib.diag(x), [((3,),)], (_any,), "diag 1-d"),
    Case("fused", lambda lib, x: x.diag(2), [((3,),)], (_any,), "diag 1-d offset"),
    Case("fused", lambda lib, x: x.trace(), [((3, 4),)], (_any,), "trace"),
    # gathers and selections
    Case("index", lambda lib, x: x.gather(1, lib.tensor([[0, 3, 3], [1, 0, 2]])), [((3, 4),)], (_any,), "gather"),
    Case("index", lambda lib, x: lib.gather(x, -2, lib.tensor([[[2], [0]]])), [((2, 3, 4),)], (_any,),
         "gather dim=-2"),
    Case("index", lambda lib, x: lib.take_along_dim(x, lib.tensor([[0], [3], [1]]), 1), [((3, 4),)], (_any,),
         "take_along_dim"),
    Case("index", lambda lib, x: lib.take_along_dim(x, lib.tensor([[0], [2]]), 0), [((3, 4),)], (_any,),
         "take_along_dim broadcast"),
    Case("index", lambda lib, x: lib.take_along_dim(x, lib.tensor([0, 5, 5])), [((3, 4),)], (_any,),
         "take_along_dim flat"),
    Case("index", lambda lib, x: x.index_select(1, lib.tensor([3, 0, 3])), [((3, 4),)], (_any,), "index_select"),
    Case("index", lambda lib, x: lib.index_select(x, -1, lib.tensor(1)), [((2, 3),)], (_any,), "index_select 0-d"),
    Case("index", lambda lib, x: x.select(1, -1), [((3, 4),)], (_any,), "select"),
    Case("index", lambda lib, x: lib.select(x, 0, 1), [((2, 3, 4),)], (_any,), "select fn"),
    Case("index", lambda lib, x: x.narrow(1, 1, 2), [((3, 4),)], (_any,), "narrow"),
    Case("index", lambda lib, x: lib.narrow(x, -1, -2, 2), [((3, 4),)], (_any,), "narrow negative"),
    Case("fused", lambda lib, x: x.masked_fill(x.detach() > 0, 0.5), [((3, 4),)], (_away0,), "masked_fill"),
    Case("fused", lambda lib, x, v: x.masked_fill(lib.tensor([True, False, True]), v), [((2, 3), ())],
         (_any, _any), "masked_fill tensor value"),
    Case("fused", lambda lib, x: (x * 1).masked_fill_(lib.tensor([[True], [False]]), -1.5), [((2, 3),)], (_any,),
         "masked_fill_"),
    Case("index_put", lambda lib, x, v: (x * 1).masked_fill_(lib.tensor([True, False, True]), v),
         [((2, 3), ())], (_any, _any), "masked_fill_ tensor value"),
    # dims
    Case("permute", lambda lib, x: x.movedim(0, -1), [((2, 3, 4),)], (_any,), "movedim"),
    Case("permute", lambda lib, x: lib.moveaxis(x, (0, 1), (2, 0)), [((2, 3, 4),)], (_any,), "moveaxis"),
    Case("permute", lambda lib, x: x.swapdims(0, 1), [((3, 4),)], (_any,), "swapdims"),
    Case("permute", lambda lib, x: lib.swapaxes(x, -1, 0), [((2, 3, 4),)], (_any,), "swapaxes fn"),
    Case("repeat", lambda lib, x: x.tile((2,)), [((3, 2),)], (_any,), "tile"),
    Case("repeat", lambda lib, x: lib.tile(x, (2, 1, 2)), [((3, 2),), ((),)], (_any,), "tile more dims"),
    Case("reshape", lambda lib, x: x.unflatten(1, (2, -1)), [((3, 4),)], (_any,), "unflatten"),
    Case("reshape", lambda lib, x: lib.unflatten(x, -1, (1, 3)), [((2, 3),)], (_any,), "unflatten fn"),
    # sorting: values are differentiable (the order is taken from the values)
    Case("index", lambda lib, x: x.sort().values, [((3, 4),)], (_any,), "sort"),
    Case("index", lambda lib, x: lib.sort(x, 0, descending=True)[0], [((3, 4),)], (_any,), "sort descending"),
    Case("index", lambda lib, x: x.topk(2).values, [((3, 4),)], (_any,), "topk"),
    Case("index", lambda lib, x: lib.topk(x, 2, 0, largest=False)[0], [((3, 4),)], (_any,), "topk smallest"),
    Case("matmul", lambda lib, a, b: lib.bmm(a, b), [((2, 3, 4), (2, 4, 2))], (_any, _any), "bmm"),
]
CASES += COMPOSITE_CASES
CASES += [
    # fused arithmetic composites and einsum (its contractions report torch's ViewBackward0)
    Case("fused", lambda lib, x, a, b: lib.addcmul(x, a, b, value=0.5), [((2, 3), (2, 3), (3,))],
         (_any, _any, _any), "addcmul"),
    Case("fused", lambda lib, x, a, b: x.addcdiv(a, b, value=2), [((2, 3), (2, 3), (3,))], (_any, _any, _pos),
         "addcdiv"),
    Case("fused", lambda lib, x, a: lib.lerp(x, a, 0.3), [((2, 3), (2, 3)), ((), (4,))], (_any, _any), "lerp"),
    Case("fused", lambda lib, x, a, w: x.lerp(a, w), [((2, 3), (2, 3), (3,))], (_any, _any, _unit), "lerp tensor"),
    Case("fused", lambda lib, x, b: lib.einsum("ij,j->i", x, b), [((2, 3), (3,))], (_any, _any), "einsum matvec"),
    Case("fused", lambda lib, x, y: lib.einsum("bij,bjk->bik", x, y), [((2, 2, 3), (2, 3, 2))], (_any, _any),
         "einsum bmm"),
    Case("sum", lambda lib, x: lib.einsum("ij->j", x), [((2, 3),)], (_any,), "einsum reduce"),
    Case("fused", lambda lib, x: lib.einsum("ii->i", x), [((3, 3),)], (_any,), "einsum diagonal"),
    Case("trunc", lambda lib, x: lib.fix(x * 3), [((2, 3),)], (_away0,), "fix"),
]


def _prob(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.1, 0.9, shape)


def _seeded_dropout(lib: Any, x: Any) -> Any:
    lib.manual_seed(0)  # both libraries draw torch's mask from the same generator state
    return lib.nn.functional.dropout(x, 0.3)


def _nnf(name: str) -> Callable:
    return lambda lib: getattr(lib.nn.functional, name)


#: the nn.functional ops the nn modules use (Linear, Dropout, the loss modules, ...): one row group
NN_FUNCTIONAL_CASES: list[Case] = [
    Case("fused", lambda lib, x, w, b: _nnf("linear")(lib)(x, w, b), [((4, 3), (2, 3), (2,))], (_any, _any, _any),
         "linear"),
    Case("matmul", lambda lib, x, w: _nnf("linear")(lib)(x, w), [((4, 3), (2, 3))], (_any, _any),
         "linear no bias"),
    # a vector input is a row of a matrix product, squeezed back (torch: SqueezeBackward4 over MmBackward0)
    Case("reshape", lambda lib, x, w: _nnf("linear")(lib)(x, w), [((3,), (2, 3))], (_any, _any),
         "linear no bias, vector"),
    Case("mul", _seeded_dropout, [((4, 5),)], (_any,), "dropout seeded"),
    Case("mean", lambda lib, x, t: _nnf("mse_loss")(lib)(x, t), [((4, 3), (4, 3))], (_any, _any), "mse_loss"),
    Case("mean", lambda lib, x, t: _nnf("l1_loss")(lib)(x, t), [((4, 3), (4, 3))], (_any, _any), "l1_loss"),
    Case("mean", lambda lib, x, t: _nnf("smooth_l1_loss")(lib)(x, t), [((4, 3), (4, 3))], (_any, _any),
         "smooth_l1_loss"),
    Case("mean", lambda lib, x, t: _nnf("huber_loss")(lib)(x, t, delta=0.5), [((4, 3), (4, 3))], (_any, _any),
         "huber_loss"),
    Case("mean", lambda lib, x, t: _nnf("binary_cross_entropy")(lib)(lib.sigmoid(x), t), [((4, 3), (4, 3))],
         (_any, _prob), "binary_cross_entropy"),
    Case("mean", lambda lib, x, t: _nnf("binary_cross_entropy_with_logits")(lib)(x, t), [((4, 3), (4, 3))],
         (_any, _prob), "binary_cross_entropy_with_logits"),
    Case("fused", lambda lib, x: _nnf("nll_loss")(lib)(lib.log_softmax(x, 1), lib.tensor([0, 2, 1, 1])),
         [((4, 3),)], (_any,), "nll_loss"),
    Case("fused", lambda lib, x: _nnf("cross_entropy")(lib)(x, lib.tensor([0, 2, 1, 1])), [((4, 3),)], (_any,),
         "cross_entropy"),
    Case("div", lambda lib, x: _nnf("normalize")(lib)(x), [((4, 3),)], (_away0,), "normalize"),
    Case("sum", lambda lib, x, t: _nnf("cosine_similarity")(lib)(x, t), [((4, 3), (4, 3))], (_away0, _away0),
         "cosine_similarity"),
    Case("fused", lambda lib, x: _nnf("pad")(lib)(x, (1, 2)), [((4, 3),)], (_any,), "pad"),
]
CASES += NN_FUNCTIONAL_CASES

# ---------------------------------------------------------------------------- torch's elementwise math, nn.functional
# (symgrad/math_ops.py, symgrad/nn/functional.py): one elementwise registry op each


def _gt1(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(1.2, 3.0, shape)


def _away_int(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Away from the integers (the jumps of floor/round/frac, the bounds of hardtanh and relu6)."""
    return rng.integers(-2, 2, shape) + rng.uniform(0.1, 0.9, shape)


def _away3(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """In (-5, 5), away from -3 and 3 (the kinks of hardsigmoid and hardswish)."""
    x = rng.uniform(-5.0, 5.0, shape)
    return np.where(np.abs(np.abs(x) - 3) < 0.2, x * 0.8, x)


def _F(name: str, **kw: Any) -> Callable:
    return lambda lib, x: getattr(lib.nn.functional, name)(x, **kw)


MATH_CASES: list[Case] = [
    *[_un(op, (lambda o: lambda lib, x: getattr(x, o)())(op), dom=dom) for op, dom in [
        ("sinh", _any), ("cosh", _any), ("asinh", _any), ("acosh", _gt1), ("atanh", _unit), ("asin", _unit),
        ("acos", _unit), ("atan", _any), ("expm1", _any), ("exp2", _any), ("log2", _pos), ("log10", _pos),
        ("erf", _any), ("erfc", _any), ("rsqrt", _pos), ("sign", _away0), ("floor", _away_int),
        ("ceil", _away_int), ("round", _away_int), ("trunc", _away_int), ("frac", _away_int), ("deg2rad", _any),
        ("rad2deg", _any), ("sinc", _any)]],
    *[_un(op, (lambda a: lambda lib, x: getattr(lib, a)(x))(alias), alias, dom=dom, shapes=UN_SHAPES[:1])
      for op, alias, dom in [("asinh", "arcsinh", _any), ("acosh", "arccosh", _gt1), ("atanh", "arctanh", _unit),
                             ("asin", "arcsin", _unit), ("acos", "arccos", _unit), ("atan", "arctan", _any),
                             ("erf", "erf", _any), ("floor", "floor", _away_int)]],
    _un("sign", lambda lib, x: lib.sgn(x), "sgn", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("sinc", lambda lib, x: lib.sinc(x), "zeros", dom=_with_zeros, shapes=UN_SHAPES[:1]),
    _un("round", lambda lib, x: x.round(decimals=1), "decimals=1", dom=_any, shapes=UN_SHAPES[:1]),
    _un("pow", lambda lib, x: lib.square(x), "square"),
    _bin("atan2", lambda lib, x, y: lib.atan2(x, y), "tt", da=_away0, db=_away0),
    _bin("atan2", lambda lib, x, y: x.arctan2(y), "arctan2", da=_away0, db=_away0, shapes=BIN_SHAPES[:1]),
    _bin("hypot", lambda lib, x, y: lib.hypot(x, y), "tt", da=_away0, db=_away0),
    _bin("logaddexp", lambda lib, x, y: x.logaddexp(y), "tt"),
    _bin("logaddexp", lambda lib, x, y: lib.logaddexp(x, y), "ties", da=_few, db=_few, shapes=BIN_SHAPES[:1]),
    _bin("xlogy", lambda lib, x, y: lib.xlogy(x, y), "tt", da=_with_zeros, db=_pos),
    Case("xlogy", lambda lib, x: lib.xlogy(x, 2.5), SCALAR_SHAPES, (_with_zeros,), "t,float"),
    Case("xlogy", lambda lib, x: lib.xlogy(3, x), SCALAR_SHAPES, (_pos,), "int,t"),
    _bin("fmod", lambda lib, x, y: lib.fmod(x, y), "tt", db=_away0),
    Case("fmod", lambda lib, x: x.fmod(0.7), SCALAR_SHAPES, (_any,), "t,float"),
    _bin("remainder", lambda lib, x, y: lib.remainder(x, y), "tt", db=_away0),
    Case("remainder", lambda lib, x: x % -0.7, SCALAR_SHAPES, (_any,), "t % float"),
    _un("relu", _F("relu"), "F.relu", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("sigmoid", _F("sigmoid"), "F.sigmoid", shapes=UN_SHAPES[:1]),
    _un("tanh", _F("tanh"), "F.tanh", shapes=UN_SHAPES[:1]),
    Case("softmax", _F("softmax", dim=-1), [((2, 3),)], (_any,), "F.softmax"),
    Case("log_softmax", _F("log_softmax", dim=0), [((2, 3),)], (_any,), "F.log_softmax"),
    _un("nn_softplus", _F("softplus"), "F.softplus"),
    _un("nn_softplus", _F("softplus", beta=2, threshold=1.0), "beta=2,threshold=1", dom=_away_half),
    _un("silu", _F("silu")),
    _un("gelu", _F("gelu"), "none"),
    _un("gelu", _F("gelu", approximate="tanh"), "tanh"),
    _un("elu", _F("elu"), "alpha=1"),
    _un("elu", _F("elu", alpha=0.5), "alpha=0.5", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("leaky_relu", _F("leaky_relu"), dom=_away0),
    _un("leaky_relu", _F("leaky_relu", negative_slope=0.2), "slope=0.2", dom=_away0, shapes=UN_SHAPES[:1]),
    _un("logsigmoid", _F("logsigmoid")),
    _un("hardtanh", _F("hardtanh"), dom=_away_int),
    _un("hardtanh", _F("hardtanh", min_val=-0.5, max_val=0.5), "bounds", dom=_away_half, shapes=UN_SHAPES[:1]),
    _un("hardtanh", _F("relu6"), "relu6", dom=lambda rng, s: 4 * _away_int(rng, s)),
    _un("mish", _F("mish")),
    _un("elu", _F("selu"), "selu", dom=_away0),
    _un("elu", _F("celu", alpha=0.5), "celu", dom=_away0, shapes=UN_SHAPES[:1]),
    Case("hardsigmoid", _F("hardsigmoid"), UN_SHAPES, (_away3,), partial_rtol=1e-7),
    _un("hardswish", _F("hardswish"), dom=_away3),
    _un("div", _F("softsign"), "softsign"),
    _un("sub", _F("tanhshrink"), "tanhshrink"),
    Case("softmax", _F("softmin", dim=1), [((2, 3),)], (_any,), "F.softmin"),
    Case("fused", _F("glu"), [((2, 4),)], (_any,), "F.glu"),
    Case("fused", _F("glu", dim=0), [((2, 3),)], (_any,), "F.glu dim=0"),
    Case("fused", lambda lib, x, w: lib.nn.functional.prelu(x, w), [((2, 3, 2), (3,)), ((4,), (1,))],
         (_away0, _any), "F.prelu"),
    _un("softshrink", _F("softshrink"), dom=_away_half),
    _un("hardshrink", _F("hardshrink"), dom=_away_half),
    _un("threshold", lambda lib, x: lib.nn.functional.threshold(x, 0.1, 20.0), dom=_away_half),
]
CASES += MATH_CASES

# ---------------------------------------------------------------------------- custom ops and rules
# Ops users register at run time (sg.custom_op / sg.custom_rule) go through the same four checks;
# their torch twins are torch's own functions or torch.autograd.Function classes of the same name.

_softplus = sg.custom_op("reg_softplus", lambda x, beta=1: sp.log(1 + sp.exp(beta * x)) / beta,
                         grad_fn="SoftplusBackward0")
_log_sigmoid = sg.custom_op("log_sigmoid", lambda x: -sp.log(1 + sp.exp(-x)),
                            partials=lambda x, out: [1 - sp.exp(out)])
_mish = sg.custom_op("reg_mish", lambda x: x * sp.tanh(sp.log(1 + sp.exp(x))), grad_fn="MishBackward0",
                     numpy=lambda x: x * np.tanh(np.log1p(np.exp(x))))
_hypot = sg.custom_op("reg_hypot", lambda x, y: sp.sqrt(x ** 2 + y ** 2), grad_fn="HypotBackward0")


@sg.custom_rule(vjp=lambda g, out, x: (g * (1 - out ** 2),))
def rule_tanh(x: Any) -> Any:
    return sg.tanh(x)


@sg.custom_rule(jvp=lambda t, out, x: t * out * (1 - out))
def jvp_sigmoid(x: Any) -> Any:
    return sg.sigmoid(x)


@sg.custom_rule(vjp=lambda g, out, x, y, k: (g * y * k, g * x * k, None))
def scaled_mul(x: Any, y: Any, k: float) -> Any:
    return x * y * k


class RuleTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = torch.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * (1 - out ** 2)


class JvpSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = torch.sigmoid(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * out * (1 - out)


class ScaledMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any, y: Any, k: float) -> Any:
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y * k

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, y = ctx.saved_tensors
        return g * y * ctx.k, g * x * ctx.k, None


CUSTOM_CASES: list[Case] = [
    Case(_softplus.name, lambda lib, x: _softplus(x), UN_SHAPES, (_any,), "form",
         extra={"torch": torch.nn.functional.softplus}),
    Case(_softplus.name, lambda lib, x: _softplus(x, beta=2), UN_SHAPES[:1], (_any,), "attr beta=2",
         extra={"torch": lambda a: torch.nn.functional.softplus(a, beta=2)}),
    Case(_log_sigmoid.name, lambda lib, x: _log_sigmoid(x), UN_SHAPES, (_any,), "partials with out",
         extra={"torch": torch.nn.functional.logsigmoid}),
    Case(_mish.name, lambda lib, x: _mish(x), UN_SHAPES, (_any,), "numpy eval",
         extra={"torch": torch.nn.functional.mish}),
    Case(_hypot.name, lambda lib, x, y: _hypot(x, y), BIN_SHAPES, (_away0, _away0), "binary, broadcast",
         extra={"torch": torch.hypot}),
    Case(_hypot.name, lambda lib, x: _hypot(x, 2.0), SCALAR_SHAPES, (_away0,), "tensor, float",
         extra={"torch": lambda a: torch.hypot(a, torch.tensor(2.0, dtype=a.dtype))}),
    Case(rule_tanh.op.name, lambda lib, x: rule_tanh(x), UN_SHAPES, (_any,), "vjp rule",
         extra={"torch": RuleTanh.apply}),
    Case(jvp_sigmoid.op.name, lambda lib, x: jvp_sigmoid(x), UN_SHAPES, (_any,), "jvp rule",
         extra={"torch": JvpSigmoid.apply}),
    Case(scaled_mul.op.name, lambda lib, x, y: scaled_mul(x, y, 1.5), BIN_SHAPES[:2], (_any, _any),
         "two tensors and a number", extra={"torch": lambda a, b: ScaledMul.apply(a, b, 1.5)}),
]
CASES += CUSTOM_CASES
CASES += extra_cases(Case)  # linear algebra and special functions (tests/ops/registry_linalg_cases.py)

_TORCH_FUSED = {id(c): c.extra["torch"] for c in CASES if "torch" in c.extra}


def _call(case: Case, lib: Any, *xs: Any) -> Any:
    if lib is torch and id(case) in _TORCH_FUSED:
        return _TORCH_FUSED[id(case)](*xs)
    return case.fn(lib, *xs)


def _variants() -> list:
    return [pytest.param(c, s, id=f"{c.id}-{'x'.join(map(str, s))}") for c in CASES for s in c.shapes]


VARIANTS = _variants()


def _inputs(case: Case, shapes: tuple, seed: int, dtype: str = "float64") -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.asarray(d(rng, s)).astype(dtype) for d, s in zip(case.domains, shapes)]


def _seed(case: Case, shapes: tuple) -> int:
    return sum(map(ord, case.id + repr(shapes))) % 10_000


def _sg_leaves(arrays: list[np.ndarray]) -> list[sg.Tensor]:
    return [sg.tensor(a.copy(), requires_grad=True) for a in arrays]


def _record(case: Case, arrays: list[np.ndarray]) -> tuple[list[sg.Tensor], sg.Tensor, Any]:
    """The leaves, the result and the node of the op (built by hand for ops that record none)."""
    xs = _sg_leaves(arrays)
    out = _call(case, sg, *xs)
    if not case.grad:
        assert out._node is None, f"{case.id}: a node was recorded for an op without gradient"
        with sg.no_grad():
            node = _untracked_node(case, xs)
    else:
        assert out._node is not None, f"{case.id}: no node recorded"
        node = out._node
    assert node.op.name == case.op, f"{case.id}: recorded {node.op.name}, the table says {case.op}"
    return xs, out, node


def _untracked_node(case: Case, xs: list[sg.Tensor]) -> Any:
    """The node ``case`` would record if its op had a gradient: found by tracing its inputs as leaves."""
    from symgrad.ops import apply as apply_op
    original = _apply
    # every eager module calls ``_apply`` by the name it imported: spy on each of them
    users = [m for name, m in list(sys.modules.items())
             if name.startswith("symgrad.") and getattr(m, "_apply", None) is original]
    seen: list = []

    def spy(op: Any, *inputs: Any, **attrs: Any) -> Any:
        seen.append((op, inputs, attrs))
        return original(op, *inputs, **attrs)

    for m in users:
        m._apply = spy
    try:
        case.fn(sg, *[x.detach() for x in xs])
    finally:
        for m in users:
            m._apply = original
    op, inputs, attrs = seen[-1]
    nodes = []
    for x in inputs:
        n = _input_node(x)
        if n.value is None and n.op.name != "scalar":
            n.value = x._data
        nodes.append(n)
    node = apply_op(op, *nodes, **attrs)
    node.value = op.eval(*[_arr(x) if isinstance(x, sg.Tensor) else np.asarray(x) for x in inputs], **attrs)
    return node


# ---------------------------------------------------------------------------- coverage of the registry

def test_every_registered_op_has_cases():
    """A built-in op cannot be registered without an entry in this table; ops registered at run time
    (``sg.custom_op`` / ``sg.custom_rule``, here or in other test modules) need one only when this
    module registers them."""
    builtin = {name for name in REGISTRY if not is_custom(name)} - SOURCE_OPS
    covered = {c.op for c in CASES}
    assert builtin - covered == set(), f"ops without test cases: {sorted(builtin - covered)}"
    assert covered - set(REGISTRY) == set(), f"cases for unknown ops: {sorted(covered - set(REGISTRY))}"
    ours = {c.op for c in CUSTOM_CASES}
    assert all(is_custom(name) for name in ours)
    here = {v.op.name for v in globals().values() if isinstance(v, (CustomOp, CustomRule))}
    assert here - ours == set(), f"custom ops registered here without a case: {sorted(here - ours)}"


def test_source_ops_are_registered():
    assert SOURCE_OPS <= set(REGISTRY)
    for name in SOURCE_OPS:
        assert REGISTRY[name].family == "source"


def test_every_op_has_a_grad_fn_name_and_a_rule():
    for name, op in REGISTRY.items():
        if op.family == "source":
            continue
        assert op.grad_fn is not None or op.diff_args == (), name
        if op.family == "elementwise":
            assert op.form is not None, name
        else:
            assert op.vjp is not None and op.lower is not None, name


#: public composites that compute their result in numpy without recording a node (no gradient in torch either)
DATA_ONLY = {"floor_divide", "isclose", "argsort", "one_hot"}


@pytest.mark.parametrize("name", sorted(set(composite.__all__) | set(math_ops.__all__) | set(nn_functional.__all__)))
def test_every_public_composite_has_a_row(name: str):
    """Each composite of ``eager/composite.py``, ``eager/math_ops.py`` and ``sg.nn.functional`` is exercised by
    a case of its name; the data-only ones are checked to record nothing."""
    if name in DATA_ONLY:
        x = sg.tensor([[1.5, -2.0], [0.5, 3.0]], requires_grad=True)
        if name == "one_hot":
            out = sg.nn.functional.one_hot(sg.tensor([0, 2, 1]))
            assert out._node is None and out.dtype is sg.int64
            return
        out = getattr(sg, name)(x, x) if name != "argsort" else sg.argsort(x)
        assert out._node is None and not out.requires_grad
        return
    assert any(name in c.id for c in CASES), f"no registry-matrix case exercises {name}"


# ---------------------------------------------------------------------------- (a) eval vs form / generated code

_KERNELS: dict[str, Any] = {}


def _lowered(node: Any) -> Callable:
    params = [(x, "v", i) for i, x in enumerate(x for x in node.inputs if x.op.name != "scalar")]
    kernel, _ = lower("forward", params, [node])
    src = emit_numpy(kernel)
    if src not in _KERNELS:
        _KERNELS[src] = load_kernel(src, "forward", prefix="test_ops")[0]
    fn = _KERNELS[src]
    return lambda: fn([x.value for x in node.inputs if x.op.name != "scalar"])[0]


def _input_values(node: Any) -> list[np.ndarray]:
    """The recorded inputs of ``node`` as the arrays ``eval`` received."""
    dt = None
    if node.op.family == "elementwise":
        # Python numbers take the dtype the op computes in (torch's promotion), as in ``_apply``
        dt = dtypes.result_type(*[x.attr("value") if x.op.name == "scalar" else x for x in node.inputs])
        dt = (dt if node.op.keeps_int else dtypes.float_result(dt)).np
    return [np.asarray(x.attr("value"), dtype=dt) if x.op.name == "scalar" else x.value for x in node.inputs]


def _modules(expr: Any) -> Any:
    """lambdify's modules for ``expr``: SymPy prints ``erf`` through ``math`` for numpy, which takes no arrays."""
    return ["scipy", "numpy"] if sp.sympify(expr).has(sp.erf, sp.erfc) else "numpy"


@pytest.mark.parametrize(("case", "shapes"), VARIANTS)
def test_eval_matches_form_and_generated_code(case: Case, shapes: tuple):
    _, out, node = _record(case, _inputs(case, shapes, _seed(case, shapes)))
    op = node.op
    value = np.asarray(op.eval(*_input_values(node), **dict(node.attrs)))
    assert_close(value, out, what="eval vs recorded value")
    assert_close(np.asarray(_lowered(node)()), value, what="generated code vs eval")
    if op.family == "elementwise":
        n = len(node.inputs)
        form = op.scalar_form(n, node.attrs)
        f = sp.lambdify(A[:n], form, _modules(form))
        with np.errstate(all="ignore"):
            vals = [v.astype(np.float64) if v.dtype.kind == "b" else v for v in _input_values(node)]
            expected = np.broadcast_to(np.asarray(f(*vals), dtype=np.float64), node.shape)
        assert_close(value, expected.astype(value.dtype), what="eval vs lambdified form")


# ---------------------------------------------------------------------------- (b) VJP vs finite differences

def _forward(case: Case, arrays: list[np.ndarray]) -> np.ndarray:
    with sg.no_grad():
        xs = [sg.tensor(a) for a in arrays]
        return numpy_of(_call(case, sg, *xs)).astype(np.float64)


@pytest.mark.parametrize(("case", "shapes"), VARIANTS)
def test_vjp_matches_finite_differences(case: Case, shapes: tuple):
    seed = _seed(case, shapes)
    arrays = _inputs(case, shapes, seed)
    xs, out, _ = _record(case, arrays)
    if not case.grad:
        assert not out.requires_grad and out.grad_fn is None
        return
    rng = np.random.default_rng(seed + 1)
    g = rng.standard_normal(out.shape).astype(out.dtype.np)
    grads = sg.autograd.grad(out, xs, grad_outputs=sg.tensor(g), allow_unused=True)
    # directions: small enough that the perturbed points stay in the case's domain
    vs = [rng.uniform(-1.0, 1.0, a.shape) for a in arrays]
    lhs = sum(float(np.sum(numpy_of(gr).astype(np.float64) * v)) for gr, v in zip(grads, vs) if gr is not None)
    for gr, x in zip(grads, xs):
        if gr is not None:
            assert gr.shape == x.shape and gr.dtype is x.dtype
    if case.stops_gradient:
        assert all(gr is None or not np.any(numpy_of(gr)) for gr in grads)
        return
    h = case.fd_h
    plus = _forward(case, [a + h * v for a, v in zip(arrays, vs)])
    minus = _forward(case, [a - h * v for a, v in zip(arrays, vs)])
    jvp = (plus - minus) / (2 * h)
    rhs = float(np.sum(g.astype(np.float64) * jvp))
    scale = float(np.sum(np.abs(g.astype(np.float64) * jvp))) + 1e-3
    assert abs(lhs - rhs) <= case.fd_rtol * scale + 1e-9, f"<vjp(g), v> = {lhs!r} but <g, jvp(v)> = {rhs!r}"


# ---------------------------------------------------------------------------- (b') forward mode vs finite differences

def _evaluate(root: Any) -> np.ndarray:
    """The value of a derived node: its inputs' values through each op's numpy ``eval``."""
    vals: dict[int, Any] = {}
    for n in toposort([root]):
        if n.value is not None:
            vals[n.id] = n.value
        elif n.op.name == "scalar":
            vals[n.id] = np.asarray(n.attr("value"), dtype=n.dtype.np)
        else:
            with np.errstate(all="ignore"):
                vals[n.id] = np.asarray(n.op.eval(*[vals[i.id] for i in n.inputs], **dict(n.attrs)))
    return np.broadcast_to(np.asarray(vals[root.id], dtype=np.float64), root.shape)


@pytest.mark.parametrize(("case", "shapes"), VARIANTS)
def test_jvp_matches_finite_differences(case: Case, shapes: tuple):
    """Each op's forward-mode tangent (``derive.forward``: its ``linear``/``bilinear`` field, the elementwise
    partials, or its transposed VJP) against central differences along a random direction, float64."""
    seed = _seed(case, shapes)
    arrays = _inputs(case, shapes, seed)
    xs, out, node = _record(case, arrays)
    if not case.grad or case.stops_gradient:
        assert not case.grad or not np.any(_jvp_values(out, xs, arrays, seed))
        return
    tangent = _jvp_values(out, xs, arrays, seed)
    rng = np.random.default_rng(seed + 2)
    vs = [rng.uniform(-1.0, 1.0, a.shape) for a in arrays]
    h = case.fd_h
    fd = (_forward(case, [a + h * v for a, v in zip(arrays, vs)])
          - _forward(case, [a - h * v for a, v in zip(arrays, vs)])) / (2 * h)
    scale = np.abs(fd) + np.abs(tangent) + 1e-3
    assert np.all(np.abs(tangent - fd) <= case.fd_rtol * scale * 10 + 1e-8), \
        f"jvp {tangent.ravel()[:6]} vs finite differences {fd.ravel()[:6]}"


def _jvp_values(out: sg.Tensor, xs: list[sg.Tensor], arrays: list[np.ndarray], seed: int) -> np.ndarray:
    """The tangent of ``out`` along the direction ``_jvp_matches`` perturbs the inputs in."""
    rng = np.random.default_rng(seed + 2)
    vs = [rng.uniform(-1.0, 1.0, a.shape) for a in arrays]
    if out._node is None:
        return np.zeros(out.shape)
    wrt = [x._node for x in xs if x._node is not None]
    tangents = [Node(REGISTRY["const"], (), (), w.shape, w.dtype, value=v.astype(w.dtype.np))
                for w, v, x in zip(wrt, [v for v, x in zip(vs, xs) if x._node is not None], xs)]
    (t,) = jvp_graph([out._node], wrt, tangents)
    return np.zeros(out.shape) if t is None else _evaluate(t)


# ---------------------------------------------------------------------------- (c) local partials vs sympy.diff

ELEMENTWISE_VARIANTS = [pytest.param(c, id=c.id) for c in CASES if REGISTRY[c.op].family == "elementwise"]


@pytest.mark.parametrize("case", ELEMENTWISE_VARIANTS)
def test_local_partials_match_sympy_diff(case: Case):
    shapes = case.shapes[0]
    _, out, node = _record(case, _inputs(case, shapes, _seed(case, shapes)))
    op = node.op
    n = len(node.inputs)
    form = op.scalar_form(n, node.attrs)
    parts = op.local_partials(n, node.attrs)
    assert len(parts) == n
    rng = np.random.default_rng(_seed(case, shapes) + 2)
    points = []
    for x in node.inputs:
        if x.op.name == "scalar":
            points.append(np.full(32, float(x.attr("value"))))
        elif x.dtype.name == "bool":
            points.append(rng.integers(0, 2, 32).astype(np.float64))
        else:
            dom = case.domains[len(points)] if len(points) < len(case.domains) else _any
            points.append(np.asarray(dom(rng, (32,)), dtype=np.float64))
    with np.errstate(all="ignore"):
        out_value = np.broadcast_to(sp.lambdify(A[:n], form, _modules(form))(*points), (32,))
    for i, p in enumerate(parts):
        if node.inputs[i].op.name == "scalar":
            continue
        want = sp.S.Zero if case.stops_gradient else sp.diff(form, A[i])
        got = sp.lambdify((*A[:n], OUT), p, _modules(p))
        ref = sp.lambdify(A[:n], want, _modules(want))
        with np.errstate(all="ignore"):
            got_v = np.broadcast_to(np.asarray(got(*points, out_value), dtype=np.float64), (32,))
            ref_v = np.broadcast_to(np.asarray(ref(*points), dtype=np.float64), (32,))
        np.testing.assert_allclose(got_v, ref_v, rtol=case.partial_rtol, atol=1e-12,
                                   err_msg=f"d/d a{i} of {form}: rule {p} vs diff {want}")


# ---------------------------------------------------------------------------- (d) value and gradient vs torch

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(("case", "shapes"), VARIANTS)
def test_value_and_grad_match_torch(case: Case, shapes: tuple, dtype: str):
    seed = _seed(case, shapes)
    arrays = _inputs(case, shapes, seed, dtype)
    xs = [sg.tensor(a.copy(), requires_grad=True) for a in arrays]
    ts = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = _call(case, sg, *xs)
    tout = _call(case, torch, *ts)
    assert_close(out, tout, what="value")
    assert out.requires_grad == tout.requires_grad == case.grad
    if not case.grad:
        assert out.grad_fn is None and tout.grad_fn is None
        return
    if not case.internal:
        assert grad_fn_name(out) == grad_fn_name(tout)
    g = np.random.default_rng(seed + 3).standard_normal(tuple(tout.shape)).astype(numpy_of(tout).dtype)
    out.backward(sg.tensor(g))
    tout.backward(torch.tensor(g))
    for i, (x, t) in enumerate(zip(xs, ts)):
        assert_close(x.grad, t.grad, what=f"grad of input {i}")


# ---------------------------------------------------------------------------- keepdim / dim semantics in detail

@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, -1, -2, (0, 1), (1, -1), (2, 0, 1), [0, 2]])
def test_reduction_shapes_and_grad_fn_names(op: str, dim: Any, keepdim: bool):
    arr = np.random.default_rng(0).standard_normal((2, 3, 4))
    x, t = sg.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    if dim is None:
        y, ty = getattr(x, op)(), getattr(t, op)()
    else:
        y, ty = getattr(x, op)(dim, keepdim=keepdim), getattr(t, op)(dim, keepdim=keepdim)
    assert tuple(y.shape) == tuple(ty.shape)
    assert grad_fn_name(y) == grad_fn_name(ty)
    assert_close(y, ty)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_close(x.grad, t.grad)


def test_mean_grad_is_one_over_count():
    x = sg.ones(4, 5, dtype=sg.float64, requires_grad=True)
    x.mean(1).sum().backward()
    assert_close(x.grad, np.full((4, 5), 0.2))
    assert math.isclose(float(x.grad[0, 0]), 0.2, rel_tol=1e-15)
