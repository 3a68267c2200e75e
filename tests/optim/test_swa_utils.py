"""``optim.swa_utils`` against torch 2.13: SWA / EMA averages bit for bit (default, ``avg_fn``, ``multi_avg_fn``,
``use_buffers``), ``n_averaged`` and state_dict keys, ``SWALR``'s rates (cos / linear, several groups,
``anneal_epochs=0``), ``update_bn``'s statistics, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.optim.swa_utils as tswa

import symgrad as sg
import symgrad.optim.swa_utils as sswa

NP = {torch: {np.float32: torch.float32, np.float64: torch.float64},
      sg: {np.float32: sg.float32, np.float64: sg.float64}}


def _models(lib, dtype):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2)).to(NP[lib][dtype])


def _snapshots(n: int, model) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(1)
    return [[rng.standard_normal(tuple(p.shape)) for p in model.parameters()] for _ in range(n)]


def _run(lib, mod, dtype, snaps, set_buffers: bool = False, **kw):
    model = _models(lib, dtype)
    avg = mod.AveragedModel(model, **kw)
    for snap in snaps:
        with lib.no_grad():
            for p, v in zip(model.parameters(), snap):
                p.copy_(lib.tensor(v.astype(dtype)))
            if set_buffers:  # the running statistics as a BatchNorm step would leave them
                bn = model[1]
                bn.running_mean.copy_(lib.tensor(snap[1][:4].astype(dtype)))
                bn.running_var.copy_(lib.tensor(np.abs(snap[0][:, 0]).astype(dtype)))
                bn.num_batches_tracked.add_(3)
        avg.update_parameters(model)
    return avg


def _same_state(a, b) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert str(sa[k].dtype) == str(sb[k].dtype), k
        assert np.array_equal(sa[k].numpy(), sb[k].numpy()), k


# float64 ``lerp_`` is one fused multiply-add in torch, which numpy cannot do in float64: the multi (lerp) kinds are
# bit-compared in float32 and compared to 1e-15 in float64 (test_float64_multi_close)
_KINDS = [(k, d) for k in ("swa", "swa_avg_fn", "ema_avg_fn") for d in (np.float32, np.float64)]
_KINDS += [(k, np.float32) for k in ("swa_multi", "ema_multi", "ema_buffers")]


@pytest.mark.parametrize("kind,dtype", _KINDS)
def test_averages_bit_identical(kind: str, dtype: type) -> None:
    snaps = _snapshots(6, _models(torch, dtype))

    def kw(mod):
        return {"swa": {}, "swa_avg_fn": {"avg_fn": mod.get_swa_avg_fn()},
                "ema_avg_fn": {"avg_fn": mod.get_ema_avg_fn(0.8)},
                "swa_multi": {"multi_avg_fn": mod.get_swa_multi_avg_fn()},
                "ema_multi": {"multi_avg_fn": mod.get_ema_multi_avg_fn(0.7)},
                "ema_buffers": {"multi_avg_fn": mod.get_ema_multi_avg_fn(0.9), "use_buffers": True}}[kind]
    t = _run(torch, tswa, dtype, snaps, set_buffers=True, **kw(tswa))
    s = _run(sg, sswa, dtype, snaps, set_buffers=True, **kw(sswa))
    _same_state(t, s)
    assert int(s.n_averaged) == 6


def test_float64_multi_close() -> None:
    snaps = _snapshots(5, _models(torch, np.float64))
    t = _run(torch, tswa, np.float64, snaps, multi_avg_fn=tswa.get_ema_multi_avg_fn(0.7))
    s = _run(sg, sswa, np.float64, snaps, multi_avg_fn=sswa.get_ema_multi_avg_fn(0.7))
    for (k, a), b in zip(t.state_dict().items(), s.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-15, atol=1e-15, err_msg=k)


def test_repr_keys_and_forward() -> None:
    t = tswa.AveragedModel(_models(torch, np.float32))
    s = sswa.AveragedModel(_models(sg, np.float32))
    assert repr(t) == repr(s)
    assert list(t.state_dict()) == list(s.state_dict())
    assert repr(s.n_averaged) == "tensor(0)"
    x = np.ones((2, 3), np.float32)
    t.eval()
    s.eval()
    assert np.array_equal(t(torch.tensor(x)).detach().numpy(), s(sg.tensor(x)).detach().numpy())


def test_errors() -> None:
    m = _models(sg, np.float32)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        sswa.AveragedModel(m, avg_fn=sswa.get_swa_avg_fn(), multi_avg_fn=sswa.get_swa_multi_avg_fn())
    for f in (sswa.get_ema_avg_fn, sswa.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\]"):
            f(1.5)
    opt = sg.optim.SGD(m.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        sswa.SWALR(opt, 0.01, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        sswa.SWALR(opt, 0.01, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
        sswa.SWALR(opt, [0.01, 0.02])


def _lrs(lib, mod, steps: int, **kw) -> list[list[float]]:
    w1 = lib.zeros(2, requires_grad=True)
    w2 = lib.zeros(2, requires_grad=True)
    opt = lib.optim.SGD([{"params": [w1]}, {"params": [w2], "lr": 0.3}], lr=0.1)
    sched = mod.SWALR(opt, **kw)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    state = sched.state_dict()
    out.append(sorted(state))
    return out


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.01, 0.02], anneal_epochs=4,
                                                            anneal_strategy="linear"),
                                dict(swa_lr=0.5, anneal_epochs=0), dict(swa_lr=0.02, anneal_epochs=1)])
def test_swalr_rates(kw: dict) -> None:
    assert _lrs(torch, tswa, 14, **kw) == _lrs(sg, sswa, 14, **kw)


def test_swalr_load_state_dict() -> None:
    w = sg.zeros(2, requires_grad=True)
    opt = sg.optim.SGD([w], lr=0.1)
    a = sswa.SWALR(opt, 0.01, anneal_strategy="linear")
    b = sswa.SWALR(opt, 0.01)
    b.load_state_dict(a.state_dict())
    assert b.anneal_func is sswa.SWALR._linear_anneal


def test_update_bn() -> None:
    def run(lib, mod):
        model = _models(lib, np.float32)
        model.eval()
        rng = np.random.default_rng(3)
        loader = [(lib.tensor(rng.standard_normal((6, 3)).astype(np.float32)), 0) for _ in range(4)]
        loader.append(lib.tensor(rng.standard_normal((2, 3)).astype(np.float32)))
        mod.update_bn(loader, model)
        bn = model[1]
        return model.training, bn.momentum, int(bn.num_batches_tracked), bn.running_mean.numpy(), \
            bn.running_var.numpy()

    t, s = run(torch, tswa), run(sg, sswa)
    assert t[:3] == s[:3] == (False, 0.1, 5)
    np.testing.assert_allclose(s[3], t[3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s[4], t[4], rtol=1e-5, atol=1e-6)


def test_update_bn_without_batchnorm_is_a_no_op() -> None:
    model = sg.nn.Linear(2, 2)
    model.eval()
    sswa.update_bn([sg.ones(1, 2)], model)
    assert not model.training
