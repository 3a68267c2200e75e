"""torch's top-level spellings of functional ops (``torch.conv2d`` ...) against torch 2.13."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgrad as sg

X = np.random.default_rng(0).standard_normal((2, 4, 6, 6))
W = np.random.default_rng(1).standard_normal((3, 4, 3, 3))


@pytest.mark.parametrize("name,args,kwargs", [
    ("conv2d", ("w",), {"padding": 1, "stride": 2}),
    ("conv1d", ("w1",), {}),
    ("conv_transpose2d", ("wt",), {"stride": 2}),
    ("max_pool2d", (2,), {}),
    ("max_pool1d", (3,), {"stride": 1}),
    ("avg_pool1d", (2,), {}),
    ("adaptive_avg_pool1d", (3,), {}),
    ("pixel_shuffle", (2,), {}),
    ("pixel_unshuffle", (2,), {}),
    ("layer_norm", ((6,),), {}),
    ("cosine_similarity", ("x",), {"dim": 1}),
])
def test_top_level_alias_matches_torch(name, args, kwargs):
    arrays = {"w": W, "w1": W[:, :, 0], "wt": W.transpose(1, 0, 2, 3).copy(), "x": X[::-1].copy()}
    one_d = name in ("conv1d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d")
    x = X[:, :, 0] if one_d else X

    def call(lib, tensor):
        a = [tensor(arrays[v]) if isinstance(v, str) else v for v in args]
        return getattr(lib, name)(tensor(x), *a, **kwargs)
    want = call(torch, torch.tensor)
    got = call(sg, sg.tensor)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_dropout_takes_torchs_positional_train():
    torch.manual_seed(3)
    sg.manual_seed(3)
    x = np.ones((4, 5), dtype=np.float32)
    np.testing.assert_array_equal(sg.dropout(sg.tensor(x), 0.5, True).numpy(),
                                  torch.dropout(torch.tensor(x), 0.5, True).numpy())
    np.testing.assert_array_equal(sg.dropout(sg.tensor(x), 0.5, False).numpy(), x)
    with pytest.raises(TypeError):
        sg.dropout(sg.tensor(x), 0.5)
