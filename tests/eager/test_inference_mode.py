"""``sg.inference_mode`` against torch 2.13: context manager, decorator (with and without the call), nesting with
``no_grad`` and ``inference_mode(False)``, ``is_inference_mode_enabled``."""
from __future__ import annotations

import torch

import symgrad as sg


def _state(t) -> tuple[bool, bool]:
    return t.is_grad_enabled(), t.is_inference_mode_enabled()


def _trace(t) -> list:
    seen = [_state(t)]
    x = t.ones(2, requires_grad=True)
    with t.inference_mode():
        y = x * 2
        seen += [_state(t), y.requires_grad]
        with t.inference_mode(False):
            seen += [_state(t), (x * 2).requires_grad]
        seen.append(_state(t))
    seen.append(_state(t))
    with t.no_grad():
        with t.inference_mode(False):
            seen.append(_state(t))
        with t.inference_mode(mode=True) as ctx:
            seen += [_state(t), ctx]
    seen.append(_state(t))

    @t.inference_mode
    def bare(a):
        return (a * 3).requires_grad, _state(t)

    @t.inference_mode()
    def called(a):
        return (a * 3).requires_grad, _state(t)

    @t.inference_mode(False)
    def off(a):
        return (a * 3).requires_grad, _state(t)

    seen += [bare(x), called(x), off(x), bare.__name__, _state(t)]
    cm = t.inference_mode()
    seen += [type(cm.clone()).__name__, cm.clone().mode]
    return seen


def test_inference_mode_matches_torch():
    assert _trace(sg) == _trace(torch)


def test_inference_mode_restores_after_exception():
    for t in (sg, torch):
        try:
            with t.inference_mode():
                raise ValueError
        except ValueError:
            pass
        assert _state(t) == (True, False)


def _inference_tensors(t) -> list:
    t.manual_seed(0)
    x = t.ones(3, requires_grad=True)
    n = t.zeros(3)
    with t.inference_mode():
        c = x * 2
        d = t.ones(2)
        v = n[1:]
        n.add_(1)  # a normal tensor written in inference mode stays normal
        c.add_(1)
        with t.inference_mode(False):
            e = t.ones(1)
    with t.no_grad():
        f = t.ones(1)
    seen = [c.is_inference(), d.is_inference(), v.is_inference(), n.is_inference(), e.is_inference(),
            f.is_inference(), c[0].is_inference(), c.detach().is_inference(), c.clone().is_inference()]
    writes = [lambda: c.add_(1), lambda: c.zero_(), lambda: c.fill_(2), lambda: c.copy_(x),
              lambda: c.__setitem__(0, 1.0), lambda: c.normal_(), lambda: c[0].mul_(2), lambda: c.clamp_(0, 1)]
    for w in writes:
        try:
            w()
            seen.append("ok")
        except RuntimeError as err:
            seen.append(str(err))
        seen.append(c.tolist())  # torch writes, then raises when it bumps the version
    with t.inference_mode():
        c.mul_(2)
    seen.append(c.tolist())
    return seen


def test_inference_tensors_and_their_in_place_error_match_torch():
    assert _inference_tensors(sg) == _inference_tensors(torch)
