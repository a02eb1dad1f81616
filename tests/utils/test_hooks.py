"""ember.utils.hooks: torch code imports RemovableHandle from here."""

from __future__ import annotations

import ember


def test_removable_handle_import_is_the_one_in_use():
    from ember.utils.hooks import RemovableHandle

    module = ember.nn.Linear(2, 2)
    handle = module.register_forward_hook(lambda *args: None)
    assert isinstance(handle, RemovableHandle)
    assert ember.utils.hooks.RemovableHandle is RemovableHandle
    handle.remove()
    assert not module._forward_hooks


def test_unserializable_hook_marks_the_function():
    from ember.utils.hooks import unserializable_hook

    @unserializable_hook
    def hook(grad):
        return grad

    assert hook.__torch_unserializable__
