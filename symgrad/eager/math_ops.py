"""torch's elementwise math beyond the basics: ``sg.<name>`` functions and the ``Tensor`` methods
(out of place and in place) of the ops in ``ops/elementwise.py``'s "torch's elementwise math" section.

The op list lives in one table here; ``METHODS`` (each method's name -> function, out of place and in
place) is the mixin ``eager.methods.math.TorchMathMethods`` declares from it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..ops import REGISTRY
from . import basic
from .base import TensorBase, _is_number, _py, _to_array, make_tensor
from .basic import pow, tensor_like, where
from .record import _apply

if TYPE_CHECKING:
    from .tensor import Tensor

#: unary ops with the same name as a function, a method and (``name_``) an in-place method
UNARY = ("sinh", "cosh", "asinh", "acosh", "atanh", "asin", "acos", "atan", "expm1", "exp2", "log2", "log10",
         "erf", "erfc", "rsqrt", "floor", "ceil", "trunc", "frac", "deg2rad", "rad2deg", "sinc")
#: torch's aliases: alias -> op
ALIASES = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "arcsin": "asin", "arccos": "acos",
           "arctan": "atan", "fix": "trunc"}
#: ops that had a function and a method already, given their in-place method here
OLD_UNARY = ("exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "abs", "neg",
             "reciprocal")

__all__ = [*UNARY, *ALIASES, "sign", "sgn", "round", "square", "atan2", "arctan2", "hypot", "logaddexp", "xlogy",
           "fmod", "remainder"]


def _t(x: Any) -> Tensor:
    return x if isinstance(x, TensorBase) else make_tensor(_to_array(x, None))


def _unary(op: str, name: str) -> Callable[[Any], Tensor]:
    def f(input: Any) -> Tensor:  # noqa: A002
        return _apply(REGISTRY[op], _t(input))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` (torch's; see ``sg.ops.REGISTRY['{op}']`` for its SymPy form)."
    return f


def _method(op: str, name: str) -> Callable[[Tensor], Tensor]:
    def m(self: Tensor) -> Tensor:
        return _apply(REGISTRY[op], self)
    m.__name__ = m.__qualname__ = name
    m.__doc__ = f"Elementwise ``{name}``."
    return m


def _inplace_method(op: str, name: str, **attrs: Any) -> Callable[[Tensor], Tensor]:
    def m(self: Tensor) -> Tensor:
        return self._inplace(op, **attrs)
    m.__name__ = m.__qualname__ = name
    m.__doc__ = f"In-place ``{name[:-1]}``: writes the result into this tensor (its dtype must hold it)."
    return m


for _name in UNARY:
    globals()[_name] = _unary(_name, _name)
for _alias, _op in ALIASES.items():
    globals()[_alias] = _unary(_op, _alias)
#: in-place forms torch records under another grad_fn
_INPLACE_FN = {"asinh": "AsinhBackward1", "acosh": "AcoshBackward1", "atanh": "AtanhBackward1"}
#: method name -> function, for ``eager.methods.math.TorchMathMethods``
METHODS: dict[str, Callable] = {}
for _name, _op in [*((n, n) for n in UNARY), *ALIASES.items()]:
    METHODS[_name] = _method(_op, _name)
    METHODS[_name + "_"] = _inplace_method(_op, _name + "_", **({"fn": _INPLACE_FN[_op]} if _op in _INPLACE_FN else {}))
for _name in OLD_UNARY:
    METHODS[_name + "_"] = _inplace_method(_name, _name + "_")
METHODS["absolute_"] = METHODS["abs_"]
METHODS["negative_"] = METHODS["neg_"]


def sign(input: Any) -> Tensor:  # noqa: A002
    """-1, 0 or 1 (0 for NaN, as torch); zero gradient."""
    return _apply(REGISTRY["sign"], _t(input))


def sgn(input: Any) -> Tensor:  # noqa: A002
    """``sign`` for real tensors (torch's ``SgnBackward0``)."""
    return _apply(REGISTRY["sign"], _t(input), fn="SgnBackward0")


def round(input: Any, *, decimals: int = 0) -> Tensor:  # noqa: A001,A002
    """Round half to even (at ``decimals`` decimal places); zero gradient."""
    return _apply(REGISTRY["round"], _t(input), **({"decimals": int(decimals)} if decimals else {}))


def square(input: Any) -> Tensor:  # noqa: A002
    """``input ** 2`` (torch records ``PowBackward0``)."""
    return pow(_t(input), 2)


def _need_tensor(fn: str, arg: str, position: int, x: Any) -> None:
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, not {type(x).__name__}")


def _tensor_binary(op: str, fn: str) -> tuple[Callable[..., Tensor], Callable[..., Tensor]]:
    """The function and the method of a binary op whose operands must both be tensors."""
    def f(input: Any, other: Any) -> Tensor:  # noqa: A002
        _need_tensor(fn, "input", 1, input)
        _need_tensor(fn, "other", 2, other)
        return _apply(REGISTRY[op], input, other)

    def m(self: Tensor, other: Any) -> Tensor:
        _need_tensor(fn, "other", 1, other)
        return _apply(REGISTRY[op], self, other)

    def m_(self: Tensor, other: Any) -> Tensor:
        _need_tensor(fn + "_", "other", 1, other)
        return self._inplace(op, other)
    f.__name__ = f.__qualname__ = fn
    f.__doc__ = f"Elementwise ``{fn}`` of two tensors (broadcast)."
    m.__name__ = m.__qualname__ = fn
    m_.__name__ = m_.__qualname__ = fn + "_"
    METHODS[fn] = m
    if op != "logaddexp":  # torch has no in-place logaddexp
        METHODS[fn + "_"] = m_
    return f, m


atan2, _ = _tensor_binary("atan2", "atan2")
arctan2, _ = _tensor_binary("atan2", "arctan2")
hypot, _ = _tensor_binary("hypot", "hypot")
logaddexp, _ = _tensor_binary("logaddexp", "logaddexp")


def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be a number."""
    if _is_number(input) and _is_number(other):
        raise TypeError("xlogy(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if _is_number(other):
        return _apply(REGISTRY["xlogy"], _t(input), _py(other), fn="XlogyBackward2")
    if _is_number(input):
        return _apply(REGISTRY["xlogy"], _py(input), other, fn="XlogyBackward1")
    return _apply(REGISTRY["xlogy"], _t(input), tensor_like(other, input))


def _modulo(op: str, fn: str) -> Callable[..., Tensor]:
    def f(input: Any, other: Any) -> Tensor:  # noqa: A002
        if _is_number(other):
            return _apply(REGISTRY[op], _t(input), _py(other), fn=f"{fn}Backward0")
        return _apply(REGISTRY[op], _t(input), tensor_like(other, input))
    return f


fmod = _modulo("fmod", "Fmod")
remainder = _modulo("remainder", "Remainder")
fmod.__name__ = fmod.__qualname__ = "fmod"
fmod.__doc__ = "C's ``fmod``: the remainder of the division truncated toward zero (the sign of ``input``)."
remainder.__name__ = remainder.__qualname__ = "remainder"
remainder.__doc__ = "Python's ``%``: the remainder of the floored division (the sign of ``other``)."


def _binary_inplace(op: str, fn: str) -> Callable[..., Tensor]:
    def m_(self: Tensor, other: Any) -> Tensor:
        if _is_number(other):
            return self._inplace(op, _py(other), fn=f"{fn}Backward{2 if op == 'xlogy' else 0}")
        return self._inplace(op, other)
    return m_


def _where_method(self: Tensor, condition: Any, other: Any) -> Tensor:
    """``torch.where(condition, self, other)``."""
    return where(condition, self, other)


def _extreme_method(name: str) -> Callable[[Tensor, Any], Tensor]:
    def m(self: Tensor, other: Any) -> Tensor:
        _need_tensor(name, "other", 1, other)
        return getattr(basic, name)(self, other)
    m.__name__ = m.__qualname__ = name
    m.__doc__ = f"Elementwise ``{name}`` with another tensor (ties split the gradient evenly)."
    return m


for _name, _fn in (("sign", sign), ("sgn", sgn), ("square", square), ("xlogy", xlogy), ("fmod", fmod),
                   ("remainder", remainder)):
    METHODS[_name] = _fn


def _round_method(self: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even (at ``decimals`` decimal places)."""
    return round(self, decimals=decimals)


def _round_(self: Tensor, decimals: int = 0) -> Tensor:
    """In-place ``round``."""
    return self._inplace("round", **({"decimals": int(decimals)} if decimals else {}))


def _square_(self: Tensor) -> Tensor:
    """In-place ``square`` (``pow_(2)``)."""
    return self._inplace("pow", exponent=2)


METHODS.update(
    round=_round_method, round_=_round_, square_=_square_, sign_=_inplace_method("sign", "sign_"),
    sgn_=_inplace_method("sign", "sgn_", fn="SgnBackward0"), xlogy_=_binary_inplace("xlogy", "Xlogy"),
    fmod_=_binary_inplace("fmod", "Fmod"), remainder_=_binary_inplace("remainder", "Remainder"), __mod__=remainder,
    where=_where_method, maximum=_extreme_method("maximum"), minimum=_extreme_method("minimum"))
METHODS["__imod__"] = METHODS["remainder_"]


def _rmod(self: Tensor, other: Any) -> Tensor:
    """``number % tensor``: Python's remainder with the number as the dividend."""
    if not _is_number(other):
        return NotImplemented
    return _apply(REGISTRY["remainder"], _py(other), self)


METHODS["__rmod__"] = _rmod
