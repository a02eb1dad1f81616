"""torch._foreach_*: an op applied across a list of tensors (what fused optimizers and EMA updates call).

Each is the per-tensor op in a loop: ember has no multi-tensor kernels, so these are for API parity, not
speed.  The second operand may be a number, a list of numbers, a list of tensors or (mul, div) one tensor;
out-of-place forms return a tuple, in-place forms (`_foreach_mul_`) return the list they were given."""

from __future__ import annotations

import numbers

from .._tensor import Tensor
from ._api import FUNCTIONS

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "clamp_max", "clamp_min", "maximum", "minimum", "pow")
_TERNARY = ("addcmul", "addcdiv", "lerp")


def _check_lists(first, other) -> None:
    if len(first) != len(other):
        if other and all(isinstance(o, Tensor) for o in other):
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(first)} and {len(other)}")
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")


def _nonempty(tensors) -> None:
    if not len(tensors):
        raise RuntimeError("Tensor list must have at least one tensor.")


def _operands(tensors, other) -> list:
    """`other` per tensor: a list (of tensors or numbers) item by item, anything else repeated."""
    if isinstance(other, (list, tuple)):
        _check_lists(tensors, other)
        return list(other)
    return [other] * len(tensors)


def _method(tensor, name: str, inplace: bool):
    if name in ("maximum", "minimum"):  # a number: clamp_min/clamp_max (maximum takes tensors only)
        import ember

        clamp = "clamp_min" if name == "maximum" else "clamp_max"

        def apply(other):
            if isinstance(other, Tensor):
                result = getattr(ember, name)(tensor, other)
                if not inplace:
                    return result
                from .. import _dtype as dt
                from .._tensor import SCALAR_NAMES

                if not dt.can_cast(result._dtype, tensor._dtype):
                    raise RuntimeError(f"result type {SCALAR_NAMES[result._dtype.name]} can't be cast to the desired "
                                       f"output type {SCALAR_NAMES[tensor._dtype.name]}")
                return tensor.copy_(result)
            return getattr(tensor, clamp + "_" if inplace else clamp)(other)

        return apply
    return getattr(tensor, name + "_" if inplace else name)


def _make_unary(name: str, inplace: bool):
    def fn(tensors):
        _nonempty(tensors)
        results = [_method(t, name, inplace)() for t in tensors]
        return tensors if inplace else tuple(results)

    return fn


def _make_binary(name: str, inplace: bool):
    def fn(tensors, other, *, alpha=None):
        if name == "pow" and isinstance(tensors, numbers.Number):  # _foreach_pow(2.0, exponents)
            import ember

            return tuple(ember.pow(tensors, t) for t in other)
        _nonempty(tensors)
        if alpha is not None and not isinstance(other, (list, tuple)):  # (alpha goes with a tensor list only)
            raise TypeError(f"_foreach_{name}() got an unexpected keyword argument 'alpha' with a "
                            f"{type(other).__name__} operand")
        extra = {} if alpha is None else {"alpha": alpha}
        results = [_method(t, name, inplace)(o, **extra) for t, o in zip(tensors, _operands(tensors, other))]
        return tensors if inplace else tuple(results)

    return fn


def _make_ternary(name: str, inplace: bool):
    def fn(tensors, first, second=None, scalars=None, *, value=None, weight=None):
        _nonempty(tensors)
        if isinstance(scalars, Tensor):  # a 1-D tensor of the scalars, one per tensor
            scalars = scalars.tolist()
        if name == "lerp":
            operands = _operands(tensors, first)
            weights = _operands(tensors, second if weight is None else weight)
            results = [_method(t, name, inplace)(e, w) for t, e, w in zip(tensors, operands, weights)]
        else:
            _check_lists(tensors, first)
            _check_lists(tensors, second)
            scales = _operands(tensors, scalars if scalars is not None else 1 if value is None else value)
            results = [_method(t, name, inplace)(a, b, value=s) for t, a, b, s in zip(tensors, first, second, scales)]
        return tensors if inplace else tuple(results)

    return fn


def _foreach_norm(tensors, ord=2, dtype=None) -> tuple:
    import ember

    return tuple(ember.linalg.vector_norm(t, ord, dtype=dtype) for t in tensors)


def _foreach_max(tensors) -> tuple:
    return tuple(t.max() for t in tensors)


def _foreach_clone(tensors) -> tuple:
    return tuple(t.clone() for t in tensors)


def _foreach_zero_(tensors):
    for t in tensors:
        t.zero_()
    return tensors


def _foreach_copy_(tensors, sources, non_blocking: bool = False):
    _check_lists(tensors, sources)
    for t, s in zip(tensors, sources):
        t.copy_(s)
    return tensors


def _register() -> None:
    for names, make in ((_UNARY, _make_unary), (_BINARY, _make_binary), (_TERNARY, _make_ternary)):
        for name in names:
            for inplace in (False, True):
                fn = make(name, inplace)
                fn.__name__ = fn.__qualname__ = f"_foreach_{name}{'_' if inplace else ''}"
                fn.__doc__ = f"torch.{fn.__name__}: `{name}` over a list of tensors."
                FUNCTIONS[fn.__name__] = fn
    for fn in (_foreach_norm, _foreach_max, _foreach_clone, _foreach_zero_, _foreach_copy_):
        FUNCTIONS[fn.__name__] = fn


_register()
