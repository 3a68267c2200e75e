"""LLVM IR text for one function, and the scalar Python lines of ``codegen.numba.scalar`` compiled into it.

``Fn`` collects a function's basic blocks and instructions (``op`` names every result ``%tN``), the ``declare``
lines of the intrinsics and libm functions it calls, and the module globals. ``Lines`` compiles the lines that
``scalar.scalar_lines`` prints for numba (``name = expr``: arithmetic, comparisons, ``&``/``|``/``not``,
``numpy.<dtype>(...)`` conversions, numpy/math functions, ``_sg_select``) with numba's typing of numpy scalars
(int64 with float32 is float64, ``/`` of integers is float64, a literal integer power is unrolled multiplication
as numba's ``static_power``, ``-x`` is ``-0.0 - x``, ``!=`` is unordered), so the operations and their order are
the ones numba compiles from the same text. Anything else raises ``ir.Unsupported``.
"""
from __future__ import annotations

import ast
import struct
from dataclasses import dataclass

import numpy as np

from ..ir import Unsupported

#: IR dtype -> LLVM type
LL = {"float64": "double", "float32": "float", "int64": "i64", "bool": "i1", "bool_": "i1"}
#: LLVM type -> IR dtype
DT = {"double": "float64", "float": "float32", "i64": "int64", "i1": "bool"}
FLOATS = ("double", "float")


def ll_type(dtype: str) -> str:
    try:
        return LL[dtype]
    except KeyError:
        raise Unsupported(f"llvm: no scalar type for dtype {dtype}") from None


def fconst(value: float, ty: str = "double") -> str:
    """An exact LLVM float constant (a float's constant is the double of its float32 value)."""
    if ty == "float":
        value = float(np.float32(value))
    return "0x{:016X}".format(struct.unpack(">Q", struct.pack(">d", float(value)))[0])


def const(value: object, ty: str) -> str:
    if ty in FLOATS:
        return fconst(float(value), ty)
    if ty == "i1":
        return "true" if bool(value) else "false"
    return str(int(value))


@dataclass(frozen=True)
class Val:
    """An LLVM value: its text (``%t3`` or a constant) and LLVM type; ``py`` is a constant's Python value."""

    text: str
    ty: str
    py: object = None


class Fn:
    """One function's blocks; ``cur`` is the block instructions go to."""

    def __init__(self, decls: dict[str, str], globs: list[str]) -> None:
        self.blocks: list[list] = [["entry", []]]
        self.cur = self.blocks[0]
        self.n = 0
        self.labels: set[str] = {"entry"}
        self.decls = decls
        self.globs = globs

    def op(self, text: str) -> str:
        self.n += 1
        name = f"%t{self.n}"
        self.cur[1].append(f"  {name} = {text}")
        return name

    def raw(self, text: str) -> None:
        self.cur[1].append(f"  {text}")

    def label(self, stem: str) -> str:
        k = 0
        while f"{stem}{k}" in self.labels:
            k += 1
        self.labels.add(f"{stem}{k}")
        return f"{stem}{k}"

    def block(self, label: str) -> None:
        self.cur = [label, []]
        self.blocks.append(self.cur)

    def declare(self, name: str, ret: str, args: list[str]) -> None:
        self.decls[name] = f"declare {ret} @{name}({', '.join(args)})"

    def call(self, name: str, ret: str, args: list[Val]) -> str:
        self.declare(name, ret, [a.ty for a in args])
        return self.op(f"call {ret} @{name}({', '.join(f'{a.ty} {a.text}' for a in args)})")

    def text(self, head: str) -> str:
        out = [head + " {"]
        for label, lines in self.blocks:
            out.append(f"{label}:")
            out.extend(lines)
        out.append("}")
        return "\n".join(out)


# numpy / math functions of one float argument: (llvm intrinsic stem or libm name, whether an intrinsic)
_UNARY = {
    "sqrt": ("sqrt", True), "exp": ("exp", True), "log": ("log", True), "sin": ("sin", True), "cos": ("cos", True),
    "floor": ("floor", True), "ceil": ("ceil", True), "trunc": ("trunc", True), "rint": ("rint", True),
    "log10": ("log10", True), "log2": ("log2", True), "exp2": ("exp2", True), "fabs": ("fabs", True),
    "absolute": ("fabs", True), "abs": ("fabs", True),
    "tan": ("tan", False), "tanh": ("tanh", False), "sinh": ("sinh", False), "cosh": ("cosh", False),
    "arcsin": ("asin", False), "arccos": ("acos", False), "arctan": ("atan", False), "arcsinh": ("asinh", False),
    "arccosh": ("acosh", False), "arctanh": ("atanh", False), "log1p": ("log1p", False), "expm1": ("expm1", False),
    "cbrt": ("cbrt", False), "erf": ("erf", False), "erfc": ("erfc", False),
}
_BINARY_LIBM = {"arctan2": "atan2", "hypot": "hypot"}
_CONVERT = {"float64": "double", "float32": "float", "int64": "i64", "bool_": "i1"}
_CMP = {ast.Lt: ("olt", "slt"), ast.LtE: ("ole", "sle"), ast.Gt: ("ogt", "sgt"), ast.GtE: ("oge", "sge"),
        ast.Eq: ("oeq", "eq"), ast.NotEq: ("une", "ne")}

#: libm symbols the compiled code may call (checked against the process before compiling)
LIBM: set[str] = set()


def promote(a: str, b: str) -> str:
    """numba's (numpy's) result type of arithmetic on scalars of LLVM types ``a`` and ``b``."""
    if a == b:
        return "i64" if a == "i1" else a
    s = {a, b}
    if "double" in s:
        return "double"
    if "float" in s:
        return "double" if "i64" in s else "float"
    return "i64"


class Lines:
    """Compiles scalar lines into ``fn``; ``env`` maps the lines' names to values."""

    def __init__(self, fn: Fn) -> None:
        self.fn = fn
        self.env: dict[str, Val] = {}
        self._consts: dict[str, Val] = {}

    def bind(self, name: str, val: Val) -> None:
        self.env[name] = val

    def value(self, text: str) -> Val:
        """The value of an element text: a bound name, else a constant expression."""
        v = self.env.get(text)
        if v is not None:
            return v
        v = self._consts.get(text)
        if v is None:
            v = self.expr(ast.parse(text.strip(), mode="eval").body)
            if v.py is None:
                raise Unsupported(f"llvm: {text!r} is neither a bound name nor a constant")
            self._consts[text] = v
        return v

    def run(self, lines: list[str]) -> None:
        src = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
        for node in ast.parse(src).body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                raise Unsupported(f"llvm: line {ast.unparse(node)!r}")
            self.env[node.targets[0].id] = self.expr(node.value)

    # ------------------------------------------------------------------ conversions
    def convert(self, v: Val, ty: str) -> Val:
        if v.ty == ty:
            return v
        if v.py is not None:
            py = v.py
            if ty in FLOATS:
                return Val(const(float(py), ty), ty, float(np.float32(py)) if ty == "float" else float(py))
            if ty == "i1":
                return Val(const(bool(py), ty), ty, bool(py))
            if isinstance(py, float) and not np.isfinite(py):
                raise Unsupported("llvm: integer conversion of a non-finite constant")
            return Val(str(int(py)), ty, int(py))
        f = self.fn
        if v.ty in FLOATS and ty in FLOATS:
            return Val(f.op(f"{'fpext' if ty == 'double' else 'fptrunc'} {v.ty} {v.text} to {ty}"), ty)
        if v.ty in FLOATS:
            if ty == "i1":
                return Val(f.op(f"fcmp une {v.ty} {v.text}, {fconst(0.0)}"), ty)
            return Val(f.op(f"fptosi {v.ty} {v.text} to {ty}"), ty)
        if ty in FLOATS:
            return Val(f.op(f"{'uitofp' if v.ty == 'i1' else 'sitofp'} {v.ty} {v.text} to {ty}"), ty)
        if ty == "i1":
            return Val(f.op(f"icmp ne {v.ty} {v.text}, 0"), ty)
        return Val(f.op(f"zext i1 {v.text} to {ty}"), ty)

    # ------------------------------------------------------------------ expressions
    def expr(self, e: ast.expr) -> Val:
        if isinstance(e, ast.Name):
            v = self.env.get(e.id)
            if v is None:
                if e.id in ("True", "False"):
                    return Val(e.id.lower(), "i1", e.id == "True")
                raise Unsupported(f"llvm: unbound name {e.id}")
            return v
        if isinstance(e, ast.Constant):
            if isinstance(e.value, bool):
                return Val("true" if e.value else "false", "i1", e.value)
            if isinstance(e.value, int):
                return Val(str(e.value), "i64", e.value)
            if isinstance(e.value, float):
                return Val(fconst(e.value), "double", e.value)
            raise Unsupported(f"llvm: constant {e.value!r}")
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "numpy":
            if e.attr in ("inf", "nan", "pi", "e"):
                v = float(getattr(np, e.attr))
                return Val(fconst(v), "double", v)
            raise Unsupported(f"llvm: numpy.{e.attr}")
        if isinstance(e, ast.BinOp):
            return self.binop(e)
        if isinstance(e, ast.UnaryOp):
            return self.unary(e)
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            return self.compare(type(e.ops[0]), self.expr(e.left), self.expr(e.comparators[0]))
        if isinstance(e, ast.Call) and not e.keywords:
            return self.call(e)
        raise Unsupported(f"llvm: expression {ast.unparse(e)!r}")

    def binop(self, e: ast.BinOp) -> Val:
        a = self.expr(e.left)
        if isinstance(e.op, ast.Pow):
            return self.power(a, e.right)
        b = self.expr(e.right)
        f = self.fn
        if isinstance(e.op, ast.BitAnd | ast.BitOr):
            if a.ty in FLOATS or b.ty in FLOATS:
                raise Unsupported("llvm: bitwise op on floats")
            ty = "i1" if a.ty == b.ty == "i1" else "i64"
            a, b = self.convert(a, ty), self.convert(b, ty)
            return Val(f.op(f"{'and' if isinstance(e.op, ast.BitAnd) else 'or'} {ty} {a.text}, {b.text}"), ty)
        ops = {ast.Add: ("fadd", "add"), ast.Sub: ("fsub", "sub"), ast.Mult: ("fmul", "mul"), ast.Div: ("fdiv", None)}
        kind = ops.get(type(e.op))
        if kind is None:
            raise Unsupported(f"llvm: operator {type(e.op).__name__}")
        ty = promote(a.ty, b.ty)
        if kind[1] is None and ty not in FLOATS:
            ty = "double"
        a, b = self.convert(a, ty), self.convert(b, ty)
        return Val(f.op(f"{kind[0] if ty in FLOATS else kind[1]} {ty} {a.text}, {b.text}"), ty)

    def power(self, a: Val, right: ast.expr) -> Val:
        f = self.fn
        if isinstance(right, ast.Constant) and type(right.value) is int and 0 <= right.value <= 64:
            n = right.value            # numba's static_power: unrolled square-and-multiply from 1
            ty = "i64" if a.ty == "i1" else a.ty
            a = self.convert(a, ty)
            mul = "fmul" if ty in FLOATS else "mul"
            res = Val(const(1, ty), ty, 1)
            val = a
            while n:
                if n & 1:
                    res = Val(f.op(f"{mul} {ty} {res.text}, {val.text}"), ty)
                n >>= 1
                if n:
                    val = Val(f.op(f"{mul} {ty} {val.text}, {val.text}"), ty)
            return res
        b = self.expr(right)
        ty = promote(a.ty, b.ty)
        if ty not in FLOATS:
            raise Unsupported("llvm: integer power with a non-literal exponent")
        a, b = self.convert(a, ty), self.convert(b, ty)
        return Val(self.intrinsic("pow", ty, [a, b]), ty)

    def unary(self, e: ast.UnaryOp) -> Val:
        a = self.expr(e.operand)
        f = self.fn
        if isinstance(e.op, ast.USub):
            if a.py is not None and not isinstance(a.py, bool):
                return Val(const(-a.py, a.ty), a.ty, -a.py)
            if a.ty in FLOATS:
                return Val(f.op(f"fsub {a.ty} {fconst(-0.0, a.ty)}, {a.text}"), a.ty)
            a = self.convert(a, "i64")
            return Val(f.op(f"sub i64 0, {a.text}"), "i64")
        if isinstance(e.op, ast.UAdd):
            return self.convert(a, "i64") if a.ty == "i1" else a
        if isinstance(e.op, ast.Not):
            return Val(f.op(f"xor i1 {self.convert(a, 'i1').text}, true"), "i1")
        raise Unsupported(f"llvm: unary {type(e.op).__name__}")

    def compare(self, op: type, a: Val, b: Val) -> Val:
        ty = promote(a.ty, b.ty) if a.ty != b.ty else a.ty
        if ty == "i1":
            ty = "i64"
        a, b = self.convert(a, ty), self.convert(b, ty)
        fo, io = _CMP[op]
        if ty in FLOATS:
            return Val(self.fn.op(f"fcmp {fo} {ty} {a.text}, {b.text}"), "i1")
        return Val(self.fn.op(f"icmp {io} {ty} {a.text}, {b.text}"), "i1")

    def intrinsic(self, stem: str, ty: str, args: list[Val]) -> str:
        suffix = "f64" if ty == "double" else "f32"
        return self.fn.call(f"llvm.{stem}.{suffix}", ty, args)

    def libm(self, name: str, ty: str, args: list[Val]) -> str:
        sym = name if ty == "double" else name + "f"
        LIBM.add(sym)
        return self.fn.call(sym, ty, args)

    def float_args(self, args: list[Val]) -> tuple[str, list[Val]]:
        """numpy's ufunc loop for these arguments: float32 if all are float32 (or bool), else float64."""
        ty = "float" if all(a.ty in ("float", "i1") for a in args) and any(a.ty == "float" for a in args) else "double"
        return ty, [self.convert(a, ty) for a in args]

    def call(self, e: ast.Call) -> Val:
        fn = e.func
        args = [self.expr(a) for a in e.args]
        f = self.fn
        if isinstance(fn, ast.Name):
            if fn.id == "_sg_select" and len(args) == 3:
                c, a, b = args
                ty = a.ty if a.ty == b.ty else promote(a.ty, b.ty)
                a, b = self.convert(a, ty), self.convert(b, ty)
                return Val(f.op(f"select i1 {self.convert(c, 'i1').text}, {ty} {a.text}, {ty} {b.text}"), ty)
            if fn.id == "abs" and len(args) == 1:
                return self.absolute(args[0])
            raise Unsupported(f"llvm: call of {fn.id}")
        if not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id in ("numpy", "math")):
            raise Unsupported(f"llvm: call {ast.unparse(e)!r}")
        name = fn.attr
        if fn.value.id == "numpy" and name in _CONVERT and len(args) == 1:
            return self.convert(args[0], _CONVERT[name])
        if name in ("abs", "absolute", "fabs") and len(args) == 1 and args[0].ty not in FLOATS:
            return self.absolute(args[0])
        if name in _UNARY and len(args) == 1:
            stem, intr = _UNARY[name]
            ty, (a,) = self.float_args(args)
            return Val(self.intrinsic(stem, ty, [a]) if intr else self.libm(stem, ty, [a]), ty)
        if name in _BINARY_LIBM and len(args) == 2:
            ty, xs = self.float_args(args)
            return Val(self.libm(_BINARY_LIBM[name], ty, xs), ty)
        if name == "power" and len(args) == 2:
            ty, xs = self.float_args(args)
            return Val(self.intrinsic("pow", ty, xs), ty)
        if name == "true_divide" and len(args) == 2:
            ty, (a, b) = self.float_args(args)
            return Val(f.op(f"fdiv {ty} {a.text}, {b.text}"), ty)
        if name in ("maximum", "minimum") and len(args) == 2:
            return self.extreme(name == "maximum", *args)
        if name in ("isnan", "isinf", "isfinite") and len(args) == 1:
            a = args[0]
            if a.ty not in FLOATS:
                return Val("true" if name == "isfinite" else "false", "i1", name == "isfinite")
            if name == "isnan":
                return Val(f.op(f"fcmp uno {a.ty} {a.text}, {a.text}"), "i1")
            m = self.intrinsic("fabs", a.ty, [a])
            cmp = "oeq" if name == "isinf" else "one"
            return Val(f.op(f"fcmp {cmp} {a.ty} {m}, {fconst(float('inf'), a.ty)}"), "i1")
        if name in ("less_equal", "not_equal") and len(args) == 2:
            return self.compare(ast.LtE if name == "less_equal" else ast.NotEq, *args)
        if name == "sign" and len(args) == 1:
            return self.sign(args[0])
        if name == "copysign" and len(args) == 2:
            ty, xs = self.float_args(args)
            return Val(self.intrinsic("copysign", ty, xs), ty)
        raise Unsupported(f"llvm: {fn.value.id}.{name} of {len(args)} arguments")

    def sign(self, a: Val) -> Val:
        """numba's ``numpy.sign``: 1 / -1, and the value itself at 0 and NaN (floats); int64 for ints and bools."""
        f = self.fn
        ty = a.ty if a.ty in FLOATS else "i64"
        a = self.convert(a, ty)
        one, neg, zero = (const(v, ty) for v in (1, -1, 0))
        if ty in FLOATS:
            pos, lt = f.op(f"fcmp ogt {ty} {a.text}, {zero}"), f.op(f"fcmp olt {ty} {a.text}, {zero}")
        else:
            pos, lt = f.op(f"icmp sgt i64 {a.text}, 0"), f.op(f"icmp slt i64 {a.text}, 0")
        inner = f.op(f"select i1 {lt}, {ty} {neg}, {ty} {a.text}")
        return Val(f.op(f"select i1 {pos}, {ty} {one}, {ty} {inner}"), ty)

    def absolute(self, a: Val) -> Val:
        f = self.fn
        if a.ty in FLOATS:
            return Val(self.intrinsic("fabs", a.ty, [a]), a.ty)
        a = self.convert(a, "i64")
        neg = f.op(f"sub i64 0, {a.text}")
        c = f.op(f"icmp slt i64 {a.text}, 0")
        return Val(f.op(f"select i1 {c}, i64 {neg}, i64 {a.text}"), "i64")

    def extreme(self, top: bool, a: Val, b: Val) -> Val:
        """numpy.maximum / minimum as numba's ufunc loops: NaN-propagating (the first NaN)."""
        f = self.fn
        ty = a.ty if a.ty == b.ty and a.ty != "i1" else promote(a.ty, b.ty)
        a, b = self.convert(a, ty), self.convert(b, ty)
        if ty in FLOATS:
            a_nan = f.op(f"fcmp uno {ty} {a.text}, {a.text}")
            any_nan = f.op(f"fcmp uno {ty} {a.text}, {b.text}")
            nan_res = f.op(f"select i1 {a_nan}, {ty} {a.text}, {ty} {b.text}")
            ge = f.op(f"fcmp {'oge' if top else 'ole'} {ty} {a.text}, {b.text}")
            res = f.op(f"select i1 {ge}, {ty} {a.text}, {ty} {b.text}")
            return Val(f.op(f"select i1 {any_nan}, {ty} {nan_res}, {ty} {res}"), ty)
        ge = f.op(f"icmp {'sge' if top else 'sle'} {ty} {a.text}, {b.text}")
        return Val(f.op(f"select i1 {ge}, {ty} {a.text}, {ty} {b.text}"), ty)
