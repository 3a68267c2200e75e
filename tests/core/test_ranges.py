"""symgrad.core.ranges against torch 2.13: element bits, lengths, dtypes and errors."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
import torch

from symgrad.core import ranges as SR

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8"]


def _run(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = f()
    except Exception as e:  # noqa: BLE001 - the exception itself is compared
        return None, (type(e).__name__, str(e))
    return (r.numpy() if isinstance(r, torch.Tensor) else r), None


def check(ours, theirs):
    t, terr = _run(theirs)
    o, oerr = _run(ours)
    assert oerr == terr
    if terr is None:
        assert o.dtype == t.dtype and o.shape == t.shape
        assert np.ascontiguousarray(o).tobytes() == np.ascontiguousarray(t).tobytes()


@pytest.fixture(autouse=True)
def _threads():
    SR.set_num_threads(torch.get_num_threads())  # the integrator wires symgrad's thread count here
    yield
    SR.set_num_threads(None)


def _random_args(rs: random.Random, dt: str):
    fl = dt.startswith("float")
    start = rs.choice([0, 1, -3, 2.5, -1.75, 0.1, 1e3, -7]) if fl else rs.choice([0, 1, -3, 5, -7, 2])
    step = rs.choice([1, 2, 0.1, -0.3, 0.25, -1, 3, 1e-3, 0.7]) if fl else rs.choice([1, 2, -1, 3, -2])
    cnt = rs.randint(0, 300)
    end = start + step * cnt + rs.choice([0, step / 2, -step / 3, step * 1e-9]) if fl else start + step * cnt
    if dt in ("int8", "uint8", "int16"):
        start, end = abs(start) % 50, abs(start) % 50 + step * min(cnt, 40)
    return start, end, step, rs.randint(0, 300)


@pytest.mark.parametrize("dt", DTYPES)
def test_random_grid(dt):
    rs = random.Random(DTYPES.index(dt))
    td = getattr(torch, dt)
    for _ in range(40):
        start, end, step, steps = _random_args(rs, dt)
        check(lambda: SR.arange(start, end, step, dt), lambda: torch.arange(start, end, step, dtype=td))  # noqa: B023
        check(lambda: SR.linspace(start, end, steps, dt), lambda: torch.linspace(start, end, steps, dtype=td))  # noqa: B023
        if dt.startswith("float"):
            a, b, base = start / 50, end / 50, rs.choice([2.0, 10.0, 3.5])
            check(lambda: SR.logspace(a, b, steps, base, dt), lambda: torch.logspace(a, b, steps, base, dtype=td))  # noqa: B023
            check(lambda: SR.range_(start, end, step, dt), lambda: torch.range(start, end, step, dtype=td))  # noqa: B023


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_long_ranges_follow_torchs_vector_blocks_and_threads(dt):
    td = getattr(torch, dt)
    cases = [(0, 0.3, 40000), (0.1, 1e-3, 70000), (5, -0.25, 65537), (-3, 0.0137, 100003)]
    for start, step, cnt in cases if dt != "float16" else [(0, 0.7, 40000), (-3, 1.25e-3, 70001)]:
        end = start + step * cnt
        check(lambda: SR.arange(start, end, step, dt), lambda: torch.arange(start, end, step, dtype=td))  # noqa: B023
        check(lambda: SR.linspace(start, end, cnt, dt), lambda: torch.linspace(start, end, cnt, dtype=td))  # noqa: B023


def test_thread_count_changes_arange_like_torch():
    old = torch.get_num_threads()
    try:
        for nt in (1, 3):
            torch.set_num_threads(nt)
            SR.set_num_threads(nt)
            check(lambda: SR.arange(0.1, 70.1, 1e-3), lambda: torch.arange(0.1, 70.1, 1e-3))
    finally:
        torch.set_num_threads(old)


SPECIAL = [
    ("arange", (0, 5, -1), {}), ("arange", (0, 5, 0), {}), ("arange", (0, float("inf")), {}),
    ("arange", (0, float("nan")), {}), ("arange", (0.5, 10, 1.5), {"dtype": "int64"}),
    ("arange", (0.5, 10, 1.5), {"dtype": "int32"}), ("arange", (-0.5, 10, 1.5), {"dtype": "int32"}),
    ("arange", (0, 10, 0.5), {"dtype": "int64"}), ("arange", (0, 10, 0.5), {"dtype": "int32"}),
    ("arange", (0, 300, 7), {"dtype": "int8"}), ("arange", (0, 5), {"dtype": "bool"}), ("arange", (5,), {}),
    ("arange", (5.0,), {}), ("arange", (True, 5), {}), ("arange", (0, 2**62, 2**60), {}),
    ("arange", (0, 1e300, 1e-300), {}), ("arange", (-(2**63), 2**63 - 1, 2**62), {}),
    ("arange", (0, 1e20, 1e19), {"dtype": "int64"}), ("arange", (0, 1e39, 1e38), {}),
    ("arange", (0, 1e5, 1e4), {"dtype": "float16"}), ("arange", (-5, 300, 50), {"dtype": "uint8"}),
    ("arange", (0, 1000.5, 100), {"dtype": "int8"}), ("arange", (0.0, 2.0**63, 2.0**61), {"dtype": "int64"}),
    ("arange", (0, 5, 1), {"dtype": "uint16"}), ("arange", (10, 0, -3), {}), ("arange", (10.0, 0, -3), {}),
    ("arange", (3, 3), {}), ("arange", (-7, 7, 3), {"dtype": "int16"}),
    ("linspace", (0, 1, -1), {}), ("linspace", (0, 10, 1), {}), ("linspace", (2.7, 10, 1), {"dtype": "int32"}),
    ("linspace", (-2.7, 10, 1), {"dtype": "int32"}), ("linspace", (0, 10, 5), {"dtype": "int32"}),
    ("linspace", (0.5, 10.7, 5), {"dtype": "int32"}), ("linspace", (0, 1000, 5), {"dtype": "int8"}),
    ("linspace", (0, 10, 5), {"dtype": "bool"}), ("linspace", (0, float("inf"), 5), {}),
    ("linspace", (0, float("nan"), 5), {}), ("linspace", (3, 3, 5), {}), ("linspace", (0, 1e39, 5), {}),
    ("linspace", (0, 1e5, 5), {"dtype": "float16"}), ("linspace", (-200, 200, 5), {"dtype": "uint8"}),
    ("linspace", (-300, 200, 5), {"dtype": "uint8"}), ("linspace", (-200.0, 200, 5), {"dtype": "uint8"}),
    ("linspace", (float("nan"), 5, 1), {}), ("linspace", (float("inf"), 5, 1), {"dtype": "int32"}),
    ("linspace", (float("nan"), 5, 3), {"dtype": "int32"}), ("linspace", (0, 5, 3), {"dtype": "uint32"}),
    ("linspace", (-7, 1000, 13), {"dtype": "int64"}), ("linspace", (10, -7, 4), {"dtype": "int16"}),
    ("logspace", (0, 2, 1), {}), ("logspace", (0, 2, 3), {"dtype": "int32"}),
    ("logspace", (0.5, 2.5, 3), {"dtype": "int32"}), ("logspace", (0, 2, 3, -2.0), {}), ("logspace", (0, 2, -3), {}),
    ("logspace", (0, 40, 3), {}), ("logspace", (0, 3, 4), {"dtype": "int8"}), ("logspace", (0, 1e39, 4), {}),
    ("logspace", (-1.5, 7.25, 9, 2.0), {"dtype": "float64"}), ("logspace", (0, 20, 5), {"dtype": "int64"}),
    ("range", (0, 5), {}), ("range", (0, 5, -1), {}), ("range", (0, 5, 0), {}), ("range", (0, float("inf")), {}),
    ("range", (0, 5), {"dtype": "int64"}), ("range", (0, 5.5, 2), {"dtype": "int64"}),
    ("range", (0.5, 5.5, 1.5), {"dtype": "int32"}), ("range", (0, 5), {"dtype": "bool"}),
    ("range", (0, 5.5, 0.7), {"dtype": "float16"}), ("range", (0, 1e39, 1e38), {}),
    ("range", (0.5, 1e39, 1e38), {"dtype": "float64"}), ("range", (0, 1000, 300), {"dtype": "int8"}),
    ("range", (5, 0, -0.5), {}), ("range", (5, 0, -2), {"dtype": "int32"}),
]  # fmt: skip


@pytest.mark.parametrize("i", range(len(SPECIAL)))
def test_special_cases_and_errors(i):
    fn, args, kw = SPECIAL[i]
    ours = getattr(SR, "range_" if fn == "range" else fn)
    theirs = getattr(torch, fn)
    tkw = {k: getattr(torch, v) for k, v in kw.items()}
    check(lambda: ours(*args, **kw), lambda: theirs(*args, **tkw))


def test_messages_and_warning():
    with pytest.raises(RuntimeError, match="^upper bound and lower bound inconsistent with step sign$"):
        SR.arange(0, 5, -1)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        SR.range_(0, 3)
    with pytest.raises(ZeroDivisionError), warnings.catch_warnings():  # torch itself dies of SIGFPE here
        warnings.simplefilter("ignore")
        SR.range_(0, 5, 0.3, np.int32)
