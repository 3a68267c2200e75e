"""The registry matrix through ``@sg.compile``: every op's case, traced and compiled, against torch.

``tests/test_ops_registry.py`` runs each case eagerly; here the same function is compiled with
``sg.value_and_grad`` (the output weighted by a fixed random array, so the gradient is a VJP with a
non-trivial seed) and compared with torch in float64: the generated numpy kernel for every case,
and the numba kernel for a spread sample of them (a numba compile costs about a second).
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from test_registry import CASES, _call, _inputs, _seed

import symgrad as sg

#: a boolean mask computed from a traced value picks elements by value: tracing refuses it
#: (``test_data_dependent_mask_is_a_tracing_error``)
_DATA_DEPENDENT = {"index_put:x[x > 0] = 2.5"}
_FIRST = [pytest.param(c, c.shapes[0], id=c.id) for c in CASES if c.grad and c.id not in _DATA_DEPENDENT]
_NUMBA = _FIRST[::12]


def _run(case, shapes, calls, dtype="float64"):
    seed = _seed(case, shapes)
    arrays = _inputs(case, shapes, seed, dtype)
    argnums = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    t_out = _call(case, torch, *[torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]).detach()
    weight = np.random.default_rng(seed + 5).standard_normal(tuple(t_out.shape)).astype(dtype)

    def f(*xs):
        return (_call(case, sg, *xs) * weight).sum()

    ts = [torch.tensor(a, requires_grad=i in argnums) for i, a in enumerate(arrays)]
    t_val = (_call(case, torch, *ts) * torch.tensor(weight)).sum()
    t_grads = torch.autograd.grad(t_val, [ts[i] for i in argnums], allow_unused=True)
    vg = sg.value_and_grad(f, argnums=argnums)
    for _ in range(calls):
        value, grads = vg(*arrays)
    # an op whose result is float32 (``to``) rounds the adjoint in torch, not in a fused kernel
    rtol = 1e-10 if t_out.dtype == torch.float64 and dtype == "float64" else 1e-6
    if dtype == "float32":  # float32 sums in another order than torch's: relative to the result's scale
        rtol = 2e-4
    np.testing.assert_allclose(value, t_val.item(), rtol=rtol, atol=rtol * float(np.abs(weight).sum()) * 1e-2)
    for g, tg, i in zip(grads, t_grads, argnums):
        expected = np.zeros_like(arrays[i]) if tg is None else tg.numpy(force=True)  # sgn: a ZeroTensor
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=rtol * max(1.0, np.abs(expected).max(initial=0)),
                                   err_msg=f"gradient of input {i}")
    return vg


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("case", "shapes"), _FIRST)
def test_compiled_numpy_kernel_matches_torch(case, shapes, dtype):
    compile_module = importlib.import_module("symgrad.kernels.program")
    backend, compile_module.BACKEND = compile_module.BACKEND, "numpy"
    try:
        _run(case, shapes, calls=2, dtype=dtype)
    finally:
        compile_module.BACKEND = backend


@pytest.mark.parametrize(("case", "shapes"), _NUMBA)
def test_compiled_numba_kernel_matches_torch(case, shapes):
    _run(case, shapes, calls=3)


def test_data_dependent_mask_is_a_tracing_error():
    (case,) = [c for c in CASES if c.id in _DATA_DEPENDENT]
    arrays = _inputs(case, case.shapes[0], 0)
    with pytest.raises(sg.TracingError, match="sg.where"):
        sg.value_and_grad(lambda *xs: _call(case, sg, *xs).sum(), argnums=0)(*arrays)
