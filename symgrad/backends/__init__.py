"""``torch.backends``' availability checks tutorials use to pick a device: no MPS, no CUDA, no cuDNN."""
from __future__ import annotations

from types import SimpleNamespace

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cuda = SimpleNamespace(is_built=lambda: False, matmul=SimpleNamespace(allow_tf32=False))
cudnn = SimpleNamespace(is_available=lambda: False, enabled=True, benchmark=False, deterministic=False,
                        allow_tf32=True)
mkldnn = SimpleNamespace(is_available=lambda: False)
