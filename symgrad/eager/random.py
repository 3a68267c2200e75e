"""torch's random numbers on symgrad tensors: ``Generator``, the global generator and its seeding, the sampling
functions (``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``bernoulli``, ``multinomial``, ``*_like``)
and the in-place samplers behind ``Tensor.uniform_`` / ``normal_`` / ``random_`` / ... .

Every draw comes from ``core.rng``, torch 2.13's CPU generator bit for bit, so a seeded program draws torch's
numbers. Sampled tensors are leaves: no gradient flows into the draws.
"""
from __future__ import annotations

import builtins
import contextlib
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from ..core import dtypes, rng
from ..core.dtypes import DType
from .base import TensorBase, _py, _shape_args, check_inference_write, make_tensor
from .device import check_optional, default_device_check
from .grad_mode import is_grad_enabled

if TYPE_CHECKING:
    from .tensor import Tensor


class Generator:
    """``torch.Generator``: an independent stream of torch's CPU random numbers."""

    def __init__(self, device: Any = "cpu", *, _engine: rng.Generator | None = None) -> None:
        if str(device) not in ("cpu", "device(type='cpu')"):
            raise RuntimeError(f"Device type {str(device).upper()} is not supported for torch.Generator() api.")
        self._engine = _engine if _engine is not None else rng.Generator()
        self.device = "cpu"

    def manual_seed(self, seed: int) -> Generator:
        self._engine.manual_seed(int(seed))
        return self

    def seed(self) -> int:
        return self._engine.seed()

    def initial_seed(self) -> int:
        return self._engine.initial_seed()

    def get_state(self) -> Tensor:
        """The generator's state as torch's 5056-byte ``uint8`` tensor."""
        return make_tensor(np.frombuffer(self._engine.get_state(), dtype=np.uint8).copy())

    def set_state(self, new_state: Any) -> Generator:
        if not isinstance(new_state, TensorBase):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dtypes.uint8:
            raise RuntimeError(f"expected a torch.ByteTensor, but got torch.{dtypes.torch_type_name(new_state.dtype)}"
                               "Tensor")
        self._engine.set_state(new_state._data.tobytes())
        return self

    def clone_state(self) -> Generator:
        return Generator(_engine=self._engine.clone())

    def __repr__(self) -> str:
        return f"<torch._C.Generator object at {hex(id(self))}>"


#: ``torch.default_generator``: the stream every sampling function draws from unless given ``generator=``
default_generator = Generator(_engine=rng.default_generator)


def _engine(generator: Generator | None) -> rng.Generator:
    if generator is None:
        return default_generator._engine
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a torch.Generator, not {type(generator).__name__}")
    return generator._engine


# ---------------------------------------------------------------------------- seeding (torch.random)

def manual_seed(seed: int) -> Generator:
    """Seed the global generator (torch's ``manual_seed``); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the global generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, **_: Any) -> Iterator[None]:
    """Run the block with the global generator's state restored afterwards (``torch.random.fork_rng``)."""
    if not enabled:
        yield
        return
    state = default_generator._engine.get_state()
    try:
        yield
    finally:
        default_generator._engine.set_state(state)


# ---------------------------------------------------------------------------- sampling functions

def _float_dtype(dtype: Any) -> DType:
    return dtypes.from_any(dtype) if dtype is not None else dtypes.get_default_dtype()


def _leaf(arr: np.ndarray, requires_grad: bool) -> Tensor:
    default_device_check()
    t = make_tensor(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _size(size: Sequence[Any]) -> tuple[int, ...]:
    shape = _shape_args(size)
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(shape)}: {list(shape)}")
    return shape


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
         **_: Any) -> Tensor:
    """Uniform draws on [0, 1) (``torch.rand``)."""
    check_optional(_.get("device"))
    d = _float_dtype(dtype)
    return _leaf(rng.uniform(_engine(generator), _size(size), d.np), requires_grad)


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
          **_: Any) -> Tensor:
    """Standard normal draws (``torch.randn``)."""
    check_optional(_.get("device"))
    d = _float_dtype(dtype)
    return _leaf(rng.normal(_engine(generator), _size(size), d.np), requires_grad)


def randint(low: Any = 0, high: Any = None, size: Any = None, *, generator: Generator | None = None, dtype: Any = None,
            requires_grad: bool = False, **_: Any) -> Tensor:
    """Integers on [low, high) (``torch.randint(high, size)`` / ``randint(low, high, size)``)."""
    check_optional(_.get("device"))
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument: 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    d = dtypes.from_any(dtype) if dtype is not None else dtypes.int64
    shape = _size((size,) if isinstance(size, (list, tuple)) else (size,))
    return _leaf(rng.randint(_engine(generator), int(low), int(high), shape, d.np), requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
             **_: Any) -> Tensor:
    """A random permutation of ``0..n-1`` (``torch.randperm``)."""
    check_optional(_.get("device"))
    d = dtypes.from_any(dtype) if dtype is not None else dtypes.int64
    return _leaf(rng.randperm(_engine(generator), int(n), d.np), requires_grad)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """``torch.normal``: tensor mean and/or std (elementwise, broadcast), or floats with a ``size``."""
    check_optional(_.get("device"))
    gen = _engine(generator)
    if isinstance(mean, TensorBase) or isinstance(std, TensorBase):
        m = mean._data if isinstance(mean, TensorBase) else _py(mean)
        s = std._data if isinstance(std, TensorBase) else _py(std)
        return _leaf(rng.normal_tensor(gen, m, s), requires_grad)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments - got (float, float), but expected "
                        "one of: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean, Tensor std), "
                        "(float mean, float std, tuple of ints size)")
    d = _float_dtype(dtype)
    shape = _size((size,) if isinstance(size, (list, tuple)) else (size,))
    return _leaf(rng.normal(gen, shape, d.np, float(mean), float(std)), requires_grad)


def bernoulli(input: Any, p: Any = None, *, generator: Generator | None = None, **_: Any) -> Tensor:  # noqa: A002
    """Bernoulli draws with the probabilities in ``input`` (or the float ``p`` in ``input``'s shape)."""
    gen = _engine(generator)
    t = input if isinstance(input, TensorBase) else make_tensor(np.asarray(input))
    if p is None:
        return make_tensor(rng.bernoulli(gen, t._data, t._data.shape, t._data.dtype))
    return make_tensor(rng.bernoulli(gen, float(p), t._data.shape, t._data.dtype))


def multinomial(input: Any, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Generator | None = None, **_: Any) -> Tensor:
    """Indices drawn from the rows of ``input`` (non-negative weights), torch's CPU sampler."""
    probs = input._data if isinstance(input, TensorBase) else np.asarray(input)
    return make_tensor(rng.multinomial(_engine(generator), probs, int(num_samples), bool(replacement)))


def _like_dtype(t: Any, dtype: Any) -> DType:
    return dtypes.from_any(dtype) if dtype is not None else t.dtype


def rand_like(input: Any, *, dtype: Any = None, requires_grad: bool = False, generator: Any = None,  # noqa: A002
              **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return rand(tuple(input.shape), dtype=_like_dtype(input, dtype), requires_grad=requires_grad,
                generator=generator)


def randn_like(input: Any, *, dtype: Any = None, requires_grad: bool = False, generator: Any = None,  # noqa: A002
               **_: Any) -> Tensor:
    check_optional(_.get("device"))
    return randn(tuple(input.shape), dtype=_like_dtype(input, dtype), requires_grad=requires_grad,
                 generator=generator)


def randint_like(input: Any, low: int, high: Any = None, *, dtype: Any = None,  # noqa: A002
                 generator: Any = None, **_: Any) -> Tensor:
    check_optional(_.get("device"))
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=_like_dtype(input, dtype), generator=generator)


# ---------------------------------------------------------------------------- in-place samplers

def fill(t: Any, values: np.ndarray) -> Any:
    """``values`` written into ``t``'s buffer, outside the graph (torch's samplers are not recorded)."""
    if t.is_leaf and t.requires_grad and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    arr = t._data
    if arr.flags.writeable:
        arr[...] = values.reshape(arr.shape)
    else:
        t._data = np.array(values.reshape(arr.shape), dtype=arr.dtype)
    t._version.v += 1
    check_inference_write(t)  # as torch: after the write, when the version is bumped
    return t


def uniform_(t: Any, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None) -> Any:
    return fill(t, rng.uniform(_engine(generator), t._data.shape, t._data.dtype, float(a), float(b)))


def normal_(t: Any, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Any:
    contiguous = builtins.bool(t._data.flags.c_contiguous)
    return fill(t, rng.normal(_engine(generator), t._data.shape, t._data.dtype, float(mean), float(std),
                              contiguous=contiguous))


def random_(t: Any, from_: Any = None, to: Any = None, *, generator: Generator | None = None) -> Any:
    if from_ is not None and to is None:
        from_, to = 0, from_
    return fill(t, rng.random_(_engine(generator), t._data.shape, t._data.dtype, from_, to))


def bernoulli_(t: Any, p: Any = 0.5, *, generator: Generator | None = None) -> Any:
    prob = p._data if isinstance(p, TensorBase) else float(p)
    return fill(t, rng.bernoulli(_engine(generator), prob, t._data.shape, t._data.dtype))


def exponential_(t: Any, lambd: float = 1.0, *, generator: Generator | None = None) -> Any:
    return fill(t, rng.exponential(_engine(generator), t._data.shape, t._data.dtype, float(lambd)))


def geometric_(t: Any, p: float, *, generator: Generator | None = None) -> Any:
    return fill(t, rng.geometric(_engine(generator), t._data.shape, t._data.dtype, float(p)))


def cauchy_(t: Any, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Any:
    return fill(t, rng.cauchy(_engine(generator), t._data.shape, t._data.dtype, float(median), float(sigma)))


def log_normal_(t: Any, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None) -> Any:
    return fill(t, rng.log_normal(_engine(generator), t._data.shape, t._data.dtype, float(mean), float(std)))


def dropout_mask(shape: tuple[int, ...], dtype: Any, p: float, generator: Generator | None = None) -> np.ndarray:
    """torch's CPU dropout mask (``mask/(1-p)`` scaled, in ``dtype``)."""
    return rng.dropout_mask(_engine(generator), shape, dtype, float(p))
