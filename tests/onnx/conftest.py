"""ONNX export tests: every test starts from the same random seed."""

import pytest

import ember


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
    yield
