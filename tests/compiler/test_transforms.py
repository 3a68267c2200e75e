"""Jacobians, Hessians (dense and sparse), jvp/vjp and eager second derivatives against torch.func."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.sparse as sps
import torch

import symgrad as sg
from symgrad.compiler.transforms import JacobianSweeps

RTOL = 1e-10
rng = np.random.default_rng(7)
A_MAT = rng.normal(size=(4, 6))


def _ns(lib):
    """The few spellings that differ between torch and symgrad."""
    const = (lambda a: torch.tensor(a)) if lib is torch else (lambda a: a)
    return const


# name -> (f(lib, x) scalar-valued, input shape)
SCALAR = {
    "rosenbrock": (lambda lib, x: (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum(), (7,)),
    "sin_exp": (lambda lib, x: (lib.sin(x) * lib.exp(-x ** 2)).sum(), (5,)),
    "logsumexp": (lambda lib, x: lib.logsumexp(x, 0), (6,)),
    "softmax_weighted": (lambda lib, x: (lib.softmax(x, 0) * lib.arange(6, dtype=x.dtype)).sum(), (6,)),
    "tanh_matvec": (lambda lib, x: lib.tanh(_ns(lib)(A_MAT) @ x).sum(), (6,)),
    "prod": (lambda lib, x: x.prod(), (5,)),
    "cumsum_sq": (lambda lib, x: (lib.cumsum(x, 0) ** 2).sum(), (5,)),
    "where": (lambda lib, x: lib.where(x > 0, x ** 3, -x ** 2).sum(), (6,)),
    "rows_2d": (lambda lib, x: (lib.log1p(x ** 2).sum(1) ** 2).sum(), (3, 4)),
    "reshape_mm": (lambda lib, x: (x.reshape(2, 3).T @ x.reshape(2, 3)).sin().sum(), (6,)),
    "mean_pow": (lambda lib, x: ((3 * (x + 2) ** 2).mean()) ** 2, (2, 2)),
    "chain": (lambda lib, x: (x[::2] * x[1::2] + lib.exp(x[:3].sum())).sum(), (6,)),
    "cat_stack": (lambda lib, x: (lib.cat([x, x ** 2]) * lib.stack([x, x]).reshape(-1)).sum(), (4,)),
    "amax": (lambda lib, x: x.amax() * x.sum(), (5,)),
}

#: where the exact pattern is larger than the non-zeros at random points, by design:
#: amax's Hessian involves the maximum's slot only, which one depends on the values;
#: prod's gradient is prod / x_i as a DAG, whose x_i-derivative cancels to 0 only symbolically
STRUCTURAL_SUPERSET = {"amax", "prod"}

# name -> (f(lib, x) tensor-valued, input shape)
VECTOR = {
    "sin_times_sum": (lambda lib, x: lib.sin(x) * x.sum(), (5,)),
    "outer": (lambda lib, x: lib.outer(x, lib.sin(x)), (3,)),
    "softmax": (lambda lib, x: lib.softmax(x, 0), (5,)),
    "two_stats": (lambda lib, x: lib.stack([x.sum(), (x ** 2).sum()]), (6,)),
    "cumsum": (lambda lib, x: lib.cumsum(x, 0), (4,)),
    "matvec": (lambda lib, x: lib.tanh(_ns(lib)(A_MAT) @ x), (6,)),
    "shift": (lambda lib, x: x[1:] - x[:-1] ** 2, (6,)),
    "rows_2d": (lambda lib, x: lib.exp(x).sum(1), (3, 4)),
}


def _point(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=shape)


def _torch_fn(f):
    return lambda t: f(torch, t)


def _sg_fn(f):
    return lambda t: f(sg, t)


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_hessian_matches_torch_func(name):
    f, shape = SCALAR[name]
    x = _point(shape)
    expected = torch.func.hessian(_torch_fn(f))(torch.tensor(x)).numpy()
    got = sg.hessian(_sg_fn(f))(x)
    assert got.shape == shape + shape
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-12)
    # a second point reuses the signature's kernels
    x2 = _point(shape, seed=3)
    np.testing.assert_allclose(sg.hessian(_sg_fn(f))(x2),
                               torch.func.hessian(_torch_fn(f))(torch.tensor(x2)).numpy(), rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_sparse_hessian_equals_dense_and_pattern_is_exact(name):
    f, shape = SCALAR[name]
    h = sg.hessian(_sg_fn(f), sparse=True)
    n = int(np.prod(shape))
    nonzero = np.zeros((n, n), dtype=bool)
    for seed in range(3):
        x = _point(shape, seed)
        dense = torch.func.hessian(_torch_fn(f))(torch.tensor(x)).numpy().reshape(n, n)
        got = h(x)
        assert sps.issparse(got) and got.shape == (n, n)
        np.testing.assert_allclose(got.toarray(), dense, rtol=RTOL, atol=1e-12)
        nonzero |= dense != 0
    pattern = sg.compile(_sg_fn(f)).hessian_sparsity(_point(shape)).toarray()
    assert not (nonzero & ~pattern).any(), "the pattern missed a non-zero"
    if name not in STRUCTURAL_SUPERSET:
        assert (pattern == nonzero).all()


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_jacobian_matches_torch_func(name):
    f, shape = VECTOR[name]
    x = _point(shape)
    expected = torch.func.jacrev(_torch_fn(f))(torch.tensor(x)).numpy()
    got = sg.jacobian(_sg_fn(f))(x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-12)
    sparse = sg.jacobian(_sg_fn(f), sparse=True)(x)
    np.testing.assert_allclose(sparse.toarray(), expected.reshape(sparse.shape), rtol=RTOL, atol=1e-12)
    pattern = sg.compile(_sg_fn(f)).jacobian_sparsity(x).toarray()
    nonzero = expected.reshape(pattern.shape) != 0
    assert (pattern == nonzero).all()


def test_forward_and_reverse_sweeps_agree():
    f, shape = VECTOR["outer"]  # 9 outputs, 3 inputs: forward sweeps
    jac = sg.jacobian(_sg_fn(f))
    x = _point(shape)
    fwd = jac(x)
    sweeps = next(iter(jac._sigs.values())).sweeps["jacobian:None"]
    assert not sweeps.reverse
    rev = JacobianSweeps(sweeps.params, sweeps.outs, sweeps.wrt, "rev", reverse=True)
    arrays = [x]
    np.testing.assert_allclose(rev.dense(arrays), fwd.reshape(9, 3), rtol=RTOL)


def test_tuple_argnums_and_float_arguments():
    f = lambda a, b: a * b + sg.sin(a) * b ** 2
    ft = lambda a, b: a * b + torch.sin(a) * b ** 2
    h = sg.hessian(f, argnums=(0, 1))(0.3, -1.2)
    ht = torch.func.hessian(ft, argnums=(0, 1))(torch.tensor(0.3, dtype=torch.float64),
                                                 torch.tensor(-1.2, dtype=torch.float64))
    for i in range(2):
        for j in range(2):
            assert isinstance(h[i][j], float)
            assert h[i][j] == pytest.approx(float(ht[i][j]), rel=RTOL)
    j = sg.jacobian(f, argnums=(0, 1))(0.3, -1.2)
    assert j == pytest.approx((-1.2 + np.cos(0.3) * 1.44, 0.3 + 2 * np.sin(0.3) * -1.2), rel=RTOL)


def test_hessian_of_two_array_arguments_matches_torch():
    f = lambda lib, x, y: (lib.exp(x) @ (y ** 2)).sum() + (x * x).sum() * y[0, 0]
    x, y = _point((2, 3)), _point((3, 2), seed=1)
    h = sg.hessian(lambda x, y: f(sg, x, y), argnums=(0, 1))(x, y)
    ht = torch.func.hessian(lambda x, y: f(torch, x, y), argnums=(0, 1))(torch.tensor(x), torch.tensor(y))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(h[i][j], ht[i][j].numpy(), rtol=RTOL, atol=1e-12)


def test_jacobian_of_a_function_with_several_outputs():
    f = lambda x: (x ** 2, x.sum())
    j = sg.jacobian(f)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(j[0], np.diag([2.0, 4.0]))
    np.testing.assert_allclose(j[1], [1.0, 1.0])


def test_float32_hessian():
    f, shape = SCALAR["sin_exp"]
    x = _point(shape).astype(np.float32)
    got = sg.hessian(_sg_fn(f))(x)
    assert got.dtype == np.float32
    expected = torch.func.hessian(_torch_fn(f))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_tensor_arguments_give_tensors():
    x = sg.tensor([1.0, 2.0, 3.0], dtype=sg.float64)
    h = sg.hessian(lambda x: (x ** 3).sum())(x)
    assert isinstance(h, sg.Tensor)
    np.testing.assert_allclose(h.numpy(), np.diag([6.0, 12.0, 18.0]))


def test_errors():
    with pytest.raises(TypeError, match="scalar-output"):
        sg.hessian(lambda x: x * 2)(np.ones(3))
    with pytest.raises(ValueError, match="expected 1 tangents"):
        sg.jvp(lambda x: x, (1.0,), (1.0, 2.0))
    with pytest.raises(ValueError, match="expected shape"):
        sg.jvp(lambda x: x, (np.ones(3),), (np.ones(2),))
    with pytest.raises(TypeError, match="tuples"):
        sg.jvp(lambda x: x, 1.0, 1.0)
    _, back = sg.vjp(lambda x: x * 2, np.ones(3))
    with pytest.raises(ValueError, match="expected shape"):
        back(np.ones(4))


# ----------------------------------------------------------------------------- jvp / vjp

@pytest.mark.parametrize("name", sorted(VECTOR))
def test_jvp_and_vjp_match_torch_func(name):
    f, shape = VECTOR[name]
    x, v = _point(shape), _point(shape, seed=5)
    out, tan = sg.jvp(_sg_fn(f), (x,), (v,))
    out_t, tan_t = torch.func.jvp(_torch_fn(f), (torch.tensor(x),), (torch.tensor(v),))
    np.testing.assert_allclose(out, out_t.numpy(), rtol=RTOL)
    np.testing.assert_allclose(tan, tan_t.numpy(), rtol=RTOL, atol=1e-12)
    out, back = sg.vjp(_sg_fn(f), x)
    out_t, back_t = torch.func.vjp(_torch_fn(f), torch.tensor(x))
    u = _point(out_t.shape, seed=9)
    (g,) = back(u)
    (g_t,) = back_t(torch.tensor(u))
    np.testing.assert_allclose(out, out_t.numpy(), rtol=RTOL)
    np.testing.assert_allclose(g, g_t.numpy(), rtol=RTOL, atol=1e-12)


def test_jvp_through_where_has_no_nan_from_the_branch_not_taken():
    f = lambda x: sg.where(x > 0, sg.sqrt(x), 0.0) * 2
    x = np.array([-1.0, 0.0, 4.0])
    _, tan = sg.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(tan, [0.0, 0.0, 0.5])


def test_jvp_of_two_arguments():
    f = lambda x, y: sg.sin(x) * y
    out, tan = sg.jvp(f, (np.array([0.5, 1.0]), np.array([2.0, 3.0])), (np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    np.testing.assert_allclose(tan, [np.cos(0.5) * 2.0, np.sin(1.0)])


# ----------------------------------------------------------------------------- eager second order

@pytest.mark.parametrize("name", sorted(SCALAR))
def test_eager_create_graph_hessian_matches_torch(name):
    f, shape = SCALAR[name]
    x = _point(shape)
    rows = []
    xs = sg.tensor(x, requires_grad=True)
    (g,) = sg.autograd.grad(f(sg, xs), xs, create_graph=True)
    xt = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad(f(torch, xt), xt, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=RTOL, atol=1e-12)
    flat = g.reshape(-1)
    for i in range(flat.shape[0]):
        (row,) = sg.autograd.grad(flat[i], xs, retain_graph=True, allow_unused=True)
        rows.append(np.zeros(shape) if row is None else row.numpy())
    expected = torch.func.hessian(_torch_fn(f))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(np.stack(rows).reshape(expected.shape), expected, rtol=RTOL, atol=1e-12)


def test_second_derivative_through_where_at_a_vanishing_upstream_gradient():
    # the adjoint reaching the where is exactly 0 at x = 1 on the branch taken: its second
    # derivative must still be exact (torch: 8)
    for lib in (torch, sg):
        x = lib.tensor([1.0, -0.5, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.where(x > 0, x ** 2, lib.zeros_like(x))
        (g,) = lib.autograd.grad(((y - 1) ** 2).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(h.numpy(), [8.0, 0.0, 44.0])
    h = sg.hessian(lambda x: ((sg.where(x > 0, x ** 2, 0.0) - 1) ** 2).sum())(np.array([1.0, -0.5, 2.0]))
    np.testing.assert_allclose(np.diag(h), [8.0, 0.0, 44.0])


# ----------------------------------------------------------------------------- random programs

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

UNARY = {
    "sin": lambda lib, v: lib.sin(v),
    "tanh": lambda lib, v: lib.tanh(v),
    "square": lambda lib, v: v * v,
    "cube": lambda lib, v: v ** 3 / 3,
    "log1p_sq": lambda lib, v: lib.log1p(v ** 2),
    "gauss": lambda lib, v: lib.exp(-v ** 2),
    "shift": lambda lib, v: lib.cat([v[1:], v[:1]]),
    "cumsum": lambda lib, v: lib.cumsum(v, 0) / 4,
    "scaled_by_sum": lambda lib, v: v * v.sum() / 8,
    "plus_mean_sq": lambda lib, v: v + (v ** 2).mean(),
    "softmax": lambda lib, v: lib.softmax(v, 0),
    "where": lambda lib, v: lib.where(v > 0.2, v ** 2, v / 2),
}
BINARY = {
    "add": lambda lib, a, b: a + b,
    "mul": lambda lib, a, b: a * b,
    "sub": lambda lib, a, b: a - 2 * b,
    "pair": lambda lib, a, b: lib.cat([a[1:] * b[:-1], a[:1]]),
}


@st.composite
def _programs(draw):
    steps = []
    for k in range(draw(st.integers(1, 6))):
        if k and draw(st.booleans()):
            steps.append(("b", draw(st.sampled_from(sorted(BINARY))), draw(st.integers(0, k)), draw(st.integers(0, k))))
        else:
            steps.append(("u", draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, k))))
    return steps


def _run(lib, steps, x):
    vals = [x]
    for s in steps:
        vals.append(UNARY[s[1]](lib, vals[s[2]]) if s[0] == "u" else BINARY[s[1]](lib, vals[s[2]], vals[s[3]]))
    return (vals[-1] * lib.sin(x)).sum() + (vals[-1] ** 2).sum() / 2


@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(_programs())
def test_random_programs_hessian_and_pattern(steps):
    compile_module = importlib.import_module("symgrad.kernels.program")
    backend, compile_module.BACKEND = compile_module.BACKEND, "numpy"  # numba runs the same IR (tested elsewhere)
    try:
        _check_program(steps)
    finally:
        compile_module.BACKEND = backend


def _check_program(steps):
    n = 5
    f_sg = lambda x: _run(sg, steps, x)
    f_t = lambda x: _run(torch, steps, x)
    pattern = sg.compile(f_sg).hessian_sparsity(np.zeros(n)).toarray()
    nonzero = np.zeros((n, n), dtype=bool)
    h = sg.hessian(f_sg)
    hs = sg.hessian(f_sg, sparse=True)
    for seed in range(2):
        x = _point((n,), seed)
        expected = torch.func.hessian(f_t)(torch.tensor(x)).numpy()
        scale = max(1.0, np.abs(expected).max())
        np.testing.assert_allclose(h(x), expected, rtol=1e-9, atol=1e-12 * scale)
        np.testing.assert_allclose(hs(x).toarray(), expected, rtol=1e-9, atol=1e-12 * scale)
        nonzero |= expected != 0
    assert not (nonzero & ~pattern).any(), f"pattern missed a non-zero: {steps}"
    assert (pattern == nonzero).all(), f"pattern wider than the Hessian: {steps}"


# ----------------------------------------------------------------------------- formulas, docs, in-place


def test_hessian_and_jacobian_formulas():
    f = sg.hessian(lambda x: sg.sin(x).sum()).formulas(np.zeros(3))
    text = str(f)
    assert "df/dx = cos(x)" in text and "(H·v)_x = -v_x*sin(x)" in text
    assert r"(H v)_{x}" in f.latex()
    j = str(sg.jacobian(lambda x: sg.sin(x) * x.sum()).formulas(np.zeros(3)))
    assert "J·t = t_x*sum(x)*cos(x) + sum(t_x)*sin(x)" in j
    rosen = sg.hessian(SCALAR["rosenbrock"][0].__get__(sg)).formulas(np.zeros(4))
    assert "x[:-1]" in str(rosen) and r"\texttt{[:-1]}" in rosen.latex()


def test_docs_transforms_code_runs():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "transforms.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    env: dict = {}
    exec(compile(block, "docs/transforms.md", "exec"), env)  # noqa: S102
    assert env["sg"].hessian(env["rosen"], sparse=True)(np.zeros(5)).nnz == 13


def _setitem_fn(lib, x):
    y = x * 1
    y[1:] = x[:-1] ** 2 * x[1:]
    return (y ** 2).sum() + lib.sin(y).sum()


def test_hessian_through_setitem_matches_torch_and_pattern_is_exact():
    x = _point((5,))
    expected = torch.func.hessian(lambda t: _setitem_fn(torch, t))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(sg.hessian(lambda t: _setitem_fn(sg, t))(x), expected, rtol=RTOL, atol=1e-12)
    pattern = sg.compile(lambda t: _setitem_fn(sg, t)).hessian_sparsity(x).toarray()
    assert (pattern == (expected != 0)).all()


def test_index_put_accumulate_hessian_pattern_and_jvp():
    idx = np.array([0, 2, 2])

    def f(lib, x):
        y = x.index_put((lib.tensor(idx),), x[:3] ** 2, accumulate=True)
        return (y ** 3).sum()

    x = _point((4,), seed=1)
    expected = torch.func.hessian(lambda t: f(torch, t))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(sg.hessian(lambda t: f(sg, t))(x), expected, rtol=1e-12, atol=1e-12)
    assert (sg.compile(lambda t: f(sg, t)).hessian_sparsity(x).toarray() == (expected != 0)).all()
    v = _point((4,), seed=2)
    _, tan = sg.jvp(lambda t: f(sg, t), (x,), (v,))
    _, tan_t = torch.func.jvp(lambda t: f(torch, t), (torch.tensor(x),), (torch.tensor(v),))
    np.testing.assert_allclose(tan, tan_t.numpy(), rtol=1e-12)


def test_transforms_compose_inside_traces():
    x = np.array([0.3, -0.5, 1.2])
    g = sg.grad(lambda x: sg.jacobian(lambda y: sg.sin(y) * y.sum())(x).sum())(x)
    gt = torch.func.grad(lambda x: torch.func.jacrev(lambda y: torch.sin(y) * y.sum())(x).sum())(torch.tensor(x))
    np.testing.assert_allclose(g, gt.numpy(), rtol=RTOL)
    cube = lambda lib: (lambda y: (y ** 3).sum() * y[0])
    h = sg.grad(lambda x: (sg.hessian(cube(sg))(x) ** 2).sum())(x)
    ht = torch.func.grad(lambda x: (torch.func.hessian(cube(torch))(x) ** 2).sum())(torch.tensor(x))
    np.testing.assert_allclose(h, ht.numpy(), rtol=RTOL)
    third = sg.jacobian(sg.jacobian(sg.sin))(x)
    expected = np.zeros((3, 3, 3))
    expected[range(3), range(3), range(3)] = -np.sin(x)
    np.testing.assert_allclose(third, expected, rtol=RTOL, atol=1e-15)

    @sg.compile
    def newton_decrement(x):
        return (sg.hessian(lambda y: (y ** 4).sum())(x) * x).sum()
    assert newton_decrement(x) == pytest.approx((12 * x ** 3).sum(), rel=RTOL)
    with pytest.raises(TypeError, match="sparse"):
        sg.grad(lambda x: sg.hessian(lambda y: (y ** 4).sum(), sparse=True)(x).sum())(x)
