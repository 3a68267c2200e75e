"""sg.optim.lr_scheduler against torch's: learning-rate sequences, chaining, closed form, warnings, state."""
from __future__ import annotations

import math
import warnings

import pytest
import torch

import symgrad as sg


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's OpenMP threads spin against each other on a busy 2-core machine (100x slower backward)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _opt(lib: object, groups: int = 2) -> object:
    ps = [lib.tensor([1.0], requires_grad=True) for _ in range(groups)]
    return lib.optim.SGD([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)], lr=0.1, momentum=0.9)


SCHEDULERS = {
    "StepLR": lambda m, o: [m.StepLR(o, step_size=4, gamma=0.5)],
    "MultiStepLR": lambda m, o: [m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3)],
    "ExponentialLR": lambda m, o: [m.ExponentialLR(o, gamma=0.93)],
    "CosineAnnealingLR": lambda m, o: [m.CosineAnnealingLR(o, T_max=10, eta_min=0.001)],
    "LambdaLR": lambda m, o: [m.LambdaLR(o, lr_lambda=[lambda e: 0.95 ** e, lambda e: 1 / (e + 1)])],
    "MultiplicativeLR": lambda m, o: [m.MultiplicativeLR(o, lr_lambda=lambda e: 0.9)],
    "ConstantLR": lambda m, o: [m.ConstantLR(o, factor=0.25, total_iters=6)],
    "LinearLR": lambda m, o: [m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=7)],
    "chained": lambda m, o: [m.ExponentialLR(o, gamma=0.9), m.StepLR(o, step_size=3, gamma=0.5),
                             m.CosineAnnealingLR(o, T_max=8)],
    "ChainedScheduler": lambda m, o: [m.ChainedScheduler([m.LinearLR(o, start_factor=0.5, total_iters=4),
                                                          m.ExponentialLR(o, gamma=0.9)])],
    "SequentialLR": lambda m, o: [m.SequentialLR(o, [m.ConstantLR(o, factor=0.1, total_iters=2),
                                                     m.ExponentialLR(o, gamma=0.9)], milestones=[5])],
}


def _lrs(lib: object, make: object, steps: int = 30) -> list:
    opt = _opt(lib)
    scheds = make(lib.optim.lr_scheduler, opt)
    out = [[s.get_last_lr() for s in scheds]]
    for _ in range(steps):
        opt.step()
        for s in scheds:
            s.step()
        out.append([s.get_last_lr() for s in scheds] + [[g["lr"] for g in opt.param_groups]])
    return out


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_equals_torch(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _lrs(torch, SCHEDULERS[name]) == _lrs(sg, SCHEDULERS[name])  # exact floats


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR"])
def test_closed_form_epoch_argument(name: str) -> None:
    res = []
    for lib in (torch, sg):
        opt = _opt(lib)
        s = SCHEDULERS[name](lib.optim.lr_scheduler, opt)[0]
        seq = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for epoch in (3, 8, 4, 12):
                opt.step()
                s.step(epoch)
                seq.append((s.last_epoch, s.get_last_lr()))
        res.append((seq, [str(x.message) for x in w]))
    assert res[0] == res[1]


def _warnings_of(lib: object, order: str) -> list[str]:
    opt = _opt(lib)
    s = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if order == "sched-first":
            s.step()
            opt.step()
        elif order == "overridden":
            opt.step = lambda closure=None: None
            s.step()
        else:
            opt.step()
            s.step()
        s.get_lr()
    return [str(x.message) for x in w]


@pytest.mark.parametrize("order", ["sched-first", "overridden", "right"])
def test_warnings(order: str) -> None:
    assert _warnings_of(torch, order) == _warnings_of(sg, order)


def test_state_dict_and_resume() -> None:
    dicts = []
    for lib in (torch, sg):
        opt = _opt(lib)
        s = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7)
        for _ in range(5):
            opt.step()
            s.step()
        sd = s.state_dict()
        dicts.append(sd)
        # a new scheduler on a fresh optimizer continues where the old one stopped
        opt2 = _opt(lib)
        opt2.load_state_dict(opt.state_dict())
        s2 = lib.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=7, last_epoch=s.last_epoch)
        s2.load_state_dict(sd)
        for _ in range(3):
            opt.step()
            s.step()
            opt2.step()
            s2.step()
        assert s2.get_last_lr() == s.get_last_lr()
    assert list(dicts[0]) == list(dicts[1])
    assert dicts[0] == dicts[1]


def test_lambda_state_dict_keeps_callable_objects() -> None:
    class Decay:
        def __init__(self) -> None:
            self.rate = 0.5

        def __call__(self, epoch: int) -> float:
            return self.rate ** epoch

    out = []
    for lib in (torch, sg):
        opt = _opt(lib)
        s = lib.optim.lr_scheduler.LambdaLR(opt, [Decay(), lambda e: 1.0])
        out.append(s.state_dict())
    assert out[0].keys() == out[1].keys() and out[0]["lr_lambdas"] == out[1]["lr_lambdas"] == [{"rate": 0.5}, None]


def test_errors() -> None:
    def errs(lib: object) -> list:
        m = lib.optim.lr_scheduler
        res = []
        for f in (lambda: m.StepLR(3, 1), lambda: m.StepLR(_opt(lib), 2, last_epoch=4),
                  lambda: m.LambdaLR(_opt(lib), [lambda e: 1.0]), lambda: m.ChainedScheduler([]),
                  lambda: m.ConstantLR(_opt(lib), factor=2)):
            try:
                f()
                res.append(None)
            except Exception as e:  # noqa: BLE001
                res.append((type(e).__name__, str(e)))
        return res
    assert errs(torch) == errs(sg)


def test_cosine_matches_closed_form_formula() -> None:
    opt = _opt(sg, 1)
    s = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for e in range(1, 11):
        opt.step()
        s.step()
        assert math.isclose(s.get_last_lr()[0], 0.05 * (1 + math.cos(math.pi * e / 10)), abs_tol=1e-15)
