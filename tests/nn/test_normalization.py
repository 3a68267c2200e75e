"""``LayerNorm`` / ``RMSNorm`` / ``GroupNorm`` / ``BatchNorm1d-3d`` and their functional forms
against torch 2.13: outputs, grad_fn names, input and parameter gradients (float64 to rtol 1e-12, float32 to the
conftest tolerance: torch's CPU kernels sum the moments in another order), running statistics and
``num_batches_tracked`` through training and eval steps, reprs and ``state_dict``."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error

import symgrad as sg

RNG = np.random.default_rng(11)
X2 = RNG.standard_normal((6, 4)) * 2 + 1
X3 = RNG.standard_normal((4, 6, 5)) + 0.5
X4 = RNG.standard_normal((3, 4, 3, 2)) * 1.5
X5 = RNG.standard_normal((2, 3, 2, 2, 3))
UP = {a.shape: RNG.standard_normal(a.shape) for a in (X2, X3, X4, X5)}


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {}


def _copy_state(smod, tmod) -> None:
    sd = {k: sg.tensor(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()}
    assert repr(smod.load_state_dict(sd)) == "<All keys matched successfully>"


def _perturb(tmod) -> None:
    """Non-trivial affine parameters (torch's init is ones / zeros)."""
    with torch.no_grad():
        for p in tmod.parameters():
            p.add_(torch.tensor(RNG.standard_normal(tuple(p.shape)) * 0.3, dtype=p.dtype))


def _check_step(smod, tmod, x: np.ndarray, dtype: str, what: str) -> None:
    td = getattr(torch, dtype)
    tx = torch.tensor(x, dtype=td, requires_grad=True)
    sx = sg.tensor(x, dtype=getattr(sg, dtype), requires_grad=True)
    ty, sy = tmod(tx), smod(sx)
    assert_close(sy, ty, what=f"{what} output", **_tol(dtype))
    assert sy.grad_fn.name() == ty.grad_fn.name()
    up = UP[x.shape]
    ty.backward(torch.tensor(up, dtype=td))
    sy.backward(sg.tensor(up, dtype=getattr(sg, dtype)))
    assert_close(sx.grad, tx.grad, what=f"{what} input grad", **_tol(dtype))
    for (n, sp), (_, tp) in zip(smod.named_parameters(), tmod.named_parameters()):
        assert_close(sp.grad, tp.grad, what=f"{what} {n}.grad", **_tol(dtype))
    for (n, sb), (_, tb) in zip(smod.named_buffers(), tmod.named_buffers()):
        assert_close(sb, tb, what=f"{what} buffer {n}", **_tol(dtype))


LN_CASES = [
    ("LayerNorm", lambda nn: nn.LayerNorm(5), X3),
    ("LayerNorm 2 dims", lambda nn: nn.LayerNorm([6, 5], eps=1e-3), X3),
    ("LayerNorm no affine", lambda nn: nn.LayerNorm(4, elementwise_affine=False), X2),
    ("LayerNorm no bias", lambda nn: nn.LayerNorm((3, 2), bias=False), X4),
    ("RMSNorm", lambda nn: nn.RMSNorm(5), X3),
    ("RMSNorm 2 dims eps", lambda nn: nn.RMSNorm([6, 5], eps=1e-3), X3),
    ("RMSNorm no affine", lambda nn: nn.RMSNorm(4, elementwise_affine=False), X2),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), X4),
    ("GroupNorm 3-d", lambda nn: nn.GroupNorm(3, 6, eps=1e-3), X3),
    ("GroupNorm no affine", lambda nn: nn.GroupNorm(1, 6, affine=False), X3),
    ("GroupNorm no bias", lambda nn: nn.GroupNorm(4, 4, bias=False), X4),
    ("GroupNorm 2-d", lambda nn: nn.GroupNorm(1, 4), X2),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,make,x", LN_CASES, ids=[c[0] for c in LN_CASES])
def test_layer_and_group_norm_match_torch(name, make, x, dtype):
    tmod, smod = make(torch.nn).to(getattr(torch, dtype)), make(sg.nn).to(getattr(sg, dtype))
    assert repr(smod) == repr(tmod)
    assert list(smod.state_dict()) == list(tmod.state_dict())
    for (n, sp), (_, tp) in zip(smod.named_parameters(), tmod.named_parameters()):
        assert_close(sp, tp, rtol=0, atol=0, what=n)  # ones / zeros
    _perturb(tmod)
    _copy_state(smod, tmod)
    _check_step(smod, tmod, x, dtype, name)


BN_CASES = [
    ("BatchNorm1d 2-d", lambda nn: nn.BatchNorm1d(4), X2),
    ("BatchNorm1d 3-d", lambda nn: nn.BatchNorm1d(6, momentum=0.3, eps=1e-3), X3),
    ("BatchNorm1d cumulative", lambda nn: nn.BatchNorm1d(4, momentum=None), X2),
    ("BatchNorm1d no affine", lambda nn: nn.BatchNorm1d(6, affine=False), X3),
    ("BatchNorm1d untracked", lambda nn: nn.BatchNorm1d(4, track_running_stats=False), X2),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(4), X4),
    ("BatchNorm2d no bias", lambda nn: nn.BatchNorm2d(4, bias=False), X4),
    ("BatchNorm3d", lambda nn: nn.BatchNorm3d(3), X5),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,make,x", BN_CASES, ids=[c[0] for c in BN_CASES])
def test_batch_norm_train_and_eval_match_torch(name, make, x, dtype):
    tmod, smod = make(torch.nn).to(getattr(torch, dtype)), make(sg.nn).to(getattr(sg, dtype))
    assert repr(smod) == repr(tmod)
    assert list(smod.state_dict()) == list(tmod.state_dict())
    _perturb(tmod)
    _copy_state(smod, tmod)
    for step in range(3):  # the running statistics move with each training step
        _check_step(smod, tmod, x * (1 + 0.5 * step) + step, dtype, f"{name} train {step}")
    if tmod.track_running_stats:
        assert int(smod.num_batches_tracked) == int(tmod.num_batches_tracked) == 3
        assert smod.num_batches_tracked.dtype == sg.int64
    tmod.eval()
    smod.eval()
    _check_step(smod, tmod, x * 0.7 - 0.2, dtype, f"{name} eval")
    smod.reset_running_stats()
    tmod.reset_running_stats()
    for (n, sb), (_, tb) in zip(smod.named_buffers(), tmod.named_buffers()):
        assert_close(sb, tb, rtol=0, atol=0, what=n)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_functional_forms(dtype):
    td, sd = getattr(torch, dtype), getattr(sg, dtype)
    tx, sx = torch.tensor(X3, dtype=td, requires_grad=True), sg.tensor(X3, dtype=sd, requires_grad=True)
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    tw, sw = torch.tensor(w, dtype=td, requires_grad=True), sg.tensor(w, dtype=sd, requires_grad=True)
    tb, sb = torch.tensor(b, dtype=td), sg.tensor(b, dtype=sd)
    trm, srm = torch.zeros(6, dtype=td), sg.zeros(6, dtype=sd)
    trv, srv = torch.ones(6, dtype=td) * 2, sg.ones(6, dtype=sd) * 2
    pairs = [
        (torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training=True, momentum=0.2),
         sg.nn.functional.batch_norm(sx, srm, srv, sw, sb, training=True, momentum=0.2)),
        (torch.nn.functional.batch_norm(tx, trm, trv, tw, None), sg.nn.functional.batch_norm(sx, srm, srv, sw, None)),
        (torch.nn.functional.batch_norm(tx, None, None, training=True),
         sg.nn.functional.batch_norm(sx, None, None, training=True)),
        (torch.nn.functional.layer_norm(tx, (5,)), sg.nn.functional.layer_norm(sx, (5,))),
        (torch.nn.functional.group_norm(tx, 3, tw, tb), sg.nn.functional.group_norm(sx, 3, sw, sb)),
    ]
    for i, (t, s) in enumerate(pairs):
        assert_close(s, t, what=f"case {i}", **_tol(dtype))
        assert s.grad_fn.name() == t.grad_fn.name()
    assert_close(srm, trm, **_tol(dtype))
    assert_close(srv, trv, **_tol(dtype))
    sum(t.sum() * (k + 1) for k, (t, _) in enumerate(pairs)).backward()
    sum(s.sum() * (k + 1) for k, (_, s) in enumerate(pairs)).backward()
    assert_close(sx.grad, tx.grad, rtol=1e-10 if dtype == "float64" else 1e-4, atol=1e-10 if dtype == "float64"
                 else 1e-4)
    assert_close(sw.grad, tw.grad, **_tol(dtype))


def test_double_backward_through_layer_norm():
    x = RNG.standard_normal((3, 4))
    tx, sx = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    (tg,) = torch.autograd.grad((torch.nn.functional.layer_norm(tx, (4,)) ** 3).sum(), tx, create_graph=True)
    (sgr,) = sg.autograd.grad((sg.nn.functional.layer_norm(sx, (4,)) ** 3).sum(), sx, create_graph=True)
    assert_close(sgr, tg, rtol=1e-10, atol=1e-12)
    tg.pow(2).sum().backward()
    sgr.pow(2).sum().backward()
    assert_close(sx.grad, tx.grad, rtol=1e-9, atol=1e-10)


def _x(t, shape):
    return t.ones(*shape)


@pytest.mark.parametrize("fn", [
    lambda t: t.nn.functional.layer_norm(_x(t, (4, 3, 5)), (6,)),
    lambda t: t.nn.functional.layer_norm(_x(t, (4, 3, 5)), (3, 5), weight=t.ones(4)),
    lambda t: t.nn.functional.rms_norm(_x(t, (4, 3, 5)), (4, 5)),
    lambda t: t.nn.functional.rms_norm(_x(t, (4, 3, 5)), (5,), weight=t.ones(4)),
    lambda t: t.nn.functional.group_norm(_x(t, (4, 3, 5)), 2),
    lambda t: t.nn.functional.group_norm(_x(t, (3,)), 1),
    lambda t: t.nn.functional.batch_norm(_x(t, (1, 3)), None, None, training=True),
    lambda t: t.nn.functional.batch_norm(_x(t, (2, 3)), None, None),
    lambda t: t.nn.functional.batch_norm(_x(t, (2, 3)), t.zeros(4), t.ones(4)),
    lambda t: t.nn.functional.batch_norm(_x(t, (2, 3)), None, None, training=True, eps=0.0),
    lambda t: t.nn.functional.batch_norm(_x(t, (3,)), None, None, training=True),
    lambda t: t.nn.functional.batch_norm(_x(t, (2, 3)), t.zeros(3), t.ones(3), weight=t.ones(4)),
    lambda t: t.nn.BatchNorm1d(3)(_x(t, (2, 3, 4, 5))),
    lambda t: t.nn.BatchNorm2d(3)(_x(t, (2, 3, 4))),
    lambda t: t.nn.GroupNorm(2, 3),
], ids=["ln shape", "ln weight", "rms shape", "rms weight", "gn groups", "gn 1-d", "bn batch 1", "bn eval no stats",
        "bn stats size", "bn eps", "bn 1-d", "bn weight size", "bn1d dims", "bn2d dims", "gn module"])
def test_errors_match_torch(fn):
    assert_same_error(lambda: fn(sg), lambda: fn(torch))


def test_batchnorm_old_checkpoint_and_seeded_model():
    """A checkpoint without ``num_batches_tracked`` (version 1) loads; a seeded model with normalisation layers
    trains like torch's for two SGD steps."""
    sm = sg.nn.BatchNorm1d(3)
    sd = {k: sg.tensor(v.numpy()) for k, v in torch.nn.BatchNorm1d(3).state_dict().items()
          if k != "num_batches_tracked"}
    sd = type(sm.state_dict())(sd)
    sd._metadata = {"": {"version": 1}}
    assert repr(sm.load_state_dict(sd)) == "<All keys matched successfully>"

    def build(t):
        t.manual_seed(0)
        return t.nn.Sequential(t.nn.Linear(4, 6), t.nn.BatchNorm1d(6), t.nn.ReLU(), t.nn.LayerNorm(6),
                               t.nn.Linear(6, 1))
    tm, sm = build(torch), build(sg)
    x, y = RNG.standard_normal((8, 4)).astype(np.float32), RNG.standard_normal((8, 1)).astype(np.float32)
    for _ in range(2):
        for m, t in ((tm, torch), (sm, sg)):  # plain SGD (torch.optim's first step imports torch._dynamo: seconds)
            m.zero_grad()
            t.nn.functional.mse_loss(m(t.tensor(x)), t.tensor(y)).backward()
            with t.no_grad():
                for p in m.parameters():
                    p -= 0.1 * p.grad
    for (n, sp), (_, tp) in zip(sm.state_dict().items(), tm.state_dict().items()):
        assert_close(sp, tp, what=n)


def test_compiled_training_step_matches_eager():
    """Through ``functional_call`` and ``sg.value_and_grad`` (one call: the numpy tier), the loss and parameter
    gradients are the eager ones; BatchNorm in training with running statistics refuses to trace."""
    from symgrad.nn.utils import functional_call
    sg.manual_seed(0)
    x, y = sg.tensor(X2[:, :3].astype(np.float32)), sg.tensor(X2[:, 3:].astype(np.float32))
    # (groups of 4 channels: a group of 2 normalises to +-1 whatever its input, and the first layer's gradient
    # is then rounding noise, which eager batch norm's torch bits and the compiled composite round differently)
    layers = [sg.nn.LayerNorm(8), sg.nn.GroupNorm(2, 8), sg.nn.BatchNorm1d(8).eval(),
              sg.nn.BatchNorm1d(8, track_running_stats=False)]
    model = sg.nn.Sequential(sg.nn.Linear(3, 8), *layers, sg.nn.Linear(8, 1))
    params = {k: p.detach().numpy() for k, p in model.named_parameters()}

    def step_loss(p, xb, yb):
        return sg.nn.functional.mse_loss(functional_call(model, p, (xb,)), yb)

    value, grads = sg.value_and_grad(step_loss)(params, x.numpy(), y.numpy())
    loss = sg.nn.functional.mse_loss(model(x), y)
    loss.backward()
    assert_close(value, loss.detach().numpy(), rtol=1e-6)
    for k, p in model.named_parameters():
        assert_close(grads[k], p.grad.numpy(), rtol=1e-5, atol=1e-6, what=k)
    tracked = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.BatchNorm1d(4))
    tp = {k: p.detach().numpy() for k, p in tracked.named_parameters()}
    with pytest.raises(sg.TracingError, match="updates running_mean / running_var in place"):
        sg.value_and_grad(lambda p, xb: functional_call(tracked, p, (xb,)).sum())(tp, x.numpy())
