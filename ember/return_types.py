"""Named result tuples (torch.return_types): max(dim) -> (values, indices) and friends."""

from __future__ import annotations

from collections import namedtuple

__all__ = []


def _make(name: str, fields: tuple):
    base = namedtuple(name, fields)

    def __repr__(self) -> str:
        body = ",\n".join(f"{field}={getattr(self, field)!r}" for field in fields)
        return f"torch.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})
    globals()[name] = cls
    __all__.append(name)
    return cls


for _name, _fields in {
    "max": ("values", "indices"),
    "min": ("values", "indices"),
    "aminmax": ("min", "max"),
    "sort": ("values", "indices"),
    "topk": ("values", "indices"),
    "kthvalue": ("values", "indices"),
    "median": ("values", "indices"),
    "nanmedian": ("values", "indices"),
    "mode": ("values", "indices"),
    "cummax": ("values", "indices"),
    "cummin": ("values", "indices"),
    "std_mean": ("std", "mean"),
    "var_mean": ("var", "mean"),
    "slogdet": ("sign", "logabsdet"),
    "qr": ("Q", "R"),
    "svd": ("U", "S", "Vh"),
    "eigh": ("eigenvalues", "eigenvectors"),
    "lstsq": ("solution", "residuals", "rank", "singular_values"),
    "histogram": ("hist", "bin_edges"),
    "frexp": ("mantissa", "exponent"),
}.items():
    _make(_name, _fields)
