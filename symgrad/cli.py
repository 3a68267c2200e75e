"""The ``symgrad`` command: the tour, gradient formulas of an expression, and ``explain`` for a function."""
from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import runpy
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import symgrad as sg

from .tour import compiled_demo

_FUNCS = ("exp log log1p sqrt sin cos tan tanh sigmoid relu abs sum mean clamp pow where maximum minimum "
          "matmul softmax logsumexp").split()


def _shape(text: str) -> tuple[int, ...]:
    text = text.strip().strip("()[]")
    return tuple(int(p) for p in text.replace("x", ",").split(",") if p.strip()) if text else ()


def _parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    out = {}
    for item in items or ():
        name, _, shape = item.partition("=")
        if not _:
            raise SystemExit(f"symgrad: --shape expects NAME=D1,D2,... (got {item!r})")
        out[name.strip()] = _shape(shape)
    return out


def _leaf(name: str, shape: tuple[int, ...], dtype: Any) -> Any:

    rng = np.random.default_rng(0)
    return sg.tensor(rng.uniform(0.5, 1.5, size=shape), dtype=dtype, requires_grad=True, name=name)


def cmd_grad(args: argparse.Namespace) -> int:
    tree = ast.parse(args.expr, mode="eval")
    # a name that is called is one of symgrad's functions (erf, std, hypot, ...); any other is a variable
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called - set(_FUNCS)
                   - {"sg", "pi", "e"})
    shapes = _parse_shapes(args.shape)
    dtype = sg.float64
    env: dict[str, Any] = {f: getattr(sg, f) for f in _FUNCS if hasattr(sg, f)}
    for f in sorted(called - set(env)):
        fn = getattr(sg, f, None)
        if not callable(fn) or f.startswith("_"):
            raise SystemExit(f"symgrad: unknown function {f!r} (symgrad's functions: sin, exp, erf, std, ...)")
        env[f] = fn
    env.update(sg=sg, pi=3.141592653589793, e=2.718281828459045)
    leaves = {n: _leaf(n, shapes.get(n, ()), dtype) for n in names}
    env.update(leaves)
    out = eval(compile(tree, "<expression>", "eval"), {"__builtins__": {}}, env)  # noqa: S307 - the user's own input
    wrt = args.wrt or names
    print(f"f = {sg.formula(out)}")
    for w in wrt:
        if w not in leaves:
            raise SystemExit(f"symgrad: --wrt {w}: no variable named {w!r} in the expression")
        f = sg.grad_formula(out, leaves[w])
        print(f"d f/d {w} = {f}")
        if args.latex:
            print(f"  LaTeX: {f.latex()}")
        if args.pretty:
            print(f.pretty())
    return 0


def _load_function(spec: str) -> Any:
    path, _, func = spec.rpartition(":")
    if not path or not func:
        raise SystemExit("symgrad explain: expected path/to/file.py:function")
    p = Path(path)
    if not p.exists():
        raise SystemExit(f"symgrad explain: no such file: {path}")
    mspec = importlib.util.spec_from_file_location(p.stem, p)
    assert mspec is not None and mspec.loader is not None
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    fn = getattr(mod, func, None)
    if fn is None:
        raise SystemExit(f"symgrad explain: {path} has no function {func!r}")
    return fn


def cmd_explain(args: argparse.Namespace) -> int:
    fn = _load_function(args.target)
    shapes = _parse_shapes(args.shape)
    target = getattr(fn, "fn", fn)
    params = list(inspect.signature(target).parameters)
    leaves = [_leaf(p, shapes.get(p, ()), sg.float64) for p in params]
    compiled = fn if isinstance(fn, sg.CompiledFunction) else sg.compile(fn)
    example = [leaf.detach().numpy() for leaf in leaves]
    report = compiled.formulas(*example)
    print(report)
    if args.latex:
        print(report.latex())
    if args.source:
        vg = sg.value_and_grad(compiled.fn, argnums=tuple(range(len(example))))
        print(vg.source(*example, backend="numpy"))
        print(vg.source(*example, backend="numba"))
    return 0


def _find_walkthrough() -> Path | None:
    here = Path(__file__).resolve().parent.parent / "examples" / "seed_walkthrough.py"
    return here if here.exists() else None


def cmd_tour(args: argparse.Namespace) -> int:
    path = _find_walkthrough()
    print("=" * 78)
    print("symgrad tour 1/3 - the PyTorch autograd tutorial, with `import symgrad as torch`")
    print("=" * 78)
    if path is None:
        print("(examples/seed_walkthrough.py is not next to this installation; run from a checkout)")
    else:
        runpy.run_path(str(path), run_name="__main__")
    print()
    print("=" * 78)
    print("symgrad tour 2/3 - gradient formulas from the command line")
    print("=" * 78)
    print('$ symgrad grad "mean(3*(x+2)**2)" --wrt x --shape x=2,2 --latex')
    cmd_grad(argparse.Namespace(expr="mean(3*(x+2)**2)", wrt=["x"], shape=["x=2,2"], latex=True, pretty=False))
    print('$ symgrad grad "sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))" --shape x=3 --shape y=3')
    cmd_grad(argparse.Namespace(expr="sum(sin(x)*exp(-y**2) + log1p(x**2)*tanh(y))", wrt=None,
                                shape=["x=3", "y=3"], latex=False, pretty=False))
    print()
    print("=" * 78)
    print("symgrad tour 3/3 - a compiled kernel")
    print("=" * 78)
    compiled_demo()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``symgrad`` console script."""
    ap = argparse.ArgumentParser(prog="symgrad", description="Symbolic gradients: formulas and kernels.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tour", help="run the seed walkthrough, print formulas and a compiled kernel")
    t.set_defaults(func=cmd_tour)
    g = sub.add_parser("grad", help='gradient formulas of an expression, e.g. symgrad grad "mean(3*(x+2)**2)"')
    g.add_argument("expr")
    g.add_argument("--wrt", action="append", help="variable to differentiate with respect to (repeatable)")
    g.add_argument("--shape", action="append", help="NAME=D1,D2 shape of a variable (default: scalar)")
    g.add_argument("--latex", action="store_true", help="also print LaTeX")
    g.add_argument("--pretty", action="store_true", help="also pretty-print")
    g.set_defaults(func=cmd_grad)
    e = sub.add_parser("explain", help="formulas and kernels of a function: path/to/file.py:func")
    e.add_argument("target")
    e.add_argument("--shape", action="append", help="NAME=D1,D2 example shape of an argument (default: scalar)")
    e.add_argument("--latex", action="store_true")
    e.add_argument("--source", action="store_true", help="print the generated kernel source")
    e.set_defaults(func=cmd_explain)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
