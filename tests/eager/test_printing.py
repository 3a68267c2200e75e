"""symgrad._format must print tensors byte-identically to torch's repr."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch._tensor_str
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symgrad.eager import printing as _format
from symgrad.eager.printing import PrintOptions, get_printoptions, set_printoptions, tensor_repr

NAN, INF = math.nan, math.inf

DTYPES = {
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}


@pytest.fixture(autouse=True)
def _restore_defaults():
    """Each test starts and ends with default print options and default dtype."""
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)
    yield
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


def ours(t: torch.Tensor, options: PrintOptions | None = None) -> str:
    """Our repr of the tensor ``t``, fed the same facts torch uses."""
    return tensor_repr(
        t.detach().numpy(),
        dtype_name=str(t.dtype).removeprefix("torch."),
        is_default_dtype=t.dtype == torch.get_default_dtype(),
        requires_grad=t.requires_grad,
        grad_fn_name=None if t.grad_fn is None else type(t.grad_fn).__name__,
        options=options,
    )


def check(t: torch.Tensor) -> None:
    expected = repr(t)
    assert str(t) == expected
    assert ours(t) == expected


def both_set(**kwargs) -> None:
    set_printoptions(**kwargs)
    torch.set_printoptions(**kwargs)


# ---------------------------------------------------------------- hand-picked cases

CASES = {
    "scalar_float": lambda: torch.tensor(27.0),
    "scalar_frac": lambda: torch.tensor(3.14159),
    "scalar_int": lambda: torch.tensor(5),
    "scalar_neg_int": lambda: torch.tensor(-5, dtype=torch.int32),
    "scalar_bool": lambda: torch.tensor(True),
    "scalar_nan": lambda: torch.tensor(NAN),
    "scalar_neg_zero": lambda: torch.tensor(-0.0),
    "scalar_big": lambda: torch.tensor(1e10),
    "scalar_f64": lambda: torch.tensor(2.5, dtype=torch.float64),
    "empty_1d": lambda: torch.tensor([]),
    "empty_0x3": lambda: torch.zeros(0, 3),
    "empty_2x0x4_f64": lambda: torch.zeros(2, 0, 4, dtype=torch.float64),
    "empty_int64": lambda: torch.tensor([], dtype=torch.int64),
    "empty_bool": lambda: torch.zeros(0, dtype=torch.bool),
    "empty_uint8_2d": lambda: torch.zeros(3, 0, dtype=torch.uint8),
    "vec5": lambda: torch.arange(5.0),
    "vec_point1": lambda: torch.tensor([0.1]),
    "vec_mixed": lambda: torch.tensor([0.1, -2.5, 3.0, 100.25]),
    "ones_2x2": lambda: torch.ones(2, 2),
    "arange_2x3x4": lambda: torch.arange(24.0).reshape(2, 3, 4),
    "frac_2x3x4": lambda: torch.arange(24.0).reshape(2, 3, 4) / 7,
    "int_2x3x4": lambda: torch.arange(-12, 12).reshape(2, 3, 4),
    "rank4": lambda: torch.arange(48.0).reshape(2, 2, 3, 4) - 20,
    "long_1001": lambda: torch.arange(1001.0),
    "long_1001_int": lambda: torch.arange(1001),
    "sq_40x40": lambda: torch.arange(1600.0).reshape(40, 40) / 3,
    "wide_3x1000": lambda: torch.arange(3000).reshape(3, 1000),
    "exact_1000": lambda: torch.arange(1000.0),
    "cube_20": lambda: torch.arange(8000, dtype=torch.int16).reshape(20, 20, 20),
    "wrap_100": lambda: torch.linspace(-1, 1, 100),
    "wrap_int_300": lambda: torch.arange(300, dtype=torch.int32),
    "large": lambda: torch.tensor([1e9, 2e9, 3.5e9]),
    "huge_f64": lambda: torch.tensor([1e200, -3e-200], dtype=torch.float64),
    "exp3": lambda: torch.tensor([1e100, 1.0], dtype=torch.float64),
    "small": lambda: torch.tensor([1e-5, 2e-5]),
    "ratio_1000": lambda: torch.tensor([1.0, 1000.0]),
    "ratio_1001": lambda: torch.tensor([1.0, 1001.0]),
    "ratio_frac": lambda: torch.tensor([0.5, 1000.5]),
    "edge_1e8": lambda: torch.tensor([1e8, 2.0], dtype=torch.float64),
    "edge_1e-4": lambda: torch.tensor([1e-4, 2e-4], dtype=torch.float64),
    "int_valued_sci": lambda: torch.tensor([1.0, 1e6]),
    "nan_inf": lambda: torch.tensor([NAN, INF, -INF, 1.5]),
    "nan_inf_int": lambda: torch.tensor([NAN, INF, -INF, 2.0, -3.0]),
    "only_nonfinite": lambda: torch.tensor([NAN, -INF, INF]),
    "nonfinite_and_zero": lambda: torch.tensor([0.0, NAN, -0.0]),
    "nan_sci": lambda: torch.tensor([NAN, 1e-9, 1.0]),
    "zeros": lambda: torch.zeros(3),
    "neg_zero": lambda: torch.tensor([-0.0, 1.0]),
    "neg_zero_frac": lambda: torch.tensor([-0.0, 0.25]),
    "negatives": lambda: torch.tensor([[-1.5, 2.25], [3.125, -400.0]]),
    "rounding_up": lambda: torch.tensor([9.99996, 0.5], dtype=torch.float64),
    "rounding_sci": lambda: torch.tensor([9.99996e99, 1.0], dtype=torch.float64),
    "float16": lambda: torch.tensor([0.1, 65504.0, -2.0], dtype=torch.float16),
    "float16_small": lambda: torch.tensor([6e-8, 1.0], dtype=torch.float16),
    "float32_digits": lambda: torch.tensor([0.123456789, 1 / 3, 2 / 3]),
    "bools": lambda: torch.tensor([True, False]),
    "bools_true": lambda: torch.tensor([[True, True], [True, True]]),
    "bools_long": lambda: torch.arange(50) % 3 == 0,
    "bools_summarised": lambda: torch.arange(2000) % 2 == 0,
    "uint8": lambda: torch.tensor([0, 255, 7], dtype=torch.uint8),
    "int8": lambda: torch.tensor([-128, 127, 0], dtype=torch.int8),
    "int16": lambda: torch.tensor([[-300, 5], [7, 32767]], dtype=torch.int16),
    "int32": lambda: torch.tensor([1, 2, 3], dtype=torch.int32),
    "int64_big": lambda: torch.tensor([-(2**63), 2**63 - 1]),
    "f64": lambda: torch.tensor([1.0, 2.0], dtype=torch.float64),
    "f64_req_grad": lambda: torch.tensor(
        [1.0, 2.0], dtype=torch.float64, requires_grad=True
    ),
    "f32_req_grad": lambda: torch.ones(2, 3, requires_grad=True),
    "grad_fn_mul": lambda: torch.ones(2, 2, requires_grad=True) * 2,
    "grad_fn_sum": lambda: torch.ones(3, requires_grad=True).sum(),
    "grad_fn_f64": lambda: (
        torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True) + 1
    ),
    "grad_fn_f16": lambda: torch.ones(2, dtype=torch.float16, requires_grad=True).exp(),
    "grad_fn_empty": lambda: (
        torch.zeros(0, 3, dtype=torch.float64, requires_grad=True) * 1
    ),
    "req_grad_long_line": lambda: torch.linspace(
        0, 1, 14, dtype=torch.float64, requires_grad=True
    ),
    "suffix_wrap": lambda: torch.arange(12.0, dtype=torch.float64).reshape(3, 4) * 1e5,
    "multi_suffix_wrap": lambda: (
        torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16, requires_grad=True)
        * 123456789
    ),
    "tall_column": lambda: torch.arange(1200.0).reshape(1200, 1),
    "deep_summarised": lambda: torch.arange(4 * 5 * 6 * 70.0).reshape(4, 5, 6, 70),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_picked(name):
    check(CASES[name]())


@pytest.mark.parametrize(
    "name", ["f64", "vec5", "empty_1d", "empty_int64", "grad_fn_f64", "f32_req_grad"]
)
def test_default_dtype_float64(name):
    torch.set_default_dtype(torch.float64)
    check(CASES[name]())


OPTION_CASES = [
    {"precision": 2},
    {"precision": 0},
    {"precision": 10},
    {"threshold": 5},
    {"threshold": 5, "edgeitems": 1},
    {"threshold": 5, "edgeitems": 0},
    {"edgeitems": 0},
    {"linewidth": 30},
    {"linewidth": 1},
    {"sci_mode": True},
    {"sci_mode": False},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "full", "precision": 1, "sci_mode": True},
]


@pytest.mark.parametrize("kwargs", OPTION_CASES, ids=str)
@pytest.mark.parametrize(
    "name",
    [
        "vec5",
        "long_1001",
        "sq_40x40",
        "arange_2x3x4",
        "frac_2x3x4",
        "nan_inf",
        "small",
        "int_2x3x4",
        "bools",
        "scalar_frac",
        "empty_0x3",
        "neg_zero",
        "grad_fn_f64",
        "large",
    ],
)
def test_print_options(kwargs, name):
    both_set(**kwargs)
    t = CASES[name]()
    check(t)
    # an explicit options object gives the same string without touching the globals
    explicit = PrintOptions(**get_printoptions())
    set_printoptions(profile="default")
    assert ours(t, options=explicit) == repr(t)


def test_docstring_examples():
    both_set(precision=2)
    assert ours(torch.tensor([1.12345])) == "tensor([1.12])"
    both_set(threshold=5)
    assert (
        ours(torch.arange(10))
        == "tensor([0, 1, 2,  ..., 7, 8, 9])"
        == repr(torch.arange(10))
    )
    both_set(profile="default")
    assert ours(torch.tensor([1.12345])) == "tensor([1.1235])"
    assert ours(torch.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
    assert ours(torch.ones(2, 2)) == "tensor([[1., 1.],\n        [1., 1.]])"
    assert ours(torch.tensor(27.0)) == "tensor(27.)"
    assert ours(torch.tensor([0.1])) == "tensor([0.1000])"
    assert ours(torch.zeros(0, 3)) == "tensor([], size=(0, 3))"


def test_plain_numpy_input():
    got = tensor_repr(
        np.array([[1, 2], [3, 4]], dtype=np.int32),
        dtype_name="int32",
        is_default_dtype=False,
    )
    assert got == "tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)"
    assert (
        tensor_repr(np.float64(2.5), dtype_name="float64", is_default_dtype=True)
        == "tensor(2.5000)"
    )
    with pytest.raises(TypeError):
        tensor_repr(np.array(["a"]), dtype_name="float32", is_default_dtype=True)


# ---------------------------------------------------------------- print options API


def test_printoptions_defaults_match_torch():
    assert get_printoptions() == torch._tensor_str.get_printoptions()
    assert get_printoptions() == dataclasses.asdict(PrintOptions())


@pytest.mark.parametrize(
    "kwargs", OPTION_CASES + [{"profile": "nonsense"}, {}], ids=str
)
def test_set_printoptions_matches_torch(kwargs):
    both_set(precision=7, linewidth=100, sci_mode=True)
    both_set(**kwargs)
    assert get_printoptions() == torch._tensor_str.get_printoptions()


def test_printoptions_round_trip():
    saved = get_printoptions()
    torch_saved = torch._tensor_str.get_printoptions()
    both_set(precision=2, threshold=10, edgeitems=1, linewidth=40, sci_mode=False)
    changed = get_printoptions()
    assert changed == {
        "precision": 2,
        "threshold": 10,
        "edgeitems": 1,
        "linewidth": 40,
        "sci_mode": False,
    }
    assert changed == torch._tensor_str.get_printoptions()
    set_printoptions(profile="default")
    set_printoptions(**changed)
    assert get_printoptions() == changed
    set_printoptions(**saved)
    torch.set_printoptions(**torch_saved)
    assert get_printoptions() == saved == torch._tensor_str.get_printoptions()


def test_printoptions_context_manager():
    with _format.printoptions(precision=1, sci_mode=True):
        assert get_printoptions()["precision"] == 1
        assert ours(torch.tensor([2.0])) == "tensor([2.0e+00])"
    assert get_printoptions() == dataclasses.asdict(PrintOptions())


# ---------------------------------------------------------------- property tests

FLOAT_STYLES = {
    # magnitudes spread over 1e-8..1e12 with random signs
    "spread": st.builds(
        lambda m, e, s: s * m * 10.0**e,
        st.floats(1.0, 9.999),
        st.integers(-8, 12),
        st.sampled_from([1.0, -1.0]),
    ),
    # narrow magnitudes: fixed-point mode
    "narrow": st.floats(-50.0, 50.0, allow_nan=False),
    "unit": st.floats(0.0, 1.0),
    # integer-valued floats: int mode
    "integral": st.integers(-(10**6), 10**6).map(float),
    "small_integral": st.integers(-20, 20).map(float),
    "anything": st.floats(allow_nan=True, allow_infinity=True),
}
SPECIALS = st.sampled_from([0.0, -0.0, NAN, INF, -INF, 1.0, -1.0])
INT_RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


@st.composite
def tensors(draw, max_dim: int = 5):
    shape = tuple(draw(st.lists(st.integers(0, max_dim), min_size=0, max_size=4)))
    n = math.prod(shape)
    dtype_name = draw(st.sampled_from(sorted(DTYPES)))
    if dtype_name.startswith("float"):
        style = draw(st.sampled_from(sorted(FLOAT_STYLES)))
        element = (
            st.one_of(FLOAT_STYLES[style], SPECIALS)
            if draw(st.booleans())
            else FLOAT_STYLES[style]
        )
        values = draw(st.lists(element, min_size=n, max_size=n))
        with np.errstate(over="ignore"):
            array = np.array(values, dtype=np.float64).reshape(shape).astype(dtype_name)
    elif dtype_name == "bool":
        array = np.array(
            draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool
        ).reshape(shape)
    else:
        lo, hi = INT_RANGES[dtype_name]
        if draw(st.booleans()):
            lo, hi = max(lo, -100), min(hi, 100)
        values = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
        array = np.array(values, dtype=dtype_name).reshape(shape)
    t = torch.from_numpy(array.copy())
    if t.dtype.is_floating_point:
        grad = draw(st.sampled_from(["none", "leaf", "mul", "clone"]))
        if grad != "none":
            t.requires_grad_(True)
        if grad == "mul":
            t = t * 1
        elif grad == "clone":
            t = t.clone()
    return t


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=tensors(), default64=st.booleans())
def test_property_default_options(t, default64):
    torch.set_default_dtype(torch.float64 if default64 else torch.float32)
    try:
        check(t)
    finally:
        torch.set_default_dtype(torch.float32)


OPTIONS = st.builds(
    PrintOptions,
    precision=st.integers(0, 8),
    threshold=st.sampled_from([0, 3, 10, 50, 1000, INF]),
    edgeitems=st.integers(0, 4),
    linewidth=st.integers(1, 120),
    sci_mode=st.sampled_from([None, True, False]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=tensors(max_dim=7), opts=OPTIONS)
def test_property_random_options(t, opts):
    torch.set_printoptions(**opts.__dict__)
    try:
        expected = repr(t)
    finally:
        torch.set_printoptions(profile="default")
    assert ours(t, options=opts) == expected
