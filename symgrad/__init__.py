"""symgrad: torch-compatible tensors on a SymPy expression DAG, symbolic gradients, generated kernels."""
from __future__ import annotations

from . import autograd, ops, return_types  # noqa: F401
from . import indexing as _indexing  # noqa: F401  (registers index ops)
from . import inplace as _inplace  # noqa: F401  (registers index_put)
from ._format import get_printoptions, printoptions, set_printoptions
from .compile import CompiledFunction, compile, grad, value_and_grad  # noqa: A004
from .transforms import hessian, jacobian, jvp, vjp
from .custom import custom_op, custom_rule
from .dtypes import (  # noqa: A004
                     DType,
                     bool,
                     double,
                     float,
                     float16,
                     float32,
                     float64,
                     get_default_dtype,
                     half,
                     int,
                     int8,
                     int16,
                     int32,
                     int64,
                     long,
                     set_default_dtype,
                     short,
                     uint8,
)
from .errors import CodegenError, SymgradError, TracingError
from .formula import Formula, formula, grad_formula
from .functional import *  # noqa: F403
from .functional import abs, max, min, pow, sum  # noqa: A004
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .tensor import Size, Tensor

dtype = DType

__version__ = "0.1.0"

from . import autograd_functional as _autograd_functional  # noqa: E402
from . import func  # noqa: E402
from . import nn  # noqa: E402, F401  (sg.nn.functional)
from . import optim  # noqa: E402, F401

autograd.functional = _autograd_functional
import sys as _sys  # noqa: E402

_sys.modules[__name__ + ".autograd.functional"] = _autograd_functional
