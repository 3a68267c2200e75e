"""``sg.func.vmap`` against ``torch.func.vmap``: values, shapes, gradients through it, composition with the
function transforms, and torch's error texts."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(11)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal((5, 2))


def both(*arrays):
    return [sg.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _same_tree(a, b):
    if isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _same_tree(u, v)
    elif isinstance(b, dict):
        assert list(a) == list(b)
        for k in b:
            _same_tree(a[k], b[k])
    elif isinstance(b, torch.Tensor):
        assert_close(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("case", [
    ("sum over a dim", lambda lib: (lambda x: x.sum(0)), {}, (X,)),
    ("in_dims 1 / 0", lambda lib: (lambda x, y: x * y), {"in_dims": (1, 0)}, (X.T.copy(), X)),
    ("unbatched arg", lambda lib: (lambda x, w: x @ w), {"in_dims": (0, None)}, (X, W)),
    ("negative in_dim", lambda lib: (lambda x: x.exp()), {"in_dims": -1}, (X,)),
    ("out_dims per output", lambda lib: (lambda x: (x, x * 2)), {"out_dims": (1, 0)}, (X,)),
    ("out_dims negative", lambda lib: (lambda x: x.sin()), {"out_dims": -1}, (X,)),
    ("unbatched output", lambda lib: (lambda x: (x, lib.ones(2))), {"out_dims": (0, None)}, (X,)),
    ("constant output is expanded", lambda lib: (lambda x: (x, lib.ones(2))), {}, (X,)),
    ("torch.dot", lambda lib: lib.dot, {}, (X, X)),
    ("trace", lambda lib: lib.trace, {}, (RNG.standard_normal((4, 2, 2)),)),
    ("chunks", lambda lib: (lambda x: x.mean()), {"chunk_size": 2}, (X,)),
    ("chunks, out_dims 1", lambda lib: (lambda x: x * 3), {"chunk_size": 3, "out_dims": 1}, (X,)),
    ("list output", lambda lib: (lambda x: [x.sum(), x.prod()]), {}, (X,)),
    ("dict output", lambda lib: (lambda x: {"s": x.sum(), "m": x.max()}), {}, (X,)),
    ("empty batch", lambda lib: (lambda x: x * x), {}, (np.zeros((0, 3)),)),
], ids=lambda c: c[0])
def test_values_match_torch(case):
    _, make, kw, arrays = case
    s_args, t_args = both(*arrays)
    _same_tree(sg.func.vmap(make(sg), **kw)(*s_args), torch.func.vmap(make(torch), **kw)(*t_args))


def test_nested_vmap_and_pytree_inputs():
    a = RNG.standard_normal((2, 3, 4))
    (sa, sb), (ta, tb) = both(a, a[::-1].copy())
    assert_close(sg.vmap(sg.vmap(lambda u, v: u @ v))(sa, sb), torch.vmap(torch.vmap(lambda u, v: u @ v))(ta, tb))
    fs = sg.func.vmap(lambda d: d["a"] * d["b"], in_dims=({"a": 0, "b": None},))
    ft = torch.func.vmap(lambda d: d["a"] * d["b"], in_dims=({"a": 0, "b": None},))
    assert_close(fs({"a": sg.tensor(X), "b": sg.tensor(2.0)}), ft({"a": torch.tensor(X), "b": torch.tensor(2.0)}))
    fs = sg.func.vmap(lambda p: p[0] + p[1], in_dims=((0, None),))
    ft = torch.func.vmap(lambda p: p[0] + p[1], in_dims=((0, None),))
    assert_close(fs((sg.tensor(X), sg.tensor(X[0]))), ft((torch.tensor(X), torch.tensor(X[0]))))
    kw = sg.func.vmap(lambda x, k=1: x * k)(sg.tensor(X), k=3)
    assert_close(kw, torch.func.vmap(lambda x, k=1: x * k)(torch.tensor(X), k=3))


def test_per_example_gradients_compose_with_the_transforms():
    def loss(lib):
        return lambda w, x, y: ((x @ w - y) ** 2).sum()
    (sw, sx, sy), (tw, tx, ty) = both(W, X, Y)
    assert_close(sg.func.vmap(sg.func.grad(loss(sg)), in_dims=(None, 0, 0))(sw, sx, sy),
                 torch.func.vmap(torch.func.grad(loss(torch)), in_dims=(None, 0, 0))(tw, tx, ty))
    f = lambda lib: (lambda x: x.sin() * x.sum())  # noqa: E731
    assert_close(sg.func.vmap(sg.func.jacrev(f(sg)))(sx), torch.func.vmap(torch.func.jacrev(f(torch)))(tx))
    assert_close(sg.func.vmap(sg.func.jacfwd(f(sg)))(sx), torch.func.vmap(torch.func.jacfwd(f(torch)))(tx))
    h = lambda lib: (lambda x: (x ** 3).sum() * x[0])  # noqa: E731
    assert_close(sg.func.vmap(sg.func.hessian(h(sg)))(sx), torch.func.vmap(torch.func.hessian(h(torch)))(tx),
                 atol=1e-12)


def test_gradients_flow_through_vmap():
    sw, tw = sg.tensor(W[:, 0].copy(), requires_grad=True), torch.tensor(W[:, 0].copy(), requires_grad=True)
    sx, tx = sg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    so = sg.func.vmap(lambda x: (x * sw).sin().sum())(sx)
    to = torch.func.vmap(lambda x: (x * tw).sin().sum())(tx)
    assert so.requires_grad and to.requires_grad
    (so * sg.arange(5.0)).sum().backward()
    (to * torch.arange(5.0)).sum().backward()
    assert_close(sw.grad, tw.grad)
    assert_close(sx.grad, tx.grad)


def test_randomness():
    sg.manual_seed(3)
    torch.manual_seed(3)
    zs, zt = sg.zeros(4), torch.zeros(4)
    assert_close(sg.func.vmap(lambda x: x + sg.rand(()), randomness="same")(zs),
                 torch.func.vmap(lambda x: x + torch.rand(()), randomness="same")(zt))
    assert_close(sg.rand(3), torch.rand(3))  # the same draws consumed
    out = sg.func.vmap(lambda x: x + sg.rand(()), randomness="different")(zs)
    assert len(set(out.tolist())) == 4
    state = sg.get_rng_state()
    assert_same_error(lambda: sg.func.vmap(lambda x: x + sg.rand(()))(zs),
                      lambda: torch.func.vmap(lambda x: x + torch.rand(()))(zt))
    assert np.array_equal(sg.get_rng_state().numpy(), state.numpy())  # nothing drawn


def _named(x, y):
    return x + y


@pytest.mark.parametrize("call", [
    lambda lib, x, y: lib.func.vmap(_named)(x, y[:4]),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0,))(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0, 0, 0))(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=[0, 0])(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0, 2))(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0, -3))(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0, 1.0))(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0, 0))(x, 1.0),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(0, 0))(x, None),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=(None, None))(x, y),
    lambda lib, x, y: lib.func.vmap(_named)(),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=((0, 0), 0))(x, y),
    lambda lib, x, y: lib.func.vmap(_named, in_dims=None)(x, y),
    lambda lib, x, y: lib.func.vmap(lambda d: d["a"], in_dims=({"a": 0},))({"a": x, "b": y}),
    lambda lib, x, y: lib.func.vmap(lambda p: p[0], in_dims=((0, None),))([x, y]),
    lambda lib, x, y: lib.func.vmap(lambda a: (a, a), out_dims=(0, 1, 2))(x),
    lambda lib, x, y: lib.func.vmap(lambda a: (a, a), out_dims=[0, 1])(x),
    lambda lib, x, y: lib.func.vmap(lambda a: a, out_dims=(0, 1))(x),
    lambda lib, x, y: lib.func.vmap(lambda a: (a, a), out_dims=(0, "a"))(x),
    lambda lib, x, y: lib.func.vmap(lambda a: 1.0)(x),
    lambda lib, x, y: lib.func.vmap(lambda a: (a, None))(x),
    lambda lib, x, y: lib.func.vmap(lambda a: a, out_dims=None)(x),
    lambda lib, x, y: lib.func.vmap(lambda a: a.sum(), out_dims=None)(x),
    lambda lib, x, y: lib.func.vmap(lambda a: a, out_dims=2)(x),
    lambda lib, x, y: lib.func.vmap(lambda a: a, randomness="foo"),
    lambda lib, x, y: lib.func.vmap(lambda a: a, chunk_size=0),
], ids=lambda c: "")
def test_errors_match_torch(call):
    (sx, sy), (tx, ty) = both(X, X[:, :2].T.copy())
    assert_same_error(lambda: call(sg, sx, sy), lambda: call(torch, tx, ty))


def test_batched_path_records_torchs_graph_and_errors():
    from symgrad.batching import STATS
    before = dict(STATS)
    sx, tx = sg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    for f in (lambda lib: lib.sin, lambda lib: (lambda r: r * 2), lambda lib: (lambda r: r.sum()),
              lambda lib: (lambda r: r.softmax(0)), lambda lib: (lambda r: lib.cat([r, r]))):
        so, to = sg.func.vmap(f(sg))(sx), torch.func.vmap(f(torch))(tx)
        assert_close(so, to)
        assert type(so.grad_fn).__name__ == type(to.grad_fn).__name__
    assert STATS["batched"] == before["batched"] + 5 and STATS["mismatch"] == before["mismatch"]
    for body in (lambda lib: (lambda r: r * r.sum().item()), lambda lib: (lambda r: r if r.sum() > 0 else -r),
                 lambda lib: (lambda r: r * float(r[0]))):
        assert_same_error(lambda b=body: sg.func.vmap(b(sg))(sg.tensor(X)),
                          lambda b=body: torch.func.vmap(b(torch))(torch.tensor(X)))
    n = sg.tensor(2.0)  # an unbatched argument may be read
    assert_close(sg.func.vmap(lambda r, k: r * k.item(), in_dims=(0, None))(sg.tensor(X), n), torch.tensor(X) * 2)


def test_vmap_keeps_the_function_name():
    assert sg.func.vmap(_named).__name__ == "_named"
    assert sg.vmap is sg.func.vmap
