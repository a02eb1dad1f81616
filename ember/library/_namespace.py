"""ember.ops (torch.ops): custom ops by namespace, `ember.ops.mylib.myop(...)`."""

from __future__ import annotations

import types

from ._custom_op import OPS

__all__ = ["ops"]


class _OpNamespace(types.ModuleType):
    """ember.ops.<namespace>: its ops as attributes (looked up in the registry on each access, so an op defined
    after the namespace was first touched is found)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"ember.ops.{name}")
        self.name = name

    def __getattr__(self, opname: str):
        if opname.startswith("__"):
            raise AttributeError(opname)
        op = OPS.get(f"{self.name}::{opname}")
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{opname}'")
        return op._opoverloadpacket


class _Ops(types.ModuleType):
    """ember.ops: attribute access gives a namespace."""

    def __init__(self) -> None:
        super().__init__("ember.ops")
        self._namespaces: dict[str, _OpNamespace] = {}

    def __getattr__(self, name: str) -> _OpNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = self._namespaces.get(name)
        if namespace is None:
            namespace = self._namespaces[name] = _OpNamespace(name)
        return namespace


ops = _Ops()
