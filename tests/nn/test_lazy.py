"""``nn.LazyLinear``, ``nn.LazyConv1d/2d/3d`` and ``UninitializedParameter`` against torch 2.13: the parameters
materialised on the first call with torch's seeded initialisation (same RNG order), the module turning into
``Linear`` / ``Conv*d``, reprs (``<UninitializedParameter>``), state dicts before and after, loading into a lazy
module, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_same_error

import symgrad as sg


def _both(fn):
    return fn(torch), fn(sg)


def test_lazy_linear_first_call_matches_torch():
    def run(lib):
        lib.manual_seed(3)
        net = lib.nn.Sequential(lib.nn.LazyLinear(5), lib.nn.Tanh(), lib.nn.LazyLinear(2, bias=False))
        before = (repr(net), repr(net[0].weight), repr(net.state_dict()), len(list(net.parameters())))
        x = lib.randn(4, 3)
        y = net(x)
        y.pow(2).sum().backward()
        after = (repr(net), type(net[0]).__name__, type(net[0].weight).__name__, list(net.state_dict()),
                 net[2].in_features, y.grad_fn.name())
        return before, after, [p.detach().numpy().copy() for p in net.parameters()], \
            [p.grad.numpy().copy() for p in net.parameters()], lib.rand(2).numpy()

    t, s = _both(run)
    assert s[:2] == t[:2]
    for a, b in zip(s[2] + [s[4]], t[2] + [t[4]]):  # the parameters and the generator's state after them
        assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(s[3], t[3]):
        assert_close(a, b)


def test_lazy_linear_batched_input_dtype_and_second_call():
    for lib in (torch, sg):
        m = lib.nn.LazyLinear(3, dtype=lib.float64)
        y = m(lib.ones(2, 5, 7, dtype=lib.float64))
        assert (tuple(y.shape), y.dtype, m.in_features, tuple(m.weight.shape)) == ((2, 5, 3), lib.float64, 7, (3, 7))
        assert m(lib.ones(1, 7, dtype=lib.float64)).shape == (1, 3)
        assert not m._forward_pre_hooks


def test_uninitialized_parameter_behaviour():
    for lib in (torch, sg):
        p = lib.nn.parameter.UninitializedParameter()
        assert (repr(p), p.requires_grad, isinstance(p, lib.nn.Parameter)) == ("<UninitializedParameter>", True,
                                                                               True)
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3) and p.requires_grad
        b = lib.nn.parameter.UninitializedBuffer()
        assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
        b.materialize(4, dtype=lib.float64)
        assert type(b) is lib.Tensor and b.dtype == lib.float64
    assert_same_error(lambda: sg.nn.LazyLinear(2).weight.shape, lambda: torch.nn.LazyLinear(2).weight.shape)


def test_load_state_dict_into_lazy_linear():
    out = {}
    for lib in (torch, sg):
        lib.manual_seed(0)
        src = lib.nn.Linear(4, 3)
        m = lib.nn.LazyLinear(3)
        res = m.load_state_dict(src.state_dict())
        mid = (repr(res), repr(m), type(m.weight).__name__)
        y = m(lib.ones(2, 4))
        out[lib] = (mid, repr(m), y.detach().numpy())
        with pytest.raises(AssertionError) as e:
            m2 = lib.nn.LazyLinear(3)
            m2.load_state_dict(src.state_dict())
            m2(lib.ones(2, 5))
        out[lib] += (str(e.value),)
    assert out[sg][:2] == out[torch][:2] and out[sg][3] == out[torch][3]
    np.testing.assert_array_equal(out[sg][2], out[torch][2])


def test_lazy_linear_errors():
    assert_same_error(lambda: sg.nn.LazyLinear(3)(), lambda: torch.nn.LazyLinear(3)())
    # a lazy module whose initialize_parameters leaves something uninitialized
    msgs = []
    for lib in (torch, sg):
        class Half(lib.nn.LazyLinear):
            def initialize_parameters(self, input):
                self.weight.materialize((self.out_features, input.shape[-1]))

        with pytest.raises(RuntimeError) as e:
            Half(2)(lib.ones(1, 3))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] == "module Half has not been fully initialized"


CONVS = [
    ("1d", lambda nn: nn.LazyConv1d(4, 3, padding=1, bias=False), (2, 3, 5)),
    ("1d unbatched", lambda nn: nn.LazyConv1d(2, 2, dilation=2), (3, 6)),
    ("2d groups", lambda nn: nn.LazyConv2d(2, (2, 3), stride=2, groups=2), (1, 4, 5, 6)),
    ("2d reflect", lambda nn: nn.LazyConv2d(3, 3, padding=1, padding_mode="reflect"), (2, 2, 4, 4)),
    ("3d", lambda nn: nn.LazyConv3d(1, 2), (1, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("name,make,shape", CONVS, ids=[c[0] for c in CONVS])
def test_lazy_conv_matches_torch(name, make, shape):
    def run(lib):
        lib.manual_seed(4)
        m = make(lib.nn)
        before = repr(m)
        y = m(lib.randn(*shape))
        return (before, repr(m), type(m).__name__, y.grad_fn.name(), tuple(y.shape)), \
            [p.detach().numpy().copy() for p in m.parameters()], y.detach().numpy(), lib.rand(3).numpy()

    t, s = _both(run)
    assert s[0] == t[0]
    for a, b in zip(s[1] + [s[3]], t[1] + [t[3]]):
        assert_close(a, b, rtol=0, atol=0)
    assert_close(s[2], t[2])


def test_lazy_conv_errors():
    assert_same_error(lambda: sg.nn.LazyConv2d(2, 3)(sg.ones(3, 5)),
                      lambda: torch.nn.LazyConv2d(2, 3)(torch.ones(3, 5)))
    assert_same_error(lambda: sg.nn.LazyConv2d(2, 3, groups=2)(sg.ones(1, 3, 5, 5)),
                      lambda: torch.nn.LazyConv2d(2, 3, groups=2)(torch.ones(1, 3, 5, 5)))
