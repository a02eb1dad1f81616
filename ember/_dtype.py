"""dtypes and PyTorch's type-promotion rules.

A `dtype` is a small immutable object that names a NumPy dtype (bfloat16 comes
from ml_dtypes).  Promotion follows `torch.result_type`: operands are ranked as
dimensioned tensors > zero-dim tensors > Python scalars, and a lower-ranked
operand only changes the result when it belongs to a higher *category*
(bool < integral < floating < complex).  See NOTE [ Weak scalars ].
"""

from __future__ import annotations

import builtins
import math

import ml_dtypes
import numpy as np

__all__ = [
    "dtype",
    "finfo",
    "iinfo",
    "promote_types",
    "can_cast",
    "get_default_dtype",
    "set_default_dtype",
]


class dtype:
    """A tensor element type, named as in torch (``ember.float32``)."""

    __slots__ = ("name", "np_dtype", "itemsize", "is_floating_point", "is_complex", "is_signed", "category", "_rank",
                 "restricted")

    def __init__(self, name: str, np_dtype, category: int, rank: int, restricted: bool = False) -> None:
        self.name = name
        self.np_dtype = np.dtype(np_dtype)
        self.itemsize = self.np_dtype.itemsize
        self.category = category  # 0 bool, 1 integral, 2 floating, 3 complex, -1 quantized
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = name not in ("bool", "uint8", "quint8", "uint16", "uint32", "uint64", "float8_e8m0fnu")
        self._rank = rank
        # quantized and shell dtypes: dispatch runs only the ops that declare them (NOTE [ Shell dtypes ])
        self.restricted = category < 0 or restricted

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> dtype:
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> dtype:
        return {float64: complex128, float16: complex64, bfloat16: complex64, float32: complex64}.get(self, self)


bool_ = dtype("bool", np.bool_, 0, 0)
uint8 = dtype("uint8", np.uint8, 1, 1)
int8 = dtype("int8", np.int8, 1, 2)
int16 = dtype("int16", np.int16, 1, 3)
int32 = dtype("int32", np.int32, 1, 4)
int64 = dtype("int64", np.int64, 1, 5)
float16 = dtype("float16", np.float16, 2, 6)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2, 7)
float32 = dtype("float32", np.float32, 2, 8)
float64 = dtype("float64", np.float64, 2, 9)
complex64 = dtype("complex64", np.complex64, 3, 10)
complex128 = dtype("complex128", np.complex128, 3, 11)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)

# NOTE [ Shell dtypes ]
# torch's uint16, uint32 and uint64 and its float8 types are "shell" dtypes: they exist, hold data, move
# (creation, casts, cat/stack, indexing, views, checkpoints, safetensors) and have a few kernels -- the unsigned
# types mul, true division, eq/ne, bitwise and/or/xor, sum/prod/cumsum to int64, all/any, where, sort/unique;
# float8 mul, abs, eq/ne, where and matmul -- every other op raises NotImplementedError.  Promotion is refused
# between an unsigned shell type and any other bool or integer type, and between a float8 type and any other.
# Here they sit outside ALL_DTYPES (the op database and the promotion lattice never see them), with `restricted`
# set: dispatch runs an op on them only when its name is in their SHELL_OPS entry (ember/_dispatch.py).  float8
# values come from ml_dtypes; conversions into them follow torch's CPU kernel (`to_float8`).
uint16 = dtype("uint16", np.uint16, 1, 12, restricted=True)
uint32 = dtype("uint32", np.uint32, 1, 13, restricted=True)
uint64 = dtype("uint64", np.uint64, 1, 14, restricted=True)
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 2, 15, restricted=True)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, 2, 16, restricted=True)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 2, 17, restricted=True)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 2, 18, restricted=True)
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 2, 19, restricted=True)
UNSIGNED_SHELL_DTYPES = (uint16, uint32, uint64)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
SHELL_DTYPES = UNSIGNED_SHELL_DTYPES + FLOAT8_DTYPES
_BY_NUMPY = {d.np_dtype: d for d in ALL_DTYPES + SHELL_DTYPES}

# NOTE [ Quantized dtypes ]
# torch's quantized element types hold an integer representation plus quantization parameters kept on the
# tensor (ember/_ops/quantized.py).  They sit in their own category, -1, outside ALL_DTYPES: they never enter the
# promotion tables or the NumPy-dtype lookup (their arrays are plain int8/uint8/int32).  Dispatch runs an op on
# them only through the op's `quantized` entry (ember/_dispatch.py _call_quantized): movement ops on the integers,
# or a QuantizedCPU kernel (ember/_ops/quantized_ops.py: relu, hardtanh, clamp, max pooling, cat, comparisons);
# every other op is refused with torch's "Could not run 'aten::...' with arguments from the 'QuantizedCPU'
# backend" error, as torch's QuantizedCPU backend has no kernel for it.
qint8 = dtype("qint8", np.int8, -1, -1)
quint8 = dtype("quint8", np.uint8, -1, -1)
qint32 = dtype("qint32", np.int32, -1, -1)
QUANTIZED_DTYPES = (qint8, quint8, qint32)
_BY_NAME = {d.name: d for d in ALL_DTYPES + QUANTIZED_DTYPES + SHELL_DTYPES}

# torch's aliases, exported from ember/__init__.py
ALIASES = {
    "bool": bool_,
    "half": float16,
    "float": float32,
    "double": float64,
    "short": int16,
    "int": int32,
    "long": int64,
    "cfloat": complex64,
    "cdouble": complex128,
    "chalf": complex64,
}


# The C++ type names torch's messages print for each dtype.  typeid names ("long int", from
# c10::demangle) appear in dtype-mismatch messages (lerp, addmm, random_ bounds); the <cstdint> names
# ("int64_t") in c10's checked scalar conversion ("value cannot be converted to type ... without overflow").
CPP_TYPE_NAMES = {
    "bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
    "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
    "float64": "double", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
    "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long",
    "float8_e4m3fn": "c10::Float8_e4m3fn", "float8_e5m2": "c10::Float8_e5m2", "float8_e4m3fnuz": "c10::Float8_e4m3fnuz",
    "float8_e5m2fnuz": "c10::Float8_e5m2fnuz", "float8_e8m0fnu": "c10::Float8_e8m0fnu",
}
CONVERSION_TYPE_NAMES = {
    "bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
    "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
    "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float8_e4m3fn": "c10::Float8_e4m3fn", "float8_e5m2": "c10::Float8_e5m2", "float8_e4m3fnuz": "c10::Float8_e4m3fnuz",
    "float8_e5m2fnuz": "c10::Float8_e5m2fnuz", "float8_e8m0fnu": "c10::Float8_e8m0fnu",
}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype for a NumPy dtype; TypeError for types torch lacks."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, "
            "uint8, and bool."
        ) from None


# Promotion within the lattice of torch's types.  Two types of one category
# promote to the larger; across categories to the higher category, except the
# special pairs below (uint8 with signed ints, float16 with bfloat16).
def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.is_complex and lo.category == 2 and lo is float64:
            return complex128
        return hi
    if a.category == 1:
        if uint8 in (a, b):
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    if a.category == 2:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    return a if a._rank > b._rank else b


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}
# an unsigned shell dtype promotes with itself and into floating and complex types, a float8 type only with itself
_PROMOTE.update({pair: _promote_pair(*pair) for s in UNSIGNED_SHELL_DTYPES for d in ALL_DTYPES + SHELL_DTYPES
                 for pair in ((s, d), (d, s)) if d is s or (d.category >= 2 and d not in FLOAT8_DTYPES)})
_PROMOTE.update({(s, s): s for s in FLOAT8_DTYPES})

# torch's ScalarType names (its messages and the legacy storage classes, `torch.FloatStorage`, use them)
SCALAR_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
    "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
    "qint8": "QInt8", "quint8": "QUInt8", "qint32": "QInt32",
    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
    "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2", "float8_e4m3fnuz": "Float8_e4m3fnuz",
    "float8_e5m2fnuz": "Float8_e5m2fnuz", "float8_e8m0fnu": "Float8_e8m0fnu",
}


def _promotion_error(type1: dtype, type2: dtype) -> RuntimeError:
    if type1.category < 0 or type2.category < 0:  # NOTE [ Quantized dtypes ]
        return RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out what the "
                            f"correct rules should be, offending types: {type1.name} {type2.name}")
    kinds = "Float8 Types" if type1 in FLOAT8_DTYPES or type2 in FLOAT8_DTYPES else "uint16, uint32, uint64 types"
    return RuntimeError(f"Promotion for {kinds} is not supported, attempted to promote "
                        f"{SCALAR_NAMES[type1.name]} and {SCALAR_NAMES[type2.name]}")


def to_float8(xp, array, target: dtype):
    """`array` (real) as the float8 type `target`, as torch's CPU conversion makes it: through float32 (c10's
    float8 types are built from a float), e4m3fn saturating to +-448 (infinities too), e5m2's NaN as 0x7f
    (sign kept), e8m0fnu from the magnitude with 0 -> 2**-127.  ml_dtypes rounds to nearest even otherwise
    alike, but gives e4m3fn NaN on overflow, e5m2 NaN 0x7e and e8m0fnu NaN for negatives and zero."""
    values = array.astype(np.float32)
    if target is float8_e4m3fn:
        values = xp.clip(values, -448.0, 448.0)  # NaN stays NaN
    elif target is float8_e8m0fnu:
        values = xp.abs(values)
        values = xp.where(values == 0, np.float32(2.0**-127), values)
    out = values.astype(target.np_dtype)
    if target is float8_e5m2:
        bits = out.view(np.uint8)
        bits[xp.isnan(values)] |= 1
    return out


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype to which both may be cast (torch.promote_types)."""
    try:
        return _PROMOTE[(type1, type2)]
    except KeyError:
        raise _promotion_error(type1, type2) from None


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: casting may not lower the category (float -> int, complex -> float, non-bool -> bool)."""
    return from_.category <= to.category and not (to is bool_ and from_ is not bool_)


_default_dtype = float32


def get_default_dtype() -> dtype:
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the dtype for float Python scalars and factory functions (float32 or float64 etc.)."""
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d


def default_complex_dtype() -> dtype:
    return complex128 if _default_dtype is float64 else complex64


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when wrapped (bool, int64, default float, default complex)."""
    kind = type(value)
    if kind is builtins.bool or kind is np.bool_:
        return bool_
    if kind is int or isinstance(value, (int, np.integer)):
        return int64
    if kind is float or isinstance(value, (float, np.floating)):
        return _default_dtype
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex_dtype()
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


# NOTE [ Weak scalars ]
# torch.result_type keeps three running results: over dimensioned tensors, over
# zero-dim tensors and over Python scalars ("wrapped numbers").  They combine
# from the lowest priority up: a lower-priority result only wins when its
# category is higher, and then floats keep the higher-priority float width for
# complex (float16 tensor * 1j -> complex32 is torch's; we give complex64).
def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        if higher.is_floating_point:
            return higher.to_complex()
        return lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type_of(dim_types, zero_types, scalar_types) -> dtype:
    """Combine the three priority classes of operands the way torch does."""
    results = []
    for group in (dim_types, zero_types, scalar_types):
        current = None
        for d in group:
            current = d if current is None else promote_types(current, d)
        results.append(current)
    out = _combine(results[0], _combine(results[1], results[2]))
    if out is None:
        raise RuntimeError("result_type needs at least one operand")
    return out


class finfo:
    """Machine limits of a floating dtype (torch.finfo)."""

    def __init__(self, type: dtype | None = None) -> None:
        type = type or _default_dtype
        if not (type.is_floating_point or type.is_complex):
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'"
            )
        info = ml_dtypes.finfo(type.to_real().np_dtype)
        self.dtype = type.to_real().name
        self.bits = info.bits
        # c10's numeric_limits<Float8_e5m2fnuz>::epsilon() is 2**-3 (the next value after 1 is 1.25)
        self.eps = 0.125 if type is float8_e5m2fnuz else float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = float(info.smallest_normal)
        # 10 ** -digits10, as torch's (ml_dtypes' `precision` is one more for the float8 types)
        self.resolution = float(f"1e-{math.floor(info.nmant * math.log10(2))}")

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:.6g}, min={self.min:.6g}, max={self.max:.6g}, eps={self.eps:.6g}, "
            f"smallest_normal={self.smallest_normal:.6g}, tiny={self.tiny:.6g}, dtype={self.dtype})"
        )


class iinfo:
    """Machine limits of an integral dtype (torch.iinfo)."""

    def __init__(self, type: dtype) -> None:
        if type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category > 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type.np_dtype)
        self.bits, self.min, self.max = info.bits, int(info.min), int(info.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:.6g}, max={self.max:.6g}, dtype={self.dtype})"  # torch prints %g
