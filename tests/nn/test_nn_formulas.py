"""Formulas and compiled kernels of modules: parameters named by their module path in ``sg.formula`` /
``sg.grad_formula``; ``sg.nn.utils.functional_call`` (against ``torch.func.functional_call``) and a training
step over a module compiled with the parameters as a dict argument, its gradients against eager and torch."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_close, assert_same_error

import symgrad as sg
from symgrad.kernels import program
from symgrad.nn.utils import functional_call


@pytest.fixture(autouse=True)
def _numpy_tier_one_thread(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The generated numpy kernels only (no numba compiles: fast), torch at one thread."""
    monkeypatch.setattr(program, "BACKEND", "numpy")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def mlp(lib: Any, dtype: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to(dtype)


def same_mlp(dtype: str = "float64") -> tuple[Any, Any]:
    """The same 3-4-1 tanh network in symgrad and torch (torch's initialisation copied over)."""
    torch.manual_seed(0)
    tm = mlp(torch, getattr(torch, dtype))
    sm = mlp(sg, getattr(sg, dtype))
    sm.load_state_dict({k: sg.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return sm, tm


def data(dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.standard_normal((6, 3)).astype(dtype), rng.standard_normal((6, 1)).astype(dtype)


# ---------------------------------------------------------------------------- names in formulas

def test_grad_formula_names_parameters_by_module_path() -> None:
    model, _ = same_mlp()
    x, y = (sg.tensor(a) for a in data())
    loss = sg.nn.functional.mse_loss(model(x), y)
    text = str(sg.grad_formula(loss, model[0].weight))
    for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
        assert name in text, text
    assert "t0" not in text and "transpose(transpose(" not in text, text
    assert "2.bias" in str(sg.formula(loss))


def test_attribute_paths_longest_wins_explicit_name_first() -> None:
    class Net(sg.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = sg.nn.Linear(2, 3)
            self.fc2 = sg.nn.Linear(3, 1)
            self.register_buffer("scale", sg.tensor(2.0))

        def forward(self, x: sg.Tensor) -> sg.Tensor:
            return self.fc2(sg.tanh(self.fc1(x))) * self.scale

    net = Net()
    layer = net.fc1  # noqa: F841 - a submodule in scope too: the path from net (longer) wins
    out = net(sg.ones(4, 2)).sum()
    text = str(sg.grad_formula(out, net.fc1.weight))
    assert "fc1.weight" in text and "fc2.weight" in text and "fc1.bias" in text, text
    assert "const(scale)" in str(sg.formula(out))
    net.fc2.weight.name = "W2"  # an explicit name= wins over the module path
    assert "W2" in str(sg.formula(net(sg.ones(4, 2)).sum()))


# ---------------------------------------------------------------------------- functional_call

def test_functional_call_matches_torch_and_restores() -> None:
    sm, tm = same_mlp()
    xa, _ = data()
    rng = np.random.default_rng(2)
    new = {k: rng.standard_normal(tuple(v.shape)) for k, v in tm.named_parameters()}
    sp = {k: sg.tensor(v, requires_grad=True) for k, v in new.items()}
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in new.items()}
    so = functional_call(sm, sp, (sg.tensor(xa),))
    to = torch.func.functional_call(tm, tp, (torch.tensor(xa),))
    assert_close(so, to)
    so.sum().backward()
    to.sum().backward()
    for k in new:
        assert_close(sp[k].grad, tp[k].grad, what=k)
    assert sm[0].weight.grad is None and isinstance(sm[0].weight, sg.nn.Parameter)  # the module is as it was
    assert_close(sm(sg.tensor(xa)), tm(torch.tensor(xa)))
    # a single argument needs no tuple; numpy arrays are taken as tensors
    assert_close(functional_call(sm, {k: v for k, v in new.items()}, sg.tensor(xa)), to)


def test_functional_call_errors_and_tied_weights() -> None:
    sm, tm = same_mlp()
    x = data()[0]
    assert_same_error(lambda: functional_call(sm, {"0.weight": sg.zeros(4, 3)}, (sg.tensor(x),), strict=True),
                      lambda: torch.func.functional_call(tm, {"0.weight": torch.zeros(4, 3)}, (torch.tensor(x),),
                                                         strict=True))
    assert_same_error(lambda: functional_call(sm, ({"0.bias": sg.zeros(4)}, {"0.bias": sg.ones(4)}), sg.tensor(x)),
                      lambda: torch.func.functional_call(tm, ({"0.bias": torch.zeros(4)}, {"0.bias": torch.ones(4)}),
                                                         torch.tensor(x)))

    def tied(lib: Any) -> Any:
        class Tied(lib.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = lib.nn.Linear(2, 2, bias=False)
                self.b = lib.nn.Linear(2, 2, bias=False)
                self.b.weight = self.a.weight

            def forward(self, x: Any) -> Any:
                return self.b(self.a(x))
        return Tied()

    st, tt = tied(sg), tied(torch)
    for tie in (True, False):
        got = functional_call(st, {"a.weight": 2 * sg.eye(2)}, (sg.ones(1, 2),), tie_weights=tie)
        want = torch.func.functional_call(tt, {"a.weight": 2 * torch.eye(2)}, (torch.ones(1, 2),), tie_weights=tie)
        if tie:
            assert_close(got, want)
        else:  # b keeps its own (random) weight: compare with it
            assert_close(got, sg.ones(1, 2) @ (2 * sg.eye(2)).T @ st.b.weight.detach().T)
    assert_same_error(lambda: functional_call(st, {"a.weight": sg.eye(2), "b.weight": sg.eye(2)}, (sg.ones(1, 2),)),
                      lambda: torch.func.functional_call(tt, {"a.weight": torch.eye(2), "b.weight": torch.eye(2)},
                                                         (torch.ones(1, 2),)))


# ---------------------------------------------------------------------------- a compiled training step

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_step_with_dict_params_matches_eager_and_torch(dtype: str) -> None:
    sm, tm = same_mlp(dtype)
    xa, ya = data(dtype)
    loss_fn = sg.nn.MSELoss()
    params = {k: p.detach().numpy() for k, p in sm.named_parameters()}
    step = sg.value_and_grad(lambda p, x, y: loss_fn(functional_call(sm, p, (x,)), y))
    value, grads = step(params, xa, ya)
    assert list(grads) == list(params) and all(type(g) is np.ndarray for g in grads.values())
    # eager symgrad
    eager = loss_fn(sm(sg.tensor(xa)), sg.tensor(ya))
    eager.backward()
    # torch
    tloss = torch.nn.functional.mse_loss(tm(torch.tensor(xa)), torch.tensor(ya))
    tloss.backward()
    assert_close(np.asarray(value), tloss, what="loss")
    assert_close(eager, tloss, what="eager loss")
    for k, p in sm.named_parameters():
        tg = tm.get_parameter(k).grad
        assert_close(grads[k], tg, what=f"compiled d/d{k}")
        assert_close(p.grad, tg, what=f"eager d/d{k}")


def test_compiled_dict_arguments_argnums_formulas_and_tensors() -> None:
    sm, tm = same_mlp()
    xa, ya = data()
    params = {k: p.detach().numpy() for k, p in sm.named_parameters()}

    def loss(p: dict, x: Any, y: Any) -> Any:
        return sg.nn.functional.mse_loss(functional_call(sm, p, (x,)), y)

    g_params, g_x = sg.grad(loss, argnums=(0, 1))(params, xa, ya)
    tx = torch.tensor(xa, requires_grad=True)
    torch.nn.functional.mse_loss(tm(tx), torch.tensor(ya)).backward()
    assert_close(g_x, tx.grad)
    assert set(g_params) == set(params)
    assert_close(sg.compile(loss)(params, xa, ya), torch.nn.functional.mse_loss(tm(torch.tensor(xa)),
                                                                                torch.tensor(ya)).detach())
    # the kernel's formulas name the dict's entries by their keys
    text = str(sg.value_and_grad(loss).formulas(params, xa, ya))
    assert "dloss/d0.weight" in text and "dloss/d2.bias" in text and "loss(0.weight, 0.bias" in text, text
    # parameters as tensors that require grad: the compiled call is one recorded node; backward reaches them
    tp = {k: sg.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    sg.compile(loss)(tp, sg.tensor(xa), sg.tensor(ya)).backward()
    for k, t in tp.items():
        assert_close(t.grad, tm.get_parameter(k).grad, what=k)
    with pytest.raises(TypeError, match="out="):
        sg.grad(loss)(params, xa, ya, out={k: np.empty_like(v) for k, v in params.items()})
