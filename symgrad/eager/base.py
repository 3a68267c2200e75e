"""``TensorBase``: a tensor's storage, attributes and conversions, and the helpers every eager module shares.

The class ops return is declared once, with ``concrete=True`` (``eager.tensor.Tensor``: this base plus the method
families of ``eager/methods/``); modules below it construct tensors through ``new_tensor``.
"""
from __future__ import annotations

import builtins
import math
import warnings
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from ..core import dtypes
from ..core.dtypes import DType
from ..core.graph import Node
from ..ops import normalize_dims
from ..ops import source as _src
from .device import CPU, device
from .device import check as check_device
from .grad_mode import is_inference_mode_enabled
from .printing import tensor_repr

if TYPE_CHECKING:
    from .tensor import Tensor

_LEAF, _CONST, _SCALAR = _src.leaf, _src.const, _src.scalar


class _Version:
    """A storage's version counter, shared by views and ``detach()`` (not by ``.data``).

    ``recorded`` counts the in-place writes that were recorded in the graph (a view taken before
    one no longer describes how its values were computed). ``inference``: the storage was made inside
    ``inference_mode`` (its tensors are torch's inference tensors, and so are their views).
    """

    __slots__ = ("v", "recorded", "inference")

    def __init__(self) -> None:
        self.v = 0
        self.recorded = 0
        self.inference = is_inference_mode_enabled()

    # ``t._version`` is torch's int: users print it, compare it and do arithmetic with it
    __hash__ = object.__hash__

    def __int__(self) -> int:
        return self.v

    __index__ = __int__

    def __repr__(self) -> str:
        return repr(self.v)

    def __format__(self, spec: str) -> str:
        return format(self.v, spec)

    def __eq__(self, other: object) -> bool:
        return self is other or (not isinstance(other, _Version) and self.v == other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: Any) -> bool:
        return self.v < int(other)

    def __le__(self, other: Any) -> bool:
        return self.v <= int(other)

    def __gt__(self, other: Any) -> bool:
        return self.v > int(other)

    def __ge__(self, other: Any) -> bool:
        return self.v >= int(other)

    def __add__(self, other: Any) -> Any:
        return self.v + other

    def __radd__(self, other: Any) -> Any:
        return other + self.v

    def __sub__(self, other: Any) -> Any:
        return self.v - other

    def __rsub__(self, other: Any) -> Any:
        return other - self.v


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


class TensorBase:
    """A tensor's storage and plain attributes (see ``eager.tensor.Tensor`` for the class users get)."""

    #: the class ops return (``eager.tensor.Tensor``, declared with ``concrete=True``)
    _concrete: type
    #: whether this tensor is a symbolic value of a trace (``compiler.tracing.Tracer``) rather than data
    _traced = False

    def __init_subclass__(cls, concrete: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if concrete:
            TensorBase._concrete = cls

    __slots__ = ("_data", "_node", "_grad", "_version", "_retains_grad", "_name", "_terms", "_view",
                 "__weakref__")

    __hash__ = object.__hash__

    __array_priority__ = 1000

    def __init__(self, data: Any = None, *sizes: Any, _node: Node | None = None,
                 _version: _Version | None = None, device: Any = None) -> None:
        if not isinstance(data, np.ndarray):
            data = legacy_array(data, sizes, dtypes.get_default_dtype(), device)
        self._setup(data, _node, _version)

    def __reduce_ex__(self, protocol: int) -> tuple:
        """Pickle (``sg.save``, ``copy.deepcopy``) as the values, ``requires_grad`` and the class: a leaf again."""
        return (_rebuild_tensor, (type(self), pickled_storage(self._data), self.requires_grad))

    def _setup(self, data: np.ndarray, _node: Node | None, _version: _Version | None) -> None:
        self._data = data
        self._node = _node
        self._grad: Tensor | None = None
        self._version = _version if _version is not None else _Version()
        self._retains_grad = False
        self._name: str | None = None
        self._terms: _Terms | None = None  # made on first use (``_grad_terms``): most tensors never hold a .grad
        self._view: Any = None  # inplace.ViewOf: the base and view ops of a view sharing its storage

    @property
    def _grad_terms(self) -> _Terms:
        """What this tensor, as a ``.grad``, accumulated (``sg.grad_formula``); shared with ``.data`` / ``detach()``."""
        if self._terms is None:
            self._terms = _Terms()
        return self._terms

    @_grad_terms.setter
    def _grad_terms(self, value: _Terms) -> None:
        self._terms = value

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
    def device(self) -> device:
        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def name(self) -> str | None:
        """The name this tensor's leaf symbol prints with in formulas (``name=`` at creation)."""
        return self._name

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value
        if self._node is not None and self._node.op is _LEAF:
            self._node.name = value

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
        if self._node is not None and not _WARNED_SCALAR:
            _warn_scalar()
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
        gf = self.grad_fn
        return tensor_repr(self._data, dtype_name=self.dtype.name,
                           is_default_dtype=self.dtype is dtypes.get_default_dtype(),
                           requires_grad=self.requires_grad and gf is None,
                           grad_fn_name=None if gf is None else type(gf).__name__)

    __str__ = __repr__

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython and Jupyter show the repr (torch's text), line by line so it nests in containers."""
        for i, line in enumerate(repr(self).splitlines()):
            if i:
                p.break_()
            p.text(line)


_WARNED_SCALAR = False


class _StorageView:
    """A pickled view of a storage: the base array (pickled once per file, so tensors that shared it still
    do after ``load``, as torch's storages) and where the view lies in it."""

    __slots__ = ("root", "offset", "shape", "strides")

    def __init__(self, root: np.ndarray, offset: int, shape: tuple, strides: tuple) -> None:
        self.root, self.offset, self.shape, self.strides = root, offset, shape, strides

    def __reduce__(self) -> tuple:
        return (_StorageView, (self.root, self.offset, self.shape, self.strides))

    def array(self) -> np.ndarray:
        return np.ndarray(self.shape, self.root.dtype, buffer=self.root, offset=self.offset, strides=self.strides)


def pickled_storage(data: np.ndarray) -> Any:
    """What a tensor pickles for its values: its array itself when it owns its memory, the array it views
    (a ``_StorageView``) when that one does and is contiguous, else a copy."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not (root.flags.owndata and root.flags.c_contiguous and root.flags.writeable and data.flags.writeable):
        return np.array(data)
    if root is data:
        return data
    offset = data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if root.dtype != data.dtype or offset < 0:
        return np.array(data)
    return _StorageView(root, offset, data.shape, data.strides)


def unpickled_storage(data: Any) -> np.ndarray:
    """``pickled_storage``'s array back."""
    return data.array() if isinstance(data, _StorageView) else data


_INFERENCE_WRITE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                    "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                    "more details.")


def check_inference_write(t: TensorBase) -> None:
    """torch's error for an in-place write into an inference tensor outside ``inference_mode``."""
    if t._version.inference and not is_inference_mode_enabled():
        raise RuntimeError(_INFERENCE_WRITE)


def _rebuild_tensor(cls: type, data: Any, requires_grad: bool) -> TensorBase:
    """A tensor unpickled: ``cls`` (Tensor, nn.Parameter, ...) over ``data``, a leaf requiring grad as it did."""
    data = unpickled_storage(data)
    t = cls.__new__(cls)
    TensorBase._setup(t, data, None, None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _warn_scalar() -> None:
    """torch's once-per-process warning for ``float()`` of a tensor that requires grad."""
    global _WARNED_SCALAR
    _WARNED_SCALAR = True
    warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                  "Consider using tensor.detach() first. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/"
                  "autograd/generated/python_variable_methods.cpp:822.)", UserWarning, stacklevel=3)


def make_tensor(data: Any = None, *, _node: Node | None = None, _version: _Version | None = None) -> Tensor:
    """A tensor of the concrete class (what ops return) holding ``data`` (an array, or values ``_to_array`` reads)."""
    cls = TensorBase._concrete
    t = cls.__new__(cls)
    t._setup(data if isinstance(data, np.ndarray) else _to_array(data, None), _node, _version)
    return t


def is_traced(x: Any) -> bool:
    """Whether ``x`` is a value being traced (it has a node but no data)."""
    return isinstance(x, TensorBase) and x._traced


def _arr(x: Any) -> np.ndarray:
    return x._data if isinstance(x, TensorBase) else np.asarray(x)


_KINDS = {"b": 0, "u": 1, "i": 1, "f": 2}


def _scalar_dtype(e: Any) -> np.dtype | None:
    """The dtype torch infers for one element of ``torch.tensor``'s data (None: not a number it types)."""
    if isinstance(e, (np.generic, np.ndarray)):     # before float: numpy's float64 is a Python float
        return e.dtype if e.dtype.kind in _KINDS else None
    if isinstance(e, bool):
        return np.dtype(bool)
    if isinstance(e, int):
        return np.dtype(np.int64)
    if isinstance(e, float):
        return dtypes.get_default_dtype().np
    if isinstance(e, TensorBase):
        return e._data.dtype
    return None


def _infer_dtype(data: Any) -> np.dtype | None:
    """torch's dtype for ``torch.tensor(data)`` of numbers, numpy scalars and tensors in (nested) sequences: each
    element's type (a Python float the default dtype, an int int64, a numpy scalar or 0-d tensor its own),
    promoted as torch promotes (a higher kind wins whatever its size: int64 with float16 is float16); None
    where numpy's own inference is kept (no numpy scalar or tensor, or something else)."""
    best: np.dtype | None = None
    typed = False
    for e in _flatten(data):
        d = _scalar_dtype(e)
        if d is None:
            return None
        typed = typed or isinstance(e, (np.generic, np.ndarray, TensorBase))
        if best is None or _KINDS[d.kind] > _KINDS[best.kind]:
            best = d
        elif _KINDS[d.kind] == _KINDS[best.kind]:
            best = np.promote_types(best, d)
    return best if typed else None


def _to_array(data: Any, dtype: DType | None) -> np.ndarray:
    inferred = None
    if dtype is None and isinstance(data, (list, tuple, np.generic)):
        inferred = _infer_dtype(data if not isinstance(data, np.generic) else [data])
    if isinstance(data, TensorBase):
        arr = data._data
    elif isinstance(data, (list, tuple)) and any(isinstance(d, TensorBase) for d in _flatten(data)):
        arr = np.array(_unwrap(data), dtype=inferred)
    else:
        arr = np.array(data, dtype=inferred)
    if dtype is not None:
        return np.array(arr, dtype=dtype.np)
    if inferred is not None:
        return arr
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
    return x._data.item() if isinstance(x, TensorBase) else x


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


def legacy_array(data: Any, sizes: tuple, dtype: DType, dev: Any = None) -> np.ndarray:
    """What torch's legacy constructors (``torch.Tensor(...)``, ``torch.FloatTensor(...)``) make of their
    arguments: a sequence or a tensor of values (converted to ``dtype``), or sizes (zeros; torch leaves them
    uninitialized), or nothing (an empty 1-d tensor)."""
    if dev is not None:
        check_device(dev)
    if data is None:
        return np.zeros((0,), dtype.np)
    if isinstance(data, (builtins.int, np.integer)) and not isinstance(data, builtins.bool):
        shape = (builtins.int(data), *(builtins.int(s) for s in sizes))
        if builtins.any(s < 0 for s in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(shape)}: {list(shape)}")
        return np.zeros(shape, dtype.np)
    if sizes:
        raise TypeError("new(): invalid data type '" + type(data).__name__ + "'")
    if isinstance(data, Size):
        return np.zeros(tuple(data), dtype.np)
    if isinstance(data, (builtins.float, builtins.bool)) or np.ndim(data) == 0 and not isinstance(data, TensorBase):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return np.array(_to_array(data, None), dtype=dtype.np)
