"""Anomaly mode against torch's: the flags, the context managers, the NaN check's error (which function,
which output) and the warnings with the forward traceback."""
from __future__ import annotations

import warnings

import pytest
import torch

import symgrad as sg


def _run(lib, body):
    """``body(lib)``'s error text (or None) and the warnings it raised (messages, the file names masked)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            body(lib)
            err = None
        except RuntimeError as e:
            err = str(e)
    msgs = [str(m.message).replace(__file__, "<file>") for m in w if issubclass(m.category, UserWarning)]
    return err, msgs


def sqrt_at_zero(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        y = lib.sqrt(x)
        (y * 0).sum().backward()


def div_by_itself(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        lib.autograd.grad((x / x).sum(), x)


def nested_log(lib):
    def inner(x):
        return lib.log(x)
    x = lib.tensor([0.0, -1.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        (inner(x) * 0).sum().backward()


def nan_seed(lib):
    x = lib.tensor([1.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        (x * 2).backward(lib.tensor([float("nan")]))


def matmul(lib):
    a = lib.tensor([[0.0, 1.0]], requires_grad=True)
    with lib.autograd.detect_anomaly():
        (a.log() @ lib.ones(2, 1)).sum().backward()


def only_what_is_needed(lib):
    x = lib.tensor([1.0, 0.0], requires_grad=True)
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        y = (x.sqrt() * w).sum()
        lib.autograd.grad(y, w, retain_graph=True)  # sqrt's backward does not run: no error
        lib.autograd.grad(y, x)


def forward_outside(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    y = (x.sqrt() * 0).sum()
    lib.autograd.set_detect_anomaly(True)
    try:
        y.backward()
    finally:
        lib.autograd.set_detect_anomaly(False)


def check_nan_off(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        (lib.sqrt(x) * 0).sum().backward()
    assert str(x.grad) == "tensor([nan, 0.])"


def no_nan(lib):
    x = lib.tensor([1.0, 4.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        lib.sqrt(x).sum().backward()
    assert x.grad.tolist() == [0.5, 0.25]


@pytest.mark.parametrize("body", [sqrt_at_zero, div_by_itself, nested_log, nan_seed, matmul, only_what_is_needed,
                                  forward_outside, check_nan_off, no_nan])
def test_backward_nan_check_matches_torch(body):
    ours, theirs = _run(sg, body), _run(torch, body)
    assert ours == theirs


def test_flags_and_context_managers():
    for lib in (sg, torch):
        A = lib.autograd
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with A.detect_anomaly(check_nan=False):
                assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        A.set_detect_anomaly(True)
        assert lib.is_anomaly_enabled()
        A.set_detect_anomaly(False)
        with A.set_detect_anomaly(True, check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
