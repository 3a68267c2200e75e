"""The runtime Tensor against torch: attributes, grad_fn objects, leaves, detach / data / clone,
printing, shape ops and indexing (values, grad_fn names and gradients), comparisons and where.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_close, grad_fn_name, numpy_of

import symgrad as sg

ADDRESS = re.compile(r"0x[0-9a-f]+")


def masked(s: str) -> str:
    return ADDRESS.sub("0x...", s)


def run_both(fn: Any) -> tuple[Any, Any]:
    return fn(sg), fn(torch)


def same(fn: Any) -> None:
    a, b = run_both(fn)
    _same(a, b)


def _same(a: Any, b: Any) -> None:
    if isinstance(b, torch.Tensor) or b is None:
        assert_close(a, b)
        if b is not None:
            assert a.requires_grad == b.requires_grad
            assert grad_fn_name(a) == grad_fn_name(b)
    elif isinstance(b, (tuple, list)) and not isinstance(b, torch.Size):
        assert type(a) is type(b) or isinstance(a, (tuple, list)), (a, b)
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(b, torch.Size):
        assert tuple(a) == tuple(b) and repr(a) == repr(b)
    elif isinstance(b, torch.dtype):
        assert repr(a) == repr(b)
    else:
        assert a == b, (a, b)


# ---------------------------------------------------------------------------- attributes

def test_requires_grad_defaults_to_false():
    same(lambda lib: [t.requires_grad for t in (lib.tensor([1.0]), lib.ones(2), lib.zeros(2), lib.rand(2),
                                                lib.randn(2), lib.arange(3.0), lib.full((2,), 1.0), lib.eye(2),
                                                lib.linspace(0, 1, 3), lib.ones_like(lib.ones(2)))])


def test_leaf_attributes():
    def f(lib):
        x = lib.ones(2, 2, requires_grad=True)
        c = lib.ones(2)
        y = x + 2
        return (x.is_leaf, c.is_leaf, y.is_leaf, x.grad_fn, c.grad_fn, x.grad, c.grad, x.requires_grad,
                y.requires_grad, (y * c).is_leaf)
    same(f)


def test_shape_size_ndim_numel_dtype_device():
    def f(lib):
        x = lib.ones(2, 3, 4)
        return (x.shape, x.size(), x.size(1), x.size(-1), x.ndim, x.dim(), x.numel(), x.dtype, str(x.device),
                len(x), x.shape[0], lib.tensor(1.0).shape, lib.tensor(1.0).ndim, lib.tensor(1.0).numel(),
                x.is_floating_point(), lib.tensor([1]).is_floating_point(), x.nelement())
    same(f)


def test_size_repr_and_arithmetic():
    assert repr(sg.ones(2, 3).shape) == repr(torch.ones(2, 3).shape) == "torch.Size([2, 3])"
    assert sg.ones(2, 3).shape == (2, 3)
    assert sg.ones(2, 3).shape.numel() == 6


def test_requires_grad_in_place_and_setter():
    def f(lib):
        a = lib.tensor([1.0, 2.0])
        r1 = a.requires_grad_()
        b = lib.tensor([1.0, 2.0])
        b.requires_grad = True
        c = lib.tensor([1.0, 2.0], requires_grad=True)
        c.requires_grad_(False)
        y = a * 2
        y.requires_grad_(True)  # a no-op on a non-leaf that requires grad
        return r1 is a, a.requires_grad, b.requires_grad, c.requires_grad, c.is_leaf, y.requires_grad, y.is_leaf
    same(f)


def test_grad_fn_objects():
    def f(lib):
        x = lib.ones(2, 2, requires_grad=True)
        y = x + 2
        z = y * y * 3
        out = z.mean()
        return (type(y.grad_fn).__name__, y.grad_fn.name(), type(out.grad_fn).__name__,
                type(y.grad_fn.next_functions[0][0]).__name__, y.grad_fn.next_functions[1],
                len(z.grad_fn.next_functions), y.grad_fn.next_functions[0][1],
                masked(repr(y.grad_fn)).split(" object")[0])
    same(f)


def test_next_functions_point_to_the_same_accumulate_grad():
    for lib in (sg, torch):
        x = lib.ones(2, requires_grad=True)
        a, b = x * 2, x + 1
        assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
        y = a * b
        assert y.grad_fn.next_functions[0][0] is a.grad_fn


GRAD_FN_EXPRS = [
    "x + y", "x - y", "x * y", "x / y", "x ** 2", "x ** y", "2 ** x", "2 - x", "2 / x", "-x", "x.exp()", "x.log()",
    "x.log1p()", "x.sqrt()", "x.sin()", "x.cos()", "x.tan()", "x.tanh()", "x.sigmoid()", "x.relu()", "x.abs()",
    "x.pow(3)", "x.clamp(0.5, 1.5)", "x.clamp(min=1.0)", "x.clamp_min(1.0)", "x.clamp_max(1.0)", "x.sum()",
    "x.sum(0)", "x.sum(dim=None)", "x.mean()", "x.mean(1, keepdim=True)", "x.view(6)", "x.reshape(3, 2)",
    "x.flatten()", "x.T.reshape(6)", "x.T.flatten()", "x.squeeze()", "x.unsqueeze(0).squeeze(0)", "x.unsqueeze(1)",
    "x.transpose(0, 1)", "x.permute(1, 0)", "x.T", "x.t()", "x.expand(2, 2, 3)", "x[0]", "x[:, 1:]", "x[None]",
    "x[...]", "x[:]", "x[[0, 1]]", "x.clone()", "x.double()", "x.to(torch.float64)",
    "torch.where(x > 1, x, y)", "torch.maximum(x, y)", "torch.minimum(x, y)", "x.abs().reshape(3, 2)",
]


@pytest.mark.parametrize("expr", GRAD_FN_EXPRS)
def test_grad_fn_names_values_and_grads(expr: str):
    def f(lib):
        x = lib.tensor([[0.5, 1.0, 1.5], [2.0, 2.5, 0.25]], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([[1.5, 0.5, 2.0], [0.75, 1.25, 1.0]], dtype=lib.float64, requires_grad=True)
        out = eval(expr, {"x": x, "y": y, "torch": lib})
        g = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=lib.float64)
        out.backward(g)
        return out, x.grad, y.grad
    same(f)


def test_repr_of_the_seed_values():
    def f(lib):
        x = lib.ones(2, 2, requires_grad=True)
        y = x + 2
        z = y * y * 3
        out = z.mean()
        out.backward()
        v = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        w = (2 * v).view(2, 2)
        s = lib.tensor(1.0, requires_grad=True)
        with lib.no_grad():
            s3 = s ** 3
        return [masked(repr(t)) for t in (x, y, z, out, x.grad, w, s ** 2, s3, s ** 2 + s3, y.grad_fn)]
    a, b = run_both(f)
    assert a == b


@pytest.mark.parametrize("value", [[1.0, 2.5], [[1e-5, 1.0]], [1e10, 1.0], 3.0, [True, False], [1, 2],
                                   [[0.123456789, -2.0]]])
def test_repr_and_str_match_torch(value: Any):
    for dtype in (None, "float64"):
        a = sg.tensor(value, dtype=None if dtype is None else getattr(sg, dtype))
        b = torch.tensor(value, dtype=None if dtype is None else getattr(torch, dtype))
        assert repr(a) == repr(b) and str(a) == str(b)


def test_format_of_0d_tensors():
    for lib in (sg, torch):
        assert f"{lib.tensor(2.5):.2f}" == "2.50"


# ---------------------------------------------------------------------------- detach / data / clone

def test_detach_shares_storage():
    for lib in (sg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach()
        d.mul_(10)
        assert x.tolist() == [10.0, 20.0]
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None


def test_data_shares_storage_outside_the_graph():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        d = x.data
        d.add_(1)
        flags = (d.requires_grad, d.is_leaf, d.grad_fn)
        y = x * x
        x.data = lib.tensor([5.0, 6.0])
        return x, flags, y
    same(f)


def test_clone_is_recorded_and_does_not_share_storage():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = x.clone()
        with lib.no_grad():
            c.add_(1)
        (c * c).sum().backward()
        return x, c, x.grad, grad_fn_name(c)
    a, b = run_both(f)
    _same(a[:3], b[:3])


def test_views_share_storage_with_their_base():
    for lib in (sg, torch):
        x = lib.zeros(2, 3)
        v = x.view(3, 2)
        t = x.t()
        r = x[1]
        e = x[:, :2]
        v.add_(1)
        t.mul_(2)
        r.add_(3)
        e.sub_(1)
        assert x.tolist() == [[1.0, 1.0, 2.0], [4.0, 4.0, 5.0]], lib


def test_zero_and_fill_on_plain_tensors():
    def f(lib):
        x = lib.ones(2, 3)
        x.zero_()
        y = lib.ones(2)
        y.fill_(2.5)
        return x, y
    same(f)


def test_grad_data_zero_keeps_the_grad_tensor():
    for lib in (sg, torch):
        x = lib.ones(2, requires_grad=True)
        x.sum().backward()
        g = x.grad
        x.grad.data.zero_()
        assert x.grad is g and g.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------- conversions

def test_numpy_tolist_item():
    def f(lib):
        x = lib.tensor([[1.5, 2.0], [3.0, 4.0]], dtype=lib.float64)
        return (x.numpy().tolist(), x.numpy().dtype.name, x.tolist(), x[1, 0].item(), x.detach().numpy().shape,
                lib.tensor(7).item(), lib.tensor([2.5]).item())
    same(f)


def test_iteration_and_len():
    def f(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        rows = [r * 2 for r in x]
        sum(r.sum() for r in rows).backward()
        return len(x), rows, x.grad
    same(f)


# ---------------------------------------------------------------------------- shape ops

SHAPE_EXPRS = [
    "x.view(3, 4)", "x.view(-1)", "x.view(2, -1, 2)", "x.reshape(4, 3)", "x.reshape(-1, 6)", "x.flatten()",
    "x.flatten(1)", "x.flatten(0, 1)", "x.unsqueeze(1).squeeze(1)", "x.unsqueeze(-1)", "x.unsqueeze(0).squeeze()",
    "x.view(1, 12, 1).squeeze(0)", "x.view(1, 12, 1).squeeze(-1)", "x.transpose(0, 2)", "x.transpose(-1, -2)",
    "x.permute(2, 0, 1)", "x.permute(0, 2, 1).reshape(2, 6)", "x.permute(2, 1, 0).flatten()", "x.mT",
    "x[:, :1].expand(2, 3, 2)", "x.unsqueeze(0).expand(3, 2, 3, 2)", "x.view(12).view(2, 2, 3)",
    "x.transpose(0, 1).reshape(6, 2)", "x.swapaxes(0, 1)", "x.view_as(torch.ones(6, 2))",
    "x.reshape_as(torch.ones(3, 4))", "x.expand_as(torch.ones(2, 2, 3, 2))", "x.contiguous()",
]


@pytest.mark.parametrize("expr", SHAPE_EXPRS)
def test_shape_ops(expr: str):
    def f(lib):
        x = lib.tensor(np.arange(12.0).reshape(2, 3, 2), requires_grad=True)
        out = eval(expr, {"x": x, "torch": lib})
        w = lib.tensor(np.arange(out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        return out, tuple(out.shape), x.grad
    same(f)


# ---------------------------------------------------------------------------- indexing

INDEX_EXPRS = [
    "x[0]", "x[-1]", "x[1, 2]", "x[1, 2, 0]", "x[:, 1]", "x[..., 0]", "x[1:]", "x[:, ::2]", "x[:, 1:3, :]",
    "x[::2]", "x[None]", "x[:, None, 0]", "x[..., None]", "x[0, ..., 1]", "x[-2:, -1]",
    "x[[0, 1, 0]]", "x[:, [2, 0]]", "x[[1, 1], 0]", "x[torch.tensor([0, 0])]", "x[torch.tensor(1)]", "x[1][2]",
    "x[:, 1][0]", "x[0:5]", "x[:, 10:]", "x[0, :3]",
]


@pytest.mark.parametrize("expr", INDEX_EXPRS)
def test_indexing(expr: str):
    def f(lib):
        x = lib.tensor(np.arange(24.0).reshape(2, 4, 3), requires_grad=True)
        out = eval(expr, {"x": x, "torch": lib})
        w = lib.tensor(np.arange(1, out.numel() + 1, dtype=np.float32).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        return out, x.grad
    same(f)


# ---------------------------------------------------------------------------- comparisons, where, maximum

def test_comparisons_are_bool_and_outside_the_graph():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = lib.tensor([2.0, 2.0, 2.0])
        return [x > y, x >= y, x < 2, x <= 2.0, x == y, x != y, 2 < x, x.gt(y), lib.gt(x, 1.5)]
    same(f)


def test_where_maximum_minimum_values_and_grads():
    def f(lib):
        x = lib.tensor([0.5, -1.0, 2.0, -3.0], requires_grad=True)
        y = lib.tensor([1.0, -2.0, 2.0, 4.0], requires_grad=True)
        out = (lib.where(x > 0, x * x, y) + lib.maximum(x, y) * 2 + lib.minimum(x, y) * 3
               + lib.where(y < 0, 1.0, x)).sum()
        out.backward()
        return out, x.grad, y.grad
    same(f)


def test_maximum_splits_the_gradient_at_ties():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([1.0, 3.0], requires_grad=True)
        lib.maximum(x, y).sum().backward()
        return x.grad, y.grad
    same(f)


def test_relu_abs_clamp_at_the_kink():
    def f(lib):
        x = lib.tensor([0.0, -0.0, 1.0, -1.0, 0.5], requires_grad=True)
        (x.relu() + x.abs() + x.clamp(0.0, 0.5) + x.clamp(min=1.0) + x.clamp(max=-1.0)).sum().backward()
        return x.grad
    same(f)


def test_sqrt_and_log_at_zero_give_inf_like_torch():
    def f(lib):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        (x.sqrt() + x.log().clamp(min=-10)).sum().backward()
        return x.grad
    with np.errstate(all="ignore"):
        a, b = run_both(f)
    np.testing.assert_array_equal(numpy_of(a), numpy_of(b))


def test_pow_gradient_at_zero_base():
    def f(lib):
        x = lib.tensor([0.0, 2.0], requires_grad=True)
        e = lib.tensor([0.0, 0.5], requires_grad=True)
        (x ** e).sum().backward()
        z = lib.tensor([0.0, 1.0], requires_grad=True)
        (z ** 2 + z ** 0 + z ** 1).sum().backward()
        return x.grad, e.grad, z.grad
    same(f)


# ---------------------------------------------------------------------------- memory layout of results

LAYOUT_EXPRS = ["3 ** x", "2 - x", "x * 2", "x ** y", "y ** x", "x + y", "y + x", "x * y", "y / x", "x + c",
                "c + x", "x.clone()", "x.double()", "torch.where(x > 0, x, y)", "torch.where(y > 0, y, x)",
                "torch.maximum(x, y)", "x.exp()", "x.expand(2, 3, 2) + 0", "x[::2] * 2", "(x + y).T",
                "x.unsqueeze(0) * y"]


@pytest.mark.parametrize("expr", LAYOUT_EXPRS)
def test_result_layout_decides_view_and_reshape_like_torch(expr: str):
    """torch lays an elementwise result out along its first strided input: ``view`` then works or fails
    as in torch, and ``reshape`` is a view (ViewBackward0), an alias or a copy (UnsafeViewBackward0)."""
    def f(lib):
        x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True).T
        y = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
        c = lib.ones(2, 1, dtype=lib.float64).T
        r = eval(expr, {"x": x, "y": y, "c": c, "torch": lib})
        try:
            r.view(-1)
            viewable = True
        except RuntimeError:
            viewable = False
        c = r.contiguous()
        return viewable, grad_fn_name(r.reshape(-1)), r.is_contiguous(), grad_fn_name(c), c.is_contiguous()
    same(f)


STRIDE_EXPRS = ["a", "a.permute(2, 0, 1)", "a[:, None]", "a.unsqueeze(-1)", "a.unsqueeze(0).transpose(0, 1)",
                "a[:, 1:2]", "a[..., ::2]", "torch.zeros(3, 1).expand(3, 5)", "torch.arange(3.0)[None].expand(2, 3)",
                "torch.zeros(1, 3).t()", "torch.zeros(2, 0, 3)", "a[0, 0]", "torch.tensor(1.0)",
                "a.reshape(2, 1, 12).squeeze(1)", "torch.zeros(3).unsqueeze(1).unsqueeze(0)", "a.flatten(1)",
                "a.transpose(1, 2).contiguous()", "a.t() if a.ndim == 2 else a.mT", "a.flip(2)", "a.flip(1)",
                "a.flip((0, 2))", "a[:, [2, 1, 0]]", "a[..., [3, 0]]", "a[:, [True, False, True]]", "a.roll(1, 2)",
                "a.index_select(2, torch.tensor([0, 3]))"]


@pytest.mark.parametrize("expr", STRIDE_EXPRS)
def test_stride_matches_torch(expr: str):
    """``stride()`` and ``stride(dim)`` give torch's element steps, also on size-1 and empty dims."""
    def f(lib):
        r = eval(expr, {"a": lib.arange(24.0).reshape(2, 3, 4), "torch": lib})
        return r.stride(), [r.stride(d) for d in range(-r.ndim, r.ndim)], r.is_contiguous()
    same(f)


@pytest.mark.parametrize("expr", ["x.ravel()", "x.t().ravel()", "x[:, ::2].ravel()", "torch.tensor(2.0).ravel()",
                                  "x.type_as(torch.tensor([1]))", "x.type_as(torch.zeros(1, dtype=torch.float64))",
                                  "x.type_as(x)"])
def test_ravel_and_type_as_match_torch(expr: str):
    def f(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        r = eval(expr, {"x": x, "torch": lib})
        return r.detach(), grad_fn_name(r), r.is_contiguous(), r.dtype == x.dtype
    same(f)


INT_AND_ARRAY_INDEXES = ["x[0, :, [1, 2]]", "x[1, :, [[0], [2]], 1:4]", "x[:, 0, :, [1, 3]]", "x[0, ::2, [1, 2], :]",
                         "x[..., 0, :, [4, 0]]", "x[1, 1:, 2, [0, 4]]", "x[torch.tensor(1), :, [1, 2]]",
                         "x[[1, 0], :, 0]", "x[0, [1, 2]]", "x[0, :, [1, 2], 3]", "x[:, 1, [0, 2], 0]",
                         "x[1, ..., [0, 1]]", "x[0, :, torch.tensor([True, False, True, True])]",
                         "x[[0, 1], 1:, [2, 3]]"]


@pytest.mark.parametrize("expr", INT_AND_ARRAY_INDEXES)
def test_integers_mixed_with_arrays_place_dims_as_torch(expr: str):
    """torch selects with the integers first, so arrays they separate from a slice keep their place (numpy would
    put their dims first): values, shape, layout and gradient as torch's; the write through it too."""
    def f(lib):
        x = lib.arange(120.0, dtype=lib.float64).reshape(2, 3, 4, 5).requires_grad_()
        r = eval(expr, {"x": x, "torch": lib})
        (r * lib.arange(float(r.numel()), dtype=lib.float64).reshape(r.shape)).sum().backward()
        z = lib.zeros(2, 3, 4, 5, dtype=lib.float64)
        exec(f"z{expr[1:]} = torch.arange(float(r.numel()), dtype=torch.float64).reshape(r.shape)",
             {"z": z, "torch": lib, "r": r})
        return r.detach(), x.grad, z, r.is_contiguous()
    same(f)


def test_conjugate_transposes_H_and_mH_match_torch():
    got = {}
    for lib in (torch, sg):
        lib.manual_seed(0)
        m = lib.randn(2, 3, requires_grad=True)
        b = lib.randn(2, 3, 4, requires_grad=True)
        res = [m.H, b.mH, m.mH]
        (res[0].sum() * 2 + res[1].pow(2).sum()).backward()
        errs = []
        for t, attr in ((lib.ones(3), "H"), (b, "H"), (lib.ones(3), "mH")):
            with pytest.raises(RuntimeError) as e:
                getattr(t, attr)
            errs.append(str(e.value))
        got[lib] = ([r.detach().numpy() for r in res] + [m.grad.numpy(), b.grad.numpy()],
                    [r.grad_fn.name() for r in res], errs)
    for a, c in zip(got[sg][0], got[torch][0]):
        assert_close(a, c)
    assert got[sg][1:] == got[torch][1:]
