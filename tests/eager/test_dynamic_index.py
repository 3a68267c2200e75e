"""Indexing with traced integer tensors in compiled functions and loop bodies, against torch eager."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.core.errors import TracingError

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5, 3))

# (name, index builder from the index tensors (i, j), i's values, j's values)
CASES = [
    ("vector", lambda x, i, j: x[i], [2, 0, 2, -1], None),
    ("0-d", lambda x, i, j: x[i], 1, None),
    ("matrix of indices", lambda x, i, j: x[i], [[0, 3], [3, 1]], None),
    ("second dim", lambda x, i, j: x[:, i], [4, 0, -2], None),
    ("last dim via ellipsis", lambda x, i, j: x[..., i], [2, 2, 0], None),
    ("with None", lambda x, i, j: x[None, :, i], [1, 3], None),
    ("int then tensor", lambda x, i, j: x[1, i], [0, 4], None),
    ("slice then tensor", lambda x, i, j: x[1:3, i, ::2], [0, 4, 1], None),
    ("two adjacent", lambda x, i, j: x[:, i, j], [0, 4, 2], [2, 0, 1]),
    ("two broadcast", lambda x, i, j: x[i, :, j], [[0], [3]], [2, 0, 1]),
    ("two first", lambda x, i, j: x[i, j], [3, 0], [-1, 4]),
    ("traced and static", lambda x, i, j: x[i, [1, 2]], [3, 0], None),
    ("three", lambda x, i, j: x[i, j, i % 3], [3, 1], [4, 0]),
]


def _run(index, iv, jv, dtype):
    xt = torch.tensor(X, dtype=dtype, requires_grad=True)
    it = torch.tensor(iv)
    jt = torch.tensor(jv) if jv is not None else torch.tensor(0)
    out = index(xt, it, jt)
    w = torch.linspace(0.5, 1.5, out.numel(), dtype=dtype).reshape(out.shape)
    loss = (torch.sin(out) * w).sum()
    loss.backward()

    def f(x, i, j):
        o = index(x, i, j)
        return (sg.sin(o) * sg.tensor(w.numpy())).sum()
    sdt = sg.float64 if dtype == torch.float64 else sg.float32
    val, grad = sg.value_and_grad(f)(sg.tensor(X, dtype=sdt), sg.tensor(iv), sg.tensor(jv if jv is not None else 0))
    return loss, xt.grad, val, grad


@pytest.mark.parametrize("name,index,iv,jv", CASES, ids=[c[0] for c in CASES])
def test_traced_index_matches_torch(name, index, iv, jv):
    loss, tgrad, val, grad = _run(index, iv, jv, torch.float64)
    np.testing.assert_allclose(val.numpy(), loss.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), tgrad.numpy(), rtol=1e-12, atol=1e-15)


def test_traced_index_float32():
    loss, tgrad, val, grad = _run(lambda x, i, j: x[:, i, j], [0, 4, 2], [2, 0, 1], torch.float32)
    assert val.dtype == sg.float32 and grad.dtype == sg.float32
    np.testing.assert_allclose(val.numpy(), loss.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad.numpy(), tgrad.numpy(), rtol=1e-6, atol=1e-7)


def test_shape_of_result_matches_torch():
    @sg.compile
    def f(x, i, j):
        return x[i, :, j], x[:, i, j], x[1, i], x[..., i, None]
    i, j = [[0], [2]], [2, 0, 1]
    got = f(sg.tensor(X), sg.tensor(i), sg.tensor(j))
    xt = torch.tensor(X)
    want = (xt[torch.tensor(i), :, torch.tensor(j)], xt[:, torch.tensor(i), torch.tensor(j)],
            xt[1, torch.tensor(i)], xt[..., torch.tensor(i), None])
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_fori_loop_body_indexes_with_the_loop_counter():
    xs = RNG.standard_normal(6)
    ws = RNG.standard_normal((6, 2))

    def loss(a, xs_, ws_):
        def body(i, c):
            return c * sg.tanh(a * xs_[i]) + ws_[i]
        return sg.fori_loop(0, 6, body, sg.ones(2, dtype=sg.float64)).square().sum()
    f = sg.value_and_grad(loss, argnums=(0, 1, 2))
    args = (sg.tensor(0.7, dtype=sg.float64), sg.tensor(xs), sg.tensor(ws))
    runs = [f(*args) for _ in range(3)]  # the numpy tier, then the numba kernel (sync in the tests)
    assert sg.jit_stats().tier_switches >= 1
    at = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    xt = torch.tensor(xs, requires_grad=True)
    wt = torch.tensor(ws, requires_grad=True)
    c = torch.ones(2, dtype=torch.float64)
    for i in range(6):
        c = c * torch.tanh(at * xt[i]) + wt[i]
    ref = c.square().sum()
    ref.backward()
    for val, grads in runs:
        np.testing.assert_allclose(val.numpy(), ref.detach().numpy(), rtol=1e-12)
        for g, w in zip(grads, (at.grad, xt.grad, wt.grad)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-11, atol=1e-14)


def test_float_index_and_traced_mask_are_refused():
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        sg.compile(lambda x, i: x[i])(sg.tensor(X), sg.tensor([0.0, 1.0]))
    with pytest.raises(TracingError, match="traced mask"):
        sg.compile(lambda x, m: x[m])(sg.tensor(X[0, :, 0]), sg.tensor([True, False, True, False, True]))
    with pytest.raises(IndexError, match="too many indices"):
        sg.compile(lambda x, i: x[i, i, i, i])(sg.tensor(X), sg.tensor([0]))


def _fori_vs_torch(read, n, lo=0):
    """value and gradients of a fori loop whose step reads ``read(t, i)`` of closed-over tensors, vs torch."""
    xs = np.linspace(-1.0, 1.0, 7)
    ws = np.linspace(0.5, 2.0, 14).reshape(7, 2)

    def loss(a, xs_, ws_):
        return sg.fori_loop(lo, lo + n, lambda i, c: c * sg.tanh(a * read(xs_, ws_, i)[0]) + read(xs_, ws_, i)[1],
                            sg.ones(2, dtype=sg.float64)).square().sum()
    val, grads = sg.value_and_grad(loss, argnums=(0, 1, 2))(sg.tensor(0.7, dtype=sg.float64), sg.tensor(xs),
                                                            sg.tensor(ws))
    at = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    xt = torch.tensor(xs, requires_grad=True)
    wt = torch.tensor(ws, requires_grad=True)
    c = torch.ones(2, dtype=torch.float64)
    for i in range(lo, lo + n):
        r = read(xt, wt, torch.tensor(i))
        c = c * torch.tanh(at * r[0]) + r[1]
    ref = c.square().sum()
    ref.backward()
    np.testing.assert_allclose(val.numpy(), ref.detach().numpy(), rtol=1e-12)
    for g, w in zip(grads, (at.grad, xt.grad, wt.grad)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("read,n,lo", [
    (lambda x, w, i: (x[i], w[i]), 5, 1),                    # rows of xs
    (lambda x, w, i: (x[i], w[i, None, ::1][0]), 7, 0),      # a row, then a static index of it
    (lambda x, w, i: (x[6 - i], w[i % 7]), 9, 0),             # computed indices: the one-hot reading
    (lambda x, w, i: (x[i], w[i]), 3, -3),                    # negative counter: counts from the end
], ids=["rows", "row then slice", "computed", "negative"])
def test_fori_reads_of_the_counter(read, n, lo):
    _fori_vs_torch(read, n, lo)


def test_rows_read_by_the_counter_are_scanned_not_selected():
    xs = sg.tensor(np.linspace(0.0, 1.0, 5))
    text = sg.value_and_grad(lambda a, d: sg.fori_loop(0, 5, lambda i, c: c + a * d[i],
                                                       sg.tensor(0.0, dtype=sg.float64))).formulas(
        sg.tensor(2.0, dtype=sg.float64), xs)
    assert "d[i]" in str(text)   # the row of d at the step, not a selection over all of d
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        sg.compile(lambda a: sg.fori_loop(0, 6, lambda i, c: c + a * xs[i], a))(sg.tensor(1.0, dtype=sg.float64))


def test_nested_loops_read_their_own_and_the_outer_counter():
    table = np.linspace(0.1, 1.2, 12).reshape(3, 4)

    def f(a, t):
        def outer(i, c):
            return sg.fori_loop(0, 4, lambda j, d: d * a + t[i, j] + sg.sin(t[i][j] * d), c)
        return sg.fori_loop(0, 3, outer, sg.tensor(0.2, dtype=sg.float64))
    val, g = sg.value_and_grad(f, argnums=(0, 1))(sg.tensor(0.9, dtype=sg.float64), sg.tensor(table))
    at = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    tt = torch.tensor(table, requires_grad=True)
    d = torch.tensor(0.2, dtype=torch.float64)
    for i in range(3):
        for j in range(4):
            d = d * at + tt[i, j] + torch.sin(tt[i][j] * d)
    d.backward()
    np.testing.assert_allclose(val.numpy(), d.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g[0].numpy(), at.grad.numpy(), rtol=1e-11)
    np.testing.assert_allclose(g[1].numpy(), tt.grad.numpy(), rtol=1e-11, atol=1e-14)
