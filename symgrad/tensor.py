"""The torch-like ``Tensor``: a numpy buffer plus, when it requires grad, a node of the DAG."""
from __future__ import annotations

import builtins
import math
import weakref
from typing import Any, Iterator, Sequence

import numpy as np

from . import _trace, dtypes
from . import inplace as _ip  # index_put and the view machinery (it imports this module only in functions)
from .dtypes import DType
from .grad_mode import is_grad_enabled
from .graph import Node
from .ops import REGISTRY, OpDef, broadcast_shapes, normalize_dims
from .ops import source as _src
from .ops.base import promotion_operands

_LEAF, _CONST, _SCALAR = _src.leaf, _src.const, _src.scalar


class _Version:
    """A storage's version counter, shared by views and ``detach()`` (not by ``.data``).

    ``recorded`` counts the in-place writes that were recorded in the graph (a view taken before
    one no longer describes how its values were computed).
    """

    __slots__ = ("v", "recorded")

    def __init__(self) -> None:
        self.v = 0
        self.recorded = 0


class _Terms:
    """What ``.grad`` accumulated, for ``sg.grad_formula(x)``; shared by ``.data`` and ``detach()``."""

    __slots__ = ("items", "known")

    def __init__(self) -> None:
        self.items: list = []
        self.known = True

    def reset(self, known: bool) -> None:
        self.items.clear()
        self.known = known


class Size(tuple):
    """``torch.Size``: a tuple that prints as ``torch.Size([2, 2])``."""

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        return math.prod(self)


def _is_number(x: Any) -> bool:
    return isinstance(x, (builtins.int, builtins.float, builtins.bool, np.number, np.bool_)) and not isinstance(
        x, np.ndarray)


def _py(x: Any) -> Any:
    """numpy scalars to Python numbers (they are weakly typed, like torch's wrapped numbers)."""
    return x.item() if isinstance(x, (np.number, np.bool_)) else x


class _AllDims:
    """The default ``dim`` of ``sum``/``mean``: torch's no-dim overload (``SumBackward0``), unlike an
    explicit ``dim=None`` (``SumBackward1``)."""

    def __repr__(self) -> str:
        return "None"


_ALL_DIMS: Any = _AllDims()


def _reduce_dims(dim: Any) -> tuple[bool, Any]:
    """(called without ``dim``, the dims to reduce)."""
    return (True, None) if dim is _ALL_DIMS else (False, dim)


class Tensor:
    """A multi-dimensional array that records the operations applied to it.

    >>> import symgrad as sg
    >>> x = sg.ones(2, 2, requires_grad=True)
    >>> out = (3 * (x + 2) ** 2).mean()
    >>> out.backward()
    >>> x.grad
    tensor([[4.5000, 4.5000],
            [4.5000, 4.5000]])
    """

    __slots__ = ("_data", "_node", "_grad", "_version", "_retains_grad", "_name", "_grad_terms", "_view",
                 "__weakref__")
    __hash__ = object.__hash__
    __array_priority__ = 1000

    def __init__(self, data: Any = None, *, _node: Node | None = None, _version: _Version | None = None) -> None:
        if not isinstance(data, np.ndarray):
            data = _to_array(data, None)
        self._data = data
        self._node = _node
        self._grad: Tensor | None = None
        self._version = _version if _version is not None else _Version()
        self._retains_grad = False
        self._name: str | None = None
        self._grad_terms = _Terms()
        self._view: Any = None  # inplace.ViewOf: the base and view ops of a view sharing its storage

    # ------------------------------------------------------------------ basic attributes
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[normalize_dims(dim, self.ndim)[0]] if self.ndim else 1

    @property
    def dtype(self) -> DType:
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def name(self) -> str | None:
        """The name this tensor's leaf symbol prints with in formulas (``name=`` at creation)."""
        return self._name

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value
        if self._node is not None and self._node.op is _LEAF:
            self._node.name = value

    # ------------------------------------------------------------------ autograd attributes
    @property
    def requires_grad(self) -> bool:
        if self._view is not None:
            self._refresh_view()
        return self._node is not None

    def _refresh_view(self) -> None:
        """A view's node after writes to its storage: taken again from its base (``inplace.refresh``)."""
        _ip.refresh(self)

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if flag and self._data.dtype.kind != "f":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Start (or stop) recording operations on this leaf tensor, in place."""
        if not self.is_leaf:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if requires_grad and self._data.dtype.kind != "f":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._node is None:
            self._node = Node(_LEAF, (), (), self._data.shape, self.dtype, value=self._data,
                              requires_grad=True, name=self._name)
            self._node.storage = self._version
            from .autograd import register_leaf
            register_leaf(self)
        elif not requires_grad:
            self._node = None
        return self

    @property
    def is_leaf(self) -> bool:
        if self._view is not None:
            self._refresh_view()
        return self._node is None or self._node.op is _LEAF

    @property
    def grad_fn(self) -> Any:
        if self._view is not None:
            self._refresh_view()
        if self._node is None or self._node.op is _LEAF:
            return None
        from .autograd import grad_fn_of
        return grad_fn_of(self._node)

    @property
    def grad(self) -> Tensor | None:
        if self._grad is None and not self.is_leaf and not self._retains_grad:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                "Tensor by mistake, make sure you access the leaf Tensor instead.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_cpp_type_name(value.dtype)}' to a tensor with "
                    f"grad_dtype '{_torch_type_name(self.dtype)}'. The gradient must match the tensor's grad_dtype "
                    "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific "
                    "dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor "
                    "and its gradient may break downstream systems that assume they match.")
        self._grad = value

    def retain_grad(self) -> None:
        """Populate ``.grad`` for this non-leaf tensor during backward."""
        if self._node is None:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if not self.is_leaf:
            self._retains_grad = True
            from .autograd import retain
            retain(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def data(self) -> Tensor:
        """The same storage, outside the graph; edits to it are not recorded."""
        t = Tensor(self._data)
        t._grad_terms = self._grad_terms
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        arr = value._data if isinstance(value, Tensor) else np.asarray(value)
        self._data = arr
        if self._node is not None and self._node.op is _LEAF:
            self._node.value = arr
            self._node.shape = arr.shape

    def detach(self) -> Tensor:
        """A new tensor on the same storage that does not require grad."""
        t = Tensor(self._data, _version=self._version)
        t._grad_terms = self._grad_terms
        return t

    def detach_(self) -> Tensor:
        self._node = None
        return self

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Sequence[Tensor] | None = None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (weighted by ``gradient``)."""
        from .autograd import backward
        if self._view is not None:
            self._refresh_view()
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook: Any) -> Any:
        from .autograd import register_hook
        return register_hook(self, hook)

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def tolist(self) -> Any:
        return self._data.tolist()

    def item(self) -> Any:
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def __float__(self) -> float:
        return builtins.float(self.item())

    def __int__(self) -> int:
        return builtins.int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return self.item().__format__(spec)
        return repr(self)

    def __repr__(self) -> str:
        from ._format import tensor_repr
        gf = self.grad_fn
        return tensor_repr(self._data, dtype_name=self.dtype.name,
                           is_default_dtype=self.dtype is dtypes.get_default_dtype(),
                           requires_grad=self.requires_grad and gf is None,
                           grad_fn_name=None if gf is None else type(gf).__name__)

    __str__ = __repr__

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, (DType, type, str)) and a not in ("cpu",):
                dtype = a
        if dtype is None:
            return self
        return _cast(self, dtypes.from_any(dtype))

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "int64": "torch.LongTensor",
                    "int32": "torch.IntTensor", "bool": "torch.BoolTensor"}.get(self.dtype.name, "torch.Tensor")
        return self.to(dtype)

    def float(self) -> Tensor:
        return _cast(self, dtypes.float32)

    def double(self) -> Tensor:
        return _cast(self, dtypes.float64)

    def half(self) -> Tensor:
        return _cast(self, dtypes.float16)

    def long(self) -> Tensor:
        return _cast(self, dtypes.int64)

    def int(self) -> Tensor:
        return _cast(self, dtypes.int32)

    def bool(self) -> Tensor:
        return _cast(self, dtypes.bool)

    def cpu(self) -> Tensor:
        return self

    def contiguous(self) -> Tensor:
        """``self`` if its memory is in C order, else a C-ordered copy (``CloneBackward0``)."""
        return self if self._data.flags.c_contiguous else _apply(REGISTRY["clone"], self, contiguous=True)

    def is_contiguous(self) -> bool:
        return builtins.bool(self._data.flags.c_contiguous)

    def clone(self) -> Tensor:
        return _apply(REGISTRY["clone"], self)

    # ------------------------------------------------------------------ arithmetic
    def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _binary("add", self, other, alpha=alpha)

    def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _binary("sub", self, other, alpha=alpha)

    def mul(self, other: Any) -> Tensor:
        return _binary("mul", self, other)

    def div(self, other: Any) -> Tensor:
        return _binary("div", self, other)

    def true_divide(self, other: Any) -> Tensor:
        return _binary("div", self, other)

    def pow(self, exponent: Any) -> Tensor:
        return pow(self, exponent)

    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = div
    __pow__ = pow
    subtract = sub
    multiply = mul
    divide = div

    def __radd__(self, other: Any) -> Tensor:
        return _binary("add", self, other)  # torch records ``other + self`` as ``self.add(other)``

    def __rmul__(self, other: Any) -> Tensor:
        return _binary("mul", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        if _is_number(other):
            return _apply(REGISTRY["rsub"], self, other=_py(other))
        return _binary("sub", other, self)

    def __rtruediv__(self, other: Any) -> Tensor:
        if _is_number(other):
            return _binary("mul", _apply(REGISTRY["reciprocal"], self), other)
        return _binary("div", other, self)

    def __rpow__(self, other: Any) -> Tensor:
        if _is_number(other):
            return _apply(REGISTRY["rpow"], self, base=_py(other))
        return pow(tensor_like(other, self), self)

    def __neg__(self) -> Tensor:
        return _apply(REGISTRY["neg"], self)

    neg = negative = __neg__

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _apply(REGISTRY["abs"], self)

    abs = absolute = __abs__

    def reciprocal(self) -> Tensor:
        return _apply(REGISTRY["reciprocal"], self)

    def exp(self) -> Tensor:
        return _apply(REGISTRY["exp"], self)

    def log(self) -> Tensor:
        return _apply(REGISTRY["log"], self)

    def log1p(self) -> Tensor:
        return _apply(REGISTRY["log1p"], self)

    def sqrt(self) -> Tensor:
        return _apply(REGISTRY["sqrt"], self)

    def sin(self) -> Tensor:
        return _apply(REGISTRY["sin"], self)

    def cos(self) -> Tensor:
        return _apply(REGISTRY["cos"], self)

    def tan(self) -> Tensor:
        return _apply(REGISTRY["tan"], self)

    def tanh(self) -> Tensor:
        return _apply(REGISTRY["tanh"], self)

    def sigmoid(self) -> Tensor:
        return _apply(REGISTRY["sigmoid"], self)

    def relu(self) -> Tensor:
        return _apply(REGISTRY["relu"], self)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return clamp(self, min, max)

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002
        return clamp(self, min, None, _fn="ClampMinBackward0")

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002
        return clamp(self, None, max, _fn="ClampMaxBackward0")

    # ------------------------------------------------------------------ comparisons (no grad)
    def _compare(self, other: Any, name: str) -> Tensor:
        if not isinstance(other, Tensor) and not _is_number(other):
            other = tensor_like(other, self)
        return _apply(REGISTRY[name], self, other)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, "eq")

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, "ne")

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, "lt")

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, "le")

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, "gt")

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, "ge")

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def equal(self, other: Tensor) -> bool:
        return self.shape == other.shape and builtins.bool(np.array_equal(self._data, other._data))

    def allclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        return builtins.bool(np.allclose(self._data, _arr(other), rtol=rtol, atol=atol, equal_nan=equal_nan))

    # ------------------------------------------------------------------ logical ops and predicates (no grad)
    def logical_and(self, other: Tensor) -> Tensor:
        return _logical("logical_and", self, other)

    def logical_or(self, other: Tensor) -> Tensor:
        return _logical("logical_or", self, other)

    def logical_xor(self, other: Tensor) -> Tensor:
        return _logical("logical_xor", self, other)

    def logical_not(self) -> Tensor:
        return _apply(REGISTRY["logical_not"], self)

    def bitwise_and(self, other: Any) -> Tensor:
        return _bitwise("and", self, other)

    def bitwise_or(self, other: Any) -> Tensor:
        return _bitwise("or", self, other)

    def bitwise_xor(self, other: Any) -> Tensor:
        return _bitwise("xor", self, other)

    def bitwise_not(self) -> Tensor:
        if self.is_floating_point():
            raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_torch_type_name(self.dtype)}'")
        return _apply(REGISTRY["logical_not" if self.dtype is dtypes.bool else "bitwise_not"], self)

    __and__, __or__, __xor__ = bitwise_and, bitwise_or, bitwise_xor

    # commutative: torch records ``other & self`` as ``self & other``
    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __invert__(self) -> Tensor:
        if self.is_floating_point():
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return self.bitwise_not()

    def isnan(self) -> Tensor:
        return _apply(REGISTRY["isnan"], self)

    def isinf(self) -> Tensor:
        return _apply(REGISTRY["isinf"], self)

    def isfinite(self) -> Tensor:
        return _apply(REGISTRY["isfinite"], self)

    def all(self) -> Tensor:
        return Tensor(np.asarray(np.all(self._data)))

    def any(self) -> Tensor:
        return Tensor(np.asarray(np.any(self._data)))

    # ------------------------------------------------------------------ reductions
    def sum(self, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        full, dim = _reduce_dims(dim)
        return _apply(REGISTRY["sum"], t, dims=normalize_dims(dim, t.ndim), keepdim=keepdim, full=full)

    def mean(self, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        if not t.is_floating_point():
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {_torch_type_name(t.dtype)}")
        full, dim = _reduce_dims(dim)
        return _apply(REGISTRY["mean"], t, dims=normalize_dims(dim, t.ndim), keepdim=keepdim, full=full)

    def prod(self, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """Product over all elements, or over one ``dim``; the gradient is exact at zeros (as torch's)."""
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        if dim is _ALL_DIMS:
            return _apply(REGISTRY["prod"], t, dims=tuple(range(t.ndim)), keepdim=False, full=True)
        return _apply(REGISTRY["prod"], t, dims=normalize_dims(_one_dim(dim), t.ndim), keepdim=keepdim, full=False)

    def max(self, dim: Any = _ALL_DIMS, keepdim: bool = False) -> Any:
        """The maximum (ties share the gradient evenly); with ``dim``, ``(values, indices)`` as
        ``torch.return_types.max`` (the gradient goes to the index returned); with a tensor, ``maximum``."""
        return _extreme(self, "max", dim, keepdim)

    def min(self, dim: Any = _ALL_DIMS, keepdim: bool = False) -> Any:
        """The minimum; see ``max``."""
        return _extreme(self, "min", dim, keepdim)

    def amax(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        """The maximum over ``dim`` (all dims for ``()``); ties share the gradient evenly."""
        return _amax(self, "amax", dim, keepdim)

    def amin(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        return _amax(self, "amin", dim, keepdim)

    def argmax(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Index of the first maximum (of the flattened tensor without ``dim``), int64."""
        return _argext(self, "argmax", dim, keepdim)

    def argmin(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _argext(self, "argmin", dim, keepdim)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Tensor:
        """``log(sum(exp(self), dim))``, stable: ``log(sum(exp(self - max))) + max``."""
        t = self if self.is_floating_point() else _cast(self, dtypes.get_default_dtype())
        dims = normalize_dims(dim, t.ndim)
        if not dims and t.ndim and not isinstance(dim, (builtins.int, np.integer)):
            raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * t.ndim}")
        return _apply(REGISTRY["logsumexp"], t, dims=dims, keepdim=keepdim)

    def softmax(self, dim: Any, dtype: Any = None) -> Tensor:
        """``exp(self - max) / sum(exp(self - max))`` along ``dim``."""
        return _softmax(self, "softmax", dim, dtype)

    def log_softmax(self, dim: Any, dtype: Any = None) -> Tensor:
        """``self - max - log(sum(exp(self - max)))`` along ``dim``."""
        return _softmax(self, "log_softmax", dim, dtype)

    def cumsum(self, dim: Any, *, dtype: Any = None) -> Tensor:
        """Running sum along ``dim`` (integers sum as int64)."""
        t = self if dtype is None else _cast(self, dtypes.from_any(dtype))
        d = normalize_dims(_one_dim(dim), t.ndim)
        return _apply(REGISTRY["cumsum"], t, dim=d[0] if d else 0, reverse=False)

    # ------------------------------------------------------------------ shape ops
    def view(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], DType):
            raise NotImplementedError("view(dtype) is not supported")
        new = _infer_shape(_shape_args(shape), self.numel())
        if not _viewable(self._data, new):
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.")
        return _reshape(self, new, "ViewBackward0")

    def reshape(self, *shape: Any) -> Tensor:
        new = _infer_shape(_shape_args(shape), self.numel())
        # torch's reshape: a view of a contiguous tensor, an alias of a strided one where the strides
        # allow it, else a copy behind ``UnsafeViewBackward0``
        if not _viewable(self._data, new):
            fn = "UnsafeViewBackward0"
        else:
            fn = "ViewBackward0" if self._data.flags.c_contiguous else "ReshapeAliasBackward0"
        return _reshape(self, new, fn)

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return _reshape(self, (1,), "ViewBackward0")
        s, e = normalize_dims(start_dim, self.ndim)[0], normalize_dims(end_dim, self.ndim)[0]
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        sh = self.shape
        return self.reshape(sh[:s] + (math.prod(sh[s:e + 1]),) + sh[e + 1:])

    def squeeze(self, dim: Any = None) -> Tensor:
        sh = self.shape
        if dim is None:
            fn, dims = "SqueezeBackward0", tuple(i for i, s in enumerate(sh) if s == 1)
        else:
            fn = "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"
            dims = tuple(d for d in normalize_dims(dim, self.ndim) if self.ndim and sh[d] == 1)
        return _reshape(self, tuple(s for i, s in enumerate(sh) if i not in dims), fn)

    def unsqueeze(self, dim: int) -> Tensor:
        d = normalize_dims(dim, self.ndim + 1)[0]
        sh = list(self.shape)
        sh.insert(d, 1)
        return _reshape(self, tuple(sh), "UnsqueezeBackward0")

    def permute(self, *dims: Any) -> Tensor:
        dims = _shape_args(dims)
        if len(dims) != self.ndim:
            raise RuntimeError(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                f"desired ordering of dimensions i.e. input.dim() = {self.ndim} is not equal to len(dims) = "
                f"{len(dims)}")
        nd = tuple(normalize_dims(d, self.ndim)[0] for d in dims)
        if len(set(nd)) != len(nd):
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return _apply(REGISTRY["permute"], self, dims=nd, fn="PermuteBackward0")

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        if self.ndim == 0:
            return _apply(REGISTRY["permute"], self, dims=(), fn="TransposeBackward0")
        d0, d1 = normalize_dims(dim0, self.ndim)[0], normalize_dims(dim1, self.ndim)[0]
        dims = list(range(self.ndim))
        dims[d0], dims[d1] = dims[d1], dims[d0]
        return _apply(REGISTRY["permute"], self, dims=tuple(dims), fn="TransposeBackward0")

    swapaxes = transpose

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return _apply(REGISTRY["permute"], self, dims=tuple(reversed(range(self.ndim))), fn="TBackward0")

    @property
    def T(self) -> Tensor:  # noqa: N802
        return _apply(REGISTRY["permute"], self, dims=tuple(reversed(range(self.ndim))), fn="PermuteBackward0")

    @property
    def mT(self) -> Tensor:  # noqa: N802
        if self.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    def expand(self, *sizes: Any) -> Tensor:
        sizes = _shape_args(sizes)
        if len(sizes) < self.ndim:
            raise RuntimeError(
                f"expand(torch.FloatTensor{{{list(self.shape)}}}, size={list(sizes)}): the number of sizes provided "
                f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({self.ndim})")
        lead = len(sizes) - self.ndim
        out = []
        for i, s in enumerate(sizes):
            cur = self.shape[i - lead] if i >= lead else 1
            if s == -1:
                if i < lead:
                    raise RuntimeError("The expanded size of the tensor (-1) isn't allowed in a leading, "
                                       "non-existing dimension 0")
                s = cur
            if cur != 1 and cur != s:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at non-singleton "
                    f"dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(self.shape)}")
            out.append(s)
        return _apply(REGISTRY["expand"], self, shape=tuple(out))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        return self.expand(*shape)

    def repeat(self, *sizes: Any) -> Tensor:
        """Tile the tensor ``sizes[i]`` times along dim ``i`` (new leading dims first), a copy."""
        reps = _shape_args(sizes)
        if len(reps) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                               "tensor")
        padded = (1,) * (len(reps) - self.ndim) + tuple(self.shape)
        out = [s * r for s, r in zip(padded, reps)]
        if any(r < 0 for r in reps):
            bad = next(o for o in out if o < 0)
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {out}")
        return _apply(REGISTRY["repeat"], self, repeats=reps)

    def split(self, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
        """Views of consecutive pieces along ``dim``: of ``split_size`` each (the last may be shorter),
        or of the given sizes."""
        if self.ndim == 0:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        d = normalize_dims(dim, self.ndim)[0]
        n = self.shape[d]
        if isinstance(split_size_or_sections, (builtins.int, np.integer)):
            size = builtins.int(split_size_or_sections)
            if size < 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
            if size == 0 and n != 0:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            sizes = [0] if size == 0 else [builtins.min(size, n - i) for i in range(0, builtins.max(n, 1), size)]
            return _pieces(self, d, sizes, "SplitBackward0")
        sizes = [builtins.int(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
        return _pieces(self, d, sizes, "SplitWithSizesBackward0")

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """At most ``chunks`` views of ``ceil(size / chunks)`` elements along ``dim``."""
        if self.ndim == 0:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        d = normalize_dims(dim, self.ndim)[0]
        n = self.shape[d]
        size = -(-n // chunks)
        if n == 0:
            return _pieces(self, d, [0] * chunks, "SplitWithSizesBackward0")
        return self.split(size, d)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """The views ``self.select(dim, i)`` for each ``i``."""
        if self.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        d = normalize_dims(dim, self.ndim)[0]
        lead = (("s", None, None, None),) * d
        return _multi_views([_apply(REGISTRY["index"], self, index=lead + (("i", i),), fn="UnbindBackward0")
                             for i in range(self.shape[d])], "UnbindBackward0")

    def matmul(self, other: Any) -> Tensor:
        """``self @ other``: dot, matrix-vector, matrix-matrix or batched (broadcast) products."""
        from .ops.linalg import matmul_shape, torch_name
        other = other if isinstance(other, Tensor) else tensor_like(other, self)
        matmul_shape(self._data.shape, other._data.shape)
        return _apply(REGISTRY["matmul"], self, other, fn=torch_name(self.ndim, other.ndim))

    __matmul__ = matmul

    def __rmatmul__(self, other: Any) -> Tensor:
        return tensor_like(other, self).matmul(self)

    def mm(self, other: Tensor) -> Tensor:
        if self.ndim != 2 or other.ndim != 2:
            raise RuntimeError("self must be a matrix" if self.ndim != 2 else "mat2 must be a matrix")
        return self.matmul(other)

    def mv(self, vec: Tensor) -> Tensor:
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {vec.ndim}")
        return self.matmul(vec)

    def dot(self, other: Tensor) -> Tensor:
        if self.ndim != 1 or other.ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
        return self.matmul(other)

    def outer(self, other: Tensor) -> Tensor:
        return self.unsqueeze(1) * other.unsqueeze(0)

    def __getitem__(self, index: Any) -> Tensor:
        from .indexing import getitem
        return getitem(self, index)

    # ------------------------------------------------------------------ in-place
    def _inplace(self, name: str, other: Any = None, **attrs: Any) -> Tensor:
        op = REGISTRY[name]
        args = (self,) if other is None else (self, other)
        tracing = _trace.active is not None
        if tracing:  # a functional update: the tracer is rebound to the op's result
            _ip.check_trace_target(self)
        _ip.refresh(self)
        if is_grad_enabled() and self.is_leaf and self.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if is_grad_enabled() and self._node is not None and self._node in MULTI_VIEWS:
            fn, k = MULTI_VIEWS[self._node]
            raise RuntimeError(
                f"Output {k} of {fn} is a view and is being modified inplace. This view is the output of a function "
                "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
                "You should replace the inplace operation by an out-of-place one.")
        if is_grad_enabled():
            _ip.check_view_write(self)
        if not tracing and is_grad_enabled() and any(isinstance(a, Tensor) and a._node is not None for a in args) \
                and _reads_self(op, len(args), attrs):
            # the op's own backward reads ``self`` as it was before the write, as torch's saved original self
            args = (_original(self), *args[1:])
        res = _apply(op, *args, _out_dtype=self.dtype, **attrs)
        if res._data.shape != self._data.shape:
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(res.shape)}")
        want = dtypes.result_type(*promotion_operands(op, args, attrs))
        if not op.keeps_int:
            want = dtypes.float_result(want)
        if want.category > self.dtype.category:
            raise RuntimeError(f"result type {_scalar_type_name(want)} can't be cast to the desired output type "
                               f"{_scalar_type_name(self.dtype)}")
        if tracing:
            self._node = res._node
            self._version.v += 1
            self._version.recorded += 1
            if self._view is not None:
                _ip.propagate(self)
            return self
        self._data[...] = res._data
        self._version.v += 1
        self._grad_terms.reset(False)
        if res._node is not None:
            node = res._node
            node.value = self._data
            node.storage = self._version
            node.version = self._version.v
            self._node = node
            self._version.recorded += 1
            if self._view is not None:
                _ip.propagate(self)
        return self

    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace("add", other, **({} if alpha == 1 else {"alpha": _py(alpha)}))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace("sub", other, **({} if alpha == 1 else {"alpha": _py(alpha)}))

    def mul_(self, other: Any) -> Tensor:
        return self._inplace("mul", other)

    def div_(self, other: Any) -> Tensor:
        return self._inplace("div", other)

    def pow_(self, exponent: Any) -> Tensor:
        if _is_number(exponent):
            return self._inplace("pow", exponent=_py(exponent))
        return self._inplace("pow_tensor", exponent)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._inplace("clamp", min=_py(min), max=_py(max))

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def zero_(self) -> Tensor:
        """Fill with zeros in place (``ZeroBackward0``: no gradient reaches the overwritten values)."""
        return self._fill(0, "ZeroBackward0")

    def fill_(self, value: Any) -> Tensor:
        """Fill with ``value`` (a number or a 0-d tensor, whose gradient is the sum of this one's)."""
        if isinstance(value, Tensor):
            if value.ndim:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                                   "dimensions.")
            return self._fill(value, "FillBackward3")
        return self._fill(_py(value), "FillBackward2")

    def _fill(self, value: Any, fn: str) -> Tensor:
        _ip.write(self, _ip.WHOLE, value, fn=fn)
        if not isinstance(value, Tensor):
            self._grad_terms.reset(value == 0)
        return self

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        """Copy ``src`` (broadcast, converted to this dtype) into this tensor; gradients flow to ``src``."""
        return _ip.copy_(self, src)

    def __setitem__(self, index: Any, value: Any) -> None:
        """``t[index] = value`` (ints, slices, None, ``...``, integer arrays, boolean masks), recorded as an
        ``index_put`` node (``CopySlices``) when a gradient is needed."""
        _ip.setitem(self, index, value)

    def index_put(self, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
        """A copy with ``values`` written (``accumulate``: added) at the integer/boolean tensors ``indices``."""
        return _ip.index_put(self, indices, values, accumulate)

    def index_put_(self, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
        return _ip.index_put(self, indices, values, accumulate, inplace=True)

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """A copy with ``alpha * source`` added along ``dim`` at the positions ``index`` (repeats add up)."""
        return _ip.index_add(self, dim, index, source, alpha=alpha)

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        return _ip.index_add(self, dim, index, source, alpha=alpha, inplace=True)


# ====================================================================== eager op application

def _arr(x: Any) -> np.ndarray:
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def _to_array(data: Any, dtype: DType | None) -> np.ndarray:
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in _flatten(data)):
        arr = np.array(_unwrap(data))
    else:
        arr = np.array(data)
    if dtype is not None:
        return np.array(arr, dtype=dtype.np)
    if arr.dtype.kind == "f" and not isinstance(data, np.ndarray) and not _is_np_float(data):
        return arr.astype(dtypes.get_default_dtype().np)
    if arr.dtype.kind in "iu" and not isinstance(data, np.ndarray):
        return arr.astype(np.int64)
    if arr.dtype.kind in "US" or arr.dtype == object:
        first = data
        while isinstance(first, (list, tuple)) and first:
            first = first[0]
        if isinstance(first, str) and first is not data:
            # torch reads the shape along the first elements, and a string is a sequence of strings
            raise ValueError("too many dimensions 'str'")
        bad = next((e for e in _flatten(data) if not _is_number(e)), data)
        if isinstance(bad, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(bad).__name__}'")
        raise RuntimeError(f"Could not infer dtype of {type(bad).__name__}")
    if arr.dtype.kind == "f" and arr.dtype not in (np.float16, np.float32, np.float64):
        return arr.astype(np.float64)
    return arr


def _is_np_float(x: Any) -> bool:
    return isinstance(x, np.floating)


def _flatten(x: Any) -> Iterator[Any]:
    if isinstance(x, (list, tuple)):
        for e in x:
            yield from _flatten(e)
    else:
        yield x


def _unwrap(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return [_unwrap(e) for e in x]
    return x._data.item() if isinstance(x, Tensor) else x


#: view node -> how many recorded in-place writes its storage had when the view was taken
VIEW_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: node of a view made by a function returning several (split, chunk, unbind) -> (torch's name, output number):
#: torch refuses in-place operations on those
MULTI_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: node -> per input (version of its storage when the node was recorded, the input tensor) or None:
#: what torch's SavedVariable remembers, checked when a backward rule reads that input.
SAVED_INPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _refuse_inplace_on_view(node: Node) -> None:
    """In-place on a view of a tensor that requires grad: torch's error for a leaf's view; otherwise
    torch rewrites the base's history (``CopySlices``), which symgrad does not do."""
    base = node
    while base.op.family != "source" and base.op.is_view(dict(base.attrs)):
        base = base.inputs[0]
    if base.op is _LEAF:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    raise NotImplementedError(
        "symgrad does not support in-place operations on a view of a tensor that requires grad (torch rewrites "
        "the history of the viewed tensor as CopySlices); apply the operation out of place, or to a clone()")


def _reads_self(op: OpDef, n: int, attrs: dict) -> bool:
    """Whether the rule of an in-place ``op`` reads its first input (``mul_`` does, ``add_`` does not)."""
    if op.family != "elementwise":
        return True
    from .ops import A
    return any(A[0] in p.free_symbols for p in op.local_partials(n, tuple(sorted(attrs.items()))))


def _original(t: Tensor) -> Tensor:
    """``t`` as an in-place op on it saves it: a copy of its value under a fresh version counter.

    Its node, if any, is a ``clone`` of ``t``'s marked ``saved`` (hidden from ``next_functions``):
    the gradient flows on to ``t``'s node, while the ops that saved ``t`` itself (``exp`` saves its
    result) still see the write and raise torch's "modified by an inplace operation" error.
    """
    snap = Tensor(t._data.copy())
    n = t._node
    if n is not None:
        saved = Node(REGISTRY["clone"], (n,), (("saved", True),), n.shape, n.dtype, value=snap._data,
                     requires_grad=True)
        saved.storage = snap._version
        saved.version = snap._version.v
        snap._node = saved
    return snap


def _const_node(t: Tensor) -> Node:
    n = Node(_CONST, (), (), t._data.shape, t.dtype, value=t._data, name=t._name)
    n.storage = t._version
    n.version = t._version.v
    return n


def _input_node(x: Any) -> Node:
    if isinstance(x, Tensor):
        if x._view is not None:
            _ip.refresh(x)
        elif x._node is not None and x._node in VIEW_WRITES and VIEW_WRITES[x._node] != x._version.recorded:
            raise NotImplementedError(
                "symgrad does not support using a view after an in-place operation recorded on the tensor it views "
                "(torch regenerates the view's grad_fn); take the view again after the in-place operation")
        return x._node if x._node is not None else _const_node(x)
    v = _py(x)
    return Node(_SCALAR, (), (("value", v),), (), dtypes.result_type(v), value=v)


def _apply(op: OpDef, *inputs: Any, _out_dtype: DType | None = None, **attrs: Any) -> Tensor:
    """Run ``op`` eagerly on tensors / Python numbers and record a node when grad is needed."""
    if _trace.active is not None:
        return _trace.active.record(op, inputs, attrs, _out_dtype)
    if op.check is not None:
        op.check(*(x.dtype if isinstance(x, Tensor) else dtypes.result_type(_py(x)) for x in inputs), **attrs)
    if op.family == "elementwise":
        dt = dtypes.result_type(*promotion_operands(op, inputs, attrs))
        if not op.keeps_int:
            dt = dtypes.float_result(dt)
        if op.name == "to":
            dt = dtypes.from_any(attrs["dtype"])
        elif op.diff_args == () and op.name in _COMPARISONS:
            arrays = [x._data if isinstance(x, Tensor) else np.asarray(_py(x)) for x in inputs]
            broadcast_shapes(*(a.shape for a in arrays))
            return Tensor(np.asarray(op.eval(*arrays)))
        arrays = [x._data.astype(dt.np, copy=False) if isinstance(x, Tensor) and op.name != "to" else
                  x._data if isinstance(x, Tensor) else np.asarray(_py(x), dtype=dt.np) for x in inputs]
        if len(inputs) > 1:
            broadcast_shapes(*(a.shape for a in arrays))
    else:
        arrays = [x._data if isinstance(x, Tensor) else np.asarray(_py(x)) for x in inputs]
        dt = None
    value = op.eval(*arrays, **attrs)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if op.family == "elementwise" and value.ndim >= 2:
        value = _torch_layout(value, arrays, op.result_layout(attrs))
    if _out_dtype is not None:
        dt = _out_dtype  # in-place ops keep the dtype of the tensor they write into
    if dt is not None and value.dtype != dt.np:
        value = value.astype(dt.np)
    out_dt = dtypes.from_numpy_dtype(value.dtype)
    diff = op.diff_args
    needs = is_grad_enabled() and any(
        isinstance(x, Tensor) and x._node is not None and (diff is None or i in diff) for i, x in enumerate(inputs))
    is_view = isinstance(inputs[0], Tensor) and op.is_view(attrs) if inputs else False
    version = inputs[0]._version if is_view else None
    out = Tensor(value, _version=version)
    if is_view:
        _ip.note_view(out, inputs[0], op, attrs)
    if needs:
        if not out_dt.is_floating_point:
            return out
        node = Node(op, tuple(_input_node(x) for x in inputs), tuple(sorted(attrs.items())), value.shape, out_dt,
                    value=value, requires_grad=True)
        node.storage = out._version
        node.version = out._version.v
        out._node = node
        SAVED_INPUTS[node] = tuple((x._version.v, weakref.ref(x)) if isinstance(x, Tensor) else None for x in inputs)
        if is_view:
            VIEW_WRITES[node] = out._version.recorded
    return out


_COMPARISONS = frozenset(("gt", "ge", "lt", "le", "eq", "ne", "logical_and", "logical_or", "logical_xor",
                          "logical_not", "isnan", "isinf", "isfinite"))


def _torch_layout(value: np.ndarray, operands: Sequence[np.ndarray], layout: str) -> np.ndarray:
    """``value`` laid out in memory as torch lays out an elementwise result, so that ``view()`` works
    (or fails) and ``reshape`` picks its grad_fn as in torch.

    torch's TensorIterator orders the dims by the strides of the operands, first operand first,
    skipping broadcast dims (numpy instead falls back to C order when the operands disagree).
    """
    if layout == "contiguous":
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    if all(a.flags.c_contiguous for a in operands):
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    shape, nd = value.shape, value.ndim
    strides = []
    for a in operands:
        lead = nd - a.ndim
        strides.append([0 if i < lead or (a.shape[i - lead] == 1 and shape[i] != 1) else a.strides[i - lead]
                        for i in range(nd)])

    def should_swap(d0: int, d1: int) -> int:
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(nd - 1, -1, -1))  # fastest-moving dim first, as TensorIterator keeps it
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    order = perm[::-1]  # slowest first
    if order == list(range(nd)):
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    want = np.empty([shape[d] for d in order], dtype=value.dtype).transpose(np.argsort(order))
    if want.strides == value.strides:
        return value
    want[...] = value
    return want


def _binary(name: str, a: Any, b: Any, **attrs: Any) -> Tensor:
    if not isinstance(a, Tensor) and not _is_number(a):
        a = tensor_like(a, b)
    if not isinstance(b, Tensor) and not _is_number(b):
        b = tensor_like(b, a)
    if attrs.get("alpha", 1) == 1:
        attrs.pop("alpha", None)
    else:
        attrs["alpha"] = _py(attrs["alpha"])
    return _apply(REGISTRY[name], a, b, **attrs)


def tensor_like(x: Any, ref: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor(x)
    return Tensor(_to_array(x, None))


def _cast(t: Tensor, dt: DType) -> Tensor:
    if t.dtype is dt:
        return t
    return _apply(REGISTRY["to"], t, dtype=dt.name)


def _reshape(t: Tensor, shape: tuple[int, ...], fn: str) -> Tensor:
    return _apply(REGISTRY["reshape"], t, shape=tuple(builtins.int(s) for s in shape), fn=fn)


def _viewable(arr: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether ``arr`` can be reshaped to ``shape`` without a copy (torch's view rule on strides)."""
    try:
        np.reshape(arr, shape, copy=False)
    except ValueError:
        return False
    return True


def _shape_args(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(builtins.int(s) for s in shape)


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _torch_type_name(d: DType) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}[d.name]


_scalar_type_name = _torch_type_name


def _cpp_type_name(d: DType) -> str:
    """The C++ name torch's messages give a dtype (``double``, ``long int``)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}[d.name]


def pow(a: Any, exponent: Any) -> Tensor:  # noqa: A001
    """``a ** exponent`` elementwise (tensor or number on either side)."""
    if not isinstance(a, Tensor):
        if isinstance(exponent, Tensor) and _is_number(a):
            return exponent.__rpow__(a)
        a = tensor_like(a, exponent)
    if _is_number(exponent):
        e = _py(exponent)
        if isinstance(e, builtins.bool):
            e = builtins.int(e)
        return _apply(REGISTRY["pow"], a, exponent=e)
    return _apply(REGISTRY["pow_tensor"], a, tensor_like(exponent, a))


def clamp(a: Tensor, min: Any = None, max: Any = None, _fn: str | None = None) -> Tensor:  # noqa: A002
    """Clamp to ``[min, max]``; the gradient passes where ``min <= a <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        from . import functional as F
        out = a
        if min is not None:
            out = F.maximum(out, min)
        if max is not None:
            out = F.minimum(out, max)
        return out
    return _apply(REGISTRY["clamp"], a, min=_py(min), max=_py(max), **({} if _fn is None else {"fn": _fn}))


# ====================================================================== reductions, logical ops, splits


def _one_dim(dim: Any) -> int:
    """A single ``dim`` argument (torch's overloads refuse a tuple where one dim is expected)."""
    if not isinstance(dim, (builtins.int, np.integer)):
        raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
    return builtins.int(dim)


def _nonempty(t: Tensor, name: str, dims: Sequence[int]) -> None:
    for d in dims:
        if t.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _extreme(t: Tensor, name: str, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):
        from . import functional as F
        return getattr(F, "maximum" if name == "max" else "minimum")(t, dim)
    if dim is _ALL_DIMS:
        if t.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        return _apply(REGISTRY["a" + name], t, dims=tuple(range(t.ndim)), keepdim=False, full=True)
    dims = normalize_dims(_one_dim(dim), t.ndim)
    _nonempty(t, name, dims)
    from .return_types import RETURN_TYPES
    indices = _apply(REGISTRY["arg" + name], t, dim=dims[0] if dims else None, keepdim=keepdim)
    values = _apply(REGISTRY[name], t, indices, dims=dims, keepdim=keepdim)
    return RETURN_TYPES[name](values, indices)


def _amax(t: Tensor, name: str, dim: Any, keepdim: bool) -> Tensor:
    if isinstance(dim, (tuple, list)) and not len(dim):
        if t.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        dims = tuple(range(t.ndim))
    else:
        dims = normalize_dims(dim, t.ndim)
    _nonempty(t, name, dims)
    return _apply(REGISTRY[name], t, dims=dims, keepdim=keepdim, full=False)


def _argext(t: Tensor, name: str, dim: Any, keepdim: bool) -> Tensor:
    if dim is None:
        if t.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return _apply(REGISTRY[name], t, dim=None, keepdim=keepdim)
    dims = normalize_dims(_one_dim(dim), t.ndim)
    _nonempty(t, name, dims)
    return _apply(REGISTRY[name], t, dim=dims[0] if dims else None, keepdim=keepdim)


def _softmax(t: Tensor, name: str, dim: Any, dtype: Any) -> Tensor:
    if dtype is not None:
        t = _cast(t, dtypes.from_any(dtype))
    dims = normalize_dims(_one_dim(dim), t.ndim)
    if not t.is_floating_point():
        kernel = "lastdim_kernel_impl" if not dims or dims[0] == t.ndim - 1 else "kernel_impl"
        raise NotImplementedError(f"\"{name}_{kernel}\" not implemented for '{_torch_type_name(t.dtype)}'")
    return _apply(REGISTRY[name], t, dims=dims)


def _logical(name: str, a: Tensor, b: Any, position: int = 1) -> Tensor:
    if not isinstance(b, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position {position}) must be Tensor, not {type(b).__name__}")
    return _apply(REGISTRY[name], a, b)


def _bitwise(kind: str, a: Any, b: Any) -> Tensor:
    """``a & b`` (``|``, ``^``): logical on bools, bitwise on integers, torch's error on floats."""
    if not isinstance(a, Tensor) and not _is_number(a):
        a = tensor_like(a, b)
    if not isinstance(b, Tensor) and not _is_number(b):
        b = tensor_like(b, a)
    dt = dtypes.result_type(a, b)
    if dt.is_floating_point:
        raise NotImplementedError(f"\"bitwise_{kind}_cpu\" not implemented for '{_torch_type_name(dt)}'")
    return _apply(REGISTRY[("logical_" if dt is dtypes.bool else "bitwise_") + kind], _py(a), _py(b))


def _pieces(t: Tensor, dim: int, sizes: Sequence[int], fn: str) -> tuple[Tensor, ...]:
    """Views of consecutive slices of ``sizes`` along ``dim`` (torch's split family)."""
    lead = (("s", None, None, None),) * dim
    out, start = [], 0
    for size in sizes:
        out.append(_apply(REGISTRY["index"], t, index=lead + (("s", start, start + size, None),), fn=fn))
        start += size
    return _multi_views(out, fn)


def _multi_views(views: list[Tensor], fn: str) -> tuple[Tensor, ...]:
    for k, v in enumerate(views):
        if v._node is not None and v._node.op is REGISTRY["index"]:
            MULTI_VIEWS[v._node] = (fn.removesuffix("Backward0"), k)
    return tuple(views)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing ``dim`` (dtypes promote as in torch)."""
    ts = [t if isinstance(t, Tensor) else tensor_like(t, None) for t in tensors]
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    from .ops.join import joined
    kept = joined([t.shape for t in ts])  # torch skips 1-d empty tensors
    first = ts[kept[0]]
    nd = first.ndim
    d = normalize_dims(_one_dim(dim), nd)[0]
    for i in kept[1:]:
        t = ts[i]
        if t.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {t.ndim}")
        for k in range(nd):
            if k != d and t.shape[k] != first.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{first.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list.")
    return _apply(REGISTRY["cat"], *ts, dim=d, out_dtype=dtypes.result_type(*ts).name)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equally shaped tensors along a new ``dim``."""
    ts = [t if isinstance(t, Tensor) else tensor_like(t, None) for t in tensors]
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = normalize_dims(_one_dim(dim), ts[0].ndim + 1)[0]
    for i, t in enumerate(ts[1:], 1):
        if t.shape != ts[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ts[0].shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    return _apply(REGISTRY["stack"], *ts, dim=d, out_dtype=dtypes.result_type(*ts).name)
