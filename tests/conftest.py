"""Fixtures shared by test folders."""

import pytest


@pytest.fixture
def emulated_cuda():
    """Switch ember's emulated cuda device (NumPy underneath) on for one test, and back to what it was after:
    the cuda tests and the accelerator tests use it."""
    from ember import _backends

    was = _backends.cuda_is_emulated()
    _backends.emulate_cuda(True)
    try:
        yield
    finally:
        _backends.emulate_cuda(was)
