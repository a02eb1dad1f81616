"""torch.special: special functions (the gamma, Bessel, Airy, error-function and normal-distribution families,
the orthogonal polynomials) and torch's aliases of existing ops under their SciPy names (expit = sigmoid,
gammaln = lgamma, psi = digamma...).

The kernels and ops are in ember/_ops/special_functions.py and ember/_ops/special_polynomials.py; this module
only re-exports them with torch.special's signatures.
"""

from __future__ import annotations

from .._ops._api import FUNCTIONS as _FUNCTIONS
from .._ops.elementwise import _require_tensors
from .._ops.special_functions import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    entr,
    erfcx,
    i0,
    i0e,
    i1,
    i1e,
    igamma,
    igammac,
    lgamma,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    mvlgamma,
    ndtr,
    ndtri,
    polygamma,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
    xlog1py,
    zeta,
)
from .._ops.special_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc",
    "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p",
    "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
    "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

psi = digamma
gammaln = lgamma


def _same_as(name: str, torch_name: str):
    """torch.special.<torch_name>: the ember op `name`, under torch.special's name."""
    function = _FUNCTIONS[name]

    def alias(*args, **kwargs):
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = torch_name
    alias.__doc__ = f"torch.special.{torch_name}: the same as ember.{name}."
    return alias


erf = _same_as("erf", "erf")
erfc = _same_as("erfc", "erfc")
erfinv = _same_as("erfinv", "erfinv")
exp2 = _same_as("exp2", "exp2")
expm1 = _same_as("expm1", "expm1")
expit = _same_as("sigmoid", "expit")
log1p = _same_as("log1p", "log1p")
logit = _same_as("logit", "logit")
logsumexp = _same_as("logsumexp", "logsumexp")
_round = _same_as("round", "round")


def round(input, *, decimals: int = 0, out=None):  # noqa: A001 - torch.special.round
    """torch.round, without its pass-through of integral tensors: torch.special.round always runs the float
    kernel, which has no bool or integer version."""
    if input._dtype.category < 2:
        from .._ops._api import not_implemented

        raise not_implemented("round_cpu" if decimals else "round_vml_cpu", input._dtype)
    return _round(input, decimals=decimals, out=out)
sinc = _same_as("sinc", "sinc")
xlogy = _same_as("xlogy", "xlogy")


def multigammaln(input, p: int, *, out=None):
    """The multivariate log-gamma function of dimension p (ember.mvlgamma)."""
    return mvlgamma(input, p, out=out)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function (ember.igamma)."""
    _require_tensors("special_gammainc", input, other)
    return igamma(input, other, out=out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function (ember.igammac)."""
    _require_tensors("special_gammaincc", input, other)
    return igammac(input, other, out=out)


def softmax(input, dim: int, *, dtype=None):
    """softmax along dim, computed in dtype if given (torch.special.softmax)."""
    return _FUNCTIONS["softmax"](input, dim, dtype=dtype)


def log_softmax(input, dim: int, *, dtype=None):
    """log_softmax along dim, computed in dtype if given (torch.special.log_softmax)."""
    return _FUNCTIONS["log_softmax"](input, dim, dtype=dtype)


