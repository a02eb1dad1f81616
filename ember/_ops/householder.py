"""LAPACK's Householder QR in torch's API: torch.geqrf (the packed factorization) and torch.ormqr (its Q applied).

NumPy has no geqrf of its own, but numpy.linalg.qr(mode='raw') runs LAPACK's geqrf and returns its result
transposed (NumPy's row-major view of LAPACK's column-major array) together with tau, so geqrf is that
result transposed back: R on and above the diagonal, the reflectors v_i below it (v_i[i] = 1 implied), and
tau.  Like torch, geqrf has no derivative.  ormqr applies Q = H_1 ... H_k (H_i = I - tau_i v_i v_i^H) to
`other` one reflector at a time in ember ops, so its gradients (which torch has) follow by the chain rule.
"""

from __future__ import annotations

from .._dispatch import SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export, finish_out
from .decompositions import _conj, _matmul, _return_type
from .solvers import check_kernel_dtype

Geqrf = _return_type("geqrf", ("a", "tau"))


def _geqrf_impl(xp, a):
    packed, tau = xp.linalg.qr(a, mode="raw")
    return xp.swapaxes(xp.ascontiguousarray(packed), -1, -2), tau  # column-major, as LAPACK (and torch) store it


def _geqrf_meta(args, params):
    *batch, m, n = args[0].shape
    return tuple(batch) + (m, n), tuple(batch) + (min(m, n),)


def _geqrf_backward(ctx, grads):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


_GEQRF = OpDef("geqrf", _geqrf_impl, _geqrf_backward, dtype_rule=lambda args, params: (None, args[0]._dtype),
               meta=_geqrf_meta, outputs=2, upcast_half=False, saves=SAVE_RESULT)


def _require_tensor(function: str, name: str, position: int, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{function}(): argument '{name}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


@export
def geqrf(input: Tensor, *, out=None):
    """(a, tau): LAPACK's geqrf QR of each matrix in input, R and the Householder reflectors packed in `a`."""
    _require_tensor("geqrf", "input", 1, input)
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_kernel_dtype("geqrf_cpu", input._dtype)
    return finish_out(Geqrf(*call(_GEQRF, (input,))), out)


# ---------------------------------------------------------------- ormqr


def _check_ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:
    """The checks of ATen's ormqr_out, in its order."""
    name = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if min(other.shape[side], input.shape[-1]) != tau.shape[-1]:
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    if input.ndim - tau.ndim != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {input.ndim}")
    if input.ndim != other.ndim:
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}")
    if input.ndim > 2:
        if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                               f"{list(tau.shape[:-1])}")
        if tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of other to be equal to input.shape[:-2], but "
                               f"got {list(other.shape[:-2])}")
    for what, value in (("tau", tau), ("other", other)):
        if value._dtype is not input._dtype:
            raise RuntimeError(f"{name}: Expected input and {what} to have the same dtype, but input has dtype"
                               f"{SCALAR_NAMES[input._dtype.name]} and {what} has dtype "
                               f"{SCALAR_NAMES[value._dtype.name]}")
    check_kernel_dtype("ormqr_cpu", input._dtype)


def _apply_reflectors(input: Tensor, tau: Tensor, other: Tensor, left: bool, transpose: bool) -> Tensor:
    """Q other, Q^H other, other Q or other Q^H with Q = H_1 ... H_k, one rank-1 update per reflector."""
    from .creation import eye

    k = tau.shape[-1]
    reflectors = input.tril(-1) + eye(input.shape[-2], input.shape[-1], dtype=input.dtype, device=input.device)
    # Q C = H_1 (... (H_k C)) and C Q^H = (C H_k^H) ... H_1^H run from the last reflector; the others from the first
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    result = other
    for i in order:
        v = reflectors[..., :, i:i + 1]
        scale = tau[..., i:i + 1].unsqueeze(-1)
        if transpose:
            scale = _conj(scale)
        if left:
            result = result - scale * _matmul(v, _matmul(_conj(v).mT, result))
        else:
            result = result - scale * _matmul(_matmul(result, v), _conj(v).mT)
    if not k:  # no reflectors: other itself, still a function of input and tau (zero gradients), as torch's is
        result = other + input[..., :0, :0].sum((-2, -1), keepdim=True) + tau[..., :0].sum(-1, keepdim=True)[..., None]
    return result


@export
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False, *,
          out=None) -> Tensor:
    """Q @ input3 (or Q^H, or from the right) for the Q of geqrf's (input, tau=input2), without forming Q."""
    for position, (name, value) in enumerate((("input", input), ("input2", input2), ("input3", input3)), 1):
        _require_tensor("ormqr", name, position, value)
    for name, value in (("left", left), ("transpose", transpose)):
        if type(value) is not bool:
            raise TypeError(f"ormqr(): argument '{name}' must be bool, not {type(value).__name__}")
    _check_ormqr(input, input2, input3, left)
    return finish_out(_apply_reflectors(input, input2, input3, left, transpose), out)

