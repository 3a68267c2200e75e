"""``torch.utils.hooks.RemovableHandle`` against torch 2.13: one public class returned by tensor, module and
optimizer hook registration; ``remove()`` (twice is a no-op), the context manager, ``id`` order, copying (its state) and
``unserializable_hook``."""
from __future__ import annotations

import copy

import torch

import symgrad as sg


def _run(lib):
    seen = []
    lin = lib.nn.Linear(2, 2)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    x = lib.ones(1, 2, requires_grad=True)
    handles = [
        x.register_hook(lambda g: seen.append("tensor")),
        lin.register_forward_hook(lambda m, i, o: seen.append("fwd")),
        lin.register_forward_pre_hook(lambda m, i: seen.append("pre")),
        opt.register_step_post_hook(lambda o, a, k: seen.append("step")),
    ]
    kinds = [type(h) is lib.utils.hooks.RemovableHandle for h in handles]
    ids = [h.id - handles[0].id for h in handles]
    with lin.register_forward_hook(lambda m, i, o: seen.append("ctx")) as h:
        ctx_type = type(h).__name__
        lin(x).sum().backward()
    opt.step()
    handles[0].remove()
    handles[0].remove()
    handles[1].remove()
    lin(x).sum().backward()
    h2 = copy.copy(handles[2])
    after = lib.utils.hooks.RemovableHandle(lin._forward_hooks)
    f = lib.utils.hooks.unserializable_hook(lambda g: g)
    return (seen, kinds, ids, ctx_type, h2.id == handles[2].id, after.id > handles[3].id,
            f.__torch_unserializable__, repr(handles[0]).startswith("<torch.utils.hooks.RemovableHandle object at 0x"))


def test_removable_handle_matches_torch():
    assert _run(sg) == _run(torch)


def test_handle_on_dead_dict_removes_nothing():
    for lib in (torch, sg):
        d = type("D", (dict,), {})()
        h = lib.utils.hooks.RemovableHandle(type("D", (dict,), {})(), extra_dict=d)
        d[h.id] = 1
        h.remove()  # the hooks dict is gone; the extra dict still loses the key
        assert d == {}
