"""Source ops: graph inputs. ``leaf`` requires grad, ``const`` is a value outside the graph, ``scalar`` a number."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes
from .base import OpDef, register


def _no_infer(op: OpDef, *a: Any, **k: Any) -> Any:
    raise TypeError(f"{op.name} nodes are made directly, not applied")


def _scalar_infer(op: OpDef, value: Any) -> Any:
    return (), dtypes.result_type(value)


leaf = register(OpDef("leaf", "source", None, lambda: None, _no_infer,
                      doc="a tensor that requires grad and was not computed from one"))
const = register(OpDef("const", "source", None, lambda: None, _no_infer,
                       doc="a value outside the graph: no grad, detached or computed under no_grad"))
scalar = register(OpDef("scalar", "source", None, lambda value: np.asarray(value), _scalar_infer,
                        doc="a Python number, printed as a literal"))
