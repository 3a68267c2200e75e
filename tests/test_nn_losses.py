"""``symgrad.nn.losses`` against ``torch.nn.functional``: values, gradients (of every input that takes one),
grad_fn names, in float32 and float64, for each reduction; compiled, twice differentiated, and torch's errors."""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error, grad_fn_name

import symgrad as sg
from symgrad.nn import losses

TF = torch.nn.functional
REDUCTIONS = ("mean", "sum", "none")
_RNG = np.random.default_rng(7)
_W = _RNG.uniform(0.5, 2.0, (3, 4))
_CW = _RNG.uniform(0.5, 2.0, 4)
_Q = _RNG.uniform(0.0, 1.0, (3, 4))


def _near_kinks(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Values whose differences stay away from the losses' kinks (0 and +-beta / delta)."""
    return rng.uniform(-2.0, 2.0, shape)


#: (name, fn(F, lib, x, y, reduction)): ``x`` and ``y`` are (3, 4) leaves; ``F`` is the losses module
LOSSES: list[tuple[str, Callable[..., Any]]] = [
    ("mse", lambda F, lib, x, y, r: F.mse_loss(x, y, reduction=r)),
    ("mse weight", lambda F, lib, x, y, r: F.mse_loss(x, y, reduction=r, weight=lib.tensor(_W, dtype=x.dtype))),
    ("l1", lambda F, lib, x, y, r: F.l1_loss(x, y, reduction=r)),
    ("l1 weight", lambda F, lib, x, y, r: F.l1_loss(x, y, reduction=r, weight=lib.tensor(_W, dtype=x.dtype))),
    ("smooth_l1", lambda F, lib, x, y, r: F.smooth_l1_loss(x, y, reduction=r)),
    ("smooth_l1 beta", lambda F, lib, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.7)),
    ("huber", lambda F, lib, x, y, r: F.huber_loss(x, y, reduction=r)),
    ("huber delta weight", lambda F, lib, x, y, r: F.huber_loss(x, y, reduction=r, delta=0.8,
                                                                  weight=lib.tensor(_W, dtype=x.dtype))),
    ("bce", lambda F, lib, x, y, r: F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=r)),
    ("bce weight", lambda F, lib, x, y, r: F.binary_cross_entropy(x.sigmoid(), lib.tensor(_Q, dtype=x.dtype),
                                                                  weight=lib.tensor(_W[0], dtype=x.dtype),
                                                                  reduction=r)),
    ("bce_with_logits", lambda F, lib, x, y, r: F.binary_cross_entropy_with_logits(x, y.sigmoid(), reduction=r)),
    ("bce_with_logits pos_weight", lambda F, lib, x, y, r: F.binary_cross_entropy_with_logits(
        x, y.sigmoid(), weight=lib.tensor(_W, dtype=x.dtype), pos_weight=lib.tensor(_CW, dtype=x.dtype),
        reduction=r)),
    ("nll", lambda F, lib, x, y, r: F.nll_loss(x, lib.tensor([0, 3, 1]), reduction=r)),
    ("nll weight ignore", lambda F, lib, x, y, r: F.nll_loss(x, lib.tensor([0, -100, 2]),
                                                             weight=lib.tensor(_CW, dtype=x.dtype), reduction=r)),
    ("nll 1-d", lambda F, lib, x, y, r: F.nll_loss(x[0], lib.tensor(2), reduction=r)),
    ("cross_entropy", lambda F, lib, x, y, r: F.cross_entropy(x, lib.tensor([0, 3, 1]), reduction=r)),
    ("cross_entropy 3-d", lambda F, lib, x, y, r: F.cross_entropy(x.reshape(1, 3, 4), lib.tensor([[0, 1, 2, 2]]),
                                                                  reduction=r)),
    ("nll 4-d", lambda F, lib, x, y, r: F.nll_loss(x.reshape(1, 3, 2, 2), lib.tensor([[[0, 1], [2, 2]]]),
                                                   reduction=r)),
    ("cross_entropy smoothing weight", lambda F, lib, x, y, r: F.cross_entropy(
        x, lib.tensor([0, -100, 2]), weight=lib.tensor(_CW, dtype=x.dtype), label_smoothing=0.2, reduction=r)),
    ("cross_entropy smoothing ignore", lambda F, lib, x, y, r: F.cross_entropy(
        x, lib.tensor([3, 1, 5]), ignore_index=5, label_smoothing=0.1, reduction=r)),
    ("cross_entropy probabilities", lambda F, lib, x, y, r: F.cross_entropy(x, y.softmax(1), reduction=r)),
    ("cross_entropy probabilities smoothing weight", lambda F, lib, x, y, r: F.cross_entropy(
        x, y.softmax(1), weight=lib.tensor(_CW, dtype=x.dtype), label_smoothing=0.1, reduction=r)),
]


def _leaves(lib: Any, dtype: str, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    a, b = _near_kinks(rng, (3, 4)).astype(dtype), _near_kinks(rng, (3, 4)).astype(dtype)
    return lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("name", "fn"), LOSSES, ids=[n for n, _ in LOSSES])
def test_loss_matches_torch(name: str, fn: Callable, reduction: str, dtype: str):
    seed = sum(map(ord, name + reduction))
    x, y = _leaves(sg, dtype, seed)
    tx, ty = _leaves(torch, dtype, seed)
    out = fn(losses, sg, x, y, reduction)
    tout = fn(TF, torch, tx, ty, reduction)
    assert_close(out, tout, what="value")
    assert out.dtype.name == str(tout.dtype).removeprefix("torch.")
    assert grad_fn_name(out) == grad_fn_name(tout)
    g = np.random.default_rng(seed + 1).standard_normal(tuple(tout.shape)).astype(dtype)
    grads = sg.autograd.grad(out, [x, y], sg.tensor(g), allow_unused=True)
    tgrads = torch.autograd.grad(tout, [tx, ty], torch.tensor(g), allow_unused=True)
    for i, (gr, tg) in enumerate(zip(grads, tgrads)):
        if tg is None or gr is None:
            assert (gr is None or not np.any(gr.numpy())) and (tg is None or not tg.abs().sum().item()), i
        else:
            assert_close(gr, tg, what=f"grad of input {i}")


@pytest.mark.parametrize(("name", "fn"), LOSSES[::3], ids=[n for n, _ in LOSSES[::3]])
def test_compiled_loss_and_second_derivative_match_torch(name: str, fn: Callable):
    """``sg.value_and_grad`` (the generated kernel) and the gradient of the gradient's sum (create_graph)."""
    x, y = _leaves(sg, "float64", 3)
    tx, ty = _leaves(torch, "float64", 3)
    value, (gx, gy) = sg.value_and_grad(lambda a, b: fn(losses, sg, a, b, "mean"), argnums=(0, 1))(
        x.detach().numpy(), y.detach().numpy())
    tout = fn(TF, torch, tx, ty, "mean")
    tgx, tgy = torch.autograd.grad(tout, [tx, ty], create_graph=True, allow_unused=True)
    assert_close(np.asarray(value), tout)
    assert_close(gx, tgx)
    if tgy is not None:
        assert_close(gy, tgy)
    out = fn(losses, sg, x, y, "mean")
    (sgx,) = sg.autograd.grad(out, [x], create_graph=True)
    (thx,) = torch.autograd.grad((tgx * tgx).sum(), [tx], allow_unused=True)
    if not sgx.requires_grad:  # a gradient constant in x (nll_loss): symgrad records no graph, torch's is zero
        assert thx is None or not thx.abs().sum().item()
        return
    (hx,) = sg.autograd.grad((sgx * sgx).sum(), [x])
    # second derivatives through log_softmax cancel: rounding differs from torch's rule by ~1e-9 relative
    np.testing.assert_allclose(hx.numpy(), thx.numpy(force=True), rtol=1e-7, atol=1e-12, err_msg="second derivative")


def _error(fn: Callable) -> tuple[type, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("call", [
    lambda F, lib, x: F.mse_loss(x, x, reduction="avg"),
    lambda F, lib, x: F.nll_loss(x, lib.tensor([0.0, 1.0, 2.0])),
    lambda F, lib, x: F.nll_loss(x, lib.tensor([0, 5, 1])),
    lambda F, lib, x: F.nll_loss(x, lib.tensor([0, 1])),
    lambda F, lib, x: F.cross_entropy(x, lib.tensor([0, -1, 1])),
    lambda F, lib, x: F.binary_cross_entropy(x, x.sigmoid()),
    lambda F, lib, x: F.binary_cross_entropy(x.sigmoid(), x[0].sigmoid()),
    lambda F, lib, x: F.binary_cross_entropy_with_logits(x, x[0]),
    lambda F, lib, x: F.mse_loss(x, x, weight=lib.ones(4, dtype=x.dtype)),
], ids=["reduction", "float target", "target out of range", "batch size", "negative target", "bce range",
        "bce size", "bce logits size", "weight size"])
def test_loss_errors_match_torch(call: Callable):
    a = np.random.default_rng(0).standard_normal((3, 4))
    got = _error(lambda: call(losses, sg, sg.tensor(a)))
    want = _error(lambda: call(TF, torch, torch.tensor(a)))
    assert got == want


def test_losses_are_in_nn_functional():
    import symgrad.nn.functional as F
    for name in losses.__all__:
        assert getattr(F, name) is getattr(losses, name)


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.1, "ignore_index": 2}], ids=["plain", "smoothing"])
def test_class_targets_can_be_arguments_of_compiled_functions(kw: dict):
    """A target traced as an argument: one kernel for every target (the one-hot selection reads it)."""
    a = np.random.default_rng(5).standard_normal((4, 3))
    f = sg.value_and_grad(lambda x, t: losses.cross_entropy(x, t, **kw))
    for target in ([0, 2, 1, 1], [2, 2, 0, 1]):
        value, grad = f(a, np.array(target))
        tx = torch.tensor(a, requires_grad=True)
        tv = TF.cross_entropy(tx, torch.tensor(target), **kw)
        tv.backward()
        assert_close(np.asarray(value), tv)
        assert_close(grad, tx.grad)


_RNG_MARGIN = np.random.default_rng(11)
_A, _B, _C = (_RNG_MARGIN.standard_normal((5, 3)) for _ in range(3))
_Y = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
_SIGN = np.sign(_RNG_MARGIN.standard_normal((5, 3)))

MARGIN_CALLS = [
    ("margin_ranking_loss", lambda F, t, kw, a, b, c: F.margin_ranking_loss(a[:, 0], b[:, 0], t(_Y), margin=0.2, **kw)),
    ("hinge_embedding_loss", lambda F, t, kw, a, b, c: F.hinge_embedding_loss(a, t(_SIGN), margin=0.5, **kw)),
    ("soft_margin_loss", lambda F, t, kw, a, b, c: F.soft_margin_loss(a, t(_SIGN), **kw)),
    ("cosine_embedding_loss", lambda F, t, kw, a, b, c: F.cosine_embedding_loss(a, b, t(_Y), margin=0.1, **kw)),
    ("cosine_embedding_loss 1d", lambda F, t, kw, a, b, c: F.cosine_embedding_loss(a[0], b[0], t(1.0) * -1, **kw)),
    ("triplet_margin_loss", lambda F, t, kw, a, b, c: F.triplet_margin_loss(a, b, c, **kw)),
    ("triplet_margin_loss p1 swap", lambda F, t, kw, a, b, c: F.triplet_margin_loss(a, b, c, margin=0.5, p=1, swap=True,
                                                                                **kw)),
    ("gaussian_nll_loss", lambda F, t, kw, a, b, c: F.gaussian_nll_loss(a, b, c * c, **kw)),
    ("gaussian_nll_loss full var per row",
     lambda F, t, kw, a, b, c: F.gaussian_nll_loss(a, b, (c * c)[:, :1], full=True, **kw)),
    ("poisson_nll_loss", lambda F, t, kw, a, b, c: F.poisson_nll_loss(a, b.abs(), **kw)),
    ("poisson_nll_loss full", lambda F, t, kw, a, b, c: F.poisson_nll_loss(a.abs() + 0.1, b.abs() * 3, log_input=False,
                                                                       full=True, **kw)),
    ("pairwise_distance", lambda F, t, kw, a, b, c: F.pairwise_distance(a, b, p=3.0, keepdim=True)),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,call", MARGIN_CALLS, ids=[n for n, _ in MARGIN_CALLS])
def test_margin_and_likelihood_losses_match_torch(name, call, dtype, reduction):
    """Values, grad_fn names and the gradients of every input, each reduction, float32 and float64."""
    kw = {} if name == "pairwise_distance" else {"reduction": reduction}
    tens = [torch.tensor(v.astype(dtype), requires_grad=True) for v in (_A, _B, _C)]
    sgs = [sg.tensor(v.astype(dtype), requires_grad=True) for v in (_A, _B, _C)]
    out_t = call(torch.nn.functional, lambda v: torch.tensor(v, dtype=getattr(torch, dtype)), kw, *tens)
    out_s = call(sg.nn.functional, lambda v: sg.tensor(v, dtype=getattr(sg, dtype)), kw, *sgs)
    assert_close(out_s, out_t.detach())
    assert out_s.grad_fn.name() == out_t.grad_fn.name()
    out_t.sum().backward()
    out_s.sum().backward()
    for s, t in zip(sgs, tens):
        if t.grad is not None:
            assert_close(s.grad, t.grad)


def test_margin_loss_modules_and_errors_match_torch():
    for make in (lambda nn: nn.MarginRankingLoss(0.5), lambda nn: nn.TripletMarginLoss(swap=True),
                 lambda nn: nn.CosineEmbeddingLoss(), lambda nn: nn.HingeEmbeddingLoss(),
                 lambda nn: nn.SoftMarginLoss(), lambda nn: nn.GaussianNLLLoss(full=True),
                 lambda nn: nn.PoissonNLLLoss(log_input=False), lambda nn: nn.PairwiseDistance(),
                 lambda nn: nn.CosineSimilarity(dim=0)):
        assert repr(make(sg.nn)) == repr(make(torch.nn))
    a = np.ones((2, 3))
    assert_same_error(lambda: sg.nn.functional.margin_ranking_loss(sg.tensor(a), sg.tensor(a[0]), sg.tensor(a)),
                      lambda: torch.nn.functional.margin_ranking_loss(torch.tensor(a), torch.tensor(a[0]),
                                                                      torch.tensor(a)))
    assert_same_error(lambda: sg.nn.functional.gaussian_nll_loss(sg.tensor(a), sg.tensor(a), sg.tensor(-a)),
                      lambda: torch.nn.functional.gaussian_nll_loss(torch.tensor(a), torch.tensor(a),
                                                                    torch.tensor(-a)))
    assert_same_error(lambda: sg.nn.functional.cosine_embedding_loss(sg.tensor(a), sg.tensor(a), sg.tensor(a)),
                      lambda: torch.nn.functional.cosine_embedding_loss(torch.tensor(a), torch.tensor(a),
                                                                        torch.tensor(a)))
    assert_same_error(lambda: sg.nn.TripletMarginLoss(margin=0), lambda: torch.nn.TripletMarginLoss(margin=0))
    x, y = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0.5, 2, 6).reshape(2, 3)
    assert_close(sg.nn.CosineSimilarity(0)(sg.tensor(x), sg.tensor(y)),
                 torch.nn.CosineSimilarity(0)(torch.tensor(x), torch.tensor(y)))


def _class_target_errors(lib) -> list:
    F = lib.nn.functional
    seen = []
    cases = [
        ("ce", lib.zeros(3, 4), lib.tensor([0.0, 1.0, 2.0]), {}),
        ("ce", lib.zeros(3, 4), lib.tensor([0.0, 1.0, 2.0]), {"label_smoothing": 0.1}),
        ("ce", lib.zeros(3, 4), lib.tensor([0, 1, 2], dtype=lib.int32), {}),
        ("ce", lib.zeros(3, 4), lib.zeros(3, 5), {}),
        ("ce", lib.zeros(3, 3), lib.zeros(3, 3, dtype=lib.int64), {}),
        ("ce", lib.zeros(1), lib.tensor([0]), {}),
        ("ce", lib.tensor(1.0), lib.tensor(0), {}),
        ("nll", lib.zeros(3, 4), lib.tensor([0, 1, 2], dtype=lib.int16), {}),
        ("nll", lib.zeros(3, 4), lib.tensor([0, 1, 2], dtype=lib.uint8), {}),
        ("nll", lib.zeros(3, 4), lib.tensor([True, False, True]), {}),
        ("nll", lib.zeros(3, 4), lib.tensor([0.0, 1.0]), {}),
        ("nll", lib.zeros(3, 4), lib.zeros(3, 5), {}),
        ("nll", lib.zeros(3, 4, 5), lib.zeros(3, 5, dtype=lib.int32), {}),
        ("nll", lib.zeros(3, 4, 5), lib.zeros(3, 5, 2, dtype=lib.int64), {}),
        ("nll", lib.zeros(4), lib.tensor(1, dtype=lib.int32), {}),
        ("nll", lib.zeros(4), lib.zeros(1, 1, dtype=lib.int64), {}),
        ("nll", lib.zeros(3, 4), lib.tensor(1), {}),
    ]
    for name, x, t, kw in cases:
        fn = F.cross_entropy if name == "ce" else F.nll_loss
        try:
            seen.append(round(fn(x, t, **kw).item(), 4))
        except (RuntimeError, ValueError, IndexError) as err:
            seen.append((type(err).__name__, str(err)))
    return seen


def test_class_target_checks_in_torchs_order():
    assert _class_target_errors(sg) == _class_target_errors(torch)
