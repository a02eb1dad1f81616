"""argnums handling shared by grad, jacrev, jacfwd and hessian, with torch.func's checks and messages."""

from __future__ import annotations

__all__ = ["check_argnums", "wrap_argnums", "select", "replace"]


def check_argnums(argnums) -> None:
    """The type checks torch makes when a transformed function is called."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _wrap(argnum, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def wrap_argnums(argnums, num_args: int):
    """argnums with negative positions resolved: an int, or a non-empty tuple of distinct ints."""
    check_argnums(argnums)
    if isinstance(argnums, int):
        return _wrap(argnums, num_args)
    wrapped = tuple(_wrap(argnum, num_args) for argnum in argnums)
    if len(wrapped) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {wrapped}")
    return wrapped


def select(args: tuple, argnums):
    """The differentiated arguments: the one argument for an int, a tuple of them for a tuple."""
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[i] for i in argnums)


def replace(args: tuple, argnums, new) -> tuple:
    """args with the differentiated positions replaced by `new` (shaped like select's result)."""
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for position, value in zip(argnums, new):
            args[position] = value
    return tuple(args)
