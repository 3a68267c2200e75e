"""Loops (``sg.fori_loop``, ``sg.scan``, ``sg.while_loop``) against torch running the same loop unrolled, eagerly."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.kernels import llvm_tier

H = 0.01


def rhs(lib, s, p):
    x, y, z = s[0], s[1], s[2]
    return lib.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def rk4(lib, s, p):
    k1 = rhs(lib, s, p)
    k2 = rhs(lib, s + H / 2 * k1, p)
    k3 = rhs(lib, s + H / 2 * k2, p)
    k4 = rhs(lib, s + H * k3, p)
    return s + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


# each program: (symgrad loss over sg.* loops, torch loss over a Python loop, argument arrays)
def lorenz_sg(p, s0):
    return (sg.fori_loop(0, 30, lambda i, s: rk4(sg, s, p), s0) ** 2).sum()


def lorenz_torch(p, s0):
    s = s0
    for _ in range(30):
        s = rk4(torch, s, p)
    return (s ** 2).sum()


def index_sg(a, x0):
    # the step index enters the arithmetic; a tuple carry of 0-d and 1-d tensors
    def body(i, c):
        x, acc = c
        x = sg.sin(x * a + i.double() * 0.1)
        return x, acc + (x * x).sum() * (i + 1)
    x, acc = sg.fori_loop(2, 12, body, (x0, sg.zeros((), dtype=sg.float64)))
    return acc + x.sum()


def index_torch(a, x0):
    x, acc = x0, torch.zeros((), dtype=torch.float64)
    for i in range(2, 12):
        k = torch.tensor(i)           # the step index is an int64 tensor
        x = torch.sin(x * a + k.double() * 0.1)
        acc = acc + (x * x).sum() * (k + 1)
    return acc + x.sum()


def rnn_sg(w, u, b, xs):
    def step(h, x):
        h = sg.tanh(w @ h + u @ x + b)
        return h, (h ** 2).sum()
    h, ys = sg.scan(step, sg.zeros(b.shape[0], dtype=sg.float64), xs)
    return (h ** 2).sum() + (ys * sg.arange(xs.shape[0], dtype=sg.float64)).sum()


def rnn_torch(w, u, b, xs):
    h, ys = torch.zeros(b.shape[0], dtype=torch.float64), []
    for x in xs:
        h = torch.tanh(w @ h + u @ x + b)
        ys.append((h ** 2).sum())
    return (h ** 2).sum() + (torch.stack(ys) * torch.arange(xs.shape[0], dtype=torch.float64)).sum()


def reverse_sg(a, xs):
    def step(c, x):
        c = c * sg.cos(x) + a * x
        return c, c.sum()
    c, ys = sg.scan(step, a, xs, reverse=True)
    return c.sum() + (ys * ys).sum()


def reverse_torch(a, xs):
    c, ys = a, [None] * xs.shape[0]
    for k in range(xs.shape[0] - 1, -1, -1):
        c = c * torch.cos(xs[k]) + a * xs[k]
        ys[k] = c.sum()
    return c.sum() + (torch.stack(ys) ** 2).sum()


def nested_sg(a, x0):
    def outer(i, x):
        return sg.fori_loop(0, 3, lambda j, y: y * sg.tanh(a * y + j), x) + 0.5 * x
    return sg.fori_loop(0, 4, outer, x0).sum()


def nested_torch(a, x0):
    x = x0
    for _ in range(4):
        y = x
        for j in range(3):
            y = y * torch.tanh(a * y + j)
        x = y + 0.5 * x
    return x.sum()


def where_sg(a, x0):
    def body(i, x):
        return sg.where(x > 0.3, sg.sqrt(sg.abs(x)) * a, x * x - a)
    return sg.fori_loop(0, 8, body, x0).sum()


def where_torch(a, x0):
    x = x0
    for _ in range(8):
        x = torch.where(x > 0.3, torch.sqrt(torch.abs(x)) * a, x * x - a)
    return x.sum()


def dict_sg(p, x0):
    def body(i, c):
        return {"x": c["x"] + H * c["v"], "v": c["v"] - H * p * sg.sin(c["x"])}
    out = sg.fori_loop(0, 20, body, {"x": x0, "v": sg.zeros_like(x0)})
    return (out["x"] * out["v"]).sum()


def dict_torch(p, x0):
    x, v = x0, torch.zeros_like(x0)
    for _ in range(20):
        x, v = x + H * v, v - H * p * torch.sin(x)
    return (x * v).sum()


def added_sg(p, s0):
    # a closed-over value added to the carry: its cotangent is λ itself (a view of the adjoint's carry)
    return (sg.fori_loop(0, 12, lambda i, s: s * 0.9 + sg.sin(s) * 0.05 + p, p * 1.0 + s0) ** 2).sum()


def added_torch(p, s0):
    s = p * 1.0 + s0
    for _ in range(12):
        s = s * 0.9 + torch.sin(s) * 0.05 + p
    return (s ** 2).sum()


_rng = np.random.default_rng(7)
PROGRAMS = {
    "lorenz": (lorenz_sg, lorenz_torch, [np.array([10.0, 28.0, 8 / 3]), np.array([1.0, 1.0, 1.0])]),
    "index": (index_sg, index_torch, [_rng.uniform(0.5, 1.5, 3), _rng.uniform(-1, 1, 3)]),
    "rnn": (rnn_sg, rnn_torch, [_rng.normal(size=(4, 4)) * 0.5, _rng.normal(size=(4, 2)), _rng.normal(size=4),
                                _rng.normal(size=(6, 2))]),
    "wide_rnn": (rnn_sg, rnn_torch, [_rng.normal(size=(10, 10)) * 0.3, _rng.normal(size=(10, 2)),
                                     _rng.normal(size=10), _rng.normal(size=(5, 2))]),
    "added": (added_sg, added_torch, [_rng.uniform(-1, 1, 20), _rng.uniform(-1, 1, 20)]),
    "reverse": (reverse_sg, reverse_torch, [_rng.uniform(-1, 1, 3), _rng.uniform(-1, 1, (5, 3))]),
    "nested": (nested_sg, nested_torch, [np.array(0.7), _rng.uniform(0.1, 1, 2)]),
    "where": (where_sg, where_torch, [np.array(0.9), np.array([0.1, 0.5, 1.2, -0.4])]),
    "dict": (dict_sg, dict_torch, [np.array(2.0), _rng.uniform(-1, 1, 3)]),
}


def _torch_grads(tfn, arrays, argnums):
    ts = [torch.tensor(a, requires_grad=i in argnums) for i, a in enumerate(arrays)]
    out = tfn(*ts)
    grads = torch.autograd.grad(out, [ts[i] for i in argnums])
    return out.item(), [g.numpy() for g in grads]


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-10,
                               atol=1e-12)


def _check_value_and_grad(name, calls):
    sfn, tfn, arrays = PROGRAMS[name]
    argnums = tuple(range(len(arrays) - (name not in ("rnn", "wide_rnn"))))
    value, grads = _torch_grads(tfn, arrays, argnums)
    f = sg.value_and_grad(sfn, argnums=argnums)
    for _ in range(calls):
        v, g = f(*arrays)
        _close(v, value)
        for a, b in zip(g, grads):
            _close(a, b)
    return f


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_value_and_grad_equal_torch_unrolled(name):
    _check_value_and_grad(name, 1)              # the numpy tier: the step a nested function, a Python loop


@pytest.mark.parametrize("name", ["lorenz", "where", "nested", "wide_rnn", "added"])
def test_numba_loop_kernels_equal_torch(name, monkeypatch):
    # scalar steps (lorenz, where's selects, a loop in a loop) and array steps (a 10-unit RNN: W has 100
    # elements; a 20-element state with a value added to it); numba's kernels: the LLVM tier is off here
    # (tests/codegen/test_llvm.py runs it)
    monkeypatch.setattr(llvm_tier, "ENABLED", False)
    f = _check_value_and_grad(name, 2)
    assert next(iter(f._entries.values())).prog.jit is not None


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_eager_backward_records_one_loop(name):
    sfn, tfn, arrays = PROGRAMS[name]
    value, grads = _torch_grads(tfn, arrays, (0,))
    x = sg.tensor(arrays[0], requires_grad=True)
    out = sfn(x, *[sg.tensor(a) for a in arrays[1:]])
    out.backward()
    _close(out.item(), value)
    _close(x.grad.numpy(), grads[0])


@pytest.mark.parametrize("name", ["lorenz", "index", "nested", "where"])
def test_hessian_equals_torch(name):
    sfn, tfn, arrays = PROGRAMS[name]
    want = torch.autograd.functional.hessian(lambda a: tfn(a, torch.tensor(arrays[1])), torch.tensor(arrays[0]))
    got = sg.hessian(sfn)(*arrays)
    _close(got, want.numpy())


@pytest.mark.parametrize("name", ["lorenz", "rnn", "reverse", "dict"])
def test_jvp_equals_torch(name):
    sfn, tfn, arrays = PROGRAMS[name]
    tangent = np.linspace(0.3, -0.7, arrays[0].size).reshape(arrays[0].shape)
    rest = [torch.tensor(a) for a in arrays[1:]]
    _, want = torch.func.jvp(lambda a: tfn(a, *rest), (torch.tensor(arrays[0]),), (torch.tensor(tangent),))
    value, got = sg.jvp(lambda a: sfn(a, *[sg.tensor(r) for r in arrays[1:]]), (arrays[0],), (tangent,))
    _close(got, want.numpy())


def test_kernels_are_real_loops():
    f = sg.value_and_grad(lorenz_sg)
    src = f.source(*PROGRAMS["lorenz"][2], backend="numpy")
    assert src.count("for t") >= 2          # the forward loop and the adjoint loop, not 30 unrolled steps
    assert len(src) < 20000


def test_float32_carry_stays_float32():
    x0 = np.array([0.5, -0.25], dtype=np.float32)
    out = sg.fori_loop(0, 5, lambda i, x: x * np.float32(0.5) + 1, sg.tensor(x0))
    assert out.dtype is sg.float32
    want = x0
    for _ in range(5):
        want = want * np.float32(0.5) + np.float32(1)
    np.testing.assert_array_equal(out.numpy(), want)


def test_scan_without_xs_and_length():
    c, ys = sg.scan(lambda c, _: (c * 2, c), sg.tensor(1.0, dtype=sg.float64), length=4)
    assert c.item() == 16
    np.testing.assert_array_equal(ys.numpy(), [1, 2, 4, 8])


def test_carry_mismatch_is_a_clear_error():
    with pytest.raises(TypeError, match="same pytree structure"):
        sg.fori_loop(0, 3, lambda i, c: (c, c), sg.zeros(2))
    with pytest.raises(TypeError, match="equal types"):
        sg.fori_loop(0, 3, lambda i, c: sg.stack([c, c]), sg.zeros(2))
    with pytest.raises(ValueError, match="no values to scan over"):
        sg.scan(lambda c, x: (c, x), sg.zeros(2))


def newton_sqrt(a):
    # Newton's iteration for sqrt(a), run until converged: the trip count depends on the values
    def cond(c):
        x, n = c
        return (sg.abs(x * x - a) > 1e-12).any() & (n < 50)
    x, n = sg.while_loop(cond, lambda c: (0.5 * (c[0] + a / c[0]), c[1] + 1), (a, sg.tensor(0)))
    return x


def test_while_loop_eager_compiled_and_forward_mode():
    a = np.array([2.0, 9.0, 0.25])
    np.testing.assert_allclose(newton_sqrt(sg.tensor(a)).numpy(), np.sqrt(a), rtol=1e-12)
    f = sg.compile(newton_sqrt)
    for _ in range(2):                     # numpy tier, then the numba loop
        np.testing.assert_allclose(f(a), np.sqrt(a), rtol=1e-12)
    _, t = sg.jvp(newton_sqrt, (a,), (np.ones(3),))
    np.testing.assert_allclose(t, 0.5 / np.sqrt(a), rtol=1e-9)
    out = sg.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, sg.tensor(1.0)))
    assert out[0].item() == 10 and out[1].item() == 1024


def test_while_loop_reverse_mode_is_refused():
    with pytest.raises(TypeError, match="Reverse-mode differentiation does not work for while_loop"):
        sg.grad(lambda a: newton_sqrt(a).sum())(np.array([2.0]))
    with pytest.raises(TypeError, match="boolean scalar"):
        sg.while_loop(lambda c: c < 3, lambda c: c + 1, sg.zeros(2))


@pytest.mark.parametrize("every", [4, 7])
def test_checkpointed_fori_loop_equals_torch(every):
    arrays = PROGRAMS["lorenz"][2]
    value, grads = _torch_grads(lorenz_torch, arrays, (0,))
    f = sg.value_and_grad(lambda p, s0: (sg.fori_loop(0, 30, lambda i, s: rk4(sg, s, p), s0,
                                                      checkpoint_every=every) ** 2).sum())
    v, g = f(*arrays)
    _close(v, value)
    _close(g, grads[0])
    src = f.source(*arrays, backend="numpy")
    assert "range(30" not in src and f"range({every}" in src      # loops of blocks, not one loop of 30 steps


@pytest.mark.parametrize("reverse", [False, True])
def test_checkpointed_scan_equals_torch(reverse):
    sfn, tfn, arrays = PROGRAMS["reverse" if reverse else "rnn"]

    def blocked(*args):
        if reverse:
            a, xs = args

            def step(c, x):
                c = c * sg.cos(x) + a * x
                return c, c.sum()
            c, ys = sg.scan(step, a, xs, reverse=True, checkpoint_every=2)
            return c.sum() + (ys * ys).sum()
        w, u, b, xs = args

        def step(h, x):
            h = sg.tanh(w @ h + u @ x + b)
            return h, (h ** 2).sum()
        h, ys = sg.scan(step, sg.zeros(b.shape[0], dtype=sg.float64), xs, checkpoint_every=4)
        return (h ** 2).sum() + (ys * sg.arange(xs.shape[0], dtype=sg.float64)).sum()

    argnums = tuple(range(len(arrays) - 1))
    value, grads = _torch_grads(tfn, arrays, argnums)
    v, g = sg.value_and_grad(blocked, argnums=argnums)(*arrays)
    _close(v, value)
    for a, b in zip(g, grads):
        _close(a, b)


def test_formulas_print_the_step_and_its_adjoint_as_recurrences():
    f = sg.value_and_grad(lambda p, s0: (sg.fori_loop(0, 30, lambda i, s: s + H * p * sg.sin(s), s0) ** 2).sum())
    text = str(f.formulas(np.array([0.5, 1.0]), np.array([1.0, 2.0])))
    assert "s[k+1] = " in text and "λ_s[k] = " in text and "dp[k] = " in text
    assert "30 steps" in text and "backwards" in text
    step = text.split("s[k+1] = ")[1].splitlines()[0]
    assert "sin(s[k])" in step and "p" in step
    tex = f.formulas(np.array([0.5, 1.0]), np.array([1.0, 2.0])).latex()
    assert r"\lambda" in tex or "λ" in tex


def test_any_and_all_trace():
    # they used to read the tracer's placeholder values: a silently constant result under sg.compile
    f = sg.compile(lambda x: sg.where((x > 1).any(), x, -x) + sg.where((x > -1).all(dim=0), x, 0 * x))
    np.testing.assert_array_equal(f(np.array([0.0, 2.0])), [0.0, 4.0])
    np.testing.assert_array_equal(f(np.array([0.0, -2.0])), [0.0, 2.0])


def test_zero_trip_loops_return_the_carry_and_empty_ys():
    f = sg.grad(lambda a: sg.fori_loop(2, 2, lambda i, c: c * a, a * 3))
    assert float(f(sg.tensor(2.0, dtype=sg.float64))) == 3.0
    g = sg.compile(lambda a, xs: sg.scan(lambda c, x: (c * a + x, (c * x, c)), a, xs))
    c, (y1, y2) = g(sg.tensor(2.0, dtype=sg.float64), sg.zeros(0, dtype=sg.float64))
    assert float(c) == 2.0 and tuple(y1.shape) == (0,) and tuple(y2.shape) == (0,)
    c, ys = sg.scan(lambda c, x: (c + x.sum(), c * x), sg.tensor(1.0, dtype=sg.float64), np.zeros((0, 3)))
    assert float(c) == 1.0 and tuple(ys.shape) == (0, 3)
    assert sg.fori_loop(3, 1, lambda i, c: c * 2, sg.tensor([1, 2])).tolist() == [1, 2]


def test_a_step_traced_again_is_the_same_body_so_eager_programs_are_reused():
    p = sg.tensor([0.5, 1.5], dtype=sg.float64, requires_grad=True)
    table = sg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=sg.float64)

    def step(i, s):
        return s * sg.tanh(p) + table[i] * 0.1

    grads, programs = [], []
    for _ in range(3):
        s = sg.fori_loop(0, 3, step, sg.ones(2, dtype=sg.float64))
        p.grad = None
        (s ** 2).sum().backward()
        grads.append(p.grad.numpy().copy())
        programs.append(sg.jit_stats().programs)
    assert programs[1] == programs[2]       # the third call made no new program
    np.testing.assert_array_equal(grads[0], grads[2])
    other = sg.fori_loop(0, 3, lambda i, s: s * sg.tanh(p) + table[i] * 0.2, sg.ones(2, dtype=sg.float64))
    ref = sg.ones(2, dtype=sg.float64)
    for i in range(3):
        ref = ref * sg.tanh(p) + table[i] * 0.2
    np.testing.assert_allclose(other.detach().numpy(), ref.detach().numpy(), rtol=1e-15)  # a new constant: new step


@pytest.mark.parametrize("every", [3, 5])
def test_checkpointed_scan_whose_step_has_no_output(every):
    xs = sg.tensor(np.linspace(0.0, 1.0, 10))

    def run(a, **kw):
        return sg.scan(lambda c, x: (c * a + x, None), sg.tensor(0.5, dtype=sg.float64), xs, **kw)
    c, ys = run(sg.tensor(0.9, dtype=sg.float64), checkpoint_every=every)
    assert ys is None
    g = sg.grad(lambda a: run(a, checkpoint_every=every)[0])(sg.tensor(0.9, dtype=sg.float64))
    ref = sg.grad(lambda a: run(a)[0])(sg.tensor(0.9, dtype=sg.float64))
    np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-13)
    np.testing.assert_allclose(c.numpy(), run(sg.tensor(0.9, dtype=sg.float64))[0].numpy(), rtol=1e-15)
