"""torch.export's `Dim` and the `dynamic_shapes` argument: which input dims may change size after export.

ember's symbolic sizes are one batch size B (ember/_compile/symbolic.py): every dynamic dim of every input
must be that one size, and every size in the graph that depends on it must be `m * B`.  So the spec may
name one Dim (any number of input dims may share it) plus Dim.AUTO / Dim.DYNAMIC hints that join it;
Dim.STATIC, None and plain ints mark static dims.
"""

from __future__ import annotations

import inspect

from .._tensor import Tensor
from ._errors import UserError


class _DimHint:
    """Dim.AUTO / Dim.DYNAMIC / Dim.STATIC; calling one with min/max bounds it (Dim.DYNAMIC(max=64))."""

    def __init__(self, kind: str, min: int | None = None, max: int | None = None) -> None:
        self.kind, self.min, self.max = kind, min, max

    def __call__(self, *, min: int | None = None, max: int | None = None) -> _DimHint:
        return _DimHint(self.kind, min, max)

    def __repr__(self) -> str:
        return f"Dim.{self.kind}"


class Dim:
    """A named dynamic dimension, `Dim("batch", min=2, max=64)` (torch.export.Dim).

    Args:
        name: the symbol's name, used in printed shapes and range constraints.
        min, max: the sizes the exported program accepts (inclusive); None leaves that side open.

    Example::

        >>> batch = ember.export.Dim("batch")
        >>> ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    """

    AUTO = _DimHint("AUTO")
    DYNAMIC = _DimHint("DYNAMIC")
    STATIC = _DimHint("STATIC")

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise UserError(f"Dim name must be a valid identifier, got {name!r}")
        low = 0 if min is None else min
        if max is not None and max < low:
            raise UserError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min = low
        self.max = max

    def __repr__(self) -> str:
        bounds = "" if self.min == 0 else f", min={self.min}"
        bounds += "" if self.max is None else f", max={self.max}"
        return f"Dim({self.__name__!r}{bounds})"


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple:
    """Several Dims with the same bounds (torch.export.dims)."""
    return tuple(Dim(name, min=min, max=max) for name in names)


def dynamic_dims(mod, args: tuple, kwargs: dict, dynamic_shapes) -> list:
    """[(tensor, dim, path, Dim or hint)] for every dim the spec marks dynamic (static ints are checked)."""
    if dynamic_shapes is None:
        return []
    found: list = []
    if isinstance(dynamic_shapes, dict):
        try:
            bound = inspect.signature(mod.forward).bind(*args, **kwargs).arguments
        except TypeError as error:
            raise UserError(f"dynamic_shapes: cannot match the example inputs to forward's signature ({error})") \
                from None
        for name, spec in dynamic_shapes.items():
            if name not in bound:
                raise UserError(f"dynamic_shapes has a key {name!r} that is not an input of forward "
                                f"(inputs: {', '.join(bound)})")
            _walk(bound[name], spec, name, found)
    elif isinstance(dynamic_shapes, (tuple, list)):
        inputs = list(args) + list(kwargs.values())
        if len(dynamic_shapes) != len(inputs):
            raise UserError(f"dynamic_shapes has {len(dynamic_shapes)} entries for {len(inputs)} inputs")
        for index, (value, spec) in enumerate(zip(inputs, dynamic_shapes)):
            _walk(value, spec, f"inputs[{index}]", found)
    else:
        raise UserError(f"dynamic_shapes must be a dict, tuple or list, got {type(dynamic_shapes).__name__}")
    return found


def _walk(value, spec, path: str, found: list) -> None:
    if spec is None:
        return
    if isinstance(value, Tensor):
        _tensor_spec(value, spec, path, found)
    elif isinstance(value, (tuple, list)) and isinstance(spec, (tuple, list)) and len(value) == len(spec):
        for index, (item, item_spec) in enumerate(zip(value, spec)):
            _walk(item, item_spec, f"{path}[{index}]", found)
    elif isinstance(value, dict) and isinstance(spec, dict) and set(spec) <= set(value):
        for key, item_spec in spec.items():
            _walk(value[key], item_spec, f"{path}[{key!r}]", found)
    else:
        raise UserError(f"dynamic_shapes[{path}]: the spec {spec!r} does not match the input's structure "
                        f"({type(value).__name__})")


def _tensor_spec(tensor: Tensor, spec, path: str, found: list) -> None:
    ndim = tensor.dim()
    if isinstance(spec, dict):
        items = list(spec.items())
    elif isinstance(spec, (tuple, list)):
        if len(spec) != ndim:
            raise UserError(f"dynamic_shapes[{path}]: {len(spec)} entries for a tensor of {ndim} dims")
        items = list(enumerate(spec))
    else:
        raise UserError(f"dynamic_shapes[{path}]: expected a dict or tuple of dims for a tensor, got {spec!r}")
    for dim, marker in items:
        if not isinstance(dim, int) or not -ndim <= dim < ndim:
            raise UserError(f"dynamic_shapes[{path}]: dim {dim!r} is out of range for a tensor of {ndim} dims")
        dim %= ndim
        size = tensor.shape[dim]
        if marker is None or (isinstance(marker, _DimHint) and marker.kind == "STATIC"):
            continue
        if isinstance(marker, int) and not isinstance(marker, bool):
            if marker != size:
                raise UserError(f"dynamic_shapes[{path}]: dim {dim} is marked static with size {marker}, but the "
                                f"example input has size {size}")
            continue
        if not isinstance(marker, (Dim, _DimHint)):
            raise UserError(f"dynamic_shapes[{path}]: dim {dim} has {marker!r}, expected a Dim, Dim.AUTO, "
                            "Dim.DYNAMIC, Dim.STATIC, an int or None")
        found.append((tensor, dim, f"{path}.size()[{dim}]", marker))


def batch_symbol(found: list) -> dict | None:
    """The one symbolic size the spec marks: {"name", "min", "max", "size"}; UserError where ember cannot
    express the spec (two named dims, dynamic dims of different sizes, an example size below 2)."""
    if not found:
        return None
    names = sorted({marker.__name__ for _, _, _, marker in found if isinstance(marker, Dim)})
    if len(names) > 1:
        raise UserError(f"ember.export supports one dynamic size (a batch dimension shared by the inputs), but "
                        f"dynamic_shapes names {len(names)}: {', '.join(names)}")
    sizes = {tensor.shape[dim] for tensor, dim, _, _ in found}
    if len(sizes) > 1:
        places = ", ".join(f"{path} = {tensor.shape[dim]}" for tensor, dim, path, _ in found)
        raise UserError(f"ember.export supports one dynamic size; the marked dims differ: {places}")
    size = sizes.pop()
    low = max([marker.min or 0 for _, _, _, marker in found] + [0])
    highs = [marker.max for _, _, _, marker in found if marker.max is not None]
    high = min(highs) if highs else None
    name = names[0] if names else "s0"
    if size < 2:
        raise UserError(f"You marked {name} as dynamic but the example inputs give it the size {size}: export "
                        "specializes sizes 0 and 1, so use an example size of at least 2")
    if size < low or (high is not None and size > high):
        raise UserError(f"Constraints violated ({name})! The example size {size} is outside "
                        f"[{low}, {'int_oo' if high is None else high}]")
    return {"name": name, "min": low, "max": high, "size": size}
