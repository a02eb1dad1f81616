"""torch.fx.immutable_collections: the list and dict types a Node's args and kwargs are stored as."""

from __future__ import annotations

__all__ = ["immutable_list", "immutable_dict"]


def _no_mutation(self, *args, **kwargs):
    raise TypeError(f"'{type(self).__name__}' object does not support mutation. Use the Node's update_arg, "
                    "args setter or replace_input_with to change its inputs.")


class immutable_list(list):  # noqa: N801 - torch's name
    """A list that refuses in-place changes (a Node's args are edited through the Node)."""

    __delitem__ = __iadd__ = __imul__ = __setitem__ = _no_mutation
    append = clear = extend = insert = pop = remove = reverse = sort = _no_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (tuple(iter(self)),))


class immutable_dict(dict):  # noqa: N801 - torch's name
    """A dict that refuses in-place changes."""

    __delitem__ = __setitem__ = __ior__ = _no_mutation
    clear = pop = popitem = setdefault = update = _no_mutation

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (list(self.items()),))
