"""``symgrad.utils.checkpoint`` against ``torch.utils.checkpoint`` 2.13: values, ``grad_fn`` names, gradients of
inputs and of parameters used inside, the random state (dropout inside a checkpoint), ``checkpoint_sequential``,
warnings and errors. Each scenario runs under both libraries; the plain results must be equal."""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tckpt

import symgrad as sg
import symgrad.utils.checkpoint as sckpt

LIBS = {"torch": (torch, tckpt), "symgrad": (sg, sckpt)}


def plain(v: Any) -> Any:
    if isinstance(v, (torch.Tensor, sg.Tensor)):
        fn = type(v.grad_fn).__name__ if v.grad_fn is not None else None
        return ("tensor", str(v.dtype).split(".")[-1], v.tolist(), v.requires_grad, fn)
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def close(a: Any, b: Any) -> bool:
    """Same structure, dtypes, ``requires_grad`` and ``grad_fn`` names; float values to float32 tolerance (symgrad's
    float32 ``exp``, ``tanh`` and matrix products may differ from torch's in the last bit: docs/fidelity.md)."""
    if isinstance(a, tuple) and a and a[0] == "tensor":
        return (isinstance(b, tuple) and a[:2] == b[:2] and a[3:] == b[3:]
                and np.shape(a[2]) == np.shape(b[2]) and np.allclose(a[2], b[2], rtol=1e-5, atol=1e-6))
    if isinstance(a, (list, tuple)):
        return isinstance(b, type(a)) and len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def same(scenario: Callable[[Any, Any], Any]) -> Any:
    """Run ``scenario(lib, checkpoint_module)`` under both libraries: results ``close`` and the same warnings."""
    out = {}
    for name, libs in LIBS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = scenario(*libs)
        out[name] = plain(result), sorted({str(w.message) for w in caught})
    assert close(out["symgrad"][0], out["torch"][0]), (out["symgrad"][0], out["torch"][0])
    assert out["symgrad"][1] == out["torch"][1]
    return out["torch"]


def block(T: Any) -> Any:
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Dropout(0.5), T.nn.Linear(4, 2), T.nn.Sigmoid())


def grads(T: Any, model: Any, x: Any) -> list:
    return [x.grad, *(p.grad for p in model.parameters())]


@pytest.mark.parametrize("use_reentrant", [True, False, None])
def test_checkpoint_values_gradients_and_random_state(use_reentrant):
    """Dropout inside the checkpoint: the mask is the forward's, the recomputation (reentrant) replays the
    forward's random state and leaves the global stream where the forward left it."""
    def run(T, C):
        model = block(T)
        x = T.randn(5, 3, requires_grad=True)
        y = C.checkpoint(model, x, use_reentrant=use_reentrant)
        after_forward = T.randn(2)
        (y * T.arange(10.0).reshape(5, 2)).sum().backward()
        return y, after_forward, T.randn(2), grads(T, model, x)
    out = same(run)
    fn = out[0][0][4]
    assert fn == ("CheckpointFunctionBackward" if use_reentrant in (True, None) else "SigmoidBackward0")
    assert (len(out[1]) == 1) == (use_reentrant is None)  # torch's warning when use_reentrant is not given


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_several_inputs_and_outputs(use_reentrant):
    def run(T, C):
        w = T.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def f(a, scale, b):
            return (a * w).exp() * scale, (a + b).sin(), scale

        a = T.tensor([0.1, 0.2, 0.3], requires_grad=True)
        b = T.tensor([1.0, 2.0, 3.0])
        p, q, s = C.checkpoint(f, a, 3, b, use_reentrant=use_reentrant)
        (p.sum() + (q * q).sum()).backward()
        return p, q, s, a.grad, w.grad, b.grad
    same(run)


def test_reentrant_input_without_grad_gives_no_graph():
    """torch's reentrant checkpoint records nothing when no input requires grad, even with parameters inside."""
    def run(T, C):
        lin = T.nn.Linear(2, 1)
        y = C.checkpoint(lin, T.ones(3, 2), use_reentrant=True)
        z = C.checkpoint(lin, T.ones(3, 2), use_reentrant=False)
        z.sum().backward()
        return y.requires_grad, z.requires_grad, lin.weight.grad
    out = same(run)
    assert out[0][:2] == [False, True]
    assert "None of the inputs have requires_grad=True. Gradients will be None" in out[1]


def test_non_reentrant_kwargs_and_autograd_grad():
    def run(T, C):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = C.checkpoint(lambda v, *, k: (v ** 3 * k).sum(), x, k=2.0, use_reentrant=False)
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        return y, g, gg
    same(run)


def test_errors():
    def run(T, C):
        msgs = []
        for case in (lambda: C.checkpoint(lambda v, k: v, T.ones(1), k=1, use_reentrant=True),
                     lambda: C.checkpoint_sequential([T.nn.Identity()], 1, T.ones(1), use_reentrant=True, k=1)):
            try:
                case()
            except ValueError as e:
                msgs.append(str(e))
        return msgs
    assert len(same(run)[0]) == 2


@pytest.mark.parametrize("segments,use_reentrant", [(1, True), (2, True), (3, False), (2, None)])
def test_checkpoint_sequential(segments, use_reentrant):
    def run(T, C):
        model = block(T)
        x = T.randn(4, 3, requires_grad=True)
        y = C.checkpoint_sequential(model, segments, x, use_reentrant=use_reentrant)
        y.sum().backward()
        layers = list(model.children())
        y2 = C.checkpoint_sequential(layers, segments, x.detach(), use_reentrant=use_reentrant)
        return y, y2, grads(T, model, x), T.randn(1)
    same(run)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_same_bits_as_without_checkpoint(use_reentrant):
    """In symgrad the checkpointed run (the reentrant recomputation included) is the plain run, bit for bit."""
    def run(wrap):
        model = block(sg)
        x = sg.randn(5, 3, requires_grad=True)
        y = wrap(model, x)
        (y * sg.arange(10.0).reshape(5, 2)).sum().backward()
        return plain([y, sg.randn(2), grads(sg, model, x)])

    plain_run = run(lambda m, x: m(x))
    checked = run(lambda m, x: sckpt.checkpoint(m, x, use_reentrant=use_reentrant))
    assert checked[0][:3] == plain_run[0][:3] and checked[1:] == plain_run[1:]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_traced_checkpoint_is_the_function(use_reentrant):
    """Under sg.grad / sg.func.grad / sg.compile the checkpoint computes its function (no recomputation)."""
    def body(v):
        return (v.sin() * v).sum()

    def f(x):
        return sckpt.checkpoint(body, x, use_reentrant=use_reentrant)

    x = sg.tensor([1.0, 2.0, -0.5], dtype=sg.float64)
    assert sg.grad(f)(x).tolist() == sg.grad(body)(x).tolist()
    assert sg.func.grad(f)(x).tolist() == sg.func.grad(body)(x).tolist()
    assert sg.compile(f)(x).item() == body(x).item()


def test_reentrant_without_preserving_the_random_state():
    """preserve_rng_state=False: the recomputation draws a new dropout mask from the stream, as torch's does."""
    def run(T, C):
        model = block(T)
        x = T.randn(5, 3, requires_grad=True)
        y = C.checkpoint(model, x, use_reentrant=True, preserve_rng_state=False)
        y.sum().backward()
        return y, grads(T, model, x), T.randn(2)
    same(run)
