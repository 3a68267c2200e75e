"""Dtypes: creation functions, the default dtype and torch's type promotion, compared with torch.

The promotion matrix runs every pair of operands (dimensioned and 0-d tensors of each dtype,
Python bool / int / float) through each binary op in both libraries: the result dtype and values
must agree, or both must raise the same error.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_same_error, numpy_of

import symgrad as sg

DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _values(name: str, shape: tuple) -> np.ndarray:
    base = np.array([1, 0, 2, 3, 1, 2])[: int(np.prod(shape, dtype=int))].reshape(shape)
    return base.astype(np.bool_ if name == "bool" else np.dtype(name))


def _operand(lib: Any, spec: tuple) -> Any:
    kind, value = spec
    if kind == "py":
        return value
    name, shape = value
    return lib.tensor(_values(name, shape))


OPERANDS = ([("t", (d, (2, 3))) for d in DTYPE_NAMES] + [("t", (d, ())) for d in DTYPE_NAMES]
            + [("py", True), ("py", 2), ("py", 2.5)])


def _spec_id(spec: tuple) -> str:
    kind, value = spec
    return repr(value) if kind == "py" else f"{value[0]}{list(value[1])}"


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "gt": lambda a, b: a > b,
    "eq": lambda a, b: a == b,
}


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - both libraries must raise the same
        return "error", (type(e).__name__, str(e))


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_promotion_matrix(op: str):
    fn = BINARY[op]
    bad = []
    for sa, sb in itertools.product(OPERANDS, OPERANDS):
        if sa[0] == "py" and sb[0] == "py":
            continue
        ks, rs = _outcome(lambda sa=sa, sb=sb: fn(_operand(sg, sa), _operand(sg, sb)))
        kt, rt = _outcome(lambda sa=sa, sb=sb: fn(_operand(torch, sa), _operand(torch, sb)))
        where = f"{_spec_id(sa)} {op} {_spec_id(sb)}"
        if ks != kt:
            bad.append(f"{where}: symgrad {ks} {rs!r:.120} vs torch {kt} {rt!r:.120}")
        elif kt == "error":
            if rs != rt:
                bad.append(f"{where}: symgrad raised {rs} vs torch {rt}")
        else:
            if str(rs.dtype) != str(rt.dtype) or tuple(rs.shape) != tuple(rt.shape):
                bad.append(f"{where}: symgrad {rs.dtype}{list(rs.shape)} vs torch {rt.dtype}{list(rt.shape)}")
            elif not np.allclose(numpy_of(rs).astype(np.float64), numpy_of(rt).astype(np.float64), rtol=1e-3,
                                 equal_nan=True):
                bad.append(f"{where}: values {numpy_of(rs)} vs {numpy_of(rt)}")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:40])


UNARY = {
    "exp": lambda lib, x: lib.exp(x),
    "sqrt": lambda lib, x: x.sqrt(),
    "sigmoid": lambda lib, x: x.sigmoid(),
    "neg": lambda lib, x: -x,
    "abs": lambda lib, x: x.abs(),
    "relu": lambda lib, x: x.relu(),
    "pow2": lambda lib, x: x ** 2,
    "pow0.5": lambda lib, x: x ** 0.5,
    "rpow": lambda lib, x: 2 ** x,
    "rsub": lambda lib, x: 1 - x,
    "rdiv": lambda lib, x: 1 / x,
    "clamp": lambda lib, x: x.clamp(0, 2),
    "sum": lambda lib, x: x.sum(),
    "sum dim": lambda lib, x: x.sum(-1) if x.ndim else x.sum(),
    "mean": lambda lib, x: x.mean(),
    "clone": lambda lib, x: x.clone(),
    "T": lambda lib, x: x.t() if x.ndim == 2 else x,
    "index": lambda lib, x: x[..., :1],
}


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_result_dtypes(op: str):
    fn = UNARY[op]
    bad = []
    for name, shape in itertools.product(DTYPE_NAMES, [(2, 3), ()]):
        arr = _values(name, shape)
        ks, rs = _outcome(lambda arr=arr: fn(sg, sg.tensor(arr)))
        kt, rt = _outcome(lambda arr=arr: fn(torch, torch.tensor(arr)))
        where = f"{op}({name}{list(shape)})"
        if ks != kt:
            bad.append(f"{where}: symgrad {ks} {rs!r:.120} vs torch {kt} {rt!r:.120}")
        elif kt == "error":
            if rs != rt:
                bad.append(f"{where}: symgrad raised {rs} vs torch {rt}")
        elif str(rs.dtype) != str(rt.dtype) or tuple(rs.shape) != tuple(rt.shape):
            bad.append(f"{where}: symgrad {rs.dtype}{list(rs.shape)} vs torch {rt.dtype}{list(rt.shape)}")
        elif not np.allclose(numpy_of(rs).astype(np.float64), numpy_of(rt).astype(np.float64), rtol=1e-3,
                             equal_nan=True):
            bad.append(f"{where}: values {numpy_of(rs)} vs {numpy_of(rt)}")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad)


# ---------------------------------------------------------------------------- creation

CREATE = {
    "tensor float": lambda lib: lib.tensor(1.5),
    "tensor int": lambda lib: lib.tensor(3),
    "tensor bool": lambda lib: lib.tensor(True),
    "tensor list": lambda lib: lib.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "tensor int list": lambda lib: lib.tensor([1, 2, 3]),
    "tensor mixed list": lambda lib: lib.tensor([1, 2.5, True]),
    "tensor bool list": lambda lib: lib.tensor([True, False]),
    "tensor tuple": lambda lib: lib.tensor((1.0, 2.0)),
    "tensor empty": lambda lib: lib.tensor([]),
    "tensor dtype": lambda lib: lib.tensor([1, 2], dtype=lib.float64),
    "tensor dtype float->int": lambda lib: lib.tensor([1.7, -2.7], dtype=lib.int32),
    "tensor of np float32": lambda lib: lib.tensor(np.array([1.5, 2.5], dtype=np.float32)),
    "tensor of np float64": lambda lib: lib.tensor(np.array([1.5, 2.5])),
    "tensor of np int32": lambda lib: lib.tensor(np.array([1, 2], dtype=np.int32)),
    "tensor of np scalar": lambda lib: lib.tensor(np.float64(2.5)),
    "tensor of 0-d tensors": lambda lib: lib.tensor([lib.tensor(1.0), lib.tensor(2.0)]),
    "tensor requires_grad": lambda lib: lib.tensor([1.0], requires_grad=True),
    "ones": lambda lib: lib.ones(2, 3),
    "ones tuple": lambda lib: lib.ones((2, 3)),
    "ones 0-d": lambda lib: lib.ones(()),
    "ones dtype": lambda lib: lib.ones(2, dtype=lib.int64),
    "ones requires_grad": lambda lib: lib.ones(2, requires_grad=True),
    "zeros": lambda lib: lib.zeros(3),
    "zeros bool": lambda lib: lib.zeros(2, dtype=lib.bool),
    "full float": lambda lib: lib.full((2, 2), 1.5),
    "full int": lambda lib: lib.full((2,), 7),
    "full bool": lambda lib: lib.full((2,), True),
    "full dtype": lambda lib: lib.full((2,), 7, dtype=lib.float64),
    "empty shape": lambda lib: lib.empty(2, 3).shape,
    "empty dtype": lambda lib: lib.empty(2, dtype=lib.float64).dtype,
    "arange int": lambda lib: lib.arange(5),
    "arange start stop": lambda lib: lib.arange(2, 7),
    "arange step": lambda lib: lib.arange(1, 10, 3),
    "arange negative step": lambda lib: lib.arange(5, 0, -2),
    "arange float": lambda lib: lib.arange(0.0, 1.0, 0.25),
    "arange float step": lambda lib: lib.arange(0, 1, 0.3),
    "arange dtype": lambda lib: lib.arange(4, dtype=lib.float64),
    "linspace": lambda lib: lib.linspace(0, 1, 5),
    "linspace dtype": lambda lib: lib.linspace(-1, 1, 4, dtype=lib.float64),
    "eye": lambda lib: lib.eye(3),
    "eye rect": lambda lib: lib.eye(2, 3),
    "ones_like": lambda lib: lib.ones_like(lib.tensor([1, 2])),
    "zeros_like dtype": lambda lib: lib.zeros_like(lib.tensor([1, 2]), dtype=lib.float32),
    "full_like": lambda lib: lib.full_like(lib.tensor([1.0, 2.0]), 3),
    "empty_like shape": lambda lib: lib.empty_like(lib.ones(2, 3)).shape,
    "rand shape dtype": lambda lib: (lib.rand(2, 3).shape, lib.rand(2, 3).dtype),
    "randn shape dtype": lambda lib: (lib.randn(4).shape, lib.randn(4, dtype=lib.float64).dtype),
    "rand_like": lambda lib: (lib.rand_like(lib.ones(2, dtype=lib.float64)).dtype),
}


def _same(a: Any, b: Any) -> None:
    if isinstance(b, torch.Tensor):
        assert isinstance(a, sg.Tensor)
        assert str(a.dtype) == str(b.dtype)
        assert a.requires_grad == b.requires_grad
        assert_close(a, b)
    elif isinstance(b, tuple) and not isinstance(b, torch.Size):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(b, torch.dtype):
        assert str(a) == str(b)
    else:
        assert tuple(a) == tuple(b) if isinstance(b, torch.Size) else a == b


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CREATE))
def test_creation_matches_torch(case: str, default: str):
    sg.set_default_dtype(getattr(sg, default))
    torch.set_default_dtype(getattr(torch, default))
    _same(CREATE[case](sg), CREATE[case](torch))


def test_rand_is_seeded_and_in_range():
    sg.manual_seed(3)
    a = sg.rand(100)
    sg.manual_seed(3)
    b = sg.rand(100)
    assert a.equal(b)
    assert 0.0 <= float(a.min() if hasattr(a, "min") else a.numpy().min()) and float(a.numpy().max()) < 1.0
    sg.manual_seed(4)
    assert not sg.rand(100).equal(a)
    n = sg.randn(10_000, dtype=sg.float64).numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05


def test_from_numpy_shares_memory_and_numpy_back():
    arr = np.array([1.0, 2.0], dtype=np.float32)
    t = sg.from_numpy(arr)
    arr[0] = 5.0
    assert t.tolist() == [5.0, 2.0] and t.dtype is sg.float32
    t.add_(1)
    assert arr.tolist() == [6.0, 3.0]
    assert t.numpy() is arr or np.shares_memory(t.numpy(), arr)
    assert sg.tensor(arr).numpy() is not arr  # sg.tensor copies, as torch.tensor


def test_item_tolist_and_python_conversions():
    for lib in (sg, torch):
        x = lib.tensor([[1.5, 2.0]])
        assert x.tolist() == [[1.5, 2.0]]
        assert lib.tensor(3).item() == 3 and isinstance(lib.tensor(3).item(), int)
        assert isinstance(lib.tensor(2.5).item(), float)
        assert lib.tensor(True).item() is True
        assert float(lib.tensor([4.5])) == 4.5 and int(lib.tensor(7)) == 7
        assert lib.tensor([1.0, 2.0]).tolist() == [1.0, 2.0]
        assert lib.tensor(2.0).tolist() == 2.0


def test_default_dtype_switch():
    for lib in (sg, torch):
        assert lib.get_default_dtype() == lib.float32
        lib.set_default_dtype(lib.float64)
        assert lib.tensor(1.0).dtype == lib.float64 and lib.ones(1).dtype == lib.float64
        assert (lib.tensor([1, 2]) / 2).dtype == lib.float64
        assert lib.tensor([1, 2]).exp().dtype == lib.float64
        assert (lib.tensor([1.0], dtype=lib.float32) * 2.5).dtype == lib.float32
        lib.set_default_dtype(lib.float32)
        assert lib.tensor(1.0).dtype == lib.float32


def test_dtype_names_and_aliases():
    for name in ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "float",
                 "double", "half", "long", "int", "short"]:
        assert repr(getattr(sg, name)) == repr(getattr(torch, name)), name
        assert getattr(sg, name).is_floating_point == getattr(torch, name).is_floating_point, name


def test_casts_and_their_gradients():
    def f(lib):
        x = lib.tensor([1.25, -2.5], requires_grad=True)
        y = x.double() * lib.tensor([3.0, 4.0], dtype=lib.float64)
        z = y.float().sum() + x.to(lib.float64).sum().float()
        z.backward()
        return (str(x.double().dtype), str(x.long().dtype), x.long().tolist(), str(x.int().dtype), str(x.bool().dtype),
                str(x.half().dtype), x.type(), x.double().type(), x.grad.dtype == lib.float32, x.grad.tolist())
    assert f(sg) == f(torch)


def test_mixed_precision_gradients_have_the_leaf_dtype():
    def f(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([0.5, 0.25], dtype=lib.float64, requires_grad=True)
        c = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
        out = (a * b).sum() + (a * c).sum()
        out.backward()
        return out, a.grad, b.grad, c.grad
    rs, rt = f(sg), f(torch)
    for x, y in zip(rs, rt):
        assert_close(x, y)


def test_zero_dim_tensors_do_not_promote_dimensioned_ones():
    def f(lib):
        a = lib.tensor([1.0, 2.0])
        b = lib.tensor(2.0, dtype=lib.float64)
        i = lib.tensor([1, 2])
        j = lib.tensor(2.5)
        return [str((a * b).dtype), str((i * j).dtype), str((i + lib.tensor(3)).dtype),
                str((lib.tensor([1, 2], dtype=lib.int32) + lib.tensor(3)).dtype), str((b * j).dtype)]
    assert f(sg) == f(torch)


def test_integer_sum_and_bool_sum_are_int64():
    for lib in (sg, torch):
        assert lib.tensor([True, True, False]).sum().item() == 2
        assert lib.tensor([True, True]).sum().dtype == lib.int64
        assert lib.tensor([1, 2], dtype=lib.int32).sum().dtype == lib.int64
        assert lib.tensor([1, 2], dtype=lib.int32).sum(dtype=lib.float64).dtype == lib.float64


def test_inplace_keeps_the_dtype_of_self():
    def f(lib):
        x = lib.tensor([1.0, 2.0])
        x += lib.tensor([0.1, 0.2], dtype=lib.float64)
        i = lib.tensor([1, 2])
        i += True
        i *= 3
        return str(x.dtype), x.tolist(), str(i.dtype), i.tolist()
    a, b = f(sg), f(torch)
    assert a[0] == b[0] and a[2:] == b[2:]
    np.testing.assert_allclose(a[1], b[1], rtol=1e-6)


def test_errors_of_bool_subtraction_and_negation():
    assert_same_error(lambda: sg.tensor([True]) - sg.tensor([False]),
                      lambda: torch.tensor([True]) - torch.tensor([False]))
    assert_same_error(lambda: -sg.tensor([True]), lambda: -torch.tensor([True]))
