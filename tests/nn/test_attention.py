"""F.scaled_dot_product_attention, nn.MultiheadAttention and the Transformer modules against torch 2.13: seeded
parameters, values (float64, rtol 1e-10), gradients, dropout draws, masks, eval-mode fast paths, reprs, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import symgrad as sg

RNG = np.random.default_rng(3)


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


def _both(shape, grad=False):
    a = RNG.standard_normal(shape)
    return sg.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _same_params(ms, mt):
    ss, ts = ms.state_dict(), mt.state_dict()
    assert list(ss) == list(ts)
    for k in ss:
        assert np.array_equal(ss[k].numpy(), ts[k].numpy()), k


# --------------------------------------------------------------------------- scaled_dot_product_attention

SDPA_CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "scale": {"scale": 0.3},
    "bool_mask": {"mask": "bool"},
    "float_mask": {"mask": "float"},
    "empty_row": {"mask": "empty_row"},
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_sdpa(case):
    kw = dict(SDPA_CASES[case])
    (qs, qt), (ks, kt), (vs, vt) = _both((2, 3, 4, 5), True), _both((2, 3, 6, 5), True), _both((2, 3, 6, 5), True)
    mask = kw.pop("mask", None)
    ms = mt = None
    if mask is not None:
        m = RNG.standard_normal((4, 6))
        if mask == "float":
            ms, mt = sg.tensor(m), torch.tensor(m)
        else:
            b = m > -0.5
            if mask == "empty_row":
                b[1] = False
            ms, mt = sg.tensor(b), torch.tensor(b)
    out = sg.nn.functional.scaled_dot_product_attention(qs, ks, vs, attn_mask=ms, **kw)
    ref = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mt, **kw)
    _close(out, ref)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__
    w = RNG.standard_normal(ref.shape)
    (out * sg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in ((qs, qt), (ks, kt), (vs, vt)):
        _close(a.grad, b.grad, 1e-9, 1e-11)


def test_sdpa_dropout_gqa_unbatched():
    (qs, qt), (ks, kt), (vs, vt) = _both((2, 4, 3, 5)), _both((2, 2, 6, 5)), _both((2, 2, 6, 5))
    sg.manual_seed(5)
    torch.manual_seed(5)
    out = sg.nn.functional.scaled_dot_product_attention(qs, ks, vs, dropout_p=0.4, enable_gqa=True)
    ref = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, dropout_p=0.4, enable_gqa=True)
    _close(out, ref)
    _close(sg.randn(3), torch.randn(3))                        # the same number of draws
    out = sg.nn.functional.scaled_dot_product_attention(qs[0, 0], ks[0, 0], vs[0, 0])
    _close(out, torch.nn.functional.scaled_dot_product_attention(qt[0, 0], kt[0, 0], vt[0, 0]))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        sg.nn.functional.scaled_dot_product_attention(qs, qs, qs, attn_mask=sg.ones(3, 3, dtype=sg.bool),
                                                      is_causal=True)


# --------------------------------------------------------------------------- MultiheadAttention

def _mha_pair(seed, *args, **kw):
    sg.manual_seed(seed)
    torch.manual_seed(seed)
    ms, mt = sg.nn.MultiheadAttention(*args, **kw).double(), torch.nn.MultiheadAttention(*args, **kw).double()
    _same_params(ms, mt)
    return ms, mt


MHA_CASES = {
    "self": ({}, {}),
    "self_batch_first": ({"batch_first": True}, {}),
    "no_weights": ({}, {"need_weights": False}),
    "per_head": ({}, {"average_attn_weights": False}),
    "padding_bool": ({"batch_first": True}, {"key_padding_mask": "bool"}),
    "padding_float_no_weights": ({}, {"key_padding_mask": "float", "need_weights": False}),
    "attn_mask_2d": ({}, {"attn_mask": "2d"}),
    "attn_mask_3d_no_weights": ({}, {"attn_mask": "3d", "need_weights": False}),
    "causal": ({}, {"attn_mask": "causal", "is_causal": True, "need_weights": False}),
    "kdim_vdim": ({"kdim": 3, "vdim": 5}, {"cross": True}),
    "bias_kv_zero_attn": ({"add_bias_kv": True, "add_zero_attn": True}, {"cross": True}),
    "no_bias": ({"bias": False}, {}),
}


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention(case):
    init, call = dict(MHA_CASES[case][0]), dict(MHA_CASES[case][1])
    ms, mt = _mha_pair(11, 4, 2, **init)
    n, length, src = 2, 3, 5
    bf = init.get("batch_first", False)
    shape = (n, length, 4) if bf else (length, n, 4)
    qs, qt = _both(shape, True)
    if call.pop("cross", False):
        kshape = (src, n, init.get("kdim", 4))
        vshape = (src, n, init.get("vdim", 4))
        (ks, kt), (vs, vt) = _both(kshape), _both(vshape)
    else:
        ks, kt, vs, vt, src = qs, qt, qs, qt, length
    kpm = call.pop("key_padding_mask", None)
    if kpm is not None:
        b = np.zeros((n, src), dtype=bool)
        b[0, -1] = True
        call["key_padding_mask"] = (sg.tensor(b), torch.tensor(b)) if kpm == "bool" else \
            (sg.tensor(np.where(b, -np.inf, 0.0)), torch.tensor(np.where(b, -np.inf, 0.0)))
    am = call.pop("attn_mask", None)
    if am == "2d":
        b = RNG.random((length, src)) > 0.7
        b[:, 0] = False
        call["attn_mask"] = (sg.tensor(b), torch.tensor(b))
    elif am == "3d":
        f = RNG.standard_normal((n * 2, length, src))
        call["attn_mask"] = (sg.tensor(f), torch.tensor(f))
    elif am == "causal":
        c = torch.nn.Transformer.generate_square_subsequent_mask(length, dtype=torch.float64)
        call["attn_mask"] = (sg.nn.Transformer.generate_square_subsequent_mask(length, dtype=sg.float64), c)
    kw_s = {k: v[0] if isinstance(v, tuple) else v for k, v in call.items()}
    kw_t = {k: v[1] if isinstance(v, tuple) else v for k, v in call.items()}
    out, w = ms(qs, ks, vs, **kw_s)
    ref, wt = mt(qt, kt, vt, **kw_t)
    _close(out, ref)
    assert (w is None) == (wt is None)
    if w is not None:
        _close(w, wt)
        assert type(w.grad_fn).__name__ == type(wt.grad_fn).__name__
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__
    g = RNG.standard_normal(ref.shape)
    (out * sg.tensor(g)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    _close(qs.grad, qt.grad, 1e-9, 1e-11)
    for (_, p), (_, pt) in zip(ms.named_parameters(), mt.named_parameters()):
        _close(p.grad, pt.grad, 1e-9, 1e-11)


def test_mha_dropout_eval_unbatched_repr():
    ms, mt = _mha_pair(2, 6, 2, dropout=0.3, batch_first=True)
    assert repr(ms) == repr(mt)
    xs, xt = _both((2, 4, 6))
    sg.manual_seed(9)
    torch.manual_seed(9)
    for need in (True, False):
        out, _ = ms(xs, xs, xs, need_weights=need)
        ref, _ = mt(xt, xt, xt, need_weights=need)
        _close(out, ref)
    ms.eval()
    mt.eval()
    b = np.zeros((2, 4), dtype=bool)
    b[1, 2:] = True
    with torch.no_grad(), sg.no_grad():                        # torch's native fast path
        out, w = ms(xs, xs, xs, key_padding_mask=sg.tensor(b))
        ref, wt = mt(xt, xt, xt, key_padding_mask=torch.tensor(b))
    _close(out, ref)
    _close(w, wt)
    out, w = ms(xs[0], xs[0], xs[0])
    ref, wt = mt(xt[0], xt[0], xt[0])
    _close(out, ref)
    _close(w, wt)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        sg.nn.MultiheadAttention(5, 2)


# --------------------------------------------------------------------------- Transformer layers

def _pair(cls_s, cls_t, seed, *args, **kw):
    sg.manual_seed(seed)
    torch.manual_seed(seed)
    ms, mt = cls_s(*args, **kw).double(), cls_t(*args, **kw).double()
    _same_params(ms, mt)
    assert repr(ms) == repr(mt)
    return ms, mt


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "activation": "gelu", "batch_first": True}])
def test_encoder_layer_train(kw):
    ms, mt = _pair(sg.nn.TransformerEncoderLayer, torch.nn.TransformerEncoderLayer, 1, 4, 2, 8, **kw)
    xs, xt = _both((3, 2, 4), True)
    b = np.zeros((2 if not kw else 3, 3 if not kw else 2), dtype=bool)
    b[0, -1] = True
    sg.manual_seed(4)
    torch.manual_seed(4)
    out = ms(xs, src_key_padding_mask=sg.tensor(b))
    ref = mt(xt, src_key_padding_mask=torch.tensor(b))
    _close(out, ref)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__
    out.sum().backward()
    ref.sum().backward()
    _close(xs.grad, xt.grad, 1e-9, 1e-11)
    for (_, p), (_, pt) in zip(ms.named_parameters(), mt.named_parameters()):
        _close(p.grad, pt.grad, 1e-9, 1e-11)


def test_encoder_fast_path_and_decoder():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        sg.nn.TransformerEncoder(sg.nn.TransformerEncoderLayer(4, 2, 8), 1)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(4, 2, 8), 1)
    assert [str(w.message) for w in got] == [str(w.message) for w in want] != []
    sg.manual_seed(6)
    torch.manual_seed(6)
    ls, lt = sg.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True), torch.nn.TransformerEncoderLayer(
        4, 2, 8, batch_first=True)
    es = sg.nn.TransformerEncoder(ls, 2, norm=sg.nn.LayerNorm(4)).double().eval()
    et = torch.nn.TransformerEncoder(lt, 2, norm=torch.nn.LayerNorm(4)).double().eval()
    _same_params(es, et)
    assert repr(es) == repr(et)
    xs, xt = _both((2, 5, 4))
    b = np.zeros((2, 5), dtype=bool)
    b[1, 3:] = True
    with torch.no_grad(), sg.no_grad():                        # nested tensors: zeros at padded positions
        _close(es(xs, src_key_padding_mask=sg.tensor(b)), et(xt, src_key_padding_mask=torch.tensor(b)))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    _close(es(xs, mask=sg.tensor(causal.numpy())), et(xt, mask=causal))
    tf_s, tf_t = _pair(sg.nn.Transformer, torch.nn.Transformer, 8, d_model=4, nhead=2, num_encoder_layers=1,
                       num_decoder_layers=2, dim_feedforward=6, dropout=0.2)
    (ss, st), (ts, tt) = _both((5, 2, 4), True), _both((3, 2, 4), True)
    tmask = sg.nn.Transformer.generate_square_subsequent_mask(3, dtype=sg.float64)
    sg.manual_seed(2)
    torch.manual_seed(2)
    out = tf_s(ss, ts, tgt_mask=tmask)
    ref = tf_t(st, tt, tgt_mask=torch.tensor(tmask.numpy()))
    _close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    _close(ss.grad, st.grad, 1e-9, 1e-11)
    _close(ts.grad, tt.grad, 1e-9, 1e-11)
