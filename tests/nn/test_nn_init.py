"""``sg.nn.init`` against ``torch.nn.init``: fans, gains, bounds and the deterministic initialisers
exactly; the random ones exactly too when their two draws (``_uniform``, ``_normal``) are pointed at
torch's generator (what the integrator will do), and by their statistics on symgrad's own generator."""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close, assert_same_error, torch_dtype

import symgrad as sg
from symgrad.nn import init


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's OpenMP threads spin against each other on a busy 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def torch_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """``init._uniform`` / ``init._normal`` drawing from torch's generator (the default one or ``generator``)."""
    def uniform(t: Any, a: float, b: float, generator: Any = None) -> Any:
        init._write(t, torch.empty(tuple(t.shape), dtype=torch_dtype(t.dtype)).uniform_(a, b, generator=generator)
                    .numpy())
        return t

    def normal(t: Any, mean: float, std: float, generator: Any = None) -> Any:
        init._write(t, torch.empty(tuple(t.shape), dtype=torch_dtype(t.dtype)).normal_(mean, std, generator=generator)
                    .numpy())
        return t

    monkeypatch.setattr(init, "_uniform", uniform)
    monkeypatch.setattr(init, "_normal", normal)


LAYERS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("Linear(3, 1)", lambda nn, dt: nn.Linear(3, 1, dtype=dt)),
    ("Linear(7, 5)", lambda nn, dt: nn.Linear(7, 5, dtype=dt)),
    ("Linear no bias", lambda nn, dt: nn.Linear(4, 6, bias=False, dtype=dt)),
    ("Linear(0, 2)", lambda nn, dt: nn.Linear(0, 2, dtype=dt)),
    ("Bilinear", lambda nn, dt: nn.Bilinear(3, 4, 2, dtype=dt)),
    ("Embedding", lambda nn, dt: nn.Embedding(6, 3, padding_idx=2, dtype=dt)),
    ("MLP", lambda nn, dt: nn.Sequential(nn.Linear(5, 8, dtype=dt), nn.ReLU(), nn.Linear(8, 3, dtype=dt))),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,make", LAYERS, ids=[n for n, _ in LAYERS])
def test_default_initialisation_is_torchs(torch_draws, name, make, dtype):
    """With torch's generator behind the draws, ``manual_seed(0); nn.Linear(3, 1)`` gives torch's weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Linear(0, 2): torch's zero-element warning
        torch.manual_seed(0)
        t = make(torch.nn, getattr(torch, dtype))
        torch.manual_seed(0)
        s = make(sg.nn, getattr(sg, dtype))
    for (n, sp), (_, tp) in zip(s.named_parameters(), t.named_parameters()):
        assert sp.dtype.name == dtype, n
        np.testing.assert_array_equal(sp.detach().numpy(), tp.detach().numpy(), err_msg=n)


#: (id, initialiser call over (init module, tensor, generator))
INITS: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
    ("uniform_", lambda I, t, g: I.uniform_(t, -0.3, 1.7, generator=g)),
    ("uniform_ default", lambda I, t, g: I.uniform_(t, generator=g)),
    ("normal_", lambda I, t, g: I.normal_(t, 0.5, 2.0, generator=g)),
    ("xavier_uniform_", lambda I, t, g: I.xavier_uniform_(t, generator=g)),
    ("xavier_uniform_ gain", lambda I, t, g: I.xavier_uniform_(t, gain=I.calculate_gain("tanh"), generator=g)),
    ("xavier_normal_", lambda I, t, g: I.xavier_normal_(t, gain=0.3, generator=g)),
    ("kaiming_uniform_", lambda I, t, g: I.kaiming_uniform_(t, generator=g)),
    ("kaiming_uniform_ sqrt5", lambda I, t, g: I.kaiming_uniform_(t, a=math.sqrt(5), generator=g)),
    ("kaiming_uniform_ fan_out relu", lambda I, t, g: I.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu",
                                                                          generator=g)),
    ("kaiming_normal_", lambda I, t, g: I.kaiming_normal_(t, a=0.1, mode="FAN_OUT", generator=g)),
    ("kaiming_normal_ selu", lambda I, t, g: I.kaiming_normal_(t, nonlinearity="selu", generator=g)),
    ("trunc_normal_", lambda I, t, g: I.trunc_normal_(t, generator=g)),
    ("trunc_normal_ narrow", lambda I, t, g: I.trunc_normal_(t, 0.1, 0.5, -0.2, 0.3, generator=g)),
    ("trunc_normal_ tail", lambda I, t, g: I.trunc_normal_(t, 0.0, 1.0, 1.5, 3.0, generator=g)),
    ("trunc_normal_ far tail", lambda I, t, g: I.trunc_normal_(t, 0.0, 1.0, 2.5, 6.0, generator=g)),
]
SHAPES = [(5, 3), (4, 2, 3, 3)]


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,fn", INITS, ids=[n for n, _ in INITS])
def test_random_initialisers_with_torch_draws(torch_draws, name, fn, shape, dtype):
    gens = []
    for seed_gen in (True, False):
        res = []
        for lib, I in ((torch, torch.nn.init), (sg, init)):
            g = torch.Generator().manual_seed(3) if seed_gen else None
            torch.manual_seed(5)
            t = lib.empty(shape, dtype=getattr(lib, dtype))
            assert fn(I, t, g) is t
            res.append(t)
        np.testing.assert_array_equal(res[1].numpy(), res[0].numpy(), err_msg=name)
        gens.append(res[0])
    assert not np.array_equal(gens[0].numpy(), gens[1].numpy())  # the generator= keyword reaches the draws


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3), (1, 1)], ids=str)
def test_orthogonal_with_torch_draws(torch_draws, shape, dtype):
    res = []
    for lib, I in ((torch, torch.nn.init), (sg, init)):
        torch.manual_seed(1)
        res.append(I.orthogonal_(lib.empty(shape, dtype=getattr(lib, dtype)), gain=1.5))
    rtol = 1e-9 if dtype == "float64" else 2e-5
    assert_close(res[1], res[0], rtol=rtol, atol=rtol)


def test_deterministic_initialisers():
    cases: list[tuple[tuple[int, ...], Callable[[Any, Any], Any]]] = [
        ((3, 4), lambda I, t: I.constant_(t, 0.3)), ((3, 4), lambda I, t: I.ones_(t)),
        ((3, 4), lambda I, t: I.zeros_(t)), ((3, 5), lambda I, t: I.eye_(t)), ((5, 3), lambda I, t: I.eye_(t)),
        ((4, 2, 3), lambda I, t: I.dirac_(t)), ((4, 4, 3, 3), lambda I, t: I.dirac_(t, groups=2)),
        ((2, 3, 3, 3, 3), lambda I, t: I.dirac_(t)),
    ]
    for dtype in FLOAT_DTYPES:
        for shape, fn in cases:
            res = []
            for lib, I in ((sg, init), (torch, torch.nn.init)):
                t = lib.nn.Parameter(lib.full(shape, 7.0, dtype=getattr(lib, dtype)))
                assert fn(I, t) is t and t.is_leaf and t.requires_grad
                res.append(t)
            assert_close(res[0], res[1])
    t = sg.nn.Parameter(sg.ones(2, 2))
    v = t._version.v
    init.zeros_(t)
    assert t._version.v > v
    (t * 2).sum().backward()  # still a leaf that collects its gradient
    assert t.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_fans_and_gains():
    for shape in [(3, 2), (4, 3, 5), (2, 3, 4, 5), (6, 1, 1, 1, 2), (0, 3)]:
        s, t = sg.empty(shape), torch.empty(shape)
        assert init._calculate_fan_in_and_fan_out(s) == torch.nn.init._calculate_fan_in_and_fan_out(t)
        for mode in ("fan_in", "fan_out", "Fan_In"):
            assert init._calculate_correct_fan(s, mode) == torch.nn.init._calculate_correct_fan(t, mode)
    for nl, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                      ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("leaky_relu", math.sqrt(5)),
                      ("selu", None), ("conv_transpose3d", None)]:
        a, b = init.calculate_gain(nl, param), torch.nn.init.calculate_gain(nl, param)
        assert a == b and type(a) is type(b)


ERRORS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("fan 1-d", lambda lib, I: I.xavier_uniform_(lib.empty(3))),
    ("kaiming 1-d", lambda lib, I: I.kaiming_uniform_(lib.empty(3))),
    ("mode", lambda lib, I: I.kaiming_normal_(lib.empty(3, 3), mode="fan")),
    ("nonlinearity", lambda lib, I: I.calculate_gain("foo")),
    ("negative slope", lambda lib, I: I.calculate_gain("leaky_relu", True)),
    ("eye 1-d", lambda lib, I: I.eye_(lib.empty(3))),
    ("dirac 2-d", lambda lib, I: I.dirac_(lib.empty(3, 3))),
    ("dirac groups", lambda lib, I: I.dirac_(lib.empty(3, 3, 3), groups=2)),
    ("orthogonal 1-d", lambda lib, I: I.orthogonal_(lib.empty(3))),
    ("uniform range", lambda lib, I: I.uniform_(lib.empty(3), 1, 0)),
    ("uniform range float", lambda lib, I: I.uniform_(lib.empty(3), 0.5, 0.25)),
    ("normal std", lambda lib, I: I.normal_(lib.empty(3), 0, -1)),
    ("normal std float", lambda lib, I: I.normal_(lib.empty(3), 0, -0.125)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn):
    assert_same_error(lambda: fn(sg, init), lambda: fn(torch, torch.nn.init))


def test_warnings():
    for I, lib in ((init, sg), (torch.nn.init, torch)):
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            I.kaiming_uniform_(lib.empty(0, 3))
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            I.kaiming_normal_(lib.empty(3, 0))
        with pytest.warns(UserWarning, match="mean is more than 2 std from"):
            I.trunc_normal_(lib.empty(3), mean=10.0)
        with pytest.warns(FutureWarning, match=r"`nn.init.uniform` is now deprecated in favor of `nn.init.uniform_`"):
            I.uniform(lib.empty(3))
        with pytest.warns(FutureWarning, match="`nn.init.xavier_normal` is now deprecated"):
            I.xavier_normal(lib.empty(3, 3))
    assert init.orthogonal_(sg.empty(0, 3)).shape == (0, 3)


# ---------------------------------------------------------------------------- symgrad's own generator

def _truncnorm(mean: float, std: float, a: float, b: float) -> tuple[float, float, Callable[[np.ndarray], Any]]:
    """Mean, standard deviation and CDF of N(mean, std**2) truncated to [a, b]."""
    erf = np.frompyfunc(math.erf, 1, 1)
    Phi = lambda x: np.asarray(0.5 * (1 + erf(np.asarray(x, dtype=float) / math.sqrt(2))), dtype=float)  # noqa: E731, N806
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    al, be = (a - mean) / std, (b - mean) / std
    z = float(Phi(be) - Phi(al))
    m = (phi(al) - phi(be)) / z
    var = 1 + (al * phi(al) - be * phi(be)) / z - m * m
    return mean + std * m, std * math.sqrt(var), lambda x: (Phi((x - mean) / std) - Phi(al)) / z


def test_statistics_on_numpy_draws():
    sg.manual_seed(0)
    n = 40_000
    u = init.uniform_(sg.empty(n), -2.0, 3.0)._data
    assert u.dtype == np.float32 and u.min() >= -2.0 and u.max() <= 3.0 and abs(u.mean() - 0.5) < 0.03
    z = init.normal_(sg.empty(n, dtype=sg.float64), 1.0, 2.0)._data
    assert abs(z.mean() - 1.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    w = init.kaiming_uniform_(sg.empty(200, 300), a=math.sqrt(5))._data
    bound = math.sqrt(3.0) * math.sqrt(2.0 / 6.0) / math.sqrt(300)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    x = init.xavier_normal_(sg.empty(300, 200))._data
    assert abs(x.std() - math.sqrt(2.0 / 500)) < 0.002
    for mean, std, a, b in [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, 0.0, 1.0), (0.0, 1.0, 2.0, 5.0)]:
        t = np.sort(init.trunc_normal_(sg.empty(n, dtype=sg.float64), mean, std, a, b)._data)
        ref_mean, ref_std, cdf = _truncnorm(mean, std, a, b)
        assert t[0] >= a and t[-1] <= b
        assert abs(t.mean() - ref_mean) < 0.01 * (b - a) and abs(t.std() - ref_std) < 0.01 * (b - a)
        ks = np.max(np.abs(cdf(t) - np.arange(1, n + 1) / n))  # Kolmogorov-Smirnov distance
        assert ks < 2.0 / math.sqrt(n)
    for shape, gain in [((6, 4), 1.0), ((4, 6), 2.0), ((3, 2, 4), 0.5)]:
        q = init.orthogonal_(sg.empty(shape, dtype=sg.float64), gain=gain)._data.reshape(shape[0], -1)
        small = q.T @ q if shape[0] >= q.shape[1] else q @ q.T
        np.testing.assert_allclose(small, gain ** 2 * np.eye(small.shape[0]), atol=1e-12)


def test_generator_keyword_and_seed():
    a = init.normal_(sg.empty(5), generator=sg.manual_seed(4))  # manual_seed returns the generator it seeded
    b = init.normal_(sg.empty(5), generator=sg.manual_seed(4))
    assert a.tolist() == b.tolist()
    sg.manual_seed(11)
    m1 = sg.nn.Linear(4, 3)
    sg.manual_seed(11)
    m2 = sg.nn.Linear(4, 3)
    assert m1.weight.tolist() == m2.weight.tolist() and m1.bias.tolist() == m2.bias.tolist()
    e = sg.nn.Embedding(4, 2, padding_idx=1)
    assert e.weight[1].tolist() == [0.0, 0.0] and e.weight.requires_grad
