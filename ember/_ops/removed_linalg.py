"""The pre-1.9 linear-algebra names torch 2.13 still defines only to say they are gone: torch.solve, eig, symeig,
lstsq, matrix_rank (and Tensor.solve / eig / symeig / lstsq).  Each raises torch's RuntimeError, whose message
says what in torch.linalg replaces it, so a ported program fails where it would under torch.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._api import export

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "

_SOLVE = (
    _REMOVED + "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
    "`torch.linalg.solve` has its arguments reversed and does not return the LU factorization.\n\n"
    "To get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
    "X = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)"
)
_EIG = (
    _REMOVED + "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
    "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)"
    "\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
    "L_complex, V_complex = torch.linalg.eig(A)"
)
_SYMEIG = (
    _REMOVED + "The default behavior has changed from using the upper triangular portion of the matrix by default "
    "to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
    "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
    "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
    "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"
)
_LSTSQ = (
    _REMOVED + "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
    "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in the returned tuple "
    "(although it returns other information about the problem).\n\n"
    "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
    "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns of the "
    "returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the "
    "returned named tuple.\n\n"
    "The unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\n"
    "X = torch.linalg.lstsq(A, B).solution"
)
_MATRIX_RANK = (
    "This function was deprecated since version 1.9 and is now removed.\n"
    "Please use the `torch.linalg.matrix_rank` function instead. "
    "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."
)


@export(method=False)
def solve(input: Tensor, A: Tensor, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.solve."""
    raise RuntimeError(_SOLVE)


@export(method=False)
def eig(self: Tensor, eigenvectors: bool = False, *, e=None, v=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.eig / eigvals."""
    raise RuntimeError(_EIG)


@export(method=False)
def symeig(input: Tensor, eigenvectors: bool = False, upper: bool = True, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.eigh / eigvalsh."""
    raise RuntimeError(_SYMEIG)


@export(method=False)
def lstsq(input: Tensor, A: Tensor, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.lstsq."""
    raise RuntimeError(_LSTSQ)


@export(method=False)
def matrix_rank(input: Tensor, tol=None, symmetric: bool = False, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.matrix_rank."""
    raise RuntimeError(_MATRIX_RANK)


# Tensor methods with torch's (narrower) signatures, raising the same errors


def _solve_method(self: Tensor, other: Tensor):
    """Removed in torch 1.9 (Tensor.solve): raises torch's RuntimeError."""
    raise RuntimeError(_SOLVE)


def _lstsq_method(self: Tensor, other: Tensor):
    """Removed in torch 1.9 (Tensor.lstsq): raises torch's RuntimeError."""
    raise RuntimeError(_LSTSQ)


def _eig_method(self: Tensor, eigenvectors: bool = False):
    """Removed in torch 1.9 (Tensor.eig): raises torch's RuntimeError."""
    raise RuntimeError(_EIG)


def _symeig_method(self: Tensor, eigenvectors: bool = False):
    """Removed in torch 1.9 (Tensor.symeig): raises torch's RuntimeError."""
    raise RuntimeError(_SYMEIG)


for _name, _method in (("solve", _solve_method), ("lstsq", _lstsq_method), ("eig", _eig_method),
                       ("symeig", _symeig_method)):
    _method.__name__ = _name
    _method.__qualname__ = f"Tensor.{_name}"
    export(_method, name=_name, function=False)
