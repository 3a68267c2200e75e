"""Every ``sg.nn`` layer, activation and loss module against torch's, in float32 and float64: the
parameters copied from torch through ``load_state_dict``, then outputs, grad_fn names, input and
parameter gradients, ``repr`` and ``state_dict`` keys."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error, grad_fn_name

import symgrad as sg


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's OpenMP threads spin against each other on a busy 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)

RNG = np.random.default_rng(7)


def _a(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


X23 = _a(4, 3)
X13 = _a(3)
X343 = _a(2, 5, 3)
PROB = RNG.uniform(0.05, 0.95, (4, 3))
TGT01 = RNG.uniform(0, 1, (4, 3))
CLS = np.array([0, 2, 1, 2])
IDX = np.array([[1, 0, 3], [3, 3, 2]])


def copy_state(smod: Any, tmod: torch.nn.Module) -> None:
    """Load torch's parameters and buffers into the symgrad module (numpy copies)."""
    sd = OrderedDict((k, sg.tensor(v.detach().numpy().copy())) for k, v in tmod.state_dict().items())
    assert repr(smod.load_state_dict(sd)) == "<All keys matched successfully>"


#: (id, module factory over a namespace nn, inputs, which inputs require grad)
CASES: list[tuple[str, Callable[[Any], Any], list[np.ndarray], tuple[int, ...]]] = [
    ("Linear", lambda nn: nn.Linear(3, 5), [X23], (0,)),
    ("Linear 1-d", lambda nn: nn.Linear(3, 2), [X13], (0,)),
    ("Linear 3-d", lambda nn: nn.Linear(3, 2), [X343], (0,)),
    ("Linear no bias", lambda nn: nn.Linear(3, 5, bias=False), [X23], (0,)),
    ("Bilinear", lambda nn: nn.Bilinear(3, 2, 4), [X23, _a(4, 2)], (0, 1)),
    ("Bilinear 3-d no bias", lambda nn: nn.Bilinear(3, 3, 2, bias=False), [X343, X343 * 0.5], (0, 1)),
    ("Embedding", lambda nn: nn.Embedding(5, 3), [IDX], ()),
    ("Embedding padding_idx", lambda nn: nn.Embedding(5, 3, padding_idx=3), [IDX], ()),
    ("Embedding padding_idx negative", lambda nn: nn.Embedding(5, 3, padding_idx=-2), [IDX], ()),
    ("Embedding scale_grad_by_freq", lambda nn: nn.Embedding(5, 3, padding_idx=0, scale_grad_by_freq=True),
     [IDX], ()),
    ("Embedding max_norm", lambda nn: nn.Embedding(5, 3, max_norm=1.0), [IDX], ()),
    ("Embedding max_norm p1", lambda nn: nn.Embedding(5, 3, max_norm=1.5, norm_type=1.0), [IDX], ()),
    ("Identity", lambda nn: nn.Identity(3, unused=True), [X23], (0,)),
    ("Flatten", lambda nn: nn.Flatten(), [X343], (0,)),
    ("Flatten 0", lambda nn: nn.Flatten(0, 1), [X343], (0,)),
    ("Unflatten", lambda nn: nn.Unflatten(1, (5, 1)), [X343], (0,)),
    ("Dropout eval", lambda nn: nn.Dropout(0.3).eval(), [X23], (0,)),
    ("Dropout p0", lambda nn: nn.Dropout(0.0), [X23], (0,)),
    ("ReLU", lambda nn: nn.ReLU(), [X23], (0,)),
    ("Sigmoid", lambda nn: nn.Sigmoid(), [X23], (0,)),
    ("Tanh", lambda nn: nn.Tanh(), [X23], (0,)),
    ("Softmax", lambda nn: nn.Softmax(dim=1), [X23], (0,)),
    ("Softmax dim0", lambda nn: nn.Softmax(0), [X343], (0,)),
    ("LogSoftmax", lambda nn: nn.LogSoftmax(dim=-1), [X23], (0,)),
    ("Softplus", lambda nn: nn.Softplus(beta=2.0, threshold=1.5), [X23], (0,)),
    ("SiLU", lambda nn: nn.SiLU(), [X23], (0,)),
    ("GELU", lambda nn: nn.GELU(), [X23], (0,)),
    ("GELU tanh", lambda nn: nn.GELU(approximate="tanh"), [X23], (0,)),
    ("ELU", lambda nn: nn.ELU(alpha=0.7), [X23], (0,)),
    ("LeakyReLU", lambda nn: nn.LeakyReLU(0.2), [X23], (0,)),
    ("LogSigmoid", lambda nn: nn.LogSigmoid(), [X23], (0,)),
    ("Hardtanh", lambda nn: nn.Hardtanh(-0.5, 0.75), [X23], (0,)),
    ("ReLU6", lambda nn: nn.ReLU6(), [X23 * 4], (0,)),
    ("Mish", lambda nn: nn.Mish(), [X23], (0,)),
    ("SELU", lambda nn: nn.SELU(), [X23], (0,)),
    ("CELU", lambda nn: nn.CELU(0.6), [X23], (0,)),
    ("Hardsigmoid", lambda nn: nn.Hardsigmoid(), [X23 * 4], (0,)),
    ("Hardswish", lambda nn: nn.Hardswish(), [X23 * 4], (0,)),
    ("Softshrink", lambda nn: nn.Softshrink(0.3), [X23], (0,)),
    ("Hardshrink", lambda nn: nn.Hardshrink(), [X23], (0,)),
    ("Threshold", lambda nn: nn.Threshold(0.2, -1.5), [X23], (0,)),
    ("Softsign", lambda nn: nn.Softsign(), [X23], (0,)),
    ("Tanhshrink", lambda nn: nn.Tanhshrink(), [X23], (0,)),
    ("Softmin", lambda nn: nn.Softmin(dim=1), [X23], (0,)),
    ("Softmax2d", lambda nn: nn.Softmax2d(), [X343], (0,)),
    ("GLU", lambda nn: nn.GLU(0), [X343], (0,)),
    ("PReLU", lambda nn: nn.PReLU(), [X23], (0,)),
    ("PReLU channels", lambda nn: nn.PReLU(5, init=0.1), [X343], (0,)),
    ("MSELoss", lambda nn: nn.MSELoss(), [X23, PROB], (0,)),
    ("MSELoss sum", lambda nn: nn.MSELoss(reduction="sum"), [X23, PROB], (0,)),
    ("L1Loss none", lambda nn: nn.L1Loss(reduction="none"), [X23, PROB], (0,)),
    ("SmoothL1Loss", lambda nn: nn.SmoothL1Loss(beta=0.5), [X23, PROB], (0,)),
    ("HuberLoss", lambda nn: nn.HuberLoss(delta=0.7, reduction="sum"), [X23, PROB], (0,)),
    ("BCELoss", lambda nn: nn.BCELoss(), [PROB, TGT01], (0,)),
    ("BCEWithLogitsLoss", lambda nn: nn.BCEWithLogitsLoss(), [X23, TGT01], (0,)),
    ("NLLLoss", lambda nn: nn.NLLLoss(ignore_index=1), [X23, CLS], (0,)),
    ("CrossEntropyLoss", lambda nn: nn.CrossEntropyLoss(), [X23, CLS], (0,)),
    ("CrossEntropyLoss smoothing", lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum"),
     [X23, CLS], (0,)),
    ("CrossEntropyLoss probabilities", lambda nn: nn.CrossEntropyLoss(), [X23, TGT01], (0,)),
    ("MLP", lambda nn: nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 6), nn.GELU(), nn.Linear(6, 2),
                                     nn.LogSoftmax(dim=1)), [X23], (0,)),
]


def _forward(lib: Any, mod: Any, arrays: list[np.ndarray], grads: tuple[int, ...], dtype: str) -> tuple:
    ins = [lib.tensor(a.astype(dtype) if a.dtype.kind == "f" else a, requires_grad=i in grads)
           for i, a in enumerate(arrays)]
    out = mod(*ins)
    weights = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(dtype)
    (out * lib.tensor(weights)).sum().backward()
    return out, ins


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,make,arrays,grads", CASES, ids=[c[0] for c in CASES])
def test_module_matches_torch(name, make, arrays, grads, dtype):
    tmod = make(torch.nn).to(getattr(torch, dtype))
    before = make(torch.nn).to(getattr(torch, dtype))
    before.load_state_dict(tmod.state_dict())  # a copy: max_norm renormalises the weight in forward
    smod = make(sg.nn).to(getattr(sg, dtype))
    copy_state(smod, before)
    tout, tins = _forward(torch, tmod, arrays, grads, dtype)
    sout, sins = _forward(sg, smod, arrays, grads, dtype)
    assert repr(smod) == repr(tmod)
    assert list(smod.state_dict()) == list(tmod.state_dict())
    assert [n for n, _ in smod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    assert_close(sout, tout, what=name)
    assert grad_fn_name(sout) == grad_fn_name(tout)
    for s, t in zip(sins, tins):
        assert_close(s.grad, t.grad, what=f"{name} input grad")
    for (n, sp), (_, tp) in zip(smod.named_parameters(), tmod.named_parameters()):
        assert_close(sp, tp, what=f"{name} {n}")
        assert_close(sp.grad, tp.grad, what=f"{name} {n}.grad")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_weighted_losses(dtype):
    """Loss modules with weight / pos_weight buffers: in state_dict, converted by .double(), same values."""
    w3 = np.array([0.2, 1.0, 2.5])
    cases = [
        (lambda nn, lib: nn.CrossEntropyLoss(weight=lib.tensor(w3.astype(dtype)), ignore_index=2), [X23, CLS]),
        (lambda nn, lib: nn.NLLLoss(weight=lib.tensor(w3.astype(dtype)), reduction="sum"), [X23, CLS]),
        (lambda nn, lib: nn.BCELoss(weight=lib.tensor(w3.astype(dtype))), [PROB, TGT01]),
        (lambda nn, lib: nn.BCEWithLogitsLoss(weight=lib.tensor(w3.astype(dtype)),
                                              pos_weight=lib.tensor((w3 + 1).astype(dtype))), [X23, TGT01]),
    ]
    for make, arrays in cases:
        res = []
        for lib in (sg, torch):
            m = make(lib.nn, lib)
            x = lib.tensor(arrays[0].astype(dtype), requires_grad=True)
            t = lib.tensor(arrays[1].astype(dtype) if arrays[1].dtype.kind == "f" else arrays[1])
            out = m(x, t)
            out.backward()
            res.append((m, out, x))
        (sm, so, sx), (tm, to, tx) = res
        assert repr(sm) == repr(tm)
        assert list(sm.state_dict()) == list(tm.state_dict())
        assert [n for n, _ in sm.named_buffers()] == [n for n, _ in tm.named_buffers()]
        assert_close(so, to)
        assert_close(sx.grad, tx.grad)


def test_legacy_reduction_arguments():
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        with pytest.warns(UserWarning) as sw:
            s = sg.nn.MSELoss(**kw)
        with pytest.warns(UserWarning) as tw:
            t = torch.nn.MSELoss(**kw)
        assert s.reduction == t.reduction
        assert str(sw[0].message) == str(tw[0].message)


REPRS: list[Callable[[Any], Any]] = [
    lambda nn: nn.ReLU(inplace=True), lambda nn: nn.ReLU6(True), lambda nn: nn.SiLU(inplace=True),
    lambda nn: nn.Mish(True), lambda nn: nn.ELU(inplace=True), lambda nn: nn.LeakyReLU(inplace=True),
    lambda nn: nn.Hardtanh(inplace=True), lambda nn: nn.Softmax(), lambda nn: nn.LogSoftmax(2),
    lambda nn: nn.Softplus(), lambda nn: nn.Dropout(0.25, inplace=True), lambda nn: nn.Unflatten(-1, [2, 3]),
    lambda nn: nn.Embedding(7, 2, max_norm=2, norm_type=3, scale_grad_by_freq=True),
    lambda nn: nn.Embedding(7, 2, padding_idx=-1), lambda nn: nn.HuberLoss(), lambda nn: nn.L1Loss(),
    lambda nn: nn.Bilinear(1, 2, 3, bias=False), lambda nn: nn.Identity(),
    lambda nn: nn.ModuleDict({"act": nn.ReLU(), "lin": nn.Linear(1, 1)}),
    lambda nn: nn.ModuleList([nn.Linear(2, 2)] * 3 + [nn.ReLU(), nn.Sequential(nn.ReLU(), nn.ReLU())]),
    lambda nn: nn.Sequential(nn.Sequential(nn.ModuleList([nn.Tanh(), nn.Tanh()]))),
    lambda nn: nn.ModuleList(), lambda nn: nn.Sequential(),
    lambda nn: nn.SELU(True), lambda nn: nn.CELU(2.0, True), lambda nn: nn.Hardswish(True),
    lambda nn: nn.Hardsigmoid(), lambda nn: nn.Softshrink(), lambda nn: nn.Hardshrink(1.5),
    lambda nn: nn.Threshold(0.1, 20, True), lambda nn: nn.Softmin(), lambda nn: nn.Softmax2d(),
    lambda nn: nn.GLU(), lambda nn: nn.PReLU(3, 0.5), lambda nn: nn.Softsign(), lambda nn: nn.Tanhshrink(),
]


@pytest.mark.parametrize("k", range(len(REPRS)))
def test_repr(k):
    assert repr(REPRS[k](sg.nn)) == repr(REPRS[k](torch.nn))


def test_parameter_containers_repr():
    for lib in (sg, torch):
        lib.manual_seed(0)
    s = [sg.nn.ParameterList([sg.nn.Parameter(sg.ones(2, 3)), sg.ones(3, dtype=sg.float64)]),
         sg.nn.ParameterDict({"b": sg.nn.Parameter(sg.ones(2)), "a": sg.ones(1, 2, dtype=sg.float64)})]
    t = [torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)), torch.ones(3, dtype=torch.float64)]),
         torch.nn.ParameterDict({"b": torch.nn.Parameter(torch.ones(2)), "a": torch.ones(1, 2, dtype=torch.float64)})]
    for a, b in zip(s, t):
        assert repr(a) == repr(b)
        assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
        assert all(isinstance(p, sg.nn.Parameter) for p in a.parameters())
    assert list(s[1].keys()) == list(t[1].keys())
    assert_same_error(lambda: s[0](1), lambda: t[0](1))
    assert_same_error(lambda: s[1](1), lambda: t[1](1))
    assert_same_error(lambda: s[0][2], lambda: t[0][2])


def test_dropout_training():
    sg.manual_seed(3)
    x = sg.ones(200, 50, requires_grad=True)
    m = sg.nn.Dropout(0.3)
    y = m(x)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.7, rtol=1e-6)
    assert (m.eval()(x) is x) and (sg.nn.Dropout(1.0)(x).detach().numpy() == 0).all()
    assert_same_error(lambda: sg.nn.Dropout(1.5), lambda: torch.nn.Dropout(1.5))


ERRORS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("bilinear batch", lambda lib, nn: nn.Bilinear(3, 4, 2)(lib.ones(5, 3), lib.ones(4, 4))),
    ("bilinear in1", lambda lib, nn: nn.Bilinear(3, 4, 2)(lib.ones(5, 2), lib.ones(5, 4))),
    ("bilinear in2", lambda lib, nn: nn.Bilinear(3, 4, 2)(lib.ones(5, 3), lib.ones(5, 3))),
    ("bilinear in1_features", lambda lib, nn: nn.Bilinear(0, 2, 2)),
    ("embedding float indices", lambda lib, nn: nn.Embedding(3, 2)(lib.tensor([1.0]))),
    ("embedding out of range", lambda lib, nn: nn.Embedding(3, 2)(lib.tensor([3]))),
    ("embedding negative index", lambda lib, nn: nn.Embedding(3, 2)(lib.tensor([-1]))),
    ("embedding padding_idx", lambda lib, nn: nn.Embedding(3, 2, padding_idx=3)),
    ("embedding pretrained 1-d", lambda lib, nn: nn.Embedding.from_pretrained(lib.ones(3))),
    ("embedding _weight shape", lambda lib, nn: nn.Embedding(3, 2, _weight=lib.ones(2, 2))),
    ("flatten dim", lambda lib, nn: nn.Flatten()(lib.ones(3))),
    ("unflatten sizes", lambda lib, nn: nn.Unflatten(1, (2.0,))),
    ("unflatten type", lambda lib, nn: nn.Unflatten(1, 2)),
    ("hardtanh bounds", lambda lib, nn: nn.Hardtanh(1.0, 0.0)),
    ("huber delta", lambda lib, nn: nn.HuberLoss(delta="1")),
    ("linear shapes", lambda lib, nn: nn.Linear(3, 2)(lib.ones(4, 2))),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn):
    assert_same_error(lambda: fn(sg, sg.nn), lambda: fn(torch, torch.nn))


def test_embedding_from_pretrained():
    w = RNG.standard_normal((4, 3))
    res = []
    for lib in (sg, torch):
        e = lib.nn.Embedding.from_pretrained(lib.tensor(w), padding_idx=1)
        f = lib.nn.Embedding.from_pretrained(lib.tensor(w), freeze=False, padding_idx=1)
        out = f(lib.tensor([[1, 2], [1, 0]]))
        out.sum().backward()
        res.append((e, f, out))
    (se, sf, so), (te, tf, to) = res
    assert repr(se) == repr(te) and se.weight.requires_grad is te.weight.requires_grad is False
    assert_close(so, to)
    assert_close(sf.weight.grad, tf.weight.grad)
    assert grad_fn_name(so) == grad_fn_name(to)
