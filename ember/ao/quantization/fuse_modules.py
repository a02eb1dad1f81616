"""fuse_modules (torch.ao.quantization.fuse_modules): replace known module sequences by one module before
quantization — conv + bn folded into the conv (eval mode), conv (+ bn) + relu and linear + relu into the
fused modules of ember.ao.nn.intrinsic, whose quantized forms clamp in the requantization."""

from __future__ import annotations

import copy

from ember import nn
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from ..nn import intrinsic as nni

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules"]


def _check_qat_conv_bn(conv, bn) -> None:
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if bn.num_features != conv.out_channels:
        raise AssertionError("Output channel of Conv2d must match num_features of BatchNorm2d")
    if not bn.affine:
        raise AssertionError("Only support fusing BatchNorm2d with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError("Only support fusing BatchNorm2d with tracking_running_stats set to True")


def _fuse_conv_bn(is_qat: bool, conv, bn):
    if is_qat:  # kept apart for quantization-aware training (ember.ao.nn.intrinsic.qat.ConvBn2d folds it)
        _check_qat_conv_bn(conv, bn)
        return nni.ConvBn2d(conv, bn)
    if conv.training or bn.training:
        raise NotImplementedError("ember fuses conv + bn in eval mode only (folded into the conv); use "
                                  "fuse_modules_qat for the ConvBn2d of quantization-aware training")
    return fuse_conv_bn_eval(conv, bn)


def _fuse_conv_bn_relu(is_qat: bool, conv, bn, relu):
    if is_qat:
        _check_qat_conv_bn(conv, bn)
        return nni.ConvBnReLU2d(conv, bn, relu)
    return nni.ConvReLU2d(_fuse_conv_bn(is_qat, conv, bn), relu)


def _fuse_linear_bn(is_qat: bool, linear, bn):
    if is_qat or linear.training or bn.training:
        raise NotImplementedError("ember fuses linear + bn in eval mode only (folded into the linear)")
    return fuse_linear_bn_eval(linear, bn)


_PATTERNS = {
    (nn.Conv2d, nn.ReLU): lambda is_qat, conv, relu: nni.ConvReLU2d(conv, relu),
    (nn.Linear, nn.ReLU): lambda is_qat, linear, relu: nni.LinearReLU(linear, relu),
    (nn.Conv2d, nn.BatchNorm2d): _fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): _fuse_conv_bn_relu,
    (nn.Linear, nn.BatchNorm1d): _fuse_linear_bn,
}


def fuse_known_modules(mod_list: list, is_qat: bool = False, additional_fuser_method_mapping=None) -> list:
    """The fused module in the first place and nn.Identity in the others, for a known sequence of types."""
    types = tuple(type(m) for m in mod_list)
    mapping = {**_PATTERNS, **(additional_fuser_method_mapping or {})}
    fuser = mapping.get(types)
    if fuser is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    return [fuser(is_qat, *mod_list)] + [nn.Identity() for _ in mod_list[1:]]


def _get_module(model: nn.Module, name: str) -> nn.Module:
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set_module(model: nn.Module, name: str, module: nn.Module) -> None:
    *parents, last = name.split(".")
    for part in parents:
        model = getattr(model, part)
    setattr(model, last, module)


def _fuse_modules(model: nn.Module, modules_to_fuse: list, is_qat: bool, inplace: bool, fuser_func,
                  fuse_custom_config_dict) -> nn.Module:
    if not inplace:
        model = copy.deepcopy(model)
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    groups = modules_to_fuse if all(isinstance(item, (list, tuple)) for item in modules_to_fuse) else [modules_to_fuse]
    for names in groups:
        fused = fuser_func([_get_module(model, name) for name in names], is_qat, additional)
        for name, module in zip(names, fused):
            _set_module(model, name, module)
    return model


def fuse_modules(model: nn.Module, modules_to_fuse: list, inplace: bool = False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None) -> nn.Module:
    """Fuse each list of submodule names in `modules_to_fuse` (or the one list given) into one module, for
    post-training quantization (conv + bn folded: the model must be in eval mode).

    Example::

        >>> fused = fuse_modules(model.eval(), [["conv1", "bn1", "relu1"], ["fc", "relu2"]])
    """
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func, fuse_custom_config_dict)


def fuse_modules_qat(model: nn.Module, modules_to_fuse: list, inplace: bool = False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None) -> nn.Module:
    """fuse_modules for quantization-aware training: conv + bn (+ relu) become nni.ConvBn2d / nni.ConvBnReLU2d
    (the bn kept, folded at each forward by the QAT modules that prepare_qat swaps in).

    Example::

        >>> fused = fuse_modules_qat(model.train(), [["conv1", "bn1", "relu1"], ["fc", "relu2"]])
    """
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func, fuse_custom_config_dict)
