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


def _memory_formats(lib):
    x5 = lib.arange(2 * 3 * 4 * 5 * 6.0).reshape(2, 3, 4, 5, 6)
    x4 = lib.arange(120.0).reshape(2, 3, 4, 5)
    last3d = lib.channels_last_3d
    return {
        "contiguous_3d": lambda: x5.contiguous(memory_format=last3d),
        "is_contiguous_3d": lambda: (x5.contiguous(memory_format=last3d).is_contiguous(memory_format=last3d),
                                     x5.is_contiguous(memory_format=last3d), x4.is_contiguous(memory_format=last3d)),
        "to_3d": lambda: x5.to(memory_format=last3d), "clone_3d": lambda: x5.clone(memory_format=last3d),
        "empty_3d": lambda: lib.empty(2, 3, 4, 5, 6, memory_format=last3d).stride(),
        "empty_2d": lambda: lib.empty(2, 3, 4, 5, memory_format=lib.channels_last).stride(),
        "zeros_like_3d": lambda: lib.zeros_like(x5, memory_format=last3d),
        "empty_like_preserved": lambda: lib.empty_like(x5.contiguous(memory_format=last3d)).stride(),
        "rank_4_refused": lambda: x4.contiguous(memory_format=last3d),
        "rank_5_refused": lambda: x5.contiguous(memory_format=lib.channels_last),
        "module_to": lambda: lib.nn.Conv3d(3, 2, 1).to(memory_format=last3d).weight.stride(),
        "back_to_contiguous": lambda: x5.contiguous(memory_format=last3d).to(memory_format=lib.contiguous_format),
        "to_same_is_self": lambda: (lambda y: y.to(memory_format=last3d) is y)(x5.contiguous(memory_format=last3d)),
    }


def _outcome(fn):
    try:
        result = fn()
    except RuntimeError as error:
        return ("RuntimeError", str(error))
    if hasattr(result, "stride"):
        return tuple(result.stride()), result.tolist()
    return tuple(result) if isinstance(result, tuple) else result


@pytest.mark.parametrize("name", sorted(_memory_formats(torch)))
def test_channels_last_3d_as_torch(name):
    assert _outcome(_memory_formats(ember)[name]) == _outcome(_memory_formats(torch)[name])
