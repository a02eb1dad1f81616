"""ember.functional, ember.storage, ember.overrides, ember.hub, ember.quasirandom: torch's module aliases."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def test_modules_exist_as_in_torch():
    for name in ("functional", "storage", "overrides", "hub", "quasirandom"):
        assert hasattr(torch, name)
        assert hasattr(ember, name), name
    assert ember.utils.model_zoo.load_url is ember.hub.load_state_dict_from_url


def test_functional_reexports_torch_functional_all():
    for name in torch.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name), name
    assert sorted(ember.functional.__all__) == sorted(torch.functional.__all__)
    a = ember.arange(6.0).reshape(2, 3)
    assert ember.functional.einsum("ij->j", a).tolist() == [3.0, 5.0, 7.0]


def test_storage_classes():
    assert ember.storage.TypedStorage is ember.TypedStorage
    assert ember.storage.UntypedStorage is ember.UntypedStorage


class _Override:
    """An object taking part in __torch_function__, as torch.overrides documents."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("handled", func.__name__, len(args))


class _Declines:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def test_has_torch_function_like_torch():
    cases = [(ember.ones(2), torch.ones(2)), (ember.nn.Parameter(ember.ones(1)), torch.nn.Parameter(torch.ones(1))),
             (3, 3), ("text", "text"), (_Override(), _Override())]
    for ours, theirs in cases:
        assert ember.overrides.has_torch_function((ours,)) == torch.overrides.has_torch_function((theirs,))
        assert ember.overrides.has_torch_function_unary(ours) == torch.overrides.has_torch_function_unary(theirs)
        assert ember.overrides.has_torch_function_variadic(1, ours) == \
            torch.overrides.has_torch_function_variadic(1, theirs)
        assert ember.overrides.is_tensor_like(ours) == torch.overrides.is_tensor_like(theirs)


def test_handle_torch_function():
    def my_function(x, y=1):
        if ember.overrides.has_torch_function_unary(x):
            return ember.overrides.handle_torch_function(my_function, (x,), x, y=y)
        return x + y

    assert my_function(ember.tensor(1.0)).item() == 2.0
    assert my_function(_Override()) == ("handled", "my_function", 1)
    with pytest.raises(TypeError, match="no implementation found for"):
        my_function(_Declines())

    @ember.overrides.wrap_torch_function(lambda x: (x,))
    def wrapped(x):
        return x * 2

    assert wrapped(ember.tensor(2.0)).item() == 4.0
    assert wrapped(_Override())[0] == "handled"


def test_function_listings():
    ignored = ember.overrides.get_ignored_functions()
    assert ember.tensor in ignored and ember.add not in ignored
    overridable = ember.overrides.get_overridable_functions()
    assert ember.add in overridable[ember]
    assert ember.nn.functional.relu in overridable[ember.nn.functional]
    testing = ember.overrides.get_testing_overrides()
    assert testing[ember.add](1, 2) == -1
    assert ember.overrides.resolve_name(ember.add) == torch.overrides.resolve_name(torch.add).replace("torch",
                                                                                                      "ember")
    assert ember.overrides.is_tensor_method_or_property(ember.Tensor.add)
    assert not ember.overrides.is_tensor_method_or_property(len)


def test_functional_follows_autocast_wrappers():
    """autocast installs wrappers into `ember` on first use (cdist runs in float32): ember.functional names
    whatever `ember` holds, so it is the same function before and after."""
    with ember.autocast("cpu", dtype=ember.bfloat16):
        pass
    for name in ember.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name), name
