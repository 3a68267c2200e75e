"""codegen.fastcall: the guarded call in machine code routes, packs and counts references as the Python path."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from codegen import fastcall

pytestmark = pytest.mark.skipif(not fastcall.available(), reason="this interpreter's object layout differs")


def _entry(*a):
    return (a[0] * a[1], a[0] + 1.0, a[1] - 1.0)


def _general(*a, **kw):
    return ("general", a, kw)


class F(float):
    pass


def test_exact_floats_take_the_entry_everything_else_the_general_path():
    f = fastcall.guarded(_entry, _general, 2)
    assert f(2.0, 3.0) == (6.0, 3.0, 2.0)
    assert f(2, 3.0) == ("general", (2, 3.0), {})
    assert f(F(2.0), 3.0) == ("general", (2.0, 3.0), {})
    assert f(np.float64(2.0), 3.0) == ("general", (2.0, 3.0), {})
    assert f(2.0) == ("general", (2.0,), {})
    assert f(2.0, 3.0, 4.0) == ("general", (2.0, 3.0, 4.0), {})
    assert f(2.0, b=3.0) == ("general", (2.0,), {"b": 3.0})
    assert f(2.0, 3.0, out=None) == ("general", (2.0, 3.0), {"out": None})
    assert f(2.0, 3.0, **{}) == (6.0, 3.0, 2.0)
    assert f() == ("general", (), {})


@pytest.mark.parametrize("pack, want", [(None, (6.0, 3.0, 2.0)), (0, 6.0), (2, 2.0), ((1, 2), (3.0, 2.0)),
                                        ((0, (1, 2)), (6.0, (3.0, 2.0))), ((0, (1,)), (6.0, (3.0,))),
                                        (((0,), 1), ((6.0,), 3.0))])
def test_packing_the_entry_result(pack, want):
    assert fastcall.guarded(_entry, _general, 2, pack=pack)(2.0, 3.0) == want


def test_exceptions_propagate_from_either_path():
    def bad(*a):
        raise ValueError("from the entry")

    def bad_general(*a, **kw):
        raise TypeError("from the general path")
    f = fastcall.guarded(bad, bad_general, 1, pack=(0,))
    with pytest.raises(ValueError, match="from the entry"):
        f(1.0)
    with pytest.raises(TypeError, match="from the general path"):
        f(1)


def test_no_reference_is_leaked_or_lost():
    results = []

    def entry(*a):
        r = (float(a[0] * 3), float(a[0] * 4))
        results.append(r)
        return r
    f = fastcall.guarded(entry, _general, 1, pack=(1, (0,)))
    x = 1.5
    before = sys.getrefcount(x)
    out = [f(x) for _ in range(1000)]
    assert sys.getrefcount(x) == before
    assert all(sys.getrefcount(r) == 3 for r in results)       # the entry's tuple: the list (and r, the argument)
    assert all(sys.getrefcount(o[0]) == 3 for o in out)         # an item: in the entry's tuple and in ours
    results.clear()
    assert all(sys.getrefcount(o[0]) == 2 for o in out)


def test_as_a_class_call_it_gets_the_instance_arguments_only():
    class Callable_:
        pass
    f = fastcall.guarded(_entry, _general, 2)
    Callable_.__call__ = f
    c = Callable_()
    assert c(2.0, 3.0) == (6.0, 3.0, 2.0)
    assert c(2, 3) == ("general", (2, 3), {})
