"""Module API probes (round 13): nn.Module / containers / nn.utils compared with torch.

Each test reproduces a discrepancy found by probing ember against torch: state_dict hooks and load rules,
`with torch.device("meta")` construction, containers, lazy modules, hooks and nn.utils.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------- state_dict / load_state_dict


def test_device_context_manager_sets_default_device():
    with ember.device("meta"):
        with ember.device("cpu"):
            inner = ember.zeros(1)
        outer = ember.zeros(1)
        linear = nn.Linear(2, 3)
    assert inner.device == ember.device("cpu")
    assert outer.device == ember.device("meta")
    assert linear.weight.device == ember.device("meta")
    assert ember.zeros(1).device == ember.device("cpu")
    assert ember.get_default_device() == ember.device("cpu")


def test_meta_init_then_to_empty_and_reset():
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model.to_empty(device="cpu")
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    assert all(p.device == ember.device("cpu") for p in model.parameters())
    np.testing.assert_array_equal(model[1].running_var.numpy(), np.ones(3, np.float32))


def test_load_into_meta_without_assign_warns():
    with ember.device("meta"):
        meta = nn.Linear(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        meta.load_state_dict(nn.Linear(2, 3).state_dict())
    messages = [str(w.message) for w in caught]
    assert [m.split(":")[0] for m in messages] == ["for weight", "for bias"]
    assert "copying from a non-meta parameter in the checkpoint to a meta parameter" in messages[0]
    assert meta.weight.is_meta
    meta.load_state_dict(nn.Linear(2, 3).state_dict(), assign=True)
    assert not meta.weight.is_meta and isinstance(meta.weight, nn.Parameter) and meta.weight.requires_grad


def test_state_dict_positional_warning_text():
    with pytest.warns(FutureWarning, match=r"Refer to https://pytorch.org/docs/main/generated/torch.nn.Module"):
        keys = list(nn.Linear(2, 3).state_dict(None, "p."))
    assert keys == ["p.weight", "p.bias"]


def test_public_state_dict_post_hook_must_return_none():
    linear = nn.Linear(2, 3)
    linear.register_state_dict_post_hook(lambda module, sd, prefix, meta: {"a": 1})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        linear.state_dict()


def test_load_post_hook_returning_value_is_assertion_error():
    linear = nn.Linear(2, 3)
    linear.register_load_state_dict_post_hook(lambda module, keys: 5)
    with pytest.raises(AssertionError, match="are not expected to return new values, if incompatible_keys need to "
                                             "be modified, it should be done inplace."):
        linear.load_state_dict(linear.state_dict())


def test_load_one_element_1d_into_scalar_buffer():
    bn = nn.BatchNorm1d(3)
    state = bn.state_dict()
    state["num_batches_tracked"] = ember.tensor([5])
    assert repr(bn.load_state_dict(state)) == "<All keys matched successfully>"
    assert bn.num_batches_tracked.shape == () and bn.num_batches_tracked.item() == 5


def test_unexpected_keys_dotted_under_param_and_bare_module_name():
    model = nn.Sequential(nn.Linear(2, 3))
    state = model.state_dict()
    state["0.weight.x"] = ember.zeros(1)
    state["0"] = ember.zeros(1)
    result = model.load_state_dict(state, strict=False)
    assert result.unexpected_keys == ["0", "0.weight.x"]
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "0", "0.weight.x"\.'):
        model.load_state_dict(state)


def test_load_state_dict_accepts_any_mapping():
    linear = nn.Linear(2, 3)
    proxy = types.MappingProxyType(dict(linear.state_dict()))
    assert repr(linear.load_state_dict(proxy)) == "<All keys matched successfully>"


# ---------------------------------------------------------------- to / set_submodule


def test_tensor_to_positional_non_blocking_and_copy():
    t = ember.zeros(2)
    assert t.to(ember.float64, True).dtype == ember.float64
    copied = t.to(ember.float32, False, True)
    assert copied is not t and copied.dtype == ember.float32
    assert t.to(ember.zeros(1, dtype=ember.int32), True).dtype == ember.int32


@pytest.mark.parametrize("args, kwargs, got", [
    (("cpu", "cpu"), {}, "(str, str)"),
    (("cpu",), {"foo": 1, "bar": None}, "(str, bar=NoneType, foo=int)"),
    ((), {"foo": 1}, "(foo=int, )"),
    ((ember.float64, True, True, True), {}, "(torch.dtype, bool, bool, bool)"),
])
def test_to_invalid_arguments_message(args, kwargs, got):
    expected = f"to() received an invalid combination of arguments - got {got}, but expected one of:"
    for target in (ember.zeros(1), nn.Linear(1, 1)):
        with pytest.raises(TypeError) as info:
            target.to(*args, **kwargs)
        assert str(info.value).startswith(expected)
        assert " * (Tensor tensor, bool non_blocking = False, bool copy = False" in str(info.value)


def test_module_to_memory_format_copy_and_complex_warning():
    conv = nn.Conv2d(2, 3, 3)
    conv.to(memory_format=ember.channels_last)
    assert conv.weight.is_contiguous(memory_format=ember.channels_last)
    assert conv.weight.stride() == (18, 1, 6, 2)
    assert conv.bias.is_contiguous()
    with pytest.raises(RuntimeError, match=r"^\.to\(\) does not accept copy argument$"):
        conv.to(ember.float64, copy=True)
    with pytest.warns(UserWarning, match="Complex modules are a new feature under active development"):
        conv.to(ember.complex64)
    assert conv.weight.dtype == ember.complex64


def test_set_submodule_errors():
    model = nn.Sequential(nn.Linear(1, 1))
    with pytest.raises(ValueError, match=r"^`module` is not an nn.Module, found <class 'int'>$"):
        model.set_submodule("0", 5)
    with pytest.raises(AttributeError, match=r"^`weight` is not an nn.Module$"):
        model.set_submodule("0.weight", nn.ReLU())
    with pytest.raises(AttributeError, match=r"^`bias` is not an nn.Module$"):
        model.set_submodule("0.bias", nn.ReLU(), strict=True)


# ---------------------------------------------------------------- lazy modules and backward hooks


def test_deepcopy_uninitialized_parameter():
    import copy

    lazy = nn.LazyLinear(2, dtype=ember.float64)
    clone = copy.deepcopy(lazy)
    assert type(clone.weight).__name__ == "UninitializedParameter" and clone.weight is not lazy.weight
    clone(ember.ones(2, 3, dtype=ember.float64))
    assert clone.weight.shape == (2, 3) and clone.weight.dtype == ember.float64


class _TwoInputs(nn.Module):
    def forward(self, a, b, flag, c=None):
        return a * 2 + b * 3 if flag else a


def test_full_backward_hook_grad_input_per_positional_argument():
    for lib in (torch, ember):
        module = _TwoInputs() if lib is ember else type("M", (torch.nn.Module,), {"forward": _TwoInputs.forward})()
        seen = []
        module.register_full_backward_hook(
            lambda mod, gi, go: seen.append([None if g is None else g.tolist() for g in gi]))
        a = lib.ones(2, requires_grad=True)
        module(a, lib.ones(2), True, c=3).sum().backward()
        assert seen == [[[2.0, 2.0], [0.0, 0.0], None]]


def test_full_backward_hook_wrong_number_of_grad_inputs():
    linear = nn.Linear(2, 2)
    linear.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    out = linear(ember.ones(1, 2, requires_grad=True)).sum()
    with pytest.raises(RuntimeError, match="^Backward hook returned an invalid number of grad_input, got 2, but "
                                           "expected 1$"):
        out.backward()


def test_full_backward_pre_hook_wrong_number_of_grad_outputs():
    linear = nn.Linear(2, 2)
    linear.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    out = linear(ember.ones(1, 2, requires_grad=True)).sum()
    with pytest.raises(RuntimeError, match="^Backward pre hook returned an invalid number of grad_output, got 2, "
                                           "but expected 1$"):
        out.backward()


def test_full_backward_hook_tuple_output_with_unused_and_non_tensor_entries():
    class Outputs(nn.Module):
        def forward(self, a):
            return a * 2, a * 3, 5

    module = Outputs()
    seen = []
    module.register_full_backward_hook(lambda mod, gi, go: seen.append((len(gi), len(go), go[2])))
    a = ember.ones(2, requires_grad=True)
    x, _, _ = module(a)
    x.sum().backward()
    assert seen == [(1, 3, None)]
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])


def test_full_backward_hook_without_input_grad_warns_and_checks_result():
    linear = nn.Linear(2, 2)
    seen = []
    linear.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect to "
                                         "module outputs since no inputs require gradients"):
        linear(ember.ones(1, 2)).sum().backward()
    assert seen == [(None,)]
    other = nn.Linear(2, 2)
    other.register_full_backward_hook(lambda mod, gi, go: (ember.ones(1),))
    out = other(ember.ones(1, 2)).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.$"):
            out.backward()


def test_global_full_backward_pre_hook():
    from ember.nn.modules.module import register_module_full_backward_pre_hook

    seen = []
    handle = register_module_full_backward_pre_hook(lambda mod, go: seen.append(type(mod).__name__))
    try:
        model = nn.Sequential(nn.Linear(2, 2))
        model(ember.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        handle.remove()
    assert seen == ["Sequential", "Linear"]
    model(ember.ones(1, 2, requires_grad=True)).sum().backward()
    assert seen == ["Sequential", "Linear"]


# ---------------------------------------------------------------- nn.utils


def test_pad_sequence_errors():
    from ember.nn.utils.rnn import pad_sequence

    with pytest.raises(RuntimeError, match="^Expected padding_side to be one of left or right, but got middle.$"):
        pad_sequence([ember.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="^received an empty list of sequences$"):
        pad_sequence([])


def test_packed_sequence_dtype_methods():
    from ember.nn.utils.rnn import PackedSequence, pack_sequence

    packed = pack_sequence([ember.ones(3), ember.ones(1)])
    for method, dtype in [("long", ember.int64), ("int", ember.int32), ("short", ember.int16), ("char", ember.int8),
                          ("byte", ember.uint8), ("half", ember.float16)]:
        converted = getattr(packed, method)()
        assert type(converted) is PackedSequence and converted.data.dtype == dtype
    assert packed.cpu() is packed and packed.cpu(dtype=ember.float64).data.dtype == ember.float64
    assert packed.is_pinned() is False


def test_convert_conv2d_weight_memory_format_relayouts_weights():
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Sequential(nn.ConvTranspose2d(3, 2, 3)), nn.Linear(2, 2))
    before = model[0].weight.detach().clone()
    assert nn.utils.convert_conv2d_weight_memory_format(model, ember.channels_last) is model
    assert model[0].weight.is_contiguous(memory_format=ember.channels_last)
    assert model[1][0].weight.is_contiguous(memory_format=ember.channels_last)
    assert model[0].weight.stride() == (18, 1, 6, 2) and isinstance(model[0].weight, nn.Parameter)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), before.numpy())


def test_typename_follows_torch():
    class Local:
        pass

    for value in ([1], Local(), Local, len, int, np.zeros(1), 1.5):
        assert ember.typename(value) == torch.typename(value)
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: list$"):
        nn.utils.vector_to_parameters([1, 2], nn.Linear(2, 2).parameters())


# ---------------------------------------------------------------- nn.init


def test_init_fan_mode_message_lists_modes():
    with pytest.raises(ValueError, match=r"^Mode bad not supported, please use one of \['fan_in', 'fan_out'\]$"):
        nn.init.kaiming_normal_(ember.empty(2, 3), mode="bad")


def test_trunc_normal_rejection_sampling_as_torch():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=-2"):
        nn.init.trunc_normal_(ember.empty(3), a=2, b=-2)
    ember.manual_seed(0)
    for a, b in [(-2.0, 2.0), (1.0, 4.0)]:  # the normal-redraw and the uniform-proposal branches
        values = nn.init.trunc_normal_(ember.empty(20000, dtype=ember.float64), a=a, b=b).numpy()
        assert values.min() >= a and values.max() <= b
        expected = torch.nn.init.trunc_normal_(torch.empty(200000, dtype=torch.float64), a=a, b=b).mean().item()
        assert abs(values.mean() - expected) < 0.03
    meta = ember.empty(2, device="meta")
    assert nn.init.trunc_normal_(meta) is meta
