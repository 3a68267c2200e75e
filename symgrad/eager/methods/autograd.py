"""``Tensor``'s methods: requires_grad, grad, grad_fn, is_leaf, data, detach, backward, hooks."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...core import dtypes
from ...core.graph import Node
from .. import writes as _ip
from ..autograd import backward, grad_fn_of, register_hook, register_leaf, register_post_accumulate_grad_hook, retain
from ..base import _LEAF, TensorBase, make_tensor

if TYPE_CHECKING:
    from ..tensor import Tensor


class AutogradMethods:
    """``Tensor``'s requires_grad, grad, grad_fn, is_leaf, data, detach, backward, hooks."""

    __slots__ = ()

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
    def _base(self) -> Tensor | None:
        """The tensor whose storage this view shares (the first one, for a view of a view); None if not a view."""
        return self._view.base if self._view is not None else None

    def is_inference(self) -> bool:
        """Whether this tensor was made inside ``inference_mode`` (or is a view of one that was)."""
        return self._version.inference

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (torch's ``_is_view``)."""
        return self._view is not None

    @property
    def grad_fn(self) -> Any:
        if self._view is not None:
            self._refresh_view()
        if self._node is None or self._node.op is _LEAF:
            return None
        return grad_fn_of(self._node)

    @property
    def grad(self) -> Tensor | None:
        if self._grad is None and not self.is_leaf and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                "Tensor by mistake, make sure you access the leaf Tensor instead.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, TensorBase):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{dtypes.cpp_type_name(value.dtype)}' to a tensor "
                    f"with grad_dtype '{dtypes.torch_type_name(self.dtype)}'. The gradient must match the tensor's "
                    "grad_dtype "
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
            retain(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def data(self) -> Tensor:
        """The same storage, outside the graph; edits to it are not recorded."""
        t = make_tensor(self._data)
        t._grad_terms = self._grad_terms
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        arr = value._data if isinstance(value, TensorBase) else np.asarray(value)
        self._data = arr
        if self._node is not None and self._node.op is _LEAF:
            self._node.value = arr
            self._node.shape = arr.shape
            self._node.dtype = dtypes.from_numpy_dtype(arr.dtype)

    def detach(self) -> Tensor:
        """A new tensor on the same storage that does not require grad."""
        t = make_tensor(self._data, _version=self._version)
        t._grad_terms = self._grad_terms
        return t

    def detach_(self) -> Tensor:
        self._node = None
        return self

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Sequence[Tensor] | None = None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (weighted by ``gradient``)."""
        if self._view is not None:
            self._refresh_view()
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook: Any) -> Any:
        """``hook(grad)`` when this tensor's gradient is computed; a tensor it returns replaces the gradient."""
        return register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """``hook(tensor)`` after this leaf's gradient was accumulated into ``.grad``."""
        return register_post_accumulate_grad_hook(self, hook)
