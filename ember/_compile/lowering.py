"""Scalar formulas for pointwise ops, and the composite ops (softmax, layer norm) spelled as row reductions.

POINTWISE maps an OpDef name to (C formula, NumPy formula).  Each formula is a
function of the operand expressions (names of temporaries, or literals) and the
op's params; C formulas also get `f` (the math-function suffix: "f" for float,
"" for double) and `lit` (a literal typed as the kernel's scalar type).  One
table per printer column: a CUDA printer adds a column, nothing else changes.

An op missing here (or a dtype other than float32/float64) runs as an ordinary
eager call inside the compiled graph: never a wrong kernel.
"""

from __future__ import annotations

import math

SQRT1_2 = 1.0 / math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _alpha_term(operand, params, lit):
    alpha = params.get("alpha", 1)
    return operand if alpha == 1 else f"({lit(alpha)} * {operand})"


def _np_alpha(operand, params):
    alpha = params.get("alpha", 1)
    return operand if alpha == 1 else f"({alpha!r} * {operand})"


def _gelu_c(a, p, f, lit):
    a = a[0]
    if p.get("approximate", "none") == "tanh":
        inner = f"{lit(SQRT_2_OVER_PI)} * ({a} + {lit(0.044715)} * {a} * {a} * {a})"
        return f"{lit(0.5)} * {a} * ({lit(1.0)} + tanh{f}({inner}))"
    return f"{lit(0.5)} * {a} * ({lit(1.0)} + erf{f}({a} * {lit(SQRT1_2)}))"


def _gelu_np(a, p):
    a = a[0]
    if p.get("approximate", "none") == "tanh":
        return f"0.5 * {a} * (1.0 + np.tanh({SQRT_2_OVER_PI!r} * ({a} + 0.044715 * {a} * {a} * {a})))"
    return f"0.5 * {a} * (1.0 + _sm.erf(np, {a} * {SQRT1_2!r}))"


# name -> (C formula(args, params, f, lit), NumPy formula(args, params))
POINTWISE = {
    "add": (lambda a, p, f, lit: f"({a[0]} + {_alpha_term(a[1], p, lit)})",
            lambda a, p: f"({a[0]} + {_np_alpha(a[1], p)})"),
    "sub": (lambda a, p, f, lit: f"({a[0]} - {_alpha_term(a[1], p, lit)})",
            lambda a, p: f"({a[0]} - {_np_alpha(a[1], p)})"),
    "mul": (lambda a, p, f, lit: f"({a[0]} * {a[1]})", lambda a, p: f"({a[0]} * {a[1]})"),
    "div": (lambda a, p, f, lit: f"({a[0]} / {a[1]})", lambda a, p: f"({a[0]} / {a[1]})"),
    "neg": (lambda a, p, f, lit: f"(-{a[0]})", lambda a, p: f"(-{a[0]})"),
    "exp": (lambda a, p, f, lit: f"exp{f}({a[0]})", lambda a, p: f"np.exp({a[0]})"),
    "log": (lambda a, p, f, lit: f"log{f}({a[0]})", lambda a, p: f"np.log({a[0]})"),
    "log1p": (lambda a, p, f, lit: f"log1p{f}({a[0]})", lambda a, p: f"np.log1p({a[0]})"),
    "expm1": (lambda a, p, f, lit: f"expm1{f}({a[0]})", lambda a, p: f"np.expm1({a[0]})"),
    "sqrt": (lambda a, p, f, lit: f"sqrt{f}({a[0]})", lambda a, p: f"np.sqrt({a[0]})"),
    "rsqrt": (lambda a, p, f, lit: f"({lit(1.0)} / sqrt{f}({a[0]}))", lambda a, p: f"(1 / np.sqrt({a[0]}))"),
    "reciprocal": (lambda a, p, f, lit: f"({lit(1.0)} / {a[0]})", lambda a, p: f"np.reciprocal({a[0]})"),
    "sin": (lambda a, p, f, lit: f"sin{f}({a[0]})", lambda a, p: f"np.sin({a[0]})"),
    "cos": (lambda a, p, f, lit: f"cos{f}({a[0]})", lambda a, p: f"np.cos({a[0]})"),
    "tanh": (lambda a, p, f, lit: f"tanh{f}({a[0]})", lambda a, p: f"np.tanh({a[0]})"),
    "sigmoid": (lambda a, p, f, lit: f"({lit(1.0)} / ({lit(1.0)} + exp{f}(-{a[0]})))",
                lambda a, p: f"_sm.sigmoid(np, {a[0]})"),
    "silu": (lambda a, p, f, lit: f"({a[0]} / ({lit(1.0)} + exp{f}(-{a[0]})))",
             lambda a, p: f"({a[0]} * _sm.sigmoid(np, {a[0]}))"),
    "relu": (lambda a, p, f, lit: f"({a[0]} < 0 ? {lit(0.0)} : {a[0]})", lambda a, p: f"np.maximum({a[0]}, 0)"),
    "gelu": (_gelu_c, _gelu_np),
    "erf": (lambda a, p, f, lit: f"erf{f}({a[0]})", lambda a, p: f"_sm.erf(np, {a[0]})"),
    "abs": (lambda a, p, f, lit: f"fabs{f}({a[0]})", lambda a, p: f"np.abs({a[0]})"),
    "square": (lambda a, p, f, lit: f"({a[0]} * {a[0]})", lambda a, p: f"({a[0]} * {a[0]})"),
    "pow": (lambda a, p, f, lit: f"pow{f}({a[0]}, {a[1]})", lambda a, p: f"np.power({a[0]}, {a[1]})"),
    "maximum": (lambda a, p, f, lit: f"(({a[0]} > {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]})",
                lambda a, p: f"np.maximum({a[0]}, {a[1]})"),
    "minimum": (lambda a, p, f, lit: f"(({a[0]} < {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]})",
                lambda a, p: f"np.minimum({a[0]}, {a[1]})"),
    "where": (lambda a, p, f, lit: f"({a[0]} ? {a[1]} : {a[2]})", lambda a, p: f"np.where({a[0]}, {a[1]}, {a[2]})"),
    "leaky_relu": (lambda a, p, f, lit: f"({a[0]} > 0 ? {a[0]} : {a[0]} * {lit(p['negative_slope'])})",
                   lambda a, p: f"np.where({a[0]} > 0, {a[0]}, {a[0]} * {p['negative_slope']!r})"),
    "hardtanh": (lambda a, p, f, lit: f"({a[0]} < {lit(p['min_val'])} ? {lit(p['min_val'])} : "
                                      f"({a[0]} > {lit(p['max_val'])} ? {lit(p['max_val'])} : {a[0]}))",
                 lambda a, p: f"np.minimum(np.maximum({a[0]}, {p['min_val']!r}), {p['max_val']!r})"),
    "dropout": (lambda a, p, f, lit: f"({a[0]} * {a[1]} * {lit(p['scale'])})",
                lambda a, p: f"({a[0]} * {a[1]} * {p['scale']!r})"),
    "lerp": (lambda a, p, f, lit: f"({a[0]} + {a[2]} * ({a[1]} - {a[0]}))",
             lambda a, p: f"({a[0]} + {a[2]} * ({a[1]} - {a[0]}))"),
}

# ops whose name is shared by differently-behaving OpDefs: only the canonical one is lowered
_CANONICAL: dict = {}


def canonical_ok(op) -> bool:
    """div with rounding_mode='trunc'/'floor' is another OpDef named "div": lower only the true division."""
    if not _CANONICAL:
        from .._ops import elementwise, nn_ops

        _CANONICAL["div"] = elementwise._DIV
        _CANONICAL["add"] = elementwise._ADD
        _CANONICAL["sub"] = elementwise._SUB
        _CANONICAL["relu"] = nn_ops.RELU
    expected = _CANONICAL.get(op.name)
    return expected is None or expected is op


REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "max"}
COMPOSITES = {"softmax", "log_softmax", "native_layer_norm"}


def c_literal(value, ctype: str) -> str:
    """A Python number as a C literal of the kernel's type (so float kernels never widen to double)."""
    value = float(value)
    if math.isnan(value):
        return f"(({ctype})NAN)"
    if math.isinf(value):
        return f"(({ctype})INFINITY)" if value > 0 else f"(-({ctype})INFINITY)"
    return f"(({ctype}){value!r})"
