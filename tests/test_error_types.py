"""Exception types torch raises on bad input, where ember raised another (found by a probe round)."""

import pytest
import torch

import ember

CASES = {
    "argmax_empty": lambda lib: lib.tensor([]).argmax(),
    "argmin_empty": lambda lib: lib.tensor([]).argmin(),
    "max_empty": lambda lib: lib.tensor([]).max(),
    "kthvalue_empty": lambda lib: lib.tensor([]).kthvalue(1),
    "mT_1d": lambda lib: lib.ones(3).mT,
    "softmax_int": lambda lib: lib.ones(3, dtype=lib.int64).softmax(0),
    "log_softmax_int": lambda lib: lib.ones(3, dtype=lib.int64).log_softmax(0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_exception_type(case):
    with pytest.raises(Exception) as expected:
        CASES[case](torch)
    with pytest.raises(Exception) as actual:
        CASES[case](ember)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value).split(".")[0] == str(expected.value).split(".")[0]
