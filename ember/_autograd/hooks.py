"""RemovableHandle: what register_hook returns (torch.utils.hooks.RemovableHandle)."""

from __future__ import annotations

import itertools


class RemovableHandle:
    """A handle that removes the hook it was returned for from its dict(s)."""

    _next_id = itertools.count()

    def __init__(self, hooks_dict: dict, *, extra_dict: dict | None = None) -> None:
        self.hooks_dict = hooks_dict
        self.extra_dict = extra_dict
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        self.hooks_dict.pop(self.id, None)
        if self.extra_dict is not None:
            self.extra_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
