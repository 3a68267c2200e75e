"""``codegen.numba.vmath``: vectorisable exp/log/log1p/sin/cos/tanh are within 1 ulp of the exact value, NaN
outside their domain, vectorised by LLVM, and ``inline`` reproduces the jitted helpers bit for bit.

The oracle is mpmath at 120 bits (correctly rounded to float64); numpy's libm is checked on the same
points for scale (it too is within 1 ulp).
"""
from __future__ import annotations

import re

import mpmath
import numba
import numpy as np
import pytest

from codegen.numba import vmath

MP = {"exp": mpmath.exp, "log": mpmath.log, "log1p": mpmath.log1p, "sin": mpmath.sin, "cos": mpmath.cos,
      "tanh": mpmath.tanh}


def _points(name: str, n: int = 1500) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, name)))
    k = np.arange(1, 200, dtype=np.float64)
    if name == "exp":
        parts = [rng.uniform(-707.9, 707.9, n), rng.uniform(-2, 2, n), rng.normal(0, 1e-9, n // 4),
                 k * np.log(2.0), [0.0, -0.0, 5e-324, 1e-300, 707.99, -707.99, 0.34657359027997264]]
    elif name == "log":
        parts = [np.exp(rng.uniform(-700, 700, n)), rng.uniform(0.5, 2, n), 1 + rng.normal(0, 1e-9, n // 4),
                 [2.2250738585072014e-308, 1.7976931348623157e308, 1.0, 2.0, 0.7071067811865476]]
    elif name == "log1p":
        parts = [rng.uniform(-1, 3, n), np.exp(rng.uniform(-40, 700, n)), -np.exp(rng.uniform(-40, -1e-9, n)),
                 rng.normal(0, 1e-9, n // 4), [0.0, -0.0, 5e-324, -0.9999999999999999, 1.7976931348623157e308,
                                               0.41421356237309503, -0.2928932188134524]]
    elif name in ("sin", "cos"):
        parts = [rng.uniform(-10, 10, n), rng.uniform(-5e5, 5e5, n), rng.normal(0, 1e-7, n // 4),
                 k * np.pi / 2, k * np.pi / 4, [0.0, -0.0, 5e-324, 524287.9, -524287.9, 355.0, 103993.0]]
    else:
        parts = [rng.uniform(-3, 3, n), rng.uniform(-0.7, 0.7, n), rng.normal(0, 1e-7, n // 4),
                 rng.uniform(-40, 40, n // 4), [0.0, -0.0, 5e-324, 0.625, -0.625, 0.6249999999999999, 19.1,
                                                -400.0, np.inf, -np.inf]]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


def _exact(name: str, x: np.ndarray) -> np.ndarray:
    mpmath.mp.prec = 120
    return np.array([float(MP[name](mpmath.mpf(float(v)))) for v in x])


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in representable doubles (0 for equal values, +0 and -0 included)."""
    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.view(np.int64).astype(object)
        return np.array([x if x >= 0 else -(x & 0x7FFF_FFFF_FFFF_FFFF) for x in i], dtype=object)
    return np.abs(ordered(a) - ordered(b)).astype(np.float64)


def _loop(fn):
    @numba.njit(error_model="numpy")
    def run(a, out):
        for i in range(a.shape[0]):
            out[i] = fn(a[i])
    return run


LOOPS = {name: _loop(getattr(vmath, f"v{name}")) for name in MP}


def _run(name: str, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    LOOPS[name](x, out)
    return out


@pytest.mark.parametrize("name", sorted(MP))
def test_within_one_ulp(name):
    x = _points(name)
    got, want = _run(name, x), _exact(name, x)
    assert not np.isnan(got).any()
    err = _ulps(got, want)
    assert err.max() <= 1, (name, x[err.argmax()], got[err.argmax()], want[err.argmax()])
    with np.errstate(all="ignore"):
        assert _ulps(getattr(np, name)(x), want).max() <= 1       # libm, for scale


BAD = {
    "exp": [708.0, -708.0, 709.5, -745.2, 1e308, np.inf, -np.inf, np.nan],
    "log": [0.0, -0.0, -1.0, 5e-324, 2.2250738585072e-308, np.inf, -np.inf, np.nan],
    "log1p": [-1.0, -1.5, np.inf, -np.inf, np.nan],
    "sin": [524288.0, -524288.0, 1e6, 1e300, np.inf, -np.inf, np.nan],
    "cos": [524288.0, 1e22, np.inf, np.nan],
    "tanh": [np.nan],
}


@pytest.mark.parametrize("name", sorted(MP))
def test_nan_outside_the_domain(name):
    """Outside the domain the helper says so with NaN (the kernels then use libm for the chunk)."""
    got = _run(name, np.array(BAD[name]))
    assert np.isnan(got).all(), dict(zip(BAD[name], got))


def test_tanh_saturates():
    x = np.array([np.inf, -np.inf, 25.0, -25.0, 19.5, -19.5])
    np.testing.assert_array_equal(_run("tanh", x), np.tanh(x))


@pytest.mark.parametrize("name", sorted(MP))
def test_signed_zeros_and_tiny_arguments(name):
    """Zeros of either sign and subnormals give libm's result, sign included."""
    x = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310])
    if name == "log":
        x = np.array([2.2250738585072014e-308, 1.0])
    got = _run(name, x)
    want = getattr(np, name)(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", sorted(MP))
def test_loops_vectorise(name):
    """The point of the module: LLVM turns a loop over a helper into vector code."""
    _run(name, np.ones(4))
    ir = "".join(LOOPS[name].inspect_llvm().values())
    assert re.search(r"<[248] x double>", ir), f"{name}: the loop was not vectorised"


@pytest.mark.parametrize("name", sorted(MP))
def test_inline_matches_the_helper(name):
    """``inline``'s straight-line text computes the helper's exact bits, fresh names included."""
    taken = {"x", "out", "a", "i"}

    def fresh(want: str) -> str:
        while want in taken:
            want += "_"
        taken.add(want)
        return want
    lines, res = vmath.inline(vmath.NAMES[name], "a[i]", fresh, "m0")
    lines2, res2 = vmath.inline(vmath.NAMES[name], "a[i] * 1.0", fresh, "m0")   # same prefix: renamed
    def assigned(text: list[str]) -> set[str]:
        return set(re.findall(r"^(\w+) =", "\n".join(text), re.M))
    assert not assigned(lines) & assigned(lines2)
    body = "".join(f"        {line}\n" for line in lines + lines2)
    src = (f"{vmath.PRELUDE}\n\ndef run(a, out, out2):\n    for i in range(a.shape[0]):\n{body}"
           f"        out[i] = {res}\n        out2[i] = {res2}\n")
    ns: dict = {"numba": numba, "numpy": np}
    exec(compile(src, f"<inline {name}>", "exec"), ns)
    run = numba.njit(error_model="numpy")(ns["run"])
    x = np.concatenate([_points(name, 300), BAD[name]])
    out, out2 = np.empty_like(x), np.empty_like(x)
    run(x, out, out2)
    want = _run(name, x)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out2, want)
