"""torch.vmap / torch.func.vmap for ember: a loop over the mapped dimension, not a batched kernel.

ember has no batching rule per op, so vmap slices every mapped input along its in_dim, calls the function
once per sample, and stacks each output along its out_dim.  For a pure function this is exactly torch's
vmap (same values, shapes, error messages for bad in_dims/out_dims), at the speed of a Python loop.
While it runs, vmap marks which tensors are batched (ember/func/_batching.py), so that it raises torch's
errors: `.item()`/`bool()` of a batched value, a batched value written in place into an unbatched tensor,
dynamic-shape ops, randomness="same" with batched inputs, out_dims=None for a batched output.  An output that
is a mapped input comes back as that input (or a view of it), one unbatched tensor returned by every sample
comes back expanded, as torch's.  Differences that follow from the loop:

* an in-place op on an unbatched tensor with unbatched values runs once per sample (torch: once);
* randomness="different" draws per sample from the stream (numbers differ from torch's batched draw);
* chunk_size splits the loop into chunks whose outputs are stacked, then concatenated.

Inputs are sliced with `select`, so the per-sample function sees views (in-place writes reach the input,
as they do in torch's vmap) and autograd flows through vmap in both directions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ember

from . import _batching, _randomness
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _get_name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def vmap(func: Callable, in_dims: int | tuple | None = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """torch.vmap: `func` mapped over dimension `in_dims` of its inputs, outputs stacked along `out_dims`.

    in_dims is an int or a tuple with one entry per positional argument, each an int, None (not mapped) or a
    pytree prefix of the argument; keyword arguments are never mapped.  out_dims likewise for the outputs.
    See the module docstring: this runs `func` once per sample.
    """
    _randomness.check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return wrapped


def _check_out_dims(out_dims, func) -> None:
    leaves = [out_dims] if isinstance(out_dims, int) else tree_flatten(out_dims)[0]
    for leaf in leaves:
        if leaf is not None and not isinstance(leaf, int):
            raise ValueError(
                f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                "collection of ints representing where in the outputs the vmapped dimension should appear."
            )


def _process_inputs(in_dims, args: tuple, func) -> tuple[int, list, list, Any]:
    """Checks as torch's _process_batched_inputs; returns (batch size, flat in_dims, flat args, args spec)."""
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially "
            f"nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap "
            "over a function with no inputs. The latter is unsupported."
        )
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
            f"`inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has structure {args_spec}."
        )
    for arg, in_dim in zip(flat_args, flat_in_dims):
        prefix = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim}"
        if isinstance(in_dim, bool):  # (torch passes it on to Tensor.size, which refuses a bool)
            raise TypeError(f"size(): argument 'dim' (position 1) must be int, not {type(in_dim).__name__}")
        if in_dim is not None and not isinstance(in_dim, int):
            raise ValueError(
                prefix + " for an input but in_dim must be either an integer dimension or None."
            )
        if isinstance(in_dim, int) and not isinstance(arg, ember.Tensor):
            raise ValueError(
                prefix + f" for an input but the input is of type {type(arg)}. We cannot vmap over "
                "non-Tensor arguments, please use None as the respective in_dim"
            )
        if in_dim is not None and not -arg.dim() <= in_dim < arg.dim():
            raise ValueError(
                prefix + f" for some input, but that input is a Tensor of dimensionality {arg.dim()} "
                f"so expected in_dim to satisfy -{arg.dim()} <= in_dim < {arg.dim()}."
            )
    sizes = [arg.size(in_dim) for arg, in_dim in zip(flat_args, flat_in_dims) if in_dim is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(size != sizes[0] for size in sizes):
        raise ValueError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} for the "
            "mapped dimension"
        )
    return sizes[0], flat_in_dims, flat_args, args_spec


def _sample(flat_args: list, flat_in_dims: list, index: int | None, level: int) -> list:
    """The arguments of sample `index` (zeros of a sample's shape when None: for an empty batch), the mapped
    ones marked batched at `level` (_batching.py)."""
    sample = []
    for arg, in_dim in zip(flat_args, flat_in_dims):
        if in_dim is None:
            sample.append(arg)
            continue
        if index is None:
            shape = list(arg.shape)
            del shape[in_dim]
            value = ember.zeros(shape, dtype=arg.dtype, device=arg.device)
        else:
            value = arg.select(in_dim, index)
        _batching.mark(value, frozenset((level,)))
        sample.append(value)
    return sample


def _vmap_call(func, in_dims, out_dims, randomness: str, chunk_size, args: tuple, kwargs: dict):
    _check_out_dims(out_dims, func)
    batch_size, flat_in_dims, flat_args, args_spec = _process_inputs(in_dims, args, func)
    start_state = _randomness.snapshot()
    level = _batching.new_level()
    samples: list = []  # the mapped inputs of each sample, to recognise an output that is one of them

    def call(index):
        if randomness == "same" or index is None:
            _randomness.restore(start_state)
        before = _randomness.snapshot() if randomness == "error" else None
        sample = _sample(flat_args, flat_in_dims, index, level)
        samples.append(sample)
        output = func(*tree_unflatten(sample, args_spec), **kwargs)
        if before is not None and _randomness.changed_since(before):
            raise RuntimeError(_randomness.RANDOM_ERROR)
        return output

    inputs = _Inputs(flat_args, flat_in_dims, samples, level)
    with _batching.BatchTracker(level, randomness):
        if batch_size == 0:
            # no sample to run: run one of zeros for the output structure, then leave no trace of it
            output = call(None)
            _randomness.restore(start_state)
            outputs = [[output]]
        else:
            step = chunk_size or batch_size
            outputs = [[call(index) for index in range(begin, min(begin + step, batch_size))]
                       for begin in range(0, batch_size, step)]
    if batch_size == 0:
        return _stack_outputs(func, out_dims, outputs[0], inputs, empty=True)
    chunks = [_stack_outputs(func, out_dims, chunk, inputs if len(outputs) == 1 else None) for chunk in outputs]
    if len(chunks) == 1:
        return chunks[0]
    flat_chunks = [tree_flatten(chunk)[0] for chunk in chunks]
    spec = tree_flatten(chunks[0])[1]
    flat_dims = _flat_out_dims(func, out_dims, chunks[0], spec)
    joined = [
        pieces[0] if out_dim is None else ember.cat(list(pieces), dim=out_dim)
        for out_dim, pieces in zip(flat_dims, zip(*flat_chunks))
    ]
    return tree_unflatten(joined, spec)


class _Inputs:
    """The flattened inputs of one vmap call and the per-sample slices made of them."""

    def __init__(self, flat_args: list, flat_in_dims: list, samples: list, level: int) -> None:
        self.flat_args = flat_args
        self.flat_in_dims = flat_in_dims
        self.samples = samples
        self.level = level

    def source_of(self, column) -> int | None:
        """The position of the input whose slices every entry of `column` is (`lambda x: x`), or None."""
        first = column[0]
        for position, value in enumerate(self.samples[0]):
            if value is first and self.flat_in_dims[position] is not None:
                if all(out is sample[position] for out, sample in zip(column, self.samples)):
                    return position
        return None


def _flat_out_dims(func, out_dims, output, spec) -> list:
    """out_dims spread over the output leaves, with torch's special case for a single tensor output."""

    def incompatible():
        raise ValueError(
            f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
            f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs has "
            f"structure {spec}."
        )

    if isinstance(output, ember.Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        incompatible()
    return flat


def _same(a, b) -> bool:
    if a is b:
        return True
    if not (isinstance(a, ember.Tensor) and isinstance(b, ember.Tensor)):
        return a == b
    return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())


def _stack_outputs(func, out_dims, outputs: list, inputs: _Inputs | None, empty: bool = False):
    """The per-sample outputs stacked along their out_dims (outputs with out_dim None must not be batched).

    As torch's, an output that is a mapped input itself comes back as that input (moved to out_dim: a view),
    and an output that is one unbatched tensor for every sample comes back expanded (a view of it)."""
    name = _get_name(func)
    flat_first, spec = tree_flatten(outputs[0])
    flat_dims = _flat_out_dims(func, out_dims, outputs[0], spec)
    columns = list(zip(*(tree_flatten(output)[0] for output in outputs)))
    stacked = []
    for out_dim, column in zip(flat_dims, columns):
        first = column[0]
        if out_dim is None:
            if isinstance(first, ember.Tensor) and (
                    any(_batching.is_batched(other, inputs.level) for other in column if inputs is not None)
                    or not all(_same(first, other) for other in column[1:])):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            stacked.append(first)
            continue
        if not isinstance(first, ember.Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(first)}. Did you mean to "
                "set out_dims= to None for output?"
            )
        stacked.append(_stacked_column(column, out_dim, inputs, len(outputs), empty))
    return tree_unflatten(stacked, spec)


def _stacked_column(column, out_dim: int, inputs: _Inputs | None, batch_size: int, empty: bool):
    first = column[0]
    if inputs is not None and not empty:
        position = inputs.source_of(column)
        if position is not None:
            arg = inputs.flat_args[position]
            in_dim = inputs.flat_in_dims[position] % arg.dim()
            out_dim = out_dim % arg.dim() if -arg.dim() <= out_dim < arg.dim() else out_dim
            return arg if in_dim == out_dim else arg.movedim(in_dim, out_dim)
        if all(other is first for other in column) and not _batching.is_batched(first, inputs.level):
            if -first.dim() - 1 <= out_dim <= first.dim():
                shape = list(first.shape)
                shape.insert(out_dim % (first.dim() + 1), batch_size)
                return first.unsqueeze(out_dim).expand(shape)
    result = ember.stack(list(column), dim=out_dim)
    return result.narrow(out_dim, 0, 0).clone() if empty else result
