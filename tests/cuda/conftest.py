"""tests/cuda: GPU tests are marked `gpu` and skipped unless a real CUDA GPU (CuPy + driver) is present.

Emulated cuda (EMBER_EMULATE_CUDA=1) does not count as a GPU here: it runs the CPU-runnable tests, which
switch the emulation on themselves where they need it.
"""

from __future__ import annotations

import pytest

import ember


def real_gpu() -> bool:
    return ember.cuda.is_available() and not ember.cuda.is_emulated()


def pytest_collection_modifyitems(config, items):
    if real_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (ember.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
