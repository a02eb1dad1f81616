"""quantize_dynamic (torch.ao.quantization.quantize): swap float modules for dynamically quantized ones."""

from __future__ import annotations

import copy

import ember as torch

from ... import nn
from ..nn.quantized import dynamic as nnqd
from .qconfig import QConfig, default_dynamic_qconfig

__all__ = ["quantize_dynamic", "get_default_dynamic_quant_module_mappings", "propagate_qconfig_", "convert"]

DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {nn.Linear: nnqd.Linear}


def get_default_dynamic_quant_module_mappings() -> dict:
    """Float module class -> dynamically quantized class (only nn.Linear in ember)."""
    return dict(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def propagate_qconfig_(module: nn.Module, qconfig_dict: dict | None = None, prefix: str = "",
                       parent_qconfig: QConfig | None = None) -> None:
    """Give each submodule a `qconfig`: by its type, then by its qualified name, else its parent's."""
    qconfig_dict = qconfig_dict or {}
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        propagate_qconfig_(child, qconfig_dict, prefix + ("." if prefix else "") + name, qconfig)


def convert(module: nn.Module, mapping: dict | None = None, inplace: bool = False) -> nn.Module:
    """Replace every submodule with a qconfig whose type is in `mapping` by mapping[type].from_float."""
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping)
    _remove_qconfig(module)
    return module


def _convert(module: nn.Module, mapping: dict) -> None:
    for name, child in list(module.named_children()):
        if type(child) in mapping and getattr(child, "qconfig", None) is not None:
            setattr(module, name, mapping[type(child)].from_float(child))
        else:
            _convert(child, mapping)


def _remove_qconfig(module: nn.Module) -> None:
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig


def quantize_dynamic(model: nn.Module, qconfig_spec=None, dtype=torch.qint8, mapping: dict | None = None,
                     inplace: bool = False) -> nn.Module:
    """torch.ao.quantization.quantize_dynamic: qint8 weights now, activations quantized at each call.

    Only nn.Linear (with qint8) is converted in ember; other module types in qconfig_spec are left float.
    """
    if dtype != torch.qint8:
        raise NotImplementedError(f"ember's quantize_dynamic supports dtype=ember.qint8 only, got {dtype}")
    if qconfig_spec is None:
        qconfig_spec = {nn.Linear: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, set):
        qconfig_spec = dict.fromkeys(qconfig_spec, default_dynamic_qconfig)
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
