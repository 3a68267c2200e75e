"""Shared test helpers: moving values between symgrad and torch, and comparing them with one tolerance table."""

from __future__ import annotations

import os
import zlib
from typing import Any

os.environ["SYMGRAD_COMPILE"] = "sync"    # before symgrad is imported, and for the scripts tests run

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import symgrad as sg  # noqa: E402
from symgrad.core import dtypes  # noqa: E402

# Tests that check the numba kernel expect it on the call that makes a program hot: compile synchronously for the
# whole session (tests/kernels/test_program.py switches to the background mode where it tests that).
sg.set_compile_mode("sync")

#: (rtol, atol) per dtype: float64 to 1e-10, float32 to 1e-5 (atol covers values that cancel to ~0).
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (1e-3, 1e-4),
}

FLOAT_DTYPES = ("float32", "float64")


@pytest.fixture(autouse=True)
def _fresh_state():
    """Every test starts and ends with default dtypes and grad mode on, in both libraries."""
    sg.set_default_dtype(sg.float32)
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    sg.set_grad_enabled(True)
    yield
    sg.set_default_dtype(sg.float32)
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    sg.set_grad_enabled(True)


@pytest.fixture(autouse=True)
def _order_free_generators(request):
    """A test module's numpy generators (module-level ``np.random.Generator``s) reseeded from the test's id before
    it runs: what a test draws from them does not depend on which tests ran before it in this worker (pytest-xdist
    hands tests out in a varying order). Values drawn at import, the module's constants, are unchanged."""
    module = getattr(request, "module", None)
    if module is not None:
        seed = zlib.crc32(request.node.nodeid.encode())
        for name, value in list(vars(module).items()):
            if isinstance(value, np.random.Generator):
                setattr(module, name, np.random.default_rng(seed))
    yield


# ---------------------------------------------------------------------------- dtypes and conversion

def sg_dtype(d: Any) -> sg.DType:
    """The symgrad dtype for a torch dtype, a numpy dtype or a name."""
    if isinstance(d, torch.dtype):
        d = str(d).removeprefix("torch.")
    return dtypes.from_any(d)


def torch_dtype(d: Any) -> torch.dtype:
    """The torch dtype for a symgrad dtype, a numpy dtype or a name."""
    return getattr(torch, sg_dtype(d).name)


def numpy_of(x: Any) -> np.ndarray | None:
    """A numpy copy of a symgrad tensor, torch tensor, array or number (None stays None)."""
    if x is None:
        return None
    if isinstance(x, sg.Tensor):
        return np.array(x.detach().numpy())
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True).copy()  # force: torch may return a ZeroTensor
    return np.asarray(x)


def to_torch(x: Any, requires_grad: bool | None = None) -> torch.Tensor:
    """A torch leaf with the value and dtype of ``x`` (and its ``requires_grad`` unless given)."""
    rg = x.requires_grad if requires_grad is None and isinstance(x, sg.Tensor) else bool(requires_grad)
    return torch.tensor(numpy_of(x)).requires_grad_(rg)


def to_sg(x: Any, requires_grad: bool | None = None) -> sg.Tensor:
    """A symgrad leaf with the value and dtype of ``x`` (and its ``requires_grad`` unless given)."""
    rg = x.requires_grad if requires_grad is None and isinstance(x, torch.Tensor) else bool(requires_grad)
    return sg.tensor(numpy_of(x)).requires_grad_(rg)


def leaf_pair(arr: np.ndarray, dtype: Any = None, requires_grad: bool = True) -> tuple[sg.Tensor, torch.Tensor]:
    """The same leaf in both libraries, from a numpy array cast to ``dtype``."""
    arr = np.asarray(arr)
    if dtype is not None:
        arr = arr.astype(sg_dtype(dtype).np)
    rg = requires_grad and arr.dtype.kind == "f"
    return sg.tensor(arr.copy(), requires_grad=rg), torch.tensor(arr.copy(), requires_grad=rg)


# ---------------------------------------------------------------------------- comparison

def tolerance(dtype: Any) -> tuple[float, float]:
    name = sg_dtype(dtype).name
    return TOLERANCES.get(name, (0.0, 0.0))


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None,
                 check_dtype: bool = True, what: str = "") -> None:
    """``actual`` (symgrad) equals ``expected`` (torch / numpy) in shape, dtype and value.

    The tolerance comes from the dtype of ``expected`` unless given. None must match None.
    """
    if expected is None or actual is None:
        assert actual is None and expected is None, f"{what}: {actual!r} vs {expected!r}"
        return
    a, e = numpy_of(actual), numpy_of(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"{what}: dtype {a.dtype} != {e.dtype}"
    dr, da = tolerance(e.dtype)
    rtol = dr if rtol is None else rtol
    atol = da if atol is None else atol
    if e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=what)
    else:
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)


def assert_same_error(sg_fn: Any, torch_fn: Any) -> BaseException:
    """Both calls raise the same exception type with the same message; returns symgrad's."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(type(te.value)) as se:
        sg_fn()
    assert type(se.value) is type(te.value)
    assert str(se.value) == str(te.value)
    return se.value


def grad_fn_name(t: Any) -> str | None:
    """The class name of ``t.grad_fn`` (None on leaves and constants)."""
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def compare_libs(fn: Any) -> None:
    """``fn(lib)`` runs in symgrad and in torch and returns tensors / None / plain values (or nests of them):
    both libraries agree on every value (``assert_close``) and every tensor's grad_fn name."""
    _compare_nested(fn(sg), fn(torch))


def _compare_nested(a: Any, b: Any) -> None:
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _compare_nested(x, y)
    elif isinstance(b, torch.Tensor) or b is None:
        assert_close(a, b)
        if b is not None:
            assert grad_fn_name(a) == grad_fn_name(b)
    else:
        assert a == b, (a, b)
