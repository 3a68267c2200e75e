"""Errors: the same exception type and the same message text as torch.

Each case is a function of the library (``sg`` or ``torch``) that must raise; both libraries run it
and ``assert_same_error`` compares ``type(e)`` and ``str(e)``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import torch
from conftest import assert_same_error

import symgrad as sg


def _backward_without_grad(lib: Any) -> None:
    x = lib.tensor(1.0)
    (x * 2).backward()


def _seed_y2_backward(lib: Any) -> None:
    x = lib.tensor(1.0, requires_grad=True)
    with lib.no_grad():
        y2 = x ** 3
    y2.backward()


def _second_output_without_grad(lib: Any) -> None:
    x = lib.tensor(1.0, requires_grad=True)
    lib.autograd.backward([x * 2, lib.tensor(3.0)], [lib.tensor(1.0), lib.tensor(1.0)])


def _implicit_non_scalar(lib: Any) -> None:
    x = lib.ones(2, 2, requires_grad=True)
    (x + 2).backward()


def _implicit_non_scalar_autograd_grad(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True)
    lib.autograd.grad(x * 2, x)


def _inplace_leaf(op: str) -> Callable:
    def f(lib: Any) -> None:
        x = lib.ones(3, requires_grad=True)
        if op == "+=":
            x += 1
        elif op == "*=":
            x *= 2
        elif op == "zero_":
            x.zero_()
        elif op == "fill_":
            x.fill_(2.0)
        elif op == "clamp_":
            x.clamp_(0, 1)
        else:
            getattr(x, op)(2.0)
    return f


def _broadcast(shapes: tuple) -> Callable:
    def f(lib: Any) -> None:
        a, b = lib.ones(*shapes[0]), lib.ones(*shapes[1])
        return a + b
    return f


def _broadcast_mul_grad(lib: Any) -> None:
    a = lib.ones(2, 3, requires_grad=True)
    return a * lib.ones(2)


def _gradient_shape(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    (x * 2).backward(lib.ones(3))


def _gradient_shape_2d(lib: Any) -> None:
    x = lib.ones(2, 2, requires_grad=True)
    (x * 2).backward(lib.ones(4))


def _grad_outputs_shape(lib: Any) -> None:
    x = lib.ones(2, 3, requires_grad=True)
    lib.autograd.grad(x * 2, x, grad_outputs=lib.ones(3, 2))


def _int_requires_grad(lib: Any) -> None:
    lib.tensor([1, 2], requires_grad=True)


def _int_requires_grad_(lib: Any) -> None:
    lib.tensor([1, 2]).requires_grad_()


def _bool_requires_grad(lib: Any) -> None:
    lib.tensor([True, False]).requires_grad_(True)


def _ones_int_requires_grad(lib: Any) -> None:
    lib.ones(2, dtype=lib.int64, requires_grad=True)


def _arange_requires_grad(lib: Any) -> None:
    lib.arange(3, requires_grad=True)


def _view_size(lib: Any) -> None:
    lib.ones(2, 3).view(4)


def _view_size_inferred(lib: Any) -> None:
    lib.ones(2, 3).view(4, -1)


def _view_two_inferred(lib: Any) -> None:
    lib.ones(2, 3).view(-1, -1)


def _view_non_contiguous(lib: Any) -> None:
    lib.ones(2, 3).t().view(6)


def _reshape_size(lib: Any) -> None:
    lib.ones(2, 3).reshape(5)


def _saved_input_modified(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = x * 2
    y = w.sin()
    w.add_(1)
    y.sum().backward()


def _saved_output_modified(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.mul_(2)
    y.sum().backward()


def _saved_output_modified_through_view(lib: Any) -> None:
    x = lib.tensor([[1.0, 2.0]], dtype=lib.float64, requires_grad=True)
    y = x.tanh()
    y.detach()[0].add_(1)
    y.sum().backward()


def _view_of_leaf_in_place(lib: Any) -> None:
    x = lib.tensor([[1.0, 2.0]], requires_grad=True)
    x[0].mul_(2)


def _view_of_leaf_in_place_reshape(lib: Any) -> None:
    x = lib.tensor([[1.0, 2.0]], requires_grad=True)
    x.view(2).add_(1)


def _saved_leaf_modified_under_no_grad(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with lib.no_grad():
        x.mul_(2)
    y.backward()


def _saved_constant_modified(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    c = lib.tensor([3.0, 4.0])
    y = (x * c).sum()
    c.add_(1)
    y.backward()


def _saved_detached_alias_modified(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = x.sigmoid()
    y = (w * w).sum()
    w.detach().zero_()
    y.backward()


def _backward_twice(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    y.backward()


def _autograd_grad_twice(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (x.sin()).sum()
    lib.autograd.grad(y, x)
    lib.autograd.grad(y, x)


def _unused_input(lib: Any) -> None:
    x = lib.tensor(1.0, requires_grad=True)
    z = lib.tensor(1.0, requires_grad=True)
    lib.autograd.grad(x * 2, [z])


def _input_without_grad(lib: Any) -> None:
    x = lib.tensor(1.0, requires_grad=True)
    z = lib.tensor(1.0)
    lib.autograd.grad(x * 2, [x, z])


def _numpy_of_requires_grad(lib: Any) -> None:
    lib.ones(2, requires_grad=True).numpy()


def _item_of_many(lib: Any) -> None:
    lib.ones(3).item()


def _bool_of_many(lib: Any) -> None:
    bool(lib.ones(3) > 0)


def _retain_grad_without_grad(lib: Any) -> None:
    lib.ones(3).retain_grad()


def _requires_grad_false_on_non_leaf(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    (x * 2).requires_grad_(False)


def _typo_attribute(lib: Any) -> None:
    lib.ones(2).reuqires_grad  # noqa: B018 - the seed's typo


def _sum_dim_out_of_range(lib: Any) -> None:
    lib.ones(2, 3).sum(2)


def _mean_dim_out_of_range(lib: Any) -> None:
    lib.ones(2, 3).mean(-3)


def _sum_dim_repeated(lib: Any) -> None:
    lib.ones(2, 3).sum((1, -1))


def _mean_of_int(lib: Any) -> None:
    lib.tensor([1, 2]).mean()


def _squeeze_dim_out_of_range(lib: Any) -> None:
    lib.ones(2, 3).squeeze(3)


def _unsqueeze_dim_out_of_range(lib: Any) -> None:
    lib.ones(2, 3).unsqueeze(4)


def _transpose_dim_out_of_range(lib: Any) -> None:
    lib.ones(2, 3).transpose(0, 2)


def _permute_wrong_length(lib: Any) -> None:
    lib.ones(2, 3).permute(1, 0, 2)


def _permute_repeated(lib: Any) -> None:
    lib.ones(2, 3).permute(1, 1)


def _t_of_3d(lib: Any) -> None:
    lib.ones(2, 3, 4).t()


def _expand_bad(lib: Any) -> None:
    lib.ones(2, 3).expand(4, 3)


def _expand_too_few(lib: Any) -> None:
    lib.ones(2, 3).expand(3)


def _flatten_bad_dims(lib: Any) -> None:
    lib.ones(2, 3, 4).flatten(2, 1)


def _index_out_of_range(lib: Any) -> None:
    lib.ones(3, 2)[3]


def _index_negative_out_of_range(lib: Any) -> None:
    lib.ones(3, 2)[:, -3]


def _too_many_indices(lib: Any) -> None:
    lib.ones(3)[0, 0]


def _inplace_output_shape(lib: Any) -> None:
    x = lib.ones(3)
    x.add_(lib.ones(2, 3))


def _inplace_int_float(lib: Any) -> None:
    x = lib.tensor([1, 2])
    x += 1.5


def _inplace_int_float_tensor(lib: Any) -> None:
    x = lib.tensor([1, 2])
    x.mul_(lib.tensor([0.5, 2.0]))


def _inplace_div_int(lib: Any) -> None:
    x = lib.tensor([1, 2])
    x /= 2


def _int_negative_power(lib: Any) -> None:
    lib.tensor([1, 2]) ** -1


def _clamp_without_bounds(lib: Any) -> None:
    lib.ones(2).clamp()


def _set_default_dtype_int(lib: Any) -> None:
    lib.set_default_dtype(lib.int64)


def _negative_dimension(lib: Any) -> None:
    lib.ones(2, -1)


def _assign_grad_wrong_shape(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    x.grad = lib.ones(3)


def _len_of_0d(lib: Any) -> None:
    len(lib.tensor(1.0))


def _iter_0d(lib: Any) -> None:
    iter(lib.tensor(1.0))


def _tensor_of_strings(lib: Any) -> None:
    lib.tensor(["a"])


def _tensor_of_a_string(lib: Any) -> None:
    lib.tensor("a")


def _tensor_with_a_string_inside(lib: Any) -> None:
    lib.tensor([[1, "a"]])


def _tensor_of_none(lib: Any) -> None:
    lib.tensor([None])


CASES: dict[str, Callable[[Any], Any]] = {
    # the list
    "backward without grad": _backward_without_grad,
    "seed: y2.backward() after no_grad": _seed_y2_backward,
    "second output without grad": _second_output_without_grad,
    "implicit gradient of a non-scalar": _implicit_non_scalar,
    "implicit gradient in autograd.grad": _implicit_non_scalar_autograd_grad,
    **{f"in-place {op} on a leaf that requires grad": _inplace_leaf(op)
       for op in ("add_", "mul_", "sub_", "div_", "+=", "*=", "zero_", "fill_", "clamp_")},
    **{f"broadcast {a} + {b}": _broadcast((a, b))
       for a, b in [((2, 3), (4,)), ((2, 3), (3, 2)), ((4, 1, 3), (2, 2)), ((5,), (3,))]},
    "broadcast in a tracked mul": _broadcast_mul_grad,
    "gradient shape mismatch": _gradient_shape,
    "gradient shape mismatch 2-d": _gradient_shape_2d,
    "grad_outputs shape mismatch": _grad_outputs_shape,
    "integer tensor requiring grad": _int_requires_grad,
    "integer requires_grad_()": _int_requires_grad_,
    "bool requires_grad_()": _bool_requires_grad,
    "ones(dtype=int64, requires_grad=True)": _ones_int_requires_grad,
    "arange(requires_grad=True)": _arange_requires_grad,
    "view of an invalid size": _view_size,
    "view with an impossible inferred size": _view_size_inferred,
    "view with two inferred sizes": _view_two_inferred,
    "view of a non-contiguous tensor": _view_non_contiguous,
    "reshape of an invalid size": _reshape_size,
    "in-place modification of a saved input": _saved_input_modified,
    "in-place modification of a saved result": _saved_output_modified,
    "in-place modification of a saved result through a view": _saved_output_modified_through_view,
    "in-place modification of a saved leaf under no_grad": _saved_leaf_modified_under_no_grad,
    "in-place on a view of a leaf": _view_of_leaf_in_place,
    "in-place on a reshaped view of a leaf": _view_of_leaf_in_place_reshape,
    "in-place modification of a saved constant": _saved_constant_modified,
    "in-place modification through a detached alias": _saved_detached_alias_modified,
    # more of torch's errors
    "backward twice": _backward_twice,
    "autograd.grad twice": _autograd_grad_twice,
    "unused input of autograd.grad": _unused_input,
    "autograd.grad input without grad": _input_without_grad,
    "numpy() of a tensor that requires grad": _numpy_of_requires_grad,
    "item() of many elements": _item_of_many,
    "bool() of many elements": _bool_of_many,
    "retain_grad without grad": _retain_grad_without_grad,
    "requires_grad_(False) on a non-leaf": _requires_grad_false_on_non_leaf,
    "the seed's typo reuqires_grad": _typo_attribute,
    "sum dim out of range": _sum_dim_out_of_range,
    "mean dim out of range": _mean_dim_out_of_range,
    "sum dim repeated": _sum_dim_repeated,
    "mean of an integer tensor": _mean_of_int,
    "squeeze dim out of range": _squeeze_dim_out_of_range,
    "unsqueeze dim out of range": _unsqueeze_dim_out_of_range,
    "transpose dim out of range": _transpose_dim_out_of_range,
    "permute with the wrong number of dims": _permute_wrong_length,
    "permute with a repeated dim": _permute_repeated,
    "t() of a 3-d tensor": _t_of_3d,
    "expand to an incompatible size": _expand_bad,
    "expand to fewer dims": _expand_too_few,
    "flatten with start after end": _flatten_bad_dims,
    "index out of range": _index_out_of_range,
    "negative index out of range": _index_negative_out_of_range,
    "too many indices": _too_many_indices,
    "in-place output shape": _inplace_output_shape,
    "in-place int += float": _inplace_int_float,
    "in-place int *= float tensor": _inplace_int_float_tensor,
    "in-place int /= int": _inplace_div_int,
    "integer to a negative power": _int_negative_power,
    "clamp without bounds": _clamp_without_bounds,
    "set_default_dtype(int64)": _set_default_dtype_int,
    "negative dimension": _negative_dimension,
    "assigning a grad of the wrong shape": _assign_grad_wrong_shape,
    "len() of a 0-d tensor": _len_of_0d,
    "iter() of a 0-d tensor": _iter_0d,
    "tensor of strings": _tensor_of_strings,
    "tensor of a string": _tensor_of_a_string,
    "tensor with a string inside": _tensor_with_a_string_inside,
    "tensor of None": _tensor_of_none,
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_same_error_as_torch(case: str):
    fn = CASES[case]
    assert_same_error(lambda: fn(sg), lambda: fn(torch))


def test_errors_leave_grad_mode_and_graph_usable():
    """After an error, the same graph can still be differentiated."""
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert sg.is_grad_enabled()


def test_the_seed_error_text():
    x = sg.tensor(1.0, requires_grad=True)
    with sg.no_grad():
        y2 = x ** 3
    with pytest.raises(RuntimeError) as e:
        y2.backward()
    assert str(e.value) == "element 0 of tensors does not require grad and does not have a grad_fn"


def test_in_place_on_a_view_of_a_tracked_non_leaf_rewrites_its_base():
    """As torch: the viewed tensor's history becomes ``CopySlices`` (see tests/test_inplace.py)."""
    def f(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        y[0:2].mul_(x[1:])
        with lib.no_grad():
            y[0:2].mul_(2)  # outside the graph it is an ordinary write
        (y * y).sum().backward()
        return y.detach(), type(y.grad_fn).__name__, x.grad
    (y, name, g), (ty, tname, tg) = f(sg), f(torch)
    assert y.tolist() == ty.tolist() and name == tname == "CopySlices"
    assert g.tolist() == tg.tolist()


def test_a_view_taken_before_a_recorded_in_place_write_sees_it():
    def f(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        v = y[0:2]
        y.mul_(2)
        v.sum().backward()
        return v.detach(), type(v.grad_fn).__name__, x.grad
    (v, name, g), (tv, tname, tg) = f(sg), f(torch)
    assert v.tolist() == tv.tolist() == [2.0, 4.0] and name == tname == "AsStridedBackward0"
    assert g.tolist() == tg.tolist()


def test_advanced_indexing_copies_so_in_place_on_it_is_fine():
    def f(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        z = y[[0, 2]]
        z.mul_(2)
        (y.sum() + z.sum()).backward()
        return x.grad
    assert _close(f(sg), f(torch))


def _close(a: Any, b: Any) -> bool:
    return np.allclose(a.numpy(), b.numpy(), rtol=1e-6)
