"""``torch.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal`` as parametrizations
(``parametrizations.weight.original0`` / ``original1``; ``parametrizations.weight.original`` with the power
iteration's ``_u`` / ``_v`` buffers, or with the orthogonal ``base``), as torch 2.13 registers and computes them."""
from __future__ import annotations

from enum import Enum, auto

import numpy as np

from ...core import dtypes
from ...eager.base import make_tensor
from ...eager.basic import cat, where
from ...eager.functional import allclose, eye, zeros_like
from ...eager.grad_mode import no_grad
from ...eager.linalg_ops import solve
from ...eager.random import randn
from ...eager.tensor import Tensor
from ...eager.toplevel_core import finfo
from ..layers import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    """``g * v / ||v||`` from ``(original0, original1) = (g, v)``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight-normalise ``module.<name>`` through a parametrization (``original0`` is the norm ``g``,
    ``original1`` the direction ``v``); a state dict of the old ``weight_g`` / ``weight_v`` keys still loads."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                                 missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module.register_load_state_dict_pre_hook(
        lambda _module, *args: _weight_norm_compat_hook(*args))
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value estimated by power iteration (``_u``, ``_v``:
    drawn from the RNG stream at registration, refined 15 times, then once per forward in training mode)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """``n_power_iterations`` steps ``u = W v / |W v|``, ``v = W^T u / |W^T u|``, written into the buffers."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _default_dim(module: Module, dim: int | None) -> int:
    if dim is not None:
        return dim
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, through a parametrization (``dim`` 1 for transposed
    convolutions, else 0)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, _default_dim(module, dim), eps))
    return module



# ---------------------------------------------------------------------------- orthogonal

def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.geqrf`` (LAPACK's QR as Householder reflectors below the diagonal, R on and above it, and their
    scales ``tau``); not differentiable, as in torch."""
    arr = a.detach().numpy()
    flat = arr.reshape((-1,) + arr.shape[-2:])
    hs, taus = zip(*(np.linalg.qr(m, mode="raw") for m in flat))
    h = np.stack([x.T for x in hs]).reshape(arr.shape).astype(arr.dtype)
    tau = np.stack(taus).reshape(arr.shape[:-2] + (min(arr.shape[-2:]),)).astype(arr.dtype)
    return make_tensor(np.ascontiguousarray(h)), make_tensor(tau)


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """``torch.linalg.householder_product``: the first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T``
    with ``v_i`` column ``i`` of ``a`` below the diagonal and 1 on it (differentiable: composed of matmuls)."""
    n, k = a.size(-2), a.size(-1)
    v = a.tril(-1) + eye(n, k, dtype=a.dtype)
    q = eye(n, dtype=a.dtype).expand(*a.shape[:-2], n, n)
    for i in range(tau.size(-1)):
        vi = v[..., :, i:i + 1]
        q = q - (q @ vi) @ (vi.transpose(-2, -1) * tau[..., i:i + 1].unsqueeze(-1))
    return q[..., :k]


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    eps = 10.0 * n * finfo(q.dtype).eps
    return allclose(q.transpose(-2, -1) @ q, eye(k, dtype=q.dtype), atol=eps)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR decomposition, its columns signed so that R's diagonal is positive."""
    x, tau = _geqrf(a)
    q = _householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """A matrix (or batch of them) with orthonormal columns (or rows), from ``original`` by the matrix exponential or
    the Cayley map of a skew-symmetric matrix, or by Householder reflectors; ``base`` is the point it starts from."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803  (torch's name)
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = A.matrix_exp()
            else:
                Id = eye(n, dtype=A.dtype)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803  (torch's name)
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                          "or the Cayley parametrizations when use_trivialization=False.")
            A, tau = _geqrf(Q)
            # the diagonal's signs, flipped where tau is 0 (torch writes them through a diagonal view)
            d = A.diagonal(dim1=-2, dim2=-1).sign() * (1 - 2 * (tau == 0.0).to(A.dtype))
            A = where(eye(n, k, dtype=dtypes.bool), d.unsqueeze(-2), A)
            return A.mT if transpose else A
        if n == k:
            Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
        else:
            N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        return zeros_like(Q_init) - eye(Q_init.size(-2), Q_init.size(-1), dtype=Q_init.dtype)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` orthogonal (``orthogonal_map``: ``matrix_exp`` for square matrices, ``householder``
    otherwise, or ``cayley``)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
