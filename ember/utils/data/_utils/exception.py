"""ExceptionWrapper: carry an exception raised in a worker process to the main process (torch._utils's)."""

from __future__ import annotations

import sys
import traceback


class KeyErrorMessage(str):
    """A KeyError's str() repr()s its argument; this keeps a multi-line message readable."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """The type and formatted traceback of the exception being handled, picklable across processes."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise an exception of the original type whose message holds the worker's traceback."""
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = KeyErrorMessage(message)
        elif getattr(self.exc_type, "message", None):
            # Some exceptions take `message` as a keyword-only argument.
            raise self.exc_type(message=message)
        try:
            exception = self.exc_type(message)
        except Exception:
            # The type's constructor needs other arguments: fall back to a RuntimeError with the same text.
            raise RuntimeError(message) from None
        try:
            raise exception
        finally:
            del exception  # no exception -> traceback -> this frame -> exception cycle: the iterator frees promptly
