"""``nn.BatchNorm1d/2d`` and ``F.batch_norm`` carry torch 2.13's CPU bits: the batch statistics (torch's per-channel
double accumulation, its per-thread buffers for inputs without spatial dims, fused multiply-adds), the running
statistics after each step, the training and evaluation outputs, float32 and float64, on 1 to 3 threads."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.core import ranges
from symgrad.eager import toplevel_more

SHAPES = [(16, 8), (5, 3), (33, 10), (2, 5), (4, 3, 5), (2, 17, 9), (8, 6, 4, 4), (3, 4, 5, 7), (2, 9, 6, 2)]


@pytest.fixture
def threads() -> Iterator[Any]:
    before = torch.get_num_threads()

    def use(n: int) -> None:
        torch.set_num_threads(n)
        sg.set_num_threads(n)

    yield use
    torch.set_num_threads(before)
    toplevel_more._STATE["threads"] = None
    ranges.set_num_threads(None)


def _bits(a: Any) -> bytes:
    return a.detach().numpy().tobytes()


def _steps(lib: Any, shape: tuple, dtype: str, momentum: float | None, affine: bool) -> list[bytes]:
    rng = np.random.default_rng(sum(shape))
    x0 = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    cls = lib.nn.BatchNorm1d if len(shape) < 4 else lib.nn.BatchNorm2d
    bn = cls(shape[1], momentum=momentum, affine=affine, dtype=getattr(lib, dtype))
    with lib.no_grad():
        bn.running_mean.copy_(lib.tensor(rng.standard_normal(shape[1]).astype(dtype)))
        bn.running_var.copy_(lib.tensor(rng.uniform(0.5, 2.0, shape[1]).astype(dtype)))
        if affine:
            bn.weight.copy_(lib.tensor(rng.standard_normal(shape[1]).astype(dtype)))
            bn.bias.copy_(lib.tensor(rng.standard_normal(shape[1]).astype(dtype)))
    x = lib.tensor(x0, requires_grad=True)
    out = [_bits(bn(x)), _bits(bn.running_mean), _bits(bn.running_var)]
    out += [_bits(bn(x * 2 - 1)), _bits(bn.running_mean), _bits(bn.running_var)]
    bn.eval()
    out.append(_bits(bn(x)))
    return out


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_training_and_eval_bits(threads: Any, n_threads: int, dtype: str, shape: tuple) -> None:
    threads(n_threads)
    assert _steps(sg, shape, dtype, 0.1, True) == _steps(torch, shape, dtype, 0.1, True)


@pytest.mark.parametrize("momentum", [0.3, None])
@pytest.mark.parametrize("shape", [(16, 8), (4, 3, 5, 5)], ids=str)
def test_momentum_and_no_affine(threads: Any, momentum: float | None, shape: tuple) -> None:
    threads(2)
    assert _steps(sg, shape, "float32", momentum, False) == _steps(torch, shape, "float32", momentum, False)


def test_issue_repro(threads: Any) -> None:
    """The report's case: ``BatchNorm1d(8)`` on ``randn(16, 8)`` (torch's seed-0 draws)."""
    threads(2)
    res = []
    for lib in (sg, torch):
        lib.manual_seed(0)
        h = lib.randn(16, 8)
        bn = lib.nn.BatchNorm1d(8)
        out = bn(h)
        res.append((bn.running_mean[0].item().hex(), out.sum().item().hex(), _bits(out), _bits(bn.running_var)))
    assert res[0] == res[1]
    assert res[1][0] == "-0x1.e422d40000000p-6"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_functional_without_weight_and_gradients_close(dtype: str) -> None:
    """``F.batch_norm`` without weight / bias: torch's bits; gradients (the composite's) close to torch's."""
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((6, 4, 3)).astype(dtype)
    g0 = rng.standard_normal((6, 4, 3)).astype(dtype)
    res = []
    for lib in (sg, torch):
        x = lib.tensor(x0, requires_grad=True)
        rm, rv = lib.zeros(4, dtype=x.dtype), lib.ones(4, dtype=x.dtype)
        y = lib.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.2)
        (y * lib.tensor(g0)).sum().backward()
        res.append((_bits(y), _bits(rm), _bits(rv), x.grad.numpy()))
    assert res[0][:3] == res[1][:3]
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(res[0][3], res[1][3], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 8), (4, 2, 5, 5), (3, 4, 7)], ids=str)
def test_instance_norm_bits(dtype: str, shape: tuple) -> None:
    """``InstanceNorm`` is torch's ``batch_norm`` of the input viewed as (1, N * C, *): the same bits."""
    x0 = (np.random.default_rng(sum(shape)).standard_normal(shape) * 2 + 1).astype(dtype)
    res = []
    for lib in (sg, torch):
        cls = lib.nn.InstanceNorm1d if len(shape) == 3 else lib.nn.InstanceNorm2d
        m = cls(shape[1], affine=True, track_running_stats=True, dtype=getattr(lib, dtype))
        res.append((_bits(m(lib.tensor(x0))), _bits(m.running_mean), _bits(m.running_var)))
    assert res[0] == res[1]
