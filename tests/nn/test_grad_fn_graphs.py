"""The autograd graph torch shows for nn layers and losses (``grad_fn.next_functions``, node hooks' ``grad_inputs``):
symgrad's composites show torch's one node with torch's inputs (``eager.autograd.set_edges``), not their inner nodes."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import symgrad as sg
import symgrad.nn.functional as sF


def shape_of(fn, depth: int = 3) -> list:
    """A grad_fn's class name and, ``depth`` levels down, its ``next_functions`` (None entries as None)."""
    if fn is None:
        return None
    kids = [shape_of(f, depth - 1) for f, _ in fn.next_functions] if depth else []
    return [type(fn).__name__, kids]


def both(build):
    """``build(lib, F, leaf)`` under torch and under symgrad, ``leaf(*shape, grad=True)`` giving both the same
    values: the two graphs."""
    graphs = []
    for lib, F in ((torch, tF), (sg, sF)):
        rng = np.random.default_rng(0)

        def leaf(*shape, grad=True, lib=lib, rng=rng):
            t = lib.tensor(rng.standard_normal(shape).astype(np.float32))
            return t.requires_grad_() if grad else t
        lib.manual_seed(0)
        graphs.append(shape_of(build(lib, F, leaf).grad_fn))
    return graphs


def _tgt(lib):
    return lib.tensor([0, 2, 1, 0])


CASES = {
    "linear": lambda lib, F, L: lib.nn.Linear(3, 2)(L(4, 3)),
    "linear_input_no_grad": lambda lib, F, L: lib.nn.Linear(3, 2)(L(4, 3, grad=False)),
    "linear_vector": lambda lib, F, L: lib.nn.Linear(3, 2)(L(3)),
    "linear_batch": lambda lib, F, L: lib.nn.Linear(3, 2)(L(2, 2, 3)),
    "linear_4d": lambda lib, F, L: lib.nn.Linear(3, 2)(L(2, 1, 2, 3)),
    "linear_no_bias": lambda lib, F, L: lib.nn.Linear(3, 2, bias=False)(L(4, 3)),
    "linear_no_bias_vector": lambda lib, F, L: lib.nn.Linear(3, 2, bias=False)(L(3)),
    "linear_no_bias_batch": lambda lib, F, L: lib.nn.Linear(3, 2, bias=False)(L(2, 2, 3)),
    "mse": lambda lib, F, L: F.mse_loss(L(4, 3), L(4, 3, grad=False)),
    "mse_sum_target_grad": lambda lib, F, L: F.mse_loss(L(4, 3), L(4, 3), reduction="sum"),
    "mse_none": lambda lib, F, L: F.mse_loss(L(4, 3), L(4, 3, grad=False), reduction="none"),
    "nll": lambda lib, F, L: F.nll_loss(L(4, 3), _tgt(lib)),
    "nll_weight_sum": lambda lib, F, L: F.nll_loss(L(4, 3), _tgt(lib), weight=lib.ones(3), reduction="sum"),
    "nll_none": lambda lib, F, L: F.nll_loss(L(4, 3), _tgt(lib), reduction="none"),
    "cross_entropy": lambda lib, F, L: F.cross_entropy(lib.nn.Linear(3, 3)(L(4, 3)), _tgt(lib)),
    "bce": lambda lib, F, L: F.binary_cross_entropy(lib.sigmoid(L(4, 3)), lib.full((4, 3), 0.25)),
    "bce_logits": lambda lib, F, L: F.binary_cross_entropy_with_logits(L(4, 3), lib.full((4, 3), 0.25),
                                                                        pos_weight=lib.ones(3)),
    "smooth_l1": lambda lib, F, L: F.smooth_l1_loss(L(4, 3), L(4, 3, grad=False)),
    "huber": lambda lib, F, L: F.huber_loss(L(4, 3), L(4, 3, grad=False)),
    "layer_norm": lambda lib, F, L: lib.nn.LayerNorm(3)(L(4, 3)),
    "layer_norm_plain": lambda lib, F, L: F.layer_norm(L(4, 3), (3,)),
    "batch_norm": lambda lib, F, L: lib.nn.BatchNorm1d(3)(L(4, 3)),
    "group_norm": lambda lib, F, L: lib.nn.GroupNorm(1, 4)(L(1, 4, 3)),
    "conv2d": lambda lib, F, L: lib.nn.Conv2d(1, 2, 2)(L(1, 1, 4, 3)),
    "conv1d_no_bias": lambda lib, F, L: lib.nn.Conv1d(4, 2, 2, bias=False)(L(1, 4, 3)),
    "conv_transpose1d": lambda lib, F, L: lib.nn.ConvTranspose1d(4, 2, 2)(L(1, 4, 3)),
    "max_pool2d": lambda lib, F, L: F.max_pool2d(L(1, 1, 4, 4), 2),
    "avg_pool2d": lambda lib, F, L: F.avg_pool2d(L(1, 1, 4, 4), 2),
    "embedding": lambda lib, F, L: lib.nn.Embedding(5, 2)(_tgt(lib)),
    "glu": lambda lib, F, L: F.glu(L(4, 2)),
    "prelu": lambda lib, F, L: lib.nn.PReLU()(L(4, 3)),
    "interpolate": lambda lib, F, L: F.interpolate(L(1, 1, 2, 2), scale_factor=2),
    "cross_entropy_probs": lambda lib, F, L: F.cross_entropy(L(4, 3), lib.softmax(L(4, 3, grad=False), 1)),
    "cross_entropy_smoothing": lambda lib, F, L: F.cross_entropy(L(4, 3), _tgt(lib), label_smoothing=0.1),
    "cross_entropy_smoothing_sum": lambda lib, F, L: F.cross_entropy(L(4, 3), _tgt(lib), label_smoothing=0.1,
                                                                     reduction="sum"),
    "soft_margin": lambda lib, F, L: F.soft_margin_loss(L(4, 3), lib.ones(4, 3)),
    "multi_margin": lambda lib, F, L: F.multi_margin_loss(L(4, 3), _tgt(lib), weight=lib.ones(3)),
    "multilabel_margin": lambda lib, F, L: F.multilabel_margin_loss(L(4, 3), lib.tensor([[0, 1, -1]] * 4)),
    "rms_norm": lambda lib, F, L: lib.nn.RMSNorm(3)(L(4, 3)),
    "pairwise_distance": lambda lib, F, L: F.pairwise_distance(L(4, 3), L(4, 3, grad=False)),
    "cosine_similarity": lambda lib, F, L: F.cosine_similarity(L(4, 3), L(4, 3)),
    "norm": lambda lib, F, L: L(2, 3).norm(),
    "vector_norm": lambda lib, F, L: lib.linalg.vector_norm(L(2, 3), 3, dim=1),
    "dist": lambda lib, F, L: lib.dist(L(2, 3), L(2, 3, grad=False)),
    "cdist": lambda lib, F, L: lib.cdist(L(2, 3), L(4, 3)),
    "mlp": lambda lib, F, L: F.mse_loss(lib.nn.Linear(4, 1)(lib.relu(lib.nn.Linear(3, 4)(L(5, 3)))),
                                        L(5, 1, grad=False)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_is_torchs(name):
    got_torch, got_sg = both(CASES[name])
    assert got_sg == got_torch


def test_node_hook_sees_torchs_grad_inputs():
    """A hook on a composite's grad_fn gets one gradient per torch input (AddmmBackward0: bias, input, weight.t())."""
    seen = {}
    for lib in (torch, sg):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2)
        x = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        y = lin(x)
        got = []
        y.grad_fn.register_hook(lambda gi, go, got=got: got.append([None if g is None else g.detach().numpy()
                                                                    for g in gi]))
        loss = tF.mse_loss(y, torch.zeros(4, 2)) if lib is torch else sF.mse_loss(y, sg.zeros(4, 2))
        got_loss = []
        loss.grad_fn.register_hook(lambda gi, go, got=got_loss: got.append([None if g is None else g.detach().numpy()
                                                                            for g in gi]))
        loss.backward()
        seen[lib.__name__] = (got[0], got_loss[0], lin.weight.grad.numpy(), lin.bias.grad.numpy())
    (t_lin, t_loss, t_w, t_b), (s_lin, s_loss, s_w, s_b) = seen["torch"], seen["symgrad"]
    assert [g is None for g in s_lin] == [g is None for g in t_lin] == [False, True, False]
    assert [g is None for g in s_loss] == [g is None for g in t_loss] == [False, True]
    for a, b in zip(s_lin + s_loss, t_lin + t_loss):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s_w, t_w, rtol=1e-6)
    np.testing.assert_allclose(s_b, t_b, rtol=1e-6)


def test_a_hook_replacing_grad_inputs_changes_what_flows_on():
    """The grad_inputs a hook returns are what the backward continues with, per torch input."""
    out = {}
    for lib in (torch, sg):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2)
        y = lin(lib.ones(1, 3))
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, gi[1], gi[2]))
        y.sum().backward()
        out[lib.__name__] = (lin.bias.grad.numpy(), lin.weight.grad.numpy())
    for a, b in zip(out["symgrad"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
