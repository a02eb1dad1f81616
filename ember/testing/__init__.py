"""ember.testing: assert_close and the op database used by ember's own tests."""

from __future__ import annotations

from ._comparison import assert_allclose, assert_close

__all__ = ["assert_close", "assert_allclose"]
