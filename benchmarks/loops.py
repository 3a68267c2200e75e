"""Differentiable simulation: loops in symgrad against JAX, CasADi, torch and hand-written numba, side by side.

    python benchmarks/loops.py [--quick] [--steps 10,100,1000,10000] [--rnn-steps 500] [--reps 3]
                               [--compile-limit 60] [--only lorenz|rnn] [--impls jax_fori,numba,...]

Workloads (float64, value and gradient):

Lorenz  RK4 on the Lorenz system (``h = 0.01``, ``s0 = (1, 1, 1)``), gradient of ``sum(s_T**2)`` with respect
        to the three parameters ``p = (10, 28, 8/3)``, for 10, 100, 1000 and 10000 steps.
RNN     a 64-unit tanh RNN ``h[t+1] = tanh(W h[t] + U x[t] + b)``, ``h[0] = 0``, over 500 inputs ``x[t]`` of size
        8, gradient of ``sum(h_T**2)`` with respect to W (64x64), U (64x8) and b (64).

Columns (one row per implementation; a library that is missing, or a symgrad primitive that does not exist
yet, gives a row that says so):

* ``symgrad sg.fori_loop`` / ``sg.scan``: the loop primitive inside ``sg.value_and_grad`` (JAX's signatures);
  ``symgrad unrolled``: the Python loop, traced unrolled.
* ``JAX fori_loop`` / ``JAX scan`` and ``JAX unrolled``: ``jax.jit(jax.value_and_grad(...))``, x64 enabled,
  one thread (``XLA_FLAGS``, unless set by the caller) like every other column.
* ``CasADi SX unrolled``: the whole computation as one SX expression, ``gradient``, one ``Function``
  (CasADi's virtual machine, no code generation); ``CasADi mapaccum``: one step ``Function`` (SX for the
  Lorenz system; MX for the RNN, whose gradient ran 4x faster so than with an SX step), ``mapaccum(N)`` in an
  MX graph, its gradient (MX reverse mode over the mapped steps).
* ``torch eager``: the Python loop on tensors, ``backward()``.
* ``numba limit``: a hand-written ``@numba.njit`` forward loop storing the states and its hand-written
  discrete adjoint (for RK4: the adjoint of the four stages, stage states recomputed from the stored
  step states), the floor of what a compiler can emit for this recurrence.

Figures:

* ``1st call`` / ``to full speed``: each implementation in a fresh Python process with an empty
  ``SYMGRAD_CACHE_DIR`` (a new temporary folder; hand numba has no cache; JAX's persistent compilation
  cache is off by default), the libraries taken in turn (the order rotates each repeat), median of
  ``--reps`` processes. ``import``: importing the library (``import symgrad`` does not import numba; its
  numba import is in the call that compiles). ``1st call``: building (CasADi's expression graph and
  ``Function``) plus the first call. ``to full speed``: the build plus all calls, back to back, before the
  first call at full speed (their number in brackets). symgrad: until its numba kernel ran a call, read
  from ``sg.jit_stats()`` (a tier switch, or numba refused / failed and the numpy kernel stays); the numba
  compile runs in the background by default while calls run the numpy kernel, so this is the wall time a
  loop of calls waits (without ``jit_stats``: ``HOT_CALLS`` calls, the compile on the last). The others:
  one call. Both extended while the next call still takes more than twice the steady time (+0.5 ms).
* ``steady``: in this process, after warm-up: median (and min) seconds per call over many calls, the
  implementations timed in blocks taken in turn over several rounds (so that changes in machine load
  hit them alike), several calls per sample for the fast ones.
* ratios: steady time over CasADi SX unrolled's, JAX fori_loop's (``scan``'s for the RNN) and the numba
  limit's at the same number of steps.

Correctness: every implementation's value and gradient are checked against torch eager (float64) before
timing: ``|got - torch| <= 1e-10 * (|torch| + max|torch|)`` per array (relative to each element and to the
array's scale). The Lorenz system is chaotic: rounding differences grow like ``exp(0.9 t)``. Where a 1-ulp
change of ``p`` moves the (hand numba) result by more than 1e-12 relative (10000 steps: by 100 % of the value
and 10x the gradient), no two implementations that round differently can agree to 1e-10, so that step
count is checked at ``p = (10, 0.5, 8/3)`` instead (``rho < 1``: the orbit decays to the origin, a
well-conditioned problem through the same code) and the table says so. A failed check marks the row
``WRONG`` and keeps it out of the timing.

Skips: an unrolled implementation (its build grows with the steps) whose 1st call at the previous step count,
scaled linearly to the next, exceeds ``--compile-limit`` seconds (default 60) is not run at the larger count
(the table says so: JAX unrolled past 10 steps). A fresh process still short of full speed after that long
is ended: its import and 1st call stay in the table, the row gets no steady time and no more processes. A
fresh process is stopped 30 s after the limit (plus a few calls' time where calls are slow). Fresh processes
other than JAX's get ``--mem-limit`` GiB of data memory (default 6). ``--quick`` (about a minute on 2 cores
for the peers; symgrad's numba compiles add to it, twice: in the fresh process and in this one): the Lorenz
system at 100 steps and the RNN, one fresh process per implementation, fewer samples, the unrolled columns
that take tens of seconds to full speed (symgrad, JAX; CasADi SX for the RNN) left out. No timing is
asserted; the closing summary compares the figures with the targets of issue 15. ``SYMGRAD_COMPILE=sync``
(inherited by the fresh processes) measures symgrad with the numba compile blocking the hot call instead.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = "--child" in sys.argv
# every column runs on one thread (torch: set_num_threads(1); numba, CasADi and symgrad's loop kernels are serial);
# XLA's thread pool on a busy 2-core machine tripled JAX's median (RNN: 7.8 ms against 2.7 ms single-threaded).
# An XLA_FLAGS of the caller's own is kept.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
# BLAS on one thread too (symgrad's loop kernels call it for the gemm summing an adjoint's outer products): on a busy
# machine OpenBLAS's spinning threads took the RNN's median from 1.3 ms to 55 ms
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
if not CHILD:
    # this process's own kernel cache: a fresh temporary folder, removed at exit (children get their own)
    _CACHE = tempfile.mkdtemp(prefix="symgrad-loops-")
    os.environ["SYMGRAD_CACHE_DIR"] = _CACHE

H = 0.01
P = np.array([10.0, 28.0, 8.0 / 3.0])
P_STABLE = np.array([10.0, 0.5, 8.0 / 3.0])
RNN_UNITS, RNN_INPUTS = 64, 8
RTOL = 1e-10
LIMIT = [60.0]  # --compile-limit, for the summary's text

# ------------------------------------------------------------------------------------ libraries, lazily

_LIBS: dict[str, object] = {}


def lib(name: str):
    """The library ``name`` (imported on first use, so that a fresh process imports only what it times)."""
    if name not in _LIBS:
        mod = importlib.import_module(name)
        if name == "jax":
            mod.config.update("jax_enable_x64", True)
        elif name == "torch":
            mod.set_num_threads(1)  # small tensors: threads only add hand-over costs
        _LIBS[name] = mod
    return _LIBS[name]


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


# ------------------------------------------------------------------------------------ the step functions
# One definition for every library that has tensor indexing and a stack: symgrad, torch, JAX, CasADi.
# The same operations in the same order everywhere (the hand-written numba code follows it too).

def lorenz(s, p, stack):
    x, y, z = s[0], s[1], s[2]
    return stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def rk4(s, p, stack):
    k1 = lorenz(s, p, stack)
    k2 = lorenz(s + (H / 2) * k1, p, stack)
    k3 = lorenz(s + (H / 2) * k2, p, stack)
    k4 = lorenz(s + H * k3, p, stack)
    return s + (H / 6) * (k1 + 2 * k2 + 2 * k3 + k4)


def rnn_step(h, x, W, U, b, tanh, mm=lambda a, v: a @ v):
    return tanh(mm(W, h) + mm(U, x) + b)


# ------------------------------------------------------------------------------------ Lorenz implementations
# Each maker takes the number of steps and returns ``vg(p) -> (value, gradient)``; its own run time is the
# build time (CasADi's graphs; trivial for the others).

def lorenz_symgrad_fori(n):
    sg = lib("symgrad")

    def loss(p):
        s0 = sg.tensor([1.0, 1.0, 1.0], dtype=sg.float64)
        s = sg.fori_loop(0, n, lambda i, s: rk4(s, p, sg.stack), s0)
        return (s**2).sum()
    return sg.value_and_grad(loss)


def lorenz_symgrad_unrolled(n):
    sg = lib("symgrad")

    def loss(p):
        s = sg.tensor([1.0, 1.0, 1.0], dtype=sg.float64)
        for _ in range(n):
            s = rk4(s, p, sg.stack)
        return (s**2).sum()
    return sg.value_and_grad(loss)


def _jax_lorenz(n, unrolled):
    jax = lib("jax")
    jnp = jax.numpy

    def loss(p):
        s = jnp.ones(3)
        if unrolled:
            for _ in range(n):
                s = rk4(s, p, jnp.stack)
        else:
            s = jax.lax.fori_loop(0, n, lambda i, s: rk4(s, p, jnp.stack), s)
        return jnp.sum(s**2)
    f = jax.jit(jax.value_and_grad(loss))
    return lambda p: jax.block_until_ready(f(p))


def lorenz_jax_fori(n):
    return _jax_lorenz(n, unrolled=False)


def lorenz_jax_unrolled(n):
    return _jax_lorenz(n, unrolled=True)


def _ca_stack(items):
    return lib("casadi").vertcat(*items)


def lorenz_casadi_sx(n):
    ca = lib("casadi")
    p = ca.SX.sym("p", 3)
    s = ca.SX.ones(3)
    for _ in range(n):
        s = rk4(s, p, _ca_stack)
    loss = ca.sumsqr(s)
    f = ca.Function("vg", [p], [loss, ca.gradient(loss, p)])
    return lambda pv: f(pv)


def lorenz_casadi_mapaccum(n):
    ca = lib("casadi")
    s, p = ca.SX.sym("s", 3), ca.SX.sym("p", 3)
    steps = ca.Function("rk4", [s, p], [rk4(s, p, _ca_stack)]).mapaccum("rk4_acc", n)
    pm = ca.MX.sym("p", 3)
    traj = steps(ca.DM.ones(3), pm)  # p has one column: mapaccum repeats it for every step
    loss = ca.sumsqr(traj[:, n - 1])
    f = ca.Function("vg", [pm], [loss, ca.gradient(loss, pm)])
    return lambda pv: f(pv)


def lorenz_torch(n):
    torch = lib("torch")

    def vg(pv):
        p = torch.tensor(pv, dtype=torch.float64, requires_grad=True)
        s = torch.ones(3, dtype=torch.float64)
        for _ in range(n):
            s = rk4(s, p, torch.stack)
        loss = (s**2).sum()
        loss.backward()
        return loss.item(), p.grad
    return vg


_NUMBA_KERNELS: dict[str, Callable] = {}


def _lorenz_numba_kernel():
    """The hand-written RK4 and its discrete adjoint (compiled on first call; no cache)."""
    if "lorenz" in _NUMBA_KERNELS:
        return _NUMBA_KERNELS["lorenz"]
    numba = lib("numba")

    @numba.njit
    def rhs(x, y, z, sigma, rho, beta):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    @numba.njit
    def rhs_vjp(x, y, z, sigma, rho, beta, ax, ay, az, g):
        # (a . df/ds, and a . df/dp added into g) for f = (sigma (y-x), x (rho-z) - y, x y - beta z)
        g[0] += ax * (y - x)
        g[1] += ay * x
        g[2] -= az * z
        return -sigma * ax + (rho - z) * ay + y * az, sigma * ax - ay + x * az, -x * ay - beta * az

    @numba.njit
    def vg(p, n, h):
        sigma, rho, beta = p[0], p[1], p[2]
        traj = np.empty((n + 1, 3))
        x, y, z = 1.0, 1.0, 1.0
        h2, h6 = h / 2, h / 6
        for k in range(n):
            traj[k, 0], traj[k, 1], traj[k, 2] = x, y, z
            a1, b1, c1 = rhs(x, y, z, sigma, rho, beta)
            a2, b2, c2 = rhs(x + h2 * a1, y + h2 * b1, z + h2 * c1, sigma, rho, beta)
            a3, b3, c3 = rhs(x + h2 * a2, y + h2 * b2, z + h2 * c2, sigma, rho, beta)
            a4, b4, c4 = rhs(x + h * a3, y + h * b3, z + h * c3, sigma, rho, beta)
            x = x + h6 * (a1 + 2 * a2 + 2 * a3 + a4)
            y = y + h6 * (b1 + 2 * b2 + 2 * b3 + b4)
            z = z + h6 * (c1 + 2 * c2 + 2 * c3 + c4)
        value = x * x + y * y + z * z
        g = np.zeros(3)
        lx, ly, lz = 2 * x, 2 * y, 2 * z  # adjoint of s_n
        for k in range(n - 1, -1, -1):
            x, y, z = traj[k, 0], traj[k, 1], traj[k, 2]
            # the forward stages again
            a1, b1, c1 = rhs(x, y, z, sigma, rho, beta)
            x2, y2, z2 = x + h2 * a1, y + h2 * b1, z + h2 * c1
            a2, b2, c2 = rhs(x2, y2, z2, sigma, rho, beta)
            x3, y3, z3 = x + h2 * a2, y + h2 * b2, z + h2 * c2
            a3, b3, c3 = rhs(x3, y3, z3, sigma, rho, beta)
            x4, y4, z4 = x + h * a3, y + h * b3, z + h * c3
            # s' = s + h/6 (k1 + 2 k2 + 2 k3 + k4); k4 = f(s + h k3); k3 = f(s + h/2 k2); k2 = f(s + h/2 k1)
            u4x, u4y, u4z = rhs_vjp(x4, y4, z4, sigma, rho, beta, h6 * lx, h6 * ly, h6 * lz, g)
            k3x, k3y, k3z = 2 * h6 * lx + h * u4x, 2 * h6 * ly + h * u4y, 2 * h6 * lz + h * u4z
            u3x, u3y, u3z = rhs_vjp(x3, y3, z3, sigma, rho, beta, k3x, k3y, k3z, g)
            k2x, k2y, k2z = 2 * h6 * lx + h2 * u3x, 2 * h6 * ly + h2 * u3y, 2 * h6 * lz + h2 * u3z
            u2x, u2y, u2z = rhs_vjp(x2, y2, z2, sigma, rho, beta, k2x, k2y, k2z, g)
            k1x, k1y, k1z = h6 * lx + h2 * u2x, h6 * ly + h2 * u2y, h6 * lz + h2 * u2z
            u1x, u1y, u1z = rhs_vjp(x, y, z, sigma, rho, beta, k1x, k1y, k1z, g)
            lx, ly, lz = lx + u1x + u2x + u3x + u4x, ly + u1y + u2y + u3y + u4y, lz + u1z + u2z + u3z + u4z
        return value, g
    _NUMBA_KERNELS["lorenz"] = vg
    return vg


def lorenz_numba(n):
    k = _lorenz_numba_kernel()
    return lambda p: k(p, n, H)


# ------------------------------------------------------------------------------------ RNN implementations
# ``vg(W, U, b, xs) -> (value, (dW, dU, db))``

def rnn_symgrad_scan(n):
    sg = lib("symgrad")

    def loss(W, U, b, xs):
        def step(h, x):
            return rnn_step(h, x, W, U, b, sg.tanh), None
        h, _ = sg.scan(step, sg.zeros(RNN_UNITS, dtype=sg.float64), xs)
        return (h**2).sum()
    return sg.value_and_grad(loss, argnums=(0, 1, 2))


def rnn_symgrad_unrolled(n):
    sg = lib("symgrad")

    def loss(W, U, b, xs):
        h = sg.zeros(RNN_UNITS, dtype=sg.float64)
        for t in range(n):
            h = rnn_step(h, xs[t], W, U, b, sg.tanh)
        return (h**2).sum()
    return sg.value_and_grad(loss, argnums=(0, 1, 2))


def _jax_rnn(n, unrolled):
    jax = lib("jax")
    jnp = jax.numpy

    def loss(W, U, b, xs):
        h = jnp.zeros(RNN_UNITS)
        if unrolled:
            for t in range(n):
                h = rnn_step(h, xs[t], W, U, b, jnp.tanh)
        else:
            h, _ = jax.lax.scan(lambda h, x: (rnn_step(h, x, W, U, b, jnp.tanh), None), h, xs)
        return jnp.sum(h**2)
    f = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
    return lambda *a: jax.block_until_ready(f(*a))


def rnn_jax_scan(n):
    return _jax_rnn(n, unrolled=False)


def rnn_jax_unrolled(n):
    return _jax_rnn(n, unrolled=True)


def _rnn_casadi_fn(ca, n, body):
    """The CasADi ``Function`` (W, U, b, xs with one column per step) -> (loss, dW, dU, db) of a graph built by
    ``body(W, U, b, xs) -> h_T`` on symbols of ``body``'s kind, and its numpy wrapper."""
    sym = body.sym
    W, U, b = sym("W", RNN_UNITS, RNN_UNITS), sym("U", RNN_UNITS, RNN_INPUTS), sym("b", RNN_UNITS)
    xs = sym("xs", RNN_INPUTS, n)
    loss = ca.sumsqr(body(W, U, b, xs))
    f = ca.Function("vg", [W, U, b, xs], [loss, ca.gradient(loss, W), ca.gradient(loss, U), ca.gradient(loss, b)])

    def vg(Wv, Uv, bv, xsv):
        v, gW, gU, gb = f(Wv, Uv, bv, xsv.T)
        return v, (gW, gU, gb)
    return vg


def rnn_casadi_sx(n):
    ca = lib("casadi")

    def body(W, U, b, xs):
        h = ca.SX.zeros(RNN_UNITS)
        for t in range(n):
            h = rnn_step(h, xs[:, t], W, U, b, ca.tanh, ca.mtimes)
        return h
    body.sym = ca.SX.sym
    return _rnn_casadi_fn(ca, n, body)


def rnn_casadi_mapaccum(n):
    # the step as an MX Function: its mapaccum's gradient ran 4x faster here than an SX step's (110 ms / 490 ms)
    ca = lib("casadi")
    h, x = ca.MX.sym("h", RNN_UNITS), ca.MX.sym("x", RNN_INPUTS)
    W, U, b = ca.MX.sym("W", RNN_UNITS, RNN_UNITS), ca.MX.sym("U", RNN_UNITS, RNN_INPUTS), ca.MX.sym("b", RNN_UNITS)
    steps = ca.Function("step", [h, x, W, U, b], [rnn_step(h, x, W, U, b, ca.tanh, ca.mtimes)]).mapaccum("steps", n)

    def body(W, U, b, xs):
        return steps(ca.DM.zeros(RNN_UNITS), xs, W, U, b)[:, n - 1]  # W, U, b: one copy, repeated by mapaccum
    body.sym = ca.MX.sym
    return _rnn_casadi_fn(ca, n, body)


def rnn_torch(n):
    torch = lib("torch")

    def vg(W, U, b, xs):
        Wt, Ut, bt = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (W, U, b))
        xt = torch.from_numpy(xs)
        h = torch.zeros(RNN_UNITS, dtype=torch.float64)
        for t in range(n):
            h = rnn_step(h, xt[t], Wt, Ut, bt, torch.tanh)
        loss = (h**2).sum()
        loss.backward()
        return loss.item(), (Wt.grad, Ut.grad, bt.grad)
    return vg


def _rnn_numba_kernel():
    if "rnn" in _NUMBA_KERNELS:
        return _NUMBA_KERNELS["rnn"]
    numba = lib("numba")

    @numba.njit
    def vg(W, U, b, xs):
        T, m = xs.shape
        u = W.shape[0]
        WT, UT = np.ascontiguousarray(W.T), np.ascontiguousarray(U.T)
        hs = np.zeros((T + 1, u))
        a = np.empty(u)
        for t in range(T):
            # a = W h + U x + b, column by column: each a[i] is its own sum (vectorised, no reassociation)
            a[:] = b
            for j in range(u):
                hj = hs[t, j]
                for i in range(u):
                    a[i] += WT[j, i] * hj
            for j in range(m):
                xj = xs[t, j]
                for i in range(u):
                    a[i] += UT[j, i] * xj
            for i in range(u):
                hs[t + 1, i] = math.tanh(a[i])
        value = 0.0
        lam = np.empty(u)
        for i in range(u):
            value += hs[T, i] * hs[T, i]
            lam[i] = 2 * hs[T, i]
        gW, gU, gb = np.zeros((u, u)), np.zeros((u, m)), np.zeros(u)
        d = np.empty(u)
        for t in range(T - 1, -1, -1):
            for i in range(u):
                d[i] = lam[i] * (1 - hs[t + 1, i] * hs[t + 1, i])  # through tanh
                gb[i] += d[i]
                for j in range(u):
                    gW[i, j] += d[i] * hs[t, j]
                for j in range(m):
                    gU[i, j] += d[i] * xs[t, j]
            for j in range(u):  # lam = W^T d
                lam[j] = 0.0
            for i in range(u):
                for j in range(u):
                    lam[j] += W[i, j] * d[i]
        return value, (gW, gU, gb)
    _NUMBA_KERNELS["rnn"] = vg
    return vg


def rnn_numba(n):
    k = _rnn_numba_kernel()
    return lambda W, U, b, xs: k(W, U, b, xs)


def rnn_data(n):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((RNN_UNITS, RNN_UNITS)) * (0.5 / math.sqrt(RNN_UNITS))  # contractive: well conditioned
    U = rng.standard_normal((RNN_UNITS, RNN_INPUTS)) / math.sqrt(RNN_INPUTS)
    b = 0.1 * rng.standard_normal(RNN_UNITS)
    xs = rng.standard_normal((n, RNN_INPUTS))
    return W, U, b, xs


# ------------------------------------------------------------------------------------ the implementation table

@dataclass
class Impl:
    key: str
    label: str
    libs: tuple[str, ...]
    make: Callable
    warm: int = 1                      # calls before the fast path runs (symgrad: see ``settled``)
    needs: str | None = None           # a symgrad attribute the row needs (a primitive being built)
    full_only: bool = False            # left out by --quick (a build of tens of seconds)
    grows: bool = False                # unrolled: the build grows with the steps (see the skip rule)

    @property
    def symgrad(self) -> bool:
        return "symgrad" in self.libs


def _symgrad_hot_calls() -> int:
    try:
        return int(importlib.import_module("symgrad.kernels.program").HOT_CALLS)
    except (ImportError, AttributeError):
        return 2


def jit_counts() -> dict | None:
    """symgrad's compile counters (``sg.jit_stats()``), or None where this symgrad has none."""
    stats = getattr(_LIBS.get("symgrad"), "jit_stats", None)
    if stats is None:
        return None
    s = stats()
    return {k: getattr(s, k) for k in ("programs", "tier_switches", "numba_refused", "background_failed",
                                       "background_pending")}


def settled(base: dict | None) -> bool | None:
    """Whether every symgrad program built since ``base`` (``jit_counts()``) runs its final tier: its numba kernel
    took a call (a tier switch), or numba refused it or failed (the numpy kernel stays), and no background compile
    is pending. None: no counters (then the call count ``HOT_CALLS`` stands in)."""
    now = jit_counts()
    if now is None or base is None:
        return None
    built = now["programs"] - base["programs"]
    final = sum(now[k] - base[k] for k in ("tier_switches", "numba_refused", "background_failed"))
    return built > 0 and now["background_pending"] == 0 and final >= built


def warm_up(impl: Impl, vg: Callable, args: tuple, cap: float) -> tuple[list[float], int | None]:
    """Call ``vg`` until it runs at full speed: (the call times, the index of the first call at full speed, or
    None if symgrad had not settled after ``cap`` seconds). Not symgrad: ``impl.warm`` calls, full speed after.
    symgrad: until ``settled`` (a background compile keeps the numpy kernel running meanwhile; the call on which
    the numba kernel first ran is the first at full speed), or ``HOT_CALLS`` calls where symgrad has no
    counters."""
    base = jit_counts() if impl.symgrad else None
    calls: list[float] = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        vg(*args)
        calls.append(time.perf_counter() - t0)
        if not impl.symgrad:
            if len(calls) > impl.warm:
                return calls, impl.warm
            continue
        done = settled(base)
        if done is None:
            if len(calls) > _symgrad_hot_calls():
                return calls, _symgrad_hot_calls()
        elif done:
            return calls, len(calls) - 1
        if time.perf_counter() - start > cap:
            return calls, None


LORENZ = [
    Impl("sg_fori", "symgrad sg.fori_loop", ("symgrad",), lorenz_symgrad_fori, needs="fori_loop"),
    Impl("sg_unrolled", "symgrad unrolled", ("symgrad",), lorenz_symgrad_unrolled, full_only=True, grows=True),
    Impl("jax_fori", "JAX fori_loop", ("jax",), lorenz_jax_fori),
    Impl("jax_unrolled", "JAX unrolled", ("jax",), lorenz_jax_unrolled, full_only=True, grows=True),
    Impl("ca_sx", "CasADi SX unrolled", ("casadi",), lorenz_casadi_sx, grows=True),
    Impl("ca_mapaccum", "CasADi mapaccum", ("casadi",), lorenz_casadi_mapaccum),
    Impl("torch", "torch eager", ("torch",), lorenz_torch),
    Impl("numba", "numba limit (hand adjoint)", ("numba",), lorenz_numba),
]
RNN = [
    Impl("sg_scan", "symgrad sg.scan", ("symgrad",), rnn_symgrad_scan, needs="scan"),
    Impl("sg_unrolled", "symgrad unrolled", ("symgrad",), rnn_symgrad_unrolled, full_only=True, grows=True),
    Impl("jax_scan", "JAX scan", ("jax",), rnn_jax_scan),
    Impl("jax_unrolled", "JAX unrolled", ("jax",), rnn_jax_unrolled, full_only=True, grows=True),
    Impl("ca_sx", "CasADi SX unrolled", ("casadi",), rnn_casadi_sx, full_only=True, grows=True),
    Impl("ca_mapaccum", "CasADi mapaccum (MX step)", ("casadi",), rnn_casadi_mapaccum),
    Impl("torch", "torch eager", ("torch",), rnn_torch),
    Impl("numba", "numba limit (hand adjoint)", ("numba",), rnn_numba),
]
WORKLOADS = {"lorenz": LORENZ, "rnn": RNN}
REFS = {"lorenz": ("ca_sx", "jax_fori", "numba"), "rnn": ("ca_mapaccum", "jax_scan", "numba")}


def impl_of(workload: str, key: str) -> Impl:
    return next(i for i in WORKLOADS[workload] if i.key == key)


def args_of(workload: str, n: int) -> tuple:
    if workload == "lorenz":
        return (P.copy(),)
    return rnn_data(n)


# ------------------------------------------------------------------------------------ results as numbers

def leaves(r) -> list[np.ndarray]:
    """A result's numbers, flattened, as float64 arrays (numpy, torch, JAX, CasADi DM, floats)."""
    if isinstance(r, (tuple, list)):
        return [a for x in r for a in leaves(x)]
    if hasattr(r, "detach"):
        r = r.detach().numpy()
    return [np.asarray(r, dtype=np.float64)]


def mismatch(got, want) -> str | None:
    """None when ``got`` equals ``want`` to RTOL per array (relative to each element and the array's scale)."""
    g, w = leaves(got), leaves(want)
    if len(g) != len(w):
        return f"{len(g)} results, torch has {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        a, b = a.reshape(-1), b.reshape(-1)
        if a.shape != b.shape:
            return f"result {i}: {a.size} numbers, torch has {b.size}"
        tol = RTOL * (np.abs(b) + np.max(np.abs(b)))
        err = np.abs(a - b)
        if not np.all(err <= tol):
            return f"result {i}: off by {np.max(err / np.max(np.abs(b))):.1e} of its scale"
    return None


# ------------------------------------------------------------------------------------ a fresh process

def child(workload: str, key: str, n: int, cap: float, mem_gb: float, budget: float = 2.0) -> None:
    """Measure one implementation in this (fresh) process and print one JSON line: seconds to import its
    libraries, to build it, and of its calls up to full speed and a few more while they are cheap (they show
    whether the speed has settled); ``full``: the index of the first call at full speed (None: not within
    ``cap`` seconds). Data memory is limited to ``mem_gb`` GiB (0: no limit; never for JAX, whose allocator
    reserves address space up front); processes this one starts (symgrad's compile helper) inherit it."""
    impl = impl_of(workload, key)
    if mem_gb > 0 and "jax" not in impl.libs:
        try:
            import resource  # POSIX only
            nbytes = int(mem_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_DATA, (nbytes, nbytes))
        except (ImportError, ValueError, OSError):
            pass
    args = args_of(workload, n)
    t0 = time.perf_counter()
    for name in impl.libs:
        lib(name)
    imp = time.perf_counter() - t0
    t0 = time.perf_counter()
    vg = impl.make(n)
    setup = time.perf_counter() - t0
    calls, full = warm_up(impl, vg, args, cap)
    start = time.perf_counter()
    while full is not None and len(calls) < full + 4 and time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        vg(*args)
        calls.append(time.perf_counter() - t0)
    print(json.dumps({"import": imp, "setup": setup, "calls": calls, "full": full}))


def run_child(workload: str, key: str, n: int, cap: float, mem_gb: float, extra: float = 0.0) -> dict:
    """One fresh process (empty symgrad cache, ``mem_gb`` GiB of data memory), stopped after ``cap`` + 30 s
    + ``extra``."""
    timeout = cap + 30 + extra
    cache = tempfile.mkdtemp(prefix="symgrad-loops-child-")
    env = dict(os.environ, SYMGRAD_CACHE_DIR=cache)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", workload, key, str(n), f"{cap:g}", f"{mem_gb:g}"]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": last[:200]}
    return json.loads(r.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------ steady timing

def steady_times(calls: dict[str, tuple[Callable, tuple, float]], rounds: int,
                 budget: float) -> dict[str, tuple[float, float]]:
    """(median, min) seconds per call; ``calls`` holds (function, arguments, seconds of one call at full speed,
    roughly). Each round times every implementation in turn, a block of samples each (after one untimed call,
    for the fast ones); a sample is several consecutive calls for the fast ones (about 0.5 ms of work: short
    enough that a loaded machine seldom preempts it); about ``budget`` seconds per implementation in all, and at
    least 3 samples."""
    plan = {}
    for label, (_, _, per) in calls.items():
        per = max(per, 1e-7)
        inner = max(1, int(5e-4 / per))
        samples = max(3, int(budget / (inner * per)))
        plan[label] = (inner, max(1, samples // rounds), min(rounds, samples), per < 0.05)
    ts: dict[str, list[float]] = {label: [] for label in calls}
    for r in range(rounds):
        for label, (fn, args, _) in calls.items():
            inner, per_round, active, warm = plan[label]
            if r >= active:
                continue
            if warm:
                fn(*args)
            for _ in range(per_round):
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn(*args)
                ts[label].append((time.perf_counter() - t0) / inner)
    return {label: (float(np.median(v)), float(np.min(v))) for label, v in ts.items()}


# ------------------------------------------------------------------------------------ one workload

@dataclass
class Row:
    impl: Impl
    n: int
    status: str = ""                   # "" when measured; else why not
    fresh: list[dict] = field(default_factory=list)
    steady: float | None = None        # median seconds per call
    steady_min: float | None = None
    notes: list[str] = field(default_factory=list)

    def fresh_ok(self) -> list[dict]:
        return [f for f in self.fresh if "calls" in f]

    def full_speed(self) -> tuple[float, float, float | None, int | None] | None:
        """(import, 1st call, time to full speed, calls) medians over the fresh processes: the build and the
        calls before the first at full speed, extended while a call still takes over twice the steady time.
        The last two are None when a fresh process did not reach full speed."""
        ok = self.fresh_ok()
        if not ok:
            return None
        firsts = [f["setup"] + f["calls"][0] for f in ok]
        imps = [f["import"] for f in ok]
        fulls, counts = [], []
        for f in ok:
            c, j = f["calls"], f["full"]
            if j is None:
                break
            ref = self.steady if self.steady is not None else min(c[j:])
            while j < len(c) - 1 and c[j] > 2 * ref + 5e-4:
                j += 1
            fulls.append(f["setup"] + sum(c[:j]))
            counts.append(j)
        if len(fulls) < len(ok):
            return float(np.median(imps)), float(np.median(firsts)), None, None
        return float(np.median(imps)), float(np.median(firsts)), float(np.median(fulls)), int(np.median(counts))


def available(impl: Impl) -> str:
    """"" when the row can run, else why not."""
    for name in impl.libs:
        if not installed(name):
            return f"n/a ({name} not installed)"
    if impl.needs and not hasattr(lib("symgrad"), impl.needs):
        return "n/a (not built)"
    return ""


def checkpoint_for(workload: str, n: int) -> tuple[tuple, str]:
    """The arguments every column is checked at, and a note when they are not the timed ones."""
    args = args_of(workload, n)
    if workload != "lorenz":
        return args, ""
    k = _lorenz_numba_kernel()
    v0, g0 = k(P, n, H)
    v1, g1 = k(P * (1 + 2.2e-16 * np.array([1.0, -1.0, 1.0])), n, H)
    spread = max(abs(v1 - v0) / abs(v0), float(np.max(np.abs(g1 - g0)) / np.max(np.abs(g0))))
    if spread <= 1e-12:
        return args, ""
    return (P_STABLE.copy(),), (f"checked at p = (10, 0.5, 8/3): at the timed p a 1-ulp change of p moves the "
                                f"result by {spread:.0e} of its size (chaos)")


def run_workload(workload: str, steps: list[int], impls: list[Impl], reps: int, limit: float, mem_gb: float,
                 rounds: int, budget: float, log=print) -> dict[int, list[Row]]:
    table: dict[int, list[Row]] = {}
    prev: dict[str, tuple[int, float]] = {}    # key -> (steps, 1st call seconds) of the last measured count
    per_call: dict[str, tuple[int, float]] = {}  # key -> (steps, steady seconds per call) likewise
    stopped: dict[str, str] = {}               # key -> why it no longer runs
    for n in steps:
        rows = [Row(i, n) for i in impls]
        for row in rows:
            key = row.impl.key
            row.status = available(row.impl) or stopped.get(key, "")
            if not row.status and row.impl.grows and key in prev:
                m, t = prev[key]
                if t * n / m > limit:
                    row.status = f"skipped: 1st call {t:.1f} s at {m} steps, > {limit:.0f} s here"
                    stopped[key] = row.status
        live = [r for r in rows if not r.status]
        # fresh processes, the implementations taken in turn (rotating), empty caches
        for rep in range(reps):
            order = live[rep % len(live):] + live[:rep % len(live)] if live else []
            for row in order:
                if row.status:
                    continue
                log(f"  ... {workload} {n} steps: {row.impl.label}, fresh process {rep + 1}/{reps}")
                # slow calls (torch eager at 10000 steps) get time for the few calls a fresh process makes
                m, t = per_call.get(row.impl.key, (n, 0.0))
                f = run_child(workload, row.impl.key, n, limit, mem_gb, extra=4 * t * n / m)
                if "timeout" in f and row.fresh_ok():
                    row.notes.append(f"fresh process {rep + 1} stopped after {f['timeout']:.0f} s")
                    row.status = "drop-reps"
                    continue
                row.fresh.append(f)
                if "timeout" in f:
                    row.status = f"over {f['timeout']:.0f} s in a fresh process (stopped)"
                    stopped[row.impl.key] = f"skipped: over {f['timeout']:.0f} s at {n} steps"
                elif "error" in f:
                    row.status = f"error in a fresh process: {f['error']}"
                elif f["full"] is None:
                    # the 1st call stands (the row shows it); no more processes, not built in this one
                    c = f["calls"]
                    row.notes.append(f"not at full speed after {limit:.0f} s in a fresh process: {len(c) - 1} "
                                     f"calls of {np.median(c[1:] or c):.3g} s after the 1st")
                    row.status = "partial"
        for row in rows:
            if row.status == "drop-reps":
                row.status = ""
            fs = row.full_speed() if row.status in ("", "partial") else None
            if fs is not None:
                prev[row.impl.key] = (n, fs[1])
        # this process: build, check against torch, then steady timing
        if all(row.status for row in rows):
            table[n] = rows
            continue
        check_args, note = checkpoint_for(workload, n)
        want = lorenz_torch(n)(*check_args) if workload == "lorenz" else rnn_torch(n)(*check_args)
        args = args_of(workload, n)
        calls = {}
        for row in rows:
            if row.status:
                continue
            log(f"  ... {workload} {n} steps: {row.impl.label}, building and checking in this process")
            try:
                vg = row.impl.make(n)
                times, full = warm_up(row.impl, vg, args, limit)
                if full is None:
                    row.status = f"not at full speed after {limit:.0f} s in this process"
                    continue
                bad = mismatch(vg(*check_args), want)
            except Exception as e:  # noqa: BLE001 - a failing column is reported, not fatal
                row.status = f"error: {type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}"
                continue
            if bad:
                row.status = f"WRONG vs torch ({bad})"
                continue
            if note:
                row.notes.append(note)
            t0 = time.perf_counter()
            vg(*args)           # one call at full speed sizes the samples (the first one may have compiled it)
            calls[row.impl.label] = (vg, args, min([time.perf_counter() - t0, *times[full + 1:]]))
        log(f"  ... {workload} {n} steps: steady timing")
        times = steady_times(calls, rounds, budget)
        for row in rows:
            if row.impl.label in times:
                row.steady, row.steady_min = times[row.impl.label]
                per_call[row.impl.key] = (n, row.steady)
        table[n] = rows
    return table


# ------------------------------------------------------------------------------------ printing

def print_table(title: str, workload: str, table: dict[int, list[Row]], reps: int) -> None:
    refs = REFS[workload]
    ref_names = {k: impl_of(workload, k).label for k in refs}
    print(f"\n{title}")
    print(f"  fresh processes (empty cache), median of {reps}: import, 1st call (build + call), time to full speed "
          f"(calls); steady: median (and min) per call in one process; ratios of medians")
    width = max(len(i.label) for i in WORKLOADS[workload])
    heads = [f"/ {ref_names[k].split(' (')[0]}" for k in refs]
    print(f"  {'steps':>5}  {'implementation':{width}}  {'import s':>8}  {'1st call s':>10}  {'full speed s':>15}  "
          f"{'steady ms':>10}  {'(min)':>9}  " + "  ".join(f"{h:>20}" for h in heads))
    for n, rows in table.items():
        by_key = {r.impl.key: r for r in rows}
        ref_t = {k: by_key[k].steady if k in by_key else None for k in refs}
        for r in rows:
            head = f"  {n:5d}  {r.impl.label:{width}}"
            if r.status and r.status != "partial":
                print(f"{head}  {r.status}")
                continue
            fs = r.full_speed()
            if fs is None:
                fresh = f"{'-':>8}  {'-':>10}  {'-':>15}"
            else:
                imp, first, full, cnt = fs
                full_s = f"{full:.3f} ({cnt})" if full is not None else "not reached"
                fresh = f"{imp:8.2f}  {first:10.3f}  {full_s:>15}"
            if r.steady is None:
                print(f"{head}  {fresh}  {'-':>10}  {'-':>9}" + "".join(f"  [{x}]" for x in r.notes))
                continue
            ratios = "  ".join(f"{r.steady / ref_t[k]:20.3g}" if ref_t[k] else f"{'-':>20}" for k in refs)
            print(f"{head}  {fresh}  {1e3 * r.steady:10.4g}  {1e3 * r.steady_min:9.4g}  {ratios}"
                  + "".join(f"  [{x}]" for x in r.notes))


def summary(tables: dict[str, dict[int, list[Row]]]) -> None:
    print("\nTargets (issue 15, 'Done when'), from the figures above:")

    def line(ok, text):
        print(f"  [{'met' if ok else 'MISSED' if ok is not None else 'n/a'}] {text}")

    def get(workload, n, key, steady=True):
        """The row, if measured (``steady=False``: if its fresh processes ran, full speed reached or not)."""
        for r in tables.get(workload, {}).get(n, []):
            if r.impl.key == key and (r.steady is not None if steady else r.full_speed() is not None):
                return r
        return None
    for n in (100, 1000):
        fori, ca, jx, nb = (get("lorenz", n, k) for k in ("sg_fori", "ca_sx", "jax_fori", "numba"))
        for ref, name, bound in ((ca, "CasADi SX", 0.5), (jx, "JAX fori_loop", 0.5), (nb, "the numba limit", 2.0)):
            text = f"Lorenz {n} steps, sg.fori_loop steady <= {bound}x {name}'s"
            if fori is None or ref is None:
                line(None, f"{text}: {'sg.fori_loop' if fori is None else name} not measured")
            else:
                x = fori.steady / ref.steady
                line(x <= bound, f"{text}: {x:.2f}x")
        fresh, jfresh = get("lorenz", n, "sg_fori", steady=False), get("lorenz", n, "jax_fori", steady=False)
        text = f"Lorenz {n} steps, sg.fori_loop time to full speed <= JAX fori_loop's first call"
        if fresh is None or jfresh is None:
            line(None, f"{text}: not measured")
        elif fresh.full_speed()[2] is None:
            line(False, f"{text}: not at full speed in {LIMIT[0]:.0f} s vs {jfresh.full_speed()[1]:.2f} s")
        else:
            line(fresh.full_speed()[2] <= jfresh.full_speed()[1],
                 f"{text}: {fresh.full_speed()[2]:.2f} s vs {jfresh.full_speed()[1]:.2f} s")
    un, fori = get("lorenz", 1000, "sg_unrolled", steady=False), get("lorenz", 1000, "sg_fori")
    if un is None:
        line(None, "Lorenz 1000 steps unrolled: first call <= 3 s: not measured")
    else:
        line(un.full_speed()[1] <= 3.0, f"Lorenz 1000 steps unrolled: first call <= 3 s: {un.full_speed()[1]:.2f} s")
    un = get("lorenz", 1000, "sg_unrolled")
    if un is None or fori is None:
        line(None, "Lorenz 1000 steps unrolled: steady within 2x sg.fori_loop's: not measured")
    else:
        line(un.steady <= 2 * fori.steady, f"Lorenz 1000 steps unrolled: steady within 2x sg.fori_loop's: "
                                           f"{un.steady / fori.steady:.2f}x")
    for n in tables.get("rnn", {}):
        sc, jx = get("rnn", n, "sg_scan"), get("rnn", n, "jax_scan")
        if sc is None or jx is None:
            line(None, f"RNN {n} steps: sg.scan steady <= JAX scan's: not measured")
        else:
            line(sc.steady <= jx.steady, f"RNN {n} steps: sg.scan steady <= JAX scan's: {sc.steady / jx.steady:.2f}x")


def load() -> str:
    """The 1-minute load average (other processes change every figure above: compare on an idle machine)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def versions() -> str:
    out = [f"{os.cpu_count()} CPUs (load average {load()})", f"numpy {np.__version__}"]
    for name in ("numba", "torch", "jax", "casadi"):
        if installed(name):
            try:
                out.append(f"{name} {importlib.metadata.version(name)}")
            except importlib.metadata.PackageNotFoundError:
                out.append(name)
        else:
            out.append(f"{name} not installed")
    return ", ".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="Lorenz at 100 steps and the RNN, one fresh process each, "
                    "no unrolled symgrad / JAX / RNN CasADi SX")
    ap.add_argument("--steps", default=None, help="Lorenz step counts, comma separated (default 10,100,1000,10000)")
    ap.add_argument("--rnn-steps", type=int, default=500, help="RNN sequence length (default 500)")
    ap.add_argument("--reps", type=int, default=None, help="fresh processes per implementation (default 3)")
    ap.add_argument("--compile-limit", type=float, default=None,
                    help="seconds to full speed beyond which a larger step count is skipped (default 60)")
    ap.add_argument("--only", choices=sorted(WORKLOADS), default=None, help="one workload")
    ap.add_argument("--impls", default=None,
                    help="implementation keys to run, comma separated (" + ", ".join(
                        dict.fromkeys(i.key for w in WORKLOADS.values() for i in w)) + ")")
    ap.add_argument("--mem-limit", type=float, default=6.0,
                    help="GiB of data memory a fresh process may use (0: no limit; not applied to JAX)")
    ap.add_argument("--child", nargs=5, metavar=("WORKLOAD", "IMPL", "STEPS", "CAP", "MEM"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]), float(args.child[3]), float(args.child[4]))
        return
    t_start = time.perf_counter()
    quick = args.quick
    steps = [int(s) for s in args.steps.split(",")] if args.steps else ([100] if quick else [10, 100, 1000, 10000])
    reps = args.reps or (1 if quick else 3)
    limit = args.compile_limit or 60.0
    LIMIT[0] = limit
    rounds, budget = (3, 0.3) if quick else (5, 1.5)
    print(f"symgrad loop benchmarks{' (--quick)' if quick else ''}: float64, {versions()}")
    sg = lib("symgrad")
    print(f"symgrad: fori_loop {'built' if hasattr(sg, 'fori_loop') else 'not built'}, scan "
          f"{'built' if hasattr(sg, 'scan') else 'not built'}; this process's cache folder {_CACHE} (fresh)")
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    keys = set(args.impls.split(",")) if args.impls else None
    tables = {}
    if args.only in (None, "lorenz"):
        impls = [i for i in LORENZ if not (quick and i.full_only) and (keys is None or i.key in keys)]
        tables["lorenz"] = run_workload("lorenz", steps, impls, reps, limit, args.mem_limit, rounds, budget,
                                        log)
        print_table("Lorenz RK4 (h = 0.01, s0 = (1, 1, 1), p = (10, 28, 8/3)): value and gradient of sum(s_T**2) "
                    "wrt p", "lorenz", tables["lorenz"], reps)
        if quick:
            print("  (--quick leaves symgrad unrolled and JAX unrolled out: tens of seconds to full speed)")
    if args.only in (None, "rnn"):
        impls = [i for i in RNN if not (quick and i.full_only) and (keys is None or i.key in keys)]
        tables["rnn"] = run_workload("rnn", [args.rnn_steps], impls, reps, limit, args.mem_limit, rounds,
                                     budget, log)
        print_table(f"tanh RNN, 64 units, {args.rnn_steps} steps, inputs of 8: value and gradient of sum(h_T**2) "
                    "wrt W, U, b", "rnn", tables["rnn"], reps)
        if quick:
            print("  (--quick leaves symgrad, JAX and CasADi SX unrolled out: tens of seconds to full speed)")
    summary(tables)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s; load average {load()} at the end")


if __name__ == "__main__":
    try:
        main()
    finally:
        if not CHILD:
            shutil.rmtree(_CACHE, ignore_errors=True)
