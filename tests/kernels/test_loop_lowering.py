"""Loop lowering (kernels/loops.py) and the adjoint's pulled products (derive/loops.py): the outer products an RNN's
adjoint adds to its weights' cotangents each step leave the loop (one matmul of the stacked operands after it), a
matrix read only as ``W @ v`` goes to the step transposed, and values and gradients still equal torch's."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.core.graph import toposort
from symgrad.derive import loops as derive_loops
from symgrad.kernels import loops as kernel_loops

N, M, T = 10, 3, 6
_rng = np.random.default_rng(7)
DATA = [_rng.normal(size=(N, N)) * 0.3, _rng.normal(size=(N, M)), _rng.normal(size=N), _rng.normal(size=(T, M))]


def _rnn(kind: str, lib):
    """An RNN loss over ``lib`` (``sg`` traced with ``sg.scan``, ``torch`` unrolled); ``kind``: ``plain``, ``twice``
    (W in two products: two pulled addends of one cotangent, one of them not a piece of the stored row) or
    ``mixed`` (W also read elementwise: an addend that stays a running sum)."""
    def step(W, U, b, h, x):
        a = W @ h + U @ x + b
        if kind == "twice":
            a = a + W @ (h * h)
        if kind == "mixed":
            a = a * W[0]
        return lib.tanh(a)

    def loss(W, U, b, xs):
        if lib is sg:
            h, _ = sg.scan(lambda h, x: (step(W, U, b, h, x), None), sg.zeros(N, dtype=sg.float64), xs)
        else:
            h = torch.zeros(N, dtype=torch.float64)
            for x in xs:
                h = step(W, U, b, h, x)
        return (h ** 2).sum()
    return loss


def _scan_node(kind: str):
    args = [sg.tensor(a, requires_grad=i < 3) for i, a in enumerate(DATA)]
    out = _rnn(kind, sg)(*args)
    return next(n for n in toposort([out._node]) if n.op.name == "scan")


def test_adjoint_pulls_outer_products_out_of_the_loop():
    node = _scan_node("plain")
    body = node.attr("body")
    adj = derive_loops.adjoint_body(body, False, (True, True, True))
    w, u, b = adj.memo["layout"]
    # the row of a step of the adjoint: carry before, carry after, x; d = λ (1 - h²) emitted once, shared by dW, dU
    assert w == (None, ((("y", 0), (N, 1), ("x", 0), (1, N)),))
    assert u == (None, ((("y", 0), (N, 1), ("x", 2 * N), (1, M)),))
    assert b == (N, ())                              # b's cotangent is d itself: stays a running sum
    assert adj.y_width == N and adj.carry_width == 2 * N


def test_products_stay_in_the_loop_when_their_operands_are_large(monkeypatch):
    monkeypatch.setattr(derive_loops, "PULL_FRACTION", 0.01)   # no product pays: every cotangent a running sum
    body = dataclasses.replace(_scan_node("plain").attr("body"), memo={})   # (bodies are cached, with their adjoints)
    adj = derive_loops.adjoint_body(body, False, (True, True, True))
    assert adj.memo["layout"] == ((N, ()), (N + N * N, ()), (N + N * N + N * M, ()))
    assert adj.y_width == 0 and adj.carry_width == N + N * N + N * M + N


@pytest.mark.parametrize("kind", ["plain", "twice", "mixed"])
def test_pulled_products_equal_torch(kind):
    f = sg.value_and_grad(_rnn(kind, sg), argnums=(0, 1, 2))
    value, grads = f(*DATA)                         # the first tier (numpy): the loop in Python, matmuls after it
    ts = [torch.tensor(a, requires_grad=i < 3) for i, a in enumerate(DATA)]
    want = _rnn(kind, torch)(*ts)
    want.backward()
    np.testing.assert_allclose(value, want.item(), rtol=1e-12)
    for g, t in zip(grads, ts[:3]):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_transposed_consts():
    plain = _scan_node("plain").attr("body")
    assert kernel_loops.transposed_consts(plain) == (0,)        # W (100 elements); U has 30: scalar-sized
    assert kernel_loops.transposed_consts(_scan_node("twice").attr("body")) == (0,)
    assert kernel_loops.transposed_consts(_scan_node("mixed").attr("body")) == ()   # W[0] reads it as it is
    adj = derive_loops.adjoint_body(plain, False, (True, True, True))
    assert kernel_loops.transposed_consts(adj) == ()            # Wᵀ λ reads W's rows already


def test_numba_rnn_kernel_calls_blas_and_equals_torch():
    """One numba compile: an RNN long enough for the gemm of dW's pulled products (16 · 300 · 16 multiply-adds;
    dU's, 16 · 300 · 4, stays fused loops), its step reading W transposed."""
    n, m, steps = 16, 4, 300
    rng = np.random.default_rng(3)
    data = [rng.normal(size=(n, n)) * 0.25, rng.normal(size=(n, m)), rng.normal(size=n), rng.normal(size=(steps, m))]

    def loss(lib):
        def f(W, U, b, xs):
            if lib is sg:
                h, _ = sg.scan(lambda h, x: (sg.tanh(W @ h + U @ x + b), None), sg.zeros(n, dtype=sg.float64), xs)
            else:
                h = torch.zeros(n, dtype=torch.float64)
                for x in xs:
                    h = torch.tanh(W @ h + U @ x + b)
            return (h ** 2).sum()
        return f
    f = sg.value_and_grad(loss(sg), argnums=(0, 1, 2))
    ts = [torch.tensor(a, requires_grad=i < 3) for i, a in enumerate(data)]
    want = loss(torch)(*ts)
    want.backward()
    for _ in range(2):
        value, grads = f(*data)
        np.testing.assert_allclose(value, want.item(), rtol=1e-10)
        for g, t in zip(grads, ts[:3]):
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-13)
    entry = next(iter(f._entries.values()))
    assert entry.prog.jit is not None
    src = entry.prog.jit_source
    assert src.count("numpy.dot(") == 1 and "_T0_arr[i0, i1] = v" in src
