"""torch.torch_version: `TorchVersion`, the str subclass `ember.__version__` is.

Programs gate features on the version (`torch.__version__ >= "2.0"`,
`torch.__version__ >= (2, 1)`); comparing plain strings gets "10.0" < "9.0"
wrong, so torch compares as PEP 440 versions and falls back to string order
only for strings that are not versions.  `Version` here is the small part of
PEP 440 that needs (epoch, release, pre/post/dev releases, local labels),
written out so ember does not depend on the `packaging` distribution.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion", "Version", "InvalidVersion"]


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version (packaging.version.InvalidVersion)."""


_PATTERN = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE_NAMES = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}


class Version:
    """A parsed PEP 440 version, ordered as packaging.version.Version orders them."""

    __slots__ = ("_text", "_key", "release", "local")

    def __init__(self, text: str) -> None:
        match = _PATTERN.match(text)
        if match is None:
            raise InvalidVersion(f"Invalid version: '{text}'")
        self._text = text
        epoch = int(match["epoch"] or 0)
        self.release = tuple(int(part) for part in match["release"].split("."))
        pre = (_PRE_NAMES[match["pre_l"].lower()], int(match["pre_n"] or 0)) if match["pre_l"] else None
        post_number = match["post_n1"] or match["post_n2"]
        post = int(post_number or 0) if (match["post_l"] or match["post_n1"]) else None
        dev = int(match["dev_n"] or 0) if match["dev_l"] else None
        self.local = match["local"]
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:  # 2.0.0 == 2.0 == 2
            release.pop()
        # packaging's _cmpkey, as rank-first tuples: a dev-only release sorts before its pre-releases, a final
        # release after them; no post-release before any; no dev-release after any; a local label after none
        if pre is None and post is None and dev is not None:
            pre_key: tuple = (-1,)
        else:
            pre_key = (1,) if pre is None else (0, *pre)
        post_key = (-1,) if post is None else (0, post)
        dev_key = (1,) if dev is None else (0, dev)
        if self.local is None:
            local_key: tuple = (-1,)
        else:  # numeric segments sort above alphanumeric ones
            local_key = (0, tuple((1, int(s), "") if s.isdigit() else (0, 0, s.lower())
                                  for s in re.split(r"[-_.]", self.local)))
        self._key = (epoch, tuple(release), pre_key, post_key, dev_key, local_key)

    def __repr__(self) -> str:
        return f"<Version('{self._text}')>"

    def __str__(self) -> str:
        return self._text

    def __hash__(self) -> int:
        return hash(self._key)

    def _other(self, other):
        return other._key if isinstance(other, Version) else NotImplemented

    def __eq__(self, other) -> bool:
        key = self._other(other)
        return key if key is NotImplemented else self._key == key

    def __lt__(self, other) -> bool:
        key = self._other(other)
        return key if key is NotImplemented else self._key < key

    def __le__(self, other) -> bool:
        key = self._other(other)
        return key if key is NotImplemented else self._key <= key

    def __gt__(self, other) -> bool:
        key = self._other(other)
        return key if key is NotImplemented else self._key > key

    def __ge__(self, other) -> bool:
        key = self._other(other)
        return key if key is NotImplemented else self._key >= key


class TorchVersion(str):
    """A str that compares as a version: with strings ("2.1"), tuples ((2, 1) is 2.1) and Version objects.

    A string that is not a version (or a TorchVersion that is not one) compares as a plain string, as torch's.
    """

    __slots__ = ()

    def _convert_to_version(self, other: Any) -> Version:
        if isinstance(other, Version):
            return other
        if isinstance(other, str):
            return Version(other)
        if type(other).__name__ == "Version" and hasattr(other, "release"):  # a packaging.version.Version
            return Version(str(other))
        if isinstance(other, Iterable):  # (2, 1) -> "2.1"
            return Version(".".join(str(item) for item in other))
        raise InvalidVersion(other)

    def _cmp_wrapper(self, other: Any, method: str) -> bool:
        try:
            return getattr(Version(self), method)(self._convert_to_version(other))
        except InvalidVersion:
            return getattr(str, method)(self, other)  # not versions: plain string order, as torch falls back


for _method in ("__gt__", "__lt__", "__eq__", "__ge__", "__le__"):
    setattr(TorchVersion, _method, lambda self, other, method=_method: self._cmp_wrapper(other, method))
del _method
TorchVersion.__hash__ = str.__hash__  # defining __eq__ would otherwise drop it
