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

from .cmath import name as _c_math

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
    return f"{lit(0.5)} * {a} * ({lit(1.0)} + {_c_math('erf', f)}({a} * {lit(SQRT1_2)}))"


def _gelu_np(a, p):
    a = a[0]
    if p.get("approximate", "none") == "tanh":
        return f"0.5 * {a} * (1.0 + np.tanh({SQRT_2_OVER_PI!r} * ({a} + 0.044715 * {a} * {a} * {a})))"
    return f"0.5 * {a} * (1.0 + _sm.erf(np, {a} * {SQRT1_2!r}))"


def _libm(c_name: str, numpy_name: str | None = None) -> tuple:
    """(C, NumPy) printers of a one-argument math function: exp -> expf(x) / np.exp(x)."""
    return (lambda a, p, f, lit: f"{_c_math(c_name, f)}({a[0]})", lambda a, p: f"np.{numpy_name or c_name}({a[0]})")


# name -> (C formula(args, params, f, lit), NumPy formula(args, params))
POINTWISE = {
    "add": (lambda a, p, f, lit: f"({a[0]} + {_alpha_term(a[1], p, lit)})",
            lambda a, p: f"({a[0]} + {_np_alpha(a[1], p)})"),
    "sub": (lambda a, p, f, lit: f"({a[0]} - {_alpha_term(a[1], p, lit)})",
            lambda a, p: f"({a[0]} - {_np_alpha(a[1], p)})"),
    "mul": (lambda a, p, f, lit: f"({a[0]} * {a[1]})", lambda a, p: f"({a[0]} * {a[1]})"),
    "div": (lambda a, p, f, lit: f"({a[0]} / {a[1]})", lambda a, p: f"({a[0]} / {a[1]})"),
    "neg": (lambda a, p, f, lit: f"(-{a[0]})", lambda a, p: f"(-{a[0]})"),
    "exp": _libm('exp'),
    "log": _libm('log'),
    "log1p": _libm('log1p'),
    "expm1": _libm('expm1'),
    "sqrt": _libm('sqrt'),
    "rsqrt": (lambda a, p, f, lit: f"({lit(1.0)} / sqrt{f}({a[0]}))", lambda a, p: f"(1 / np.sqrt({a[0]}))"),
    "reciprocal": (lambda a, p, f, lit: f"({lit(1.0)} / {a[0]})", lambda a, p: f"np.reciprocal({a[0]})"),
    "sin": _libm('sin'),
    "cos": _libm('cos'),
    "tanh": _libm('tanh'),
    "sigmoid": (lambda a, p, f, lit: f"({lit(1.0)} / ({lit(1.0)} + {_c_math('exp', f)}(-{a[0]})))",
                lambda a, p: f"_sm.sigmoid(np, {a[0]})"),
    "silu": (lambda a, p, f, lit: f"({a[0]} / ({lit(1.0)} + {_c_math('exp', f)}(-{a[0]})))",
             lambda a, p: f"({a[0]} * _sm.sigmoid(np, {a[0]}))"),
    "relu": (lambda a, p, f, lit: f"({a[0]} < 0 ? {lit(0.0)} : {a[0]})", lambda a, p: f"np.maximum({a[0]}, 0)"),
    "gelu": (_gelu_c, _gelu_np),
    "erf": (lambda a, p, f, lit: f"{_c_math('erf', f)}({a[0]})", lambda a, p: f"_sm.erf(np, {a[0]})"),
    "abs": _libm('fabs', 'abs'),
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
    "hardsigmoid": (lambda a, p, f, lit: f"({a[0]} <= {lit(-3.0)} ? {lit(0.0)} : "
                                         f"({a[0]} >= {lit(3.0)} ? {lit(1.0)} : ({a[0]} + {lit(3.0)}) / {lit(6.0)}))",
                    lambda a, p: f"(np.minimum(np.maximum({a[0]} + 3, 0), 6) / 6)"),
    "dropout": (lambda a, p, f, lit: f"({a[0]} * {a[1]} * {lit(p['scale'])})",
                lambda a, p: f"({a[0]} * {a[1]} * {p['scale']!r})"),
    "lerp": (lambda a, p, f, lit: f"({a[0]} + {a[2]} * ({a[1]} - {a[0]}))",
             lambda a, p: f"({a[0]} + {a[2]} * ({a[1]} - {a[0]}))"),
    # the optimizers' moment updates; same order of operations as the eager impls
    "addcmul": (lambda a, p, f, lit: f"({a[0]} + {lit(p.get('value', 1))} * {a[1]} * {a[2]})",
                lambda a, p: f"({a[0]} + {p.get('value', 1)!r} * {a[1]} * {a[2]})"),
    "addcdiv": (lambda a, p, f, lit: f"({a[0]} + {lit(p.get('value', 1))} * {a[1]} / {a[2]})",
                lambda a, p: f"({a[0]} + {p.get('value', 1)!r} * {a[1]} / {a[2]})"),
}

# ---------------------------------------------------------------- derivatives
#
# DERIVATIVES[name](d, g, args, out, params) -> one gradient contribution per operand (None: no gradient).
# They are written with the emitter `d` (d.op(name, *operands, **params), d.lit(x)), whose ops are the
# POINTWISE/HELPERS formulas above: so one derivative prints through every printer.  `g` is the output's
# gradient, `args` the operands (temporaries, ("literal", x) or None), `out` the op's result temporary.
# They mirror ember's eager backward formulas (ember/_ops/elementwise.py, nn_ops.py) operation for operation.

HELPERS = {
    "gt": (lambda a, p, f, lit: f"(T)({a[0]} > {a[1]})", lambda a, p: f"({a[0]} > {a[1]})"),
    "lt": (lambda a, p, f, lit: f"(T)({a[0]} < {a[1]})", lambda a, p: f"({a[0]} < {a[1]})"),
    "ge": (lambda a, p, f, lit: f"(T)({a[0]} >= {a[1]})", lambda a, p: f"({a[0]} >= {a[1]})"),
    "eq": (lambda a, p, f, lit: f"(T)({a[0]} == {a[1]})", lambda a, p: f"({a[0]} == {a[1]})"),
    "logical_and": (lambda a, p, f, lit: f"(T)({a[0]} != 0 && {a[1]} != 0)",
                    lambda a, p: f"np.logical_and({a[0]}, {a[1]})"),
    "div_K": (lambda a, p, f, lit: f"({a[0]} / (T)K)", lambda a, p: f"({a[0]} / K)"),
    "zero": (lambda a, p, f, lit: "((T)0)", lambda a, p: "0.0"),
}


def _hardsigmoid_slope():
    from .._ops.nn_ops import HARDSIGMOID_SLOPE

    return HARDSIGMOID_SLOPE


def _where(d, cond, a, b):
    return d.op("where", cond, a, b)


def _d_add(d, g, a, out, p):
    alpha = p.get("alpha", 1)
    return [g, g if alpha == 1 else d.op("mul", g, d.lit(alpha))]


def _d_sub(d, g, a, out, p):
    alpha = p.get("alpha", 1)
    return [g, d.op("neg", g) if alpha == 1 else d.op("mul", g, d.lit(-alpha))]


def _d_gelu(d, g, a, out, p):
    x = a[0]
    if p.get("approximate", "none") == "tanh":
        inner = d.op("mul", d.lit(SQRT_2_OVER_PI),
                     d.op("add", x, d.op("mul", d.lit(0.044715), d.op("mul", x, d.op("mul", x, x)))))
        t = d.op("tanh", inner)
        d_inner = d.op("mul", d.lit(SQRT_2_OVER_PI), d.op("add", d.lit(1.0), d.op("mul", d.lit(3 * 0.044715),
                                                                                    d.op("mul", x, x))))
        left = d.op("mul", d.lit(0.5), d.op("add", d.lit(1.0), t))
        right = d.op("mul", d.op("mul", d.op("mul", d.lit(0.5), x), d.op("sub", d.lit(1.0), d.op("mul", t, t))),
                     d_inner)
        return [d.op("mul", g, d.op("add", left, right))]
    cdf = d.op("mul", d.lit(0.5), d.op("add", d.lit(1.0), d.op("erf", d.op("mul", x, d.lit(SQRT1_2)))))
    pdf = d.op("mul", d.op("exp", d.op("mul", d.lit(-0.5), d.op("mul", x, x))), d.lit(1.0 / math.sqrt(2 * math.pi)))
    return [d.op("mul", g, d.op("add", cdf, d.op("mul", x, pdf)))]


def _d_silu(d, g, a, out, p):
    s = d.op("sigmoid", a[0])
    return [d.op("mul", d.op("mul", g, s), d.op("add", d.lit(1.0), d.op("mul", a[0], d.op("sub", d.lit(1.0), s))))]


def _d_pow(d, g, a, out, p):
    base, exponent = a
    if isinstance(exponent, tuple):  # a Python scalar exponent
        value = exponent[1]
        grad_base = None if value == 0 else d.op("mul", g, d.op("mul", exponent,
                                                                 d.op("pow", base, d.lit(value - 1))))
        return [grad_base, None]
    grad_base = _where(d, d.op("eq", exponent, d.lit(0.0)), d.lit(0.0),
                       d.op("mul", g, d.op("mul", exponent, d.op("pow", base, d.op("sub", exponent, d.lit(1.0))))))
    if isinstance(base, tuple):
        grad_exponent = None if base[1] == 0 else d.op("mul", g, d.op("mul", out, d.op("log", base)))
    else:
        mask = d.op("logical_and", d.op("eq", base, d.lit(0.0)), d.op("ge", exponent, d.lit(0.0)))
        grad_exponent = _where(d, mask, d.lit(0.0), d.op("mul", g, d.op("mul", out, d.op("log", base))))
    return [grad_base, grad_exponent]


def _d_max(d, g, a, out, p, chooses_self):
    tie = d.op("eq", a[0], a[1])
    mask = d.op(chooses_self, a[0], a[1])
    half = d.op("div", g, d.lit(2.0))
    return [_where(d, tie, half, _where(d, mask, g, d.lit(0.0))),
            _where(d, tie, half, _where(d, mask, d.lit(0.0), g))]


def _d_abs(d, g, a, out, p):
    x = a[0]
    zero_or_nan = _where(d, d.op("eq", x, x), x, d.lit(0.0))  # ±0 keeps its sign, nan gives 0 (torch's sign)
    sign = _where(d, d.op("gt", x, d.lit(0.0)), d.lit(1.0), _where(d, d.op("lt", x, d.lit(0.0)), d.lit(-1.0),
                                                                   zero_or_nan))
    return [d.op("mul", g, sign)]  # as special_math.sgn


def _d_lerp(d, g, a, out, p):
    start, end, weight = a
    return [d.op("mul", g, d.op("sub", d.lit(1.0), weight)), d.op("mul", g, weight),
            d.op("mul", g, d.op("sub", end, start))]


def _d_addcmul(d, g, a, out, p):
    value = d.lit(p.get("value", 1))
    return [g, d.op("mul", g, d.op("mul", a[2], value)), d.op("mul", g, d.op("mul", a[1], value))]


def _d_addcdiv(d, g, a, out, p):
    value = d.lit(p.get("value", 1))
    return [g, d.op("mul", g, d.op("div", value, a[2])),
            d.op("mul", d.op("neg", g), d.op("div", d.op("mul", value, a[1]), d.op("mul", a[2], a[2])))]


DERIVATIVES = {
    "add": _d_add,
    "sub": _d_sub,
    "mul": lambda d, g, a, out, p: [d.op("mul", g, a[1]), d.op("mul", g, a[0])],
    "div": lambda d, g, a, out, p: [d.op("div", g, a[1]),
                                    d.op("div", d.op("mul", d.op("neg", g), out), a[1])],
    "neg": lambda d, g, a, out, p: [d.op("neg", g)],
    "exp": lambda d, g, a, out, p: [d.op("mul", g, out)],
    "log": lambda d, g, a, out, p: [d.op("div", g, a[0])],
    "log1p": lambda d, g, a, out, p: [d.op("div", g, d.op("add", a[0], d.lit(1.0)))],
    "expm1": lambda d, g, a, out, p: [d.op("mul", g, d.op("add", out, d.lit(1.0)))],
    "sqrt": lambda d, g, a, out, p: [d.op("div", g, d.op("mul", d.lit(2.0), out))],
    "rsqrt": lambda d, g, a, out, p: [d.op("mul", d.op("mul", d.lit(-0.5), g),
                                             d.op("mul", out, d.op("mul", out, out)))],
    "reciprocal": lambda d, g, a, out, p: [d.op("mul", d.op("neg", g), d.op("mul", out, out))],
    "sin": lambda d, g, a, out, p: [d.op("mul", g, d.op("cos", a[0]))],
    "cos": lambda d, g, a, out, p: [d.op("mul", d.op("neg", g), d.op("sin", a[0]))],
    "tanh": lambda d, g, a, out, p: [d.op("mul", g, d.op("sub", d.lit(1.0), d.op("mul", out, out)))],
    "sigmoid": lambda d, g, a, out, p: [d.op("mul", g, d.op("mul", out, d.op("sub", d.lit(1.0), out)))],
    "silu": _d_silu,
    "relu": lambda d, g, a, out, p: [d.op("mul", g, d.op("gt", out, d.lit(0.0)))],
    "gelu": _d_gelu,
    "erf": lambda d, g, a, out, p: [d.op("mul", d.op("mul", g, d.lit(2.0 / math.sqrt(math.pi))),
                                           d.op("exp", d.op("neg", d.op("mul", a[0], a[0]))))],
    "abs": _d_abs,
    "square": lambda d, g, a, out, p: [d.op("mul", d.op("mul", d.lit(2.0), g), a[0])],
    "pow": _d_pow,
    "maximum": lambda d, g, a, out, p: _d_max(d, g, a, out, p, "gt"),
    "minimum": lambda d, g, a, out, p: _d_max(d, g, a, out, p, "lt"),
    "where": lambda d, g, a, out, p: [None, _where(d, a[0], g, d.lit(0.0)), _where(d, a[0], d.lit(0.0), g)],
    "leaky_relu": lambda d, g, a, out, p: [_where(d, d.op("gt", a[0], d.lit(0.0)), g,
                                                  d.op("mul", g, d.lit(p["negative_slope"])))],
    "hardtanh": lambda d, g, a, out, p: [d.op("mul", g, d.op("logical_and", d.op("gt", a[0], d.lit(p["min_val"])),
                                                             d.op("lt", a[0], d.lit(p["max_val"]))))],
    "hardsigmoid": lambda d, g, a, out, p: [d.op("mul", d.op("mul", g, d.op("logical_and", d.op(
        "gt", a[0], d.lit(-3.0)), d.op("lt", a[0], d.lit(3.0)))), d.lit(_hardsigmoid_slope()))],
    "dropout": lambda d, g, a, out, p: [d.op("mul", d.op("mul", g, a[1]), d.lit(p["scale"])), None],
    "lerp": _d_lerp,
    "addcmul": _d_addcmul,
    "addcdiv": _d_addcdiv,
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
