"""``grad_fn._saved_*`` / ``_raw_saved_*`` against torch 2.13: values, types and identity (the saved inputs are the
very tensors, the saved result a new tensor with the same grad_fn), ``None`` where torch saved nothing, torch's
unsigned view of negative ints, the error after the graph was freed, ``SavedTensor.register_hooks``; and torch's
refusal to save an inference tensor for backward (ops that save nothing take one)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg


def _show(t, v, named: dict) -> object:
    """A comparable view of a saved value: tensors by the name of the object they are (or their values)."""
    if isinstance(v, t.Tensor):
        who = next((k for k, o in named.items() if o is v), None)
        values = np.round(v.detach().numpy().astype(np.float64), 5).tolist()
        return ("T", who, tuple(v.shape), str(v.dtype).split(".")[-1], values)
    if isinstance(v, tuple):
        return tuple(_show(t, x, named) for x in v)
    return (type(v).__name__, v)


def _cases(t) -> dict:
    t.manual_seed(0)
    F = t.nn.functional
    x = t.rand(3, 4, requires_grad=True)
    w = t.rand(3, 4, requires_grad=True)
    m = t.rand(4, 5, requires_grad=True)
    b = t.rand(5, requires_grad=True)
    bx, bm = t.rand(2, 3, 4, requires_grad=True), t.rand(2, 4, 5, requires_grad=True)
    v = t.rand(4, requires_grad=True)
    idx = t.tensor([0, 2, 1])
    named = dict(x=x, w=w, m=m, b=b, bx=bx, bm=bm, v=v, idx=idx)
    ops = {
        "mul": x * w, "mul_scalar": x * 2.0, "mul_int": x * 3, "div": x / w, "div_scalar": x / 2.0,
        "pow_tensor": x.pow(w), "pow_int": x.pow(3), "pow_float": x ** 2.5, "rpow": 2.0 ** x,
        "exp": x.exp(), "log": x.log(), "sin": x.sin(), "cos": x.cos(), "tanh": x.tanh(), "sigmoid": x.sigmoid(),
        "sum": x.sum(), "sum_dim": x.sum(1), "sum_neg": x.sum(-1), "sum_keep": x.sum(dim=(0,), keepdim=True),
        "mean": x.mean(), "mean_dim": x.mean(0), "mean_dims": x.mean((1, 0)),
        "mm": x @ m, "mm_const": x.mm(m.detach()), "addmm": t.addmm(b, x, m), "linear": F.linear(x, m.t(), b),
        "bmm": t.bmm(bx, bm), "mv": m.t() @ v,
        "relu": t.relu(x), "threshold": F.threshold(x, 0.5, 0.0), "softmax": x.softmax(1),
        "log_softmax": F.log_softmax(x, dim=-1), "clamp": x.clamp(0.2, 0.8), "clamp_min": x.clamp(min=0.5),
        "index": x[idx], "slice": x[1:], "slice_neg": x[-2:], "slice_step": x[:, ::2],
        "select": x[0], "select_neg": x[:, -1],
        "view": x.view(12), "reshape": x.reshape(2, 6),
        "mse": F.mse_loss(x, w), "mse_sum": F.mse_loss(x, w, reduction="sum"),
        "nll": F.nll_loss(x, idx), "nll_sum": F.nll_loss(x, idx, reduction="sum"),
        "nll_none": F.nll_loss(x, idx, reduction="none"), "cross_entropy": F.cross_entropy(x, idx),
        "add": x + w, "add_alpha": t.add(x, w, alpha=2), "sub_alpha": t.sub(x, w, alpha=3), "rsub": 1 - x,
        "transpose": x.transpose(0, 1), "permute": x.permute(1, 0), "unsqueeze": x.unsqueeze(-1),
        "unsqueeze_1": x[:1].unsqueeze(1), "squeeze": x.unsqueeze(0).squeeze(0), "expand": b[:4].expand(3, 4),
        "cat": t.cat([x, w], 1), "stack": t.stack([x, w]), "where": t.where(x > 0.5, x, w),
        "leaky_relu": F.leaky_relu(x, 0.1), "gelu": F.gelu(x), "silu": F.silu(x), "maximum": t.maximum(x, w),
        "amax": x.amax(1), "max": x.max(), "cumsum": x.cumsum(1),
        "addmm_scaled": t.addmm(b[:4], x.t(), w, beta=0.5, alpha=2),
        "max_dim": x.max(1)[0], "prod": x.prod(), "logsumexp": x.logsumexp(1), "elu": F.elu(x),
        "hardtanh": F.hardtanh(x), "dot": v.dot(v), "repeat": x.repeat(2, 1),
        "masked_fill": x.masked_fill(x > 0.5, 0.0), "index_select": x.index_select(1, t.tensor([0, 2])),
    }
    out = {}
    for k, y in ops.items():
        g = y.grad_fn
        names = sorted(a for a in dir(g) if a.startswith("_saved_"))
        out[k] = (g.name(), [(a, _show(t, getattr(g, a), {**named, "y": y})) for a in names],
                  sorted(a for a in dir(g) if a.startswith("_raw_saved_")))
    return out


def test_saved_attributes_match_torch():
    mine, theirs = _cases(sg), _cases(torch)
    assert mine.keys() == theirs.keys()
    for k in theirs:
        assert mine[k] == theirs[k], k


def _result_identity(t) -> list:
    x = t.rand(3, requires_grad=True)
    z = x.exp()
    r = z.grad_fn._saved_result
    a = x * 3
    y = a * x
    return [r is z, r.grad_fn is z.grad_fn, r.requires_grad, r.is_leaf, y.grad_fn._saved_self is a,
            y.grad_fn._saved_other is x, (x * 2.0).grad_fn._saved_self, type(z.grad_fn._raw_saved_result).__name__]


def test_saved_result_and_inputs_identity():
    assert _result_identity(sg) == _result_identity(torch)


def _after_backward(t) -> list:
    x = t.rand(3, 4, requires_grad=True)
    w = t.rand(3, 4, requires_grad=True)
    ys = [x * w, x.exp(), x.sum(1), x.pow(3), t.nn.functional.mse_loss(x, w), x.relu()]
    for y in ys:
        y.sum().backward()
    seen = []
    for y in ys:
        for a in sorted(a for a in dir(y.grad_fn) if a.startswith("_saved_")):
            try:
                v = getattr(y.grad_fn, a)
                seen.append((a, "ok", v if isinstance(v, (int, tuple)) else None))
            except RuntimeError as e:
                seen.append((a, str(e)))
    kept = x * w
    kept.sum().backward(retain_graph=True)
    seen.append(kept.grad_fn._saved_self is x)
    return seen


def test_saved_tensors_freed_after_backward():
    mine = _after_backward(sg)
    assert mine == _after_backward(torch)
    assert any("backward through the graph a second time" in str(s) for s in mine)


def _raw_hooks(t) -> list:
    log = []
    x = t.rand(3, requires_grad=True)
    w = t.rand(3, requires_grad=True)
    y = x * w
    y.grad_fn._raw_saved_self.register_hooks(lambda s: (log.append(("pack", tuple(s.shape))), s)[1],
                                             lambda s: (log.append("unpack"), s * 10)[1])
    log.append(y.grad_fn._saved_self is x)
    log.append(y.grad_fn._saved_self.tolist() == (x * 10).tolist())
    try:
        y.grad_fn._raw_saved_self.register_hooks(lambda s: s, lambda s: s)
    except RuntimeError as e:
        log.append(str(e))
    y.sum().backward()
    log.append(np.allclose(w.grad.numpy(), (x * 10).detach().numpy()))  # the backward read the unpacked tensor
    log.append(np.allclose(x.grad.numpy(), w.detach().numpy()))
    try:
        y.grad_fn._raw_saved_other.register_hooks(lambda s: s, lambda s: s)
    except RuntimeError as e:
        log.append(str(e))
    return log


def test_raw_saved_register_hooks():
    assert _raw_hooks(sg) == _raw_hooks(torch)


def _missing(t) -> list:
    x = t.rand(3, requires_grad=True)
    out = []
    for g, a in ((x.exp().grad_fn, "_saved_self"), (x.sum().grad_fn, "_saved_dim"), ((x * x).grad_fn, "_saved_foo")):
        try:
            getattr(g, a)
        except AttributeError as e:
            out.append(str(e))
    return out


def test_unknown_saved_attribute_is_attribute_error():
    assert _missing(sg) == _missing(torch)


def _inference(t) -> list:
    F = t.nn.functional
    x = t.rand(3, 4, requires_grad=True)
    wt = t.rand(5, 4, requires_grad=True)
    with t.inference_mode():
        c = t.ones(3, 4)
        cls = t.tensor([0, 1, 2])
    calls = [lambda: c * x, lambda: x * c, lambda: c + x, lambda: x - c, lambda: c.exp() * x, lambda: x / c,
             lambda: c / x, lambda: x.pow(c), lambda: t.mm(c, x.t()), lambda: F.linear(c, wt), lambda: F.mse_loss(x, c),
             lambda: F.cross_entropy(x, cls), lambda: x[cls], lambda: x * c[0], lambda: t.tanh(c + x),
             lambda: t.where(c > 0, x, c), lambda: (c.clone() * x).sum()]
    out = []
    for f in calls:
        try:
            y = f()
            out.append(("ok", y.requires_grad))
        except RuntimeError as e:
            out.append(str(e))
    return out


def test_inference_tensors_cannot_be_saved():
    mine = _inference(sg)
    assert mine == _inference(torch)
    assert mine[0].startswith("Inference tensors cannot be saved for backward.")
    assert mine[2] == ("ok", True)


def test_inference_tensor_backward_raises_at_the_op():
    x = sg.rand(3, requires_grad=True)
    with sg.inference_mode():
        c = sg.ones(3)
    (c + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        c * x
    assert (c.clone() * x).grad_fn.name() == "MulBackward0"


def _modified(t) -> list:
    x = t.rand(3, requires_grad=True)
    out = []
    g = x.exp()
    fn = g.grad_fn
    g.mul_(2)
    a = x * 1
    z = a * x
    a.add_(1)
    for read in (lambda: fn._saved_result, lambda: z.grad_fn._saved_self, lambda: z.grad_fn._saved_other is x):
        try:
            out.append(read())
        except RuntimeError as e:
            out.append(str(e))
    return out


def test_saved_tensor_modified_in_place():
    mine = _modified(sg)
    assert mine == _modified(torch)
    assert "which is output 0 of Exp, is at version 1; expected version 0" in mine[0]
