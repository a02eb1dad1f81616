"""cat/stack results laid out as torch's: contiguous, or channels-last when every input suggests it
(compute_output_memory_format); stack is cat with the new dim split off."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _cases(lib):
    chw = lib.zeros(4, 5, 3).permute(2, 0, 1)  # an HWC image viewed CHW
    nhwc = lib.zeros(2, 3, 4, 5).contiguous(memory_format=lib.channels_last)
    plain = lib.zeros(2, 3, 4, 5)
    transposed = lib.zeros(5, 4).t()
    swapped = lib.zeros(2, 3, 4, 5).permute(0, 1, 3, 2)
    one_channel = lib.zeros(3, 1, 4, 5).contiguous(memory_format=lib.channels_last)
    ndhwc = lib.zeros(2, 3, 4, 5, 6).permute(0, 4, 1, 2, 3)
    pixels = lib.zeros(2, 3, 1, 1).contiguous(memory_format=lib.channels_last)
    return {
        "stack_chw": lambda: lib.stack([chw, chw]), "stack_chw_1": lambda: lib.stack([chw, chw], 1),
        "cat_chw": lambda: lib.cat([chw, chw]), "cat_chw_2": lambda: lib.cat([chw, chw], 2),
        "cat_nhwc": lambda: lib.cat([nhwc, nhwc]), "cat_nhwc_1": lambda: lib.cat([nhwc, nhwc], 1),
        "cat_nhwc_plain": lambda: lib.cat([nhwc, plain]), "stack_nhwc": lambda: lib.stack([nhwc, nhwc]),
        "stack_nhwc_2": lambda: lib.stack([nhwc, nhwc], 2), "stack_nhwc_last": lambda: lib.stack([nhwc, nhwc], 4),
        "cat_t": lambda: lib.cat([transposed, transposed]), "stack_t": lambda: lib.stack([transposed, transposed]),
        "stack_t_last": lambda: lib.stack([transposed, transposed], 2),
        "cat_swapped": lambda: lib.cat([swapped, swapped]), "stack_swapped": lambda: lib.stack([swapped, swapped]),
        "cat_one_channel": lambda: lib.cat([one_channel, one_channel]), "cat_ndhwc": lambda: lib.cat([ndhwc, ndhwc]),
        "cat_pixels": lambda: lib.cat([pixels, pixels]), "stack_pixels": lambda: lib.stack([pixels, pixels]),
    }


@pytest.mark.parametrize("name", sorted(_cases(torch)))
def test_cat_and_stack_strides_as_torch(name):
    expected = _cases(torch)[name]()
    actual = _cases(ember)[name]()
    assert tuple(actual.stride()) == expected.stride() and tuple(actual.shape) == tuple(expected.shape)
    assert actual.is_contiguous() == expected.is_contiguous()
