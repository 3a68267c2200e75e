"""``torch.autograd.graph.saved_tensors_hooks`` / ``save_on_cpu`` / ``disable_saved_tensors_hooks`` against
torch 2.13: which tensors each op packs (inputs or result, under torch's conditions, in torch's order), when unpack
runs (each backward, also with ``retain_graph``), an unpack result that changes the gradient, ``autograd.Function``'s
``save_for_backward``, and torch's errors. Each scenario runs once per library; the printed lines must agree."""
from __future__ import annotations

import torch

import symgrad as sg


def _scenario(torch):
    out = []

    def p(*args):
        out.append(" ".join(str(a) for a in args))

    G = torch.autograd.graph
    torch.manual_seed(0)
    a = torch.randn(3, 3, requires_grad=True)
    b = torch.randn(3, 3, requires_grad=True)
    c = torch.randn(3, requires_grad=True)
    k = torch.randn(3, 3)
    log = []
    def pack(x):
        log.append(("pack", tuple(x.shape), x.requires_grad))
        return x
    def unpack(x):
        log.append(("unpack", tuple(x.shape)))
        return x
    cases = [lambda: a * b, lambda: a * 2, lambda: a * k, lambda: k / a, lambda: a.exp() * b, lambda: (a @ b).tanh(),
             lambda: a.sin().sum(), lambda: a.mv(c).relu(), lambda: a.softmax(1), lambda: a.pow(2).mean(),
             lambda: torch.where(a > 0, a, b), lambda: a.sigmoid().log(), lambda: c.dot(c), lambda: a.clamp(-0.5, 0.5),
             lambda: torch.maximum(a, b), lambda: a.abs().sqrt()]
    for i, f in enumerate(cases):
        log.clear()
        with G.saved_tensors_hooks(pack, unpack):
            y = f()
        n_pack = len(log)
        y.sum().backward()
        p(i, y.grad_fn.name(), log[:n_pack], log[n_pack:])
    # unpack returning other values changes the gradient
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t * 10, lambda t: t):
        y = x.pow(2).sum()
    y.backward()
    p(x.grad)
    # packed data kept once, unpacked per backward with retain_graph
    log.clear()
    with G.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    p(log, x.grad)
    with G.save_on_cpu():
        z = (a * b).exp().sum()
    z.backward()
    p(a.grad)
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t
        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 2 * t * g
    log.clear()
    with G.saved_tensors_hooks(pack, unpack):
        y = Sq.apply(x).sum()
    y.backward()
    p(log)
    for bad in ((lambda t: t, lambda t: 3), (lambda t: t.mul_(2), lambda t: t)):
        try:
            with G.saved_tensors_hooks(*bad):
                y = (x * 1).exp()
            y.sum().backward()
        except Exception as e:
            p(type(e).__name__, e)
    with G.disable_saved_tensors_hooks("no hooks here"):
        try:
            with G.saved_tensors_hooks(pack, unpack):
                pass
        except RuntimeError as e:
            p(e)
    # a small network: linear packs as torch's AddmmBackward0, mse_loss as its MseLossBackward0
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    xs = torch.randn(5, 3)
    for target in (torch.zeros(5, 1), torch.zeros(5, 1).requires_grad_()):
        log.clear()
        with G.saved_tensors_hooks(pack, unpack):
            loss = torch.nn.functional.mse_loss(m(xs), target)
        n_pack = len(log)
        loss.backward()
        p(log[:n_pack], log[n_pack:])
    m.zero_grad()
    with G.saved_tensors_hooks(lambda t: t.half(), lambda t: t.float()):
        loss = torch.nn.functional.mse_loss(m(xs), torch.ones(5, 1), reduction="sum")
    loss.backward()
    p(m[0].weight.grad, m[2].bias.grad)
    return out


def test_saved_tensors_hooks_match_torch():
    assert _scenario(sg) == _scenario(torch)


def test_hooks_are_popped_and_packed_values_freed():
    from symgrad.eager import saved_hooks

    x = sg.ones(3, requires_grad=True)
    with sg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (x * x).sum()
        assert len(saved_hooks.STACK) == 1
    assert saved_hooks.STACK == [] and y.grad_fn.next_functions[0][0]._node in saved_hooks.PACKED
    before = len(saved_hooks.PACKED)
    y.backward()
    assert len(saved_hooks.PACKED) == before - 1
