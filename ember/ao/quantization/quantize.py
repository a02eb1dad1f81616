"""Eager-mode quantization flows (torch.ao.quantization.quantize): static prepare / convert / quantize and
quantize_dynamic.  Modules are swapped by type through a mapping, as in torch; see docs/quantization.md."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import ember as torch

from ... import nn
from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantized as nnq
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from ..nn.quantized import dynamic as nnqd
from .fake_quantize import FakeQuantizeBase
from .observer import ObserverBase
from .qconfig import QConfig, default_dynamic_qconfig
from .stubs import DeQuantStub, QuantStub

__all__ = [
    "quantize_dynamic", "get_default_dynamic_quant_module_mappings", "get_default_static_quant_module_mappings",
    "get_default_qconfig_propagation_list", "propagate_qconfig_", "prepare", "convert", "quantize",
    "get_default_qat_module_mappings", "prepare_qat", "quantize_qat",
]

DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {nn.Linear: nnqd.Linear}

# torch's static mapping (torch/ao/quantization/quantization_mappings.py), restricted to what ember has.  Modules
# torch leaves float (nn.ReLU, the pools, nn.Flatten) run on quantized tensors through the QuantizedCPU kernels of
# ember/_ops/quantized_ops.py, as in torch.
DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    nn.Linear: nnq.Linear,
    nn.Conv2d: nnq.Conv2d,
    nn.BatchNorm2d: nnq.BatchNorm2d,
    nnq.FloatFunctional: nnq.QFunctional,
    nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.LinearReLU: nniq.LinearReLU,
    # quantization-aware training modules (a conv + bn converts with the bn folded into the weight)
    nnqat.Linear: nnq.Linear,
    nnqat.Conv2d: nnq.Conv2d,
    nniqat.ConvBn2d: nnq.Conv2d,
    nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d,
    nniqat.LinearReLU: nniq.LinearReLU,
}

# float module -> QAT module (torch's DEFAULT_QAT_MODULE_MAPPINGS, restricted to what ember has)
DEFAULT_QAT_MODULE_MAPPINGS = {
    nn.Conv2d: nnqat.Conv2d,
    nn.Conv3d: nnqat.Conv3d,
    nn.Linear: nnqat.Linear,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.LinearReLU: nniqat.LinearReLU,
}

# the modules whose output prepare observes: torch's static mapping keys (ReLU is not one: its output keeps
# its input's scale and zero point).  A fused module (fuse_modules) is observed as one layer, not its parts.
_OBSERVED_MODULES = (QuantStub, DeQuantStub, nn.Linear, nn.Conv2d, nn.BatchNorm2d, nni.ConvReLU2d, nni.LinearReLU,
                     *DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings() -> dict:
    """Float module class -> dynamically quantized class (only nn.Linear in ember)."""
    return dict(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_default_static_quant_module_mappings() -> dict:
    """Float module class -> statically quantized class: the stubs, Linear, Conv2d, BatchNorm2d, FloatFunctional
    and the fused modules."""
    return dict(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qat_module_mappings() -> dict:
    """Float module class -> quantization-aware-training class (Linear, Conv2d/3d and the fused modules)."""
    return dict(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set:
    """The module types that prepare may give an output observer."""
    return set(_OBSERVED_MODULES) | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS) | {nn.Sequential, nnq.FloatFunctional}


def propagate_qconfig_(module: nn.Module, qconfig_dict: dict | None = None, prefix: str = "",
                       parent_qconfig: QConfig | None = None) -> None:
    """Give each submodule a `qconfig`: its own if set, else by qualified name, else by type, else its
    parent's (torch's precedence)."""
    qconfig_dict = qconfig_dict or {}
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        propagate_qconfig_(child, qconfig_dict, prefix + ("." if prefix else "") + name, qconfig)


def _observer_forward_hook(self: nn.Module, input: Any, output: Any) -> Any:
    """Runs the module's output through its activation observer."""
    return self.activation_post_process(output)


def _insert_activation_post_process(module: nn.Module) -> None:
    """Give `module` the qconfig's activation observer (or fake quant) as `activation_post_process` and a forward
    hook that feeds it the module's output; DeQuantStub and modules without a qconfig get none."""
    if getattr(module, "qconfig", None) is not None and not isinstance(module, DeQuantStub):
        module.add_module("activation_post_process", module.qconfig.activation())
        if _activation_is_memoryless(module.qconfig):  # dynamic QAT: the input is observed, before the forward
            module.register_forward_pre_hook(_observer_forward_pre_hook)
        else:
            module.register_forward_hook(_observer_forward_hook)


def _observer_forward_pre_hook(self: nn.Module, input: Any) -> Any:
    """Runs the module's input through its activation observer (memoryless observers, dynamic QAT)."""
    return self.activation_post_process(input[0])


def _activation_is_memoryless(qconfig: QConfig) -> bool:
    """A fake-quant activation whose observer is a moving average with averaging constant 1 (torch's rule)."""
    activation = qconfig.activation()
    observer = getattr(activation, "activation_post_process", None)
    return isinstance(activation, FakeQuantizeBase) and getattr(observer, "averaging_constant", None) == 1


def _add_observer_(module: nn.Module, propagation_list: set, non_leaf_module_list: set | None = None) -> None:
    """Attach `activation_post_process` to every leaf module of an observed type, every fused module and every
    module whose type is in `non_leaf_module_list` (the QAT modules, whose children are their own fake quants),
    as torch's _add_observer_.  A FloatFunctional's Identity is replaced by the observer, which its methods
    call."""
    for child in module.children():
        if type(child) is nn.Dropout:
            continue
        if isinstance(child, (nnq.FloatFunctional, nnq.QFunctional)):
            # no hook: FloatFunctional's methods run their result through activation_post_process themselves
            if getattr(child, "qconfig", None) is not None:
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, nni._FusedModule):  # observed as one layer, its parts are not
            _insert_activation_post_process(child)
        elif non_leaf_module_list is not None and type(child) in non_leaf_module_list:
            _insert_activation_post_process(child)
        else:
            _add_observer_(child, propagation_list, non_leaf_module_list)
    is_leaf = not any(True for _ in module.children())
    if is_leaf and not isinstance(module, nn.Sequential) and type(module) in propagation_list:
        _insert_activation_post_process(module)


def prepare(model: nn.Module, inplace: bool = False, allow_list: set | None = None,
            observer_non_leaf_module_list=None, prepare_custom_config_dict=None) -> nn.Module:
    """Propagate `qconfig` through `model` and attach observers for calibration (static quantization).

    Run calibration data through the result, then `convert` it."""
    if not inplace:
        model = copy.deepcopy(model)
    propagation_list = allow_list if allow_list is not None else get_default_qconfig_propagation_list()
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct configuration "
                      "through `qconfig_dict` or by assigning the `.qconfig` attribute directly on submodules",
                      stacklevel=2)
    _add_observer_(model, propagation_list, observer_non_leaf_module_list)
    return model


def convert(module: nn.Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True, is_reference: bool = False, convert_custom_config_dict=None,
            use_precomputed_fake_quant: bool = False) -> nn.Module:
    """Replace every submodule with a qconfig whose type is in `mapping` by mapping[type].from_float
    (default: the static mapping), then drop qconfigs and leftover observers."""
    if is_reference:
        raise NotImplementedError("ember has no reference quantized modules (is_reference=True)")
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module: nn.Module, mapping: dict) -> None:
    for name, child in list(module.named_children()):
        if name == "activation_post_process":
            continue
        if not isinstance(child, nni._FusedModule):  # a fused module converts as one (torch's rule)
            _convert(child, mapping)
        if type(child) in mapping and getattr(child, "qconfig", None) is not None:
            new = mapping[type(child)].from_float(child)
            # hooks other than the observer's go with the module (torch's swap_module)
            for hook in child._forward_pre_hooks.values():
                if hook is not _observer_forward_pre_hook:
                    new.register_forward_pre_hook(hook)
            for hook in child._forward_hooks.values():
                if hook is not _observer_forward_hook:
                    new.register_forward_hook(hook)
            setattr(module, name, new)


def _remove_qconfig(module: nn.Module) -> None:
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig
    # only observers and fake quants go (a QFunctional's own Identity stays), as torch's
    # _remove_activation_post_process
    if isinstance(module._modules.get("activation_post_process"), (ObserverBase, FakeQuantizeBase)):
        del module._modules["activation_post_process"]
        for key, hook in list(module._forward_hooks.items()):
            if hook is _observer_forward_hook:
                del module._forward_hooks[key]
        for key, hook in list(module._forward_pre_hooks.items()):
            if hook is _observer_forward_pre_hook:
                del module._forward_pre_hooks[key]


def quantize(model: nn.Module, run_fn: Callable, run_args: Any, mapping: dict | None = None,
             inplace: bool = False) -> nn.Module:
    """Static post-training quantization in one call: prepare, run_fn(model, *run_args) to calibrate,
    convert."""
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def prepare_qat(model: nn.Module, mapping: dict | None = None, inplace: bool = False) -> nn.Module:
    """Prepare a model for quantization-aware training: propagate `qconfig`, swap each float module with a
    qconfig for its QAT form (`mapping`, default `get_default_qat_module_mappings()`: weights through the
    qconfig's weight fake quant) and attach the activation fake quants.  The model must be in training mode.

    Train the result, then `convert` it (after `model.eval()`)."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def quantize_qat(model: nn.Module, run_fn: Callable, run_args: Any, inplace: bool = False) -> nn.Module:
    """Quantization-aware training in one call: prepare_qat, run_fn(model, *run_args) to train, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


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
