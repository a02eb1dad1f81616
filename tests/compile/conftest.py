"""Compile tests share one kernel cache directory per session (kept out of the user's ~/.cache)."""

import os
import tempfile

import pytest

import ember


@pytest.fixture(autouse=True, scope="session")
def _kernel_cache_dir():
    previous = os.environ.get("EMBER_CACHE_DIR")
    with tempfile.TemporaryDirectory() as directory:
        os.environ["EMBER_CACHE_DIR"] = directory
        yield directory
    if previous is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def _fresh_compiler():
    ember.compiler.reset()
    yield
    ember.compiler.reset()
