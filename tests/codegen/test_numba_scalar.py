"""``codegen.numba.scalar``: small-array kernels as straight-line scalar numba code agree with the numpy kernels.

The corpus is small programs traced and derived by symgrad (``sg.compile`` / ``sg.value_and_grad``): each one's
lowered ``ir.Kernel`` is printed by ``scalar_lines`` into one combined numba function (one compile for the whole
corpus; the params are read as ``p[k]`` texts, the outputs written into arrays) and compared with the generated
numpy kernel of the same IR. ``emit_scalar`` (the whole-kernel form, ``emit_numba``'s calling convention) is
checked on the RK4 gradient and on a hand-built kernel of params returned, 0-d, int and bool outputs.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from codegen import cache as cg_cache
from codegen import emit_numpy, ir, load_kernel
from codegen.names import fresh
from codegen.numba.scalar import PRELUDE, SCALAR_LIMIT, emit_scalar, scalar_lines, scalarizable


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("symgrad-cache")))
        mp.delenv("SYMGRAD_DISABLE_CACHE", raising=False)
        cg_cache.reset_cache_dir()
        yield
    cg_cache.reset_cache_dir()


# ---------------------------------------------------------------------------- the corpus


def lorenz(s, p):
    x, y, z = s[0], s[1], s[2]
    return sg.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def rk4(s, p, h=0.01):
    k1 = lorenz(s, p)
    k2 = lorenz(s + h / 2 * k1, p)
    k3 = lorenz(s + h / 2 * k2, p)
    k4 = lorenz(s + h * k3, p)
    return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _loss_rk4(s, p):
    return (rk4(s, p) ** 2).sum()


def _softmax_loss(x, w):
    z = x @ w
    return (sg.softmax(z, dim=-1) * sg.arange(3.0)).sum() + sg.logsumexp(z, dim=0).mean()


def _where_clamp(x, y):
    a = sg.where(x > 0, x * y, 0.1 * x)
    return (sg.clamp(a, -0.5, 0.5) ** 2).sum() + sg.relu(y - x).max()


def _reductions(x):
    return (x.sum(0) * x.mean(1, keepdim=True)).sum() + x.amax(1).sum() * x.amin() + x.prod(1).sum()


def _broadcast(a, b):
    return ((a * b + sg.sin(b)) ** 2).mean()


def _index_forms(x):
    y = x[1:] * x[:-1] + x[::2].sum() + x[-1]
    z = x[sg.tensor([0, 2, 2])]
    w = sg.cat([y, z, x[None][0, 3:]])
    return (w * sg.cumsum(w, 0)).sum()


def _shapes(m):
    t = m.T.reshape(2, 3) @ m.reshape(3, 2)
    return (t.flatten()[:3] * m.permute(1, 0)[:, 0]).sum() + m.unsqueeze(0).sum(dim=(1, 2)).sum()


def _matmuls(a, v):
    return ((a @ v) @ (v @ a) + (v @ v) * (a @ a).sum()).sum()


def _scalar0d(x, y):
    return sg.sin(x) * y ** 2 + sg.exp(-x * y) / (1 + x ** 2)


def _ints(i, x):
    return (i * 3 + 1, (i // 2) % 3, i.sum(), (i > 1).sum(), i.float() * x, sg.argmax(x), sg.argmin(x, dim=0),
            x.argmax(dim=1, keepdim=True), (x > 0.2) & (i[None, :] > 0), sg.cumsum(i, 0), i.max(), (x > 0).long())


def _lorenz_loss(s, p):
    return (lorenz(s, p) ** 2).sum()


S0, P0 = np.array([1.0, 1.2, 0.9]), np.array([10.0, 28.0, 8 / 3])
_RNG = np.random.default_rng(7)
#: (name, function, arguments, mode): mode "fn" (values) or argnums for ``sg.value_and_grad``
CORPUS = [
    ("lorenz", lorenz, (S0, P0), "fn"),
    ("rk4_grad", _loss_rk4, (S0, P0), (0, 1)),
    ("softmax", _softmax_loss, (_RNG.normal(size=(2, 2)), _RNG.normal(size=(2, 3))), (0, 1)),
    ("where_clamp", _where_clamp, (_RNG.normal(size=(4,)), _RNG.normal(size=(4,))), (0, 1)),
    ("reductions", _reductions, (_RNG.uniform(0.5, 1.5, size=(2, 3)),), (0,)),
    ("broadcast", _broadcast, (_RNG.normal(size=(2, 1)), _RNG.normal(size=(3,))), (0, 1)),
    ("index_forms", _index_forms, (_RNG.normal(size=(5,)),), (0,)),
    ("shapes", _shapes, (_RNG.normal(size=(2, 3)),), (0,)),
    ("matmuls", _matmuls, (_RNG.normal(size=(2, 2)), _RNG.normal(size=(2,))), (0, 1)),
    ("scalar0d", _scalar0d, (0.7, -1.3), (0, 1)),
    ("ints", _ints, (sg.tensor([3, -2]), _RNG.normal(size=(2, 2))), "fn"),
    ("f32", _lorenz_loss, (S0.astype(np.float32), P0.astype(np.float32)), (0, 1)),
]


def _kernel_of(fn, args, mode):
    """(kernel, numpy kernel, the kernel's arguments) of ``fn`` traced at ``args``."""
    f = sg.compile(fn) if mode == "fn" else sg.value_and_grad(fn, argnums=mode)
    f(*args)
    entry = next(iter(f._entries.values()))
    arrays = [a.numpy() if isinstance(a, sg.Tensor) else np.asarray(a) for a in args]
    arrays += [np.asarray(c) for c in entry.prog.consts]
    kernel = entry.prog.kernel
    arrays = [np.asarray(a, dtype=kernel.params[[p.index for p in kernel.params].index(k)].dtype)
              for k, a in enumerate(arrays)]
    return kernel, entry.prog.fn, arrays


def _hand_forms() -> ir.Kernel:
    """Forms the traced corpus does not reach: batched and 1-d @ 2-d matmul, negative axes and steps, ``...``,
    slice scatters, conversions in concat and casts, reductions over several or empty axes, int and bool folds."""
    a, b, c = ir.Param("a", 0, (2, 3), "float64"), ir.Param("b", 1, (3,), "float64"), ir.Param("c", 2, (2, 2, 3),
                                                                                              "float64")
    i, m, e = ir.Param("i", 3, (3,), "int64"), ir.Param("m", 4, (3,), "bool"), ir.Param("e", 5, (2, 0), "float64")
    A, I, M = sp.Symbol("a", real=True), sp.Symbol("i", real=True), sp.Symbol("m", real=True)
    body = (
        ir.MatMul("t0", "c", "b", (2, 2), "float64"),
        ir.Transpose("t1", "a", (-1, -2), (3, 2), "float64"),
        ir.MatMul("t2", "b", "t1", (2,), "float64"),
        ir.Index("t3", "a", (("e",), ("n",), ("s", None, None, -1)), (2, 1, 3), "float64"),
        ir.IndexAdd("t4", "b", (("s", 1, 4, None),), (5,), "float64"),
        ir.CumSum("t5", "a", -1, True, (2, 3), "float64"),
        ir.Concat("t6", ("i", "b"), 0, False, (6,), "float64"),
        ir.Reduce("t7", "sum", "c", (0, -1), True, (1, 2, 1), "float64"),
        ir.Reduce("t8", "prod", "i", (0,), False, (), "int64"),
        ir.Reduce("t9", "max", "m", (0,), False, (), "bool"),
        ir.Reduce("t10", "sum", "e", (1,), False, (2,), "float64"),
        ir.Reduce("t11", "min", "a", (0,), False, (3,), "float64"),
        ir.ArgReduce("t12", "argmin", "a", None, True, (1, 1), "int64"),
        ir.Elementwise("t13", I * 2 - 1, (3,), "int64"),
        ir.Elementwise("t14", sp.And(sp.Ne(M, 0), sp.StrictGreaterThan(I, 0)), (3,), "bool"),
        ir.Elementwise("t15", A * 3, (2, 3), "int64"),
        ir.Size("t16", "c", (0, 2), (), "int64"),
        ir.IndexAdd("t17", "t13", (("a", (1, 1, 0), (3,)),), (2,), "int64"),
    )
    return ir.Kernel("hand_forms", (a, b, c, i, m, e), body,
                     tuple(f"t{k}" for k in range(18) if k != 1), doc="hand-built forms")


@pytest.fixture(scope="module")
def corpus():
    out = {name: _kernel_of(fn, args, mode) for name, fn, args, mode in CORPUS}
    kernel = _hand_forms()
    fn, _ = load_kernel(emit_numpy(kernel), kernel.name, prefix="test_scalar_np")
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(2, 3)), rng.normal(size=(3,)), rng.normal(size=(2, 2, 3)), np.array([3, -2, 4]),
              np.array([False, True, False]), np.zeros((2, 0))]
    out["hand_forms"] = (kernel, fn, arrays)
    return out


def _combined_source(kernels: dict) -> tuple[str, list[tuple[str, str, np.ndarray, str]]]:
    """One numba function computing every corpus kernel from flat param arrays into flat output arrays; and
    its arguments in order: (argument, what, array, corpus name) with what "in" (a param) or "out" (an output)."""
    taken = {"numba", "numpy", "math", "corpus"}
    new = lambda stem: fresh(stem, taken)  # noqa: E731
    args: list[tuple[str, str, np.ndarray]] = []
    body: list[str] = []
    for name, (kernel, _, arrays) in kernels.items():
        inputs = {}
        for p in kernel.params:
            a = arrays[p.index]
            arg = new(f"{name}_{p.name}")
            args.append((arg, "in", np.ascontiguousarray(a, dtype=p.dtype).reshape(-1), name))
            inputs[p.name] = [f"{arg}[{k}]" for k in range(a.size)]
        lines, outs = scalar_lines(kernel, inputs, new)
        body += [f"    # kernel {name}"] + [f"    {line}" for line in lines]
        shapes = {p.name: (p.shape, p.dtype) for p in kernel.params} | {
            st.target: (st.shape, st.dtype) for st in kernel.body}
        for o, elems in zip(kernel.outputs, outs):
            shape, dtype = shapes[o]
            arg = new(f"{name}_out_{o}")
            args.append((arg, "out", np.zeros(max(1, int(np.prod(shape))), dtype=dtype), name))
            body += [f"    {arg}[{k}] = {x}" for k, x in enumerate(elems)]
    head = '@numba.njit(cache=True, error_model="numpy")\n' + f"def corpus({', '.join(a[0] for a in args)}):\n"
    src = "import math\nimport numba\nimport numpy\n" + PRELUDE + "\n\n" + head + "\n".join(body) + "\n    return 0\n"
    return src, args


@pytest.fixture(scope="module")
def combined(corpus):
    """Per kernel name, the outputs of the combined scalar function (one numba compile for the corpus)."""
    src, args = _combined_source(corpus)
    fn, _ = load_kernel(src, "corpus", prefix="test_scalar")
    fn(*[a[2] for a in args])
    outs = {name: [a for _, what, a, owner in args if what == "out" and owner == name] for name in corpus}
    return outs, src


def _numpy_outputs(kernel, fn, arrays):
    with np.errstate(all="ignore"):
        return [np.asarray(x) for x in fn(list(arrays))]


def _check(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    want = want.reshape(-1) if want.size else want.reshape(0)
    got = got[:want.size]
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    elif dtype.startswith("float"):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", [c[0] for c in CORPUS] + ["hand_forms"])
def test_corpus_agrees_with_numpy_kernel(name, corpus, combined):
    kernel, fn, arrays = corpus[name]
    assert scalarizable(kernel)
    outs, _ = combined
    want = _numpy_outputs(kernel, fn, arrays)
    assert len(outs[name]) == len(want)
    for got, w in zip(outs[name], want):
        _check(got, w, str(w.dtype))


def test_corpus_covers_every_statement_type(corpus):
    """Every statement type but ``Scan`` (a loop: its kernel keeps an array body) is in the corpus."""
    seen = {type(st) for kernel, _, _ in corpus.values() for st in kernel.body}
    assert seen == set(ir.STATEMENTS) - {ir.Scan, *ir.NUMPY_ONLY}, set(ir.STATEMENTS) - seen
    kinds = {st.kind for kernel, _, _ in corpus.values() for st in kernel.body if isinstance(st, ir.Reduce)}
    assert kinds == {"sum", "mean", "max", "min", "prod"}


def test_lines_are_scalar_and_every_name_is_fresh(corpus):
    """No array is made, every assigned name comes from ``fresh``, once; float32 stays float32."""
    kernel, _, _ = corpus["rk4_grad"]
    given: list[str] = []
    taken: set[str] = set()

    def new(stem: str) -> str:
        given.append(fresh(stem, taken))
        return given[-1]

    inputs = {p.name: [f"{p.name}s[k, {j}]" for j in range(int(np.prod(p.shape)))] for p in kernel.params}
    lines, outs = scalar_lines(kernel, inputs, new)
    assigned = [ln.split(" = ")[0] for ln in lines if not ln.startswith("#")]
    assert assigned and sorted(assigned) == sorted(given) and len(set(given)) == len(given)
    assert all(not ln.startswith(" ") for ln in lines)
    assert not any(re.search(r"numpy\.(empty|zeros|array|asarray|ones)|\[\s*:", ln) for ln in lines)
    assert [len(o) for o in outs] == [1, 3, 3]
    text = "\n".join(lines)
    for texts in inputs.values():                     # an input that is not a name is read once
        assert all(text.count(x) == 1 for x in texts), texts
    kernel32, _, _ = corpus["f32"]
    assert {p.dtype for p in kernel32.params} == {"float32"}
    inputs = {p.name: [f"{p.name}[{j}]" for j in range(int(np.prod(p.shape)))] for p in kernel32.params}
    lines, _ = scalar_lines(kernel32, inputs, lambda s: fresh(s, set(taken)))
    text32 = "\n".join(lines)
    assert "float64" not in text32 and "numpy.float32(" in text32


def test_views_and_broadcast_operands_cost_no_line():
    x = ir.Param("x", 0, (3,), "float64")
    s = ir.Param("s", 1, (), "float64")
    X, S = sp.Symbol("x", real=True), sp.Symbol("s", real=True)
    kernel = ir.Kernel("k", (x, s), (
        ir.Reshape("r", "x", (3, 1), "float64"), ir.Broadcast("b", "r", (3, 4), "float64"),
        ir.Transpose("t", "b", (1, 0), (4, 3), "float64"), ir.Index("i", "t", (("i", 1), ("s", None, None, -1)),
                                                                      (3,), "float64"),
        ir.Elementwise("e", sp.exp(S) * 2, (2, 3), "float64"),
        ir.Elementwise("c", X, (3,), "float64")), ("i", "e", "c"))
    lines, outs = scalar_lines(kernel, {"x": ["x0", "x1", "x2"], "s": ["s0"]}, lambda st: fresh(st, set()))
    assert outs[0] == ["x2", "x1", "x0"] and outs[2] == ["x0", "x1", "x2"]
    assert [ln for ln in lines if not ln.startswith("#")] == ["e_0 = 2.0*numpy.exp(s0)"]
    assert outs[1] == ["e_0"] * 6


# ---------------------------------------------------------------------------- emit_scalar


def _hand_kernel() -> ir.Kernel:
    x = ir.Param("x", 0, (2, 2), "float64")
    i = ir.Param("i", 1, (3,), "int64")
    a = ir.Param("a", 2, (), "float64")
    X, I, A = (sp.Symbol(n, real=True) for n in "xia")
    return ir.Kernel("hand", (x, i, a), (
        ir.Reduce("t0", "sum", "x", (0, 1), False, (), "float64"),
        ir.Elementwise("t1", I * 2 + 1, (3,), "int64"),
        ir.Elementwise("t2", sp.StrictGreaterThan(X, A), (2, 2), "bool"),
        ir.Size("t3", "x", (0, 1), (), "float64"),
        ir.Elementwise("t4", A * sp.Symbol("t3", real=True) + sp.Symbol("t0", real=True), (), "float64"),
        ir.IndexAdd("t5", "t1", (("a", (0, 2, 0), (3,)),), (4,), "float64"),
        ir.ArgReduce("t6", "argmax", "x", None, False, (), "int64"),
    ), ("x", "t0", "t1", "t2", "t4", "t5", "t6", "a"), doc="hand-made")


def test_emit_scalar_calling_convention():
    kernel = _hand_kernel()
    assert scalarizable(kernel)
    src = emit_scalar(kernel)
    assert '@numba.njit(cache=True, error_model="numpy")' in src and "def hand(x, i, a):" in src
    fn, _ = load_kernel(src, "hand", prefix="test_scalar_emit")
    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    i = np.array([3, -4, 7])
    got = fn(x, i, 0.3)
    assert got[0] is x                                      # a param returned as given
    assert type(got[1]) is float and got[1] == x.sum()      # 0-d outputs: Python scalars
    np.testing.assert_array_equal(got[2], i * 2 + 1)
    assert got[2].dtype == np.int64
    np.testing.assert_array_equal(got[3], x > 0.3)
    assert got[3].dtype == np.bool_
    assert got[4] == 0.3 * 4 + x.sum()
    want = np.zeros(4)
    np.add.at(want, [0, 2, 0], i * 2 + 1)
    np.testing.assert_array_equal(got[5], want)
    assert type(got[6]) is int and got[6] == 2
    assert type(got[7]) is float and got[7] == 0.3
    # each param element is read once, into a local
    assert src.count("x[1, 0]") == 1 and "x_1_0 = x[1, 0]" in src


def test_emit_scalar_rk4_gradient(corpus):
    kernel, fn, arrays = corpus["rk4_grad"]
    src = emit_scalar(kernel)
    jit, _ = load_kernel(src, kernel.name, prefix="test_scalar_emit")
    got = jit(*[arrays[p.index] for p in kernel.params])   # emit_numba's order: the kernel's params
    want = _numpy_outputs(kernel, fn, arrays)
    assert type(got[0]) is float
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert "numpy.empty((3,), numpy.float64)" in src and src.count("numpy.empty") == 2


# ---------------------------------------------------------------------------- what it refuses


def test_scalarizable_refuses_large_values_unknown_statements_and_empty_argmax():
    sym = sp.Symbol("v0", real=True)

    def one(shape, *body, outputs=("t0",)):
        return ir.Kernel("k", (ir.Param("v0", 0, shape, "float64"),), tuple(body), outputs)

    n = SCALAR_LIMIT
    assert scalarizable(one((n,), ir.Elementwise("t0", sym + 1, (n,), "float64")))
    assert not scalarizable(one((n + 1,), ir.Elementwise("t0", sym + 1, (n + 1,), "float64")))
    assert not scalarizable(one((n,), ir.Broadcast("t0", "v0", (2, n), "float64")))
    assert scalarizable(one((n,), ir.Broadcast("t0", "v0", (2, n), "float64")), limit=2 * n)
    wide = sum(sp.sin(sym + k) for k in range(100))
    assert not scalarizable(one((n,), ir.Elementwise("t0", wide, (n,), "float64")))   # over the budget
    assert not scalarizable(one((0, 3), ir.ArgReduce("t0", "argmax", "v0", 0, False, (3,), "int64")))

    class Mystery(ir.Statement):
        target, arg, shape, dtype, note = "t0", "v0", (3,), "float64", ""

    kernel = one((3,), Mystery())
    assert not scalarizable(kernel)
    with pytest.raises(ir.Unsupported, match="Mystery"):
        scalar_lines(kernel, {"v0": ["a", "b", "c"]}, lambda s: fresh(s, set()))
