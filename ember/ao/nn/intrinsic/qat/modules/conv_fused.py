"""torch.ao.nn.intrinsic.qat ConvBn2d / ConvBnReLU2d / ConvReLU2d: fused modules for quantization-aware training.

ConvBn2d folds the batch norm into the convolution's weight before fake quantization, as torch's `_ConvBnNd`
does (its default "approximate" path): ``w' = fake_quant(w * gamma / sqrt(running_var + eps))``, the conv output
divided back by that per-channel factor, the conv bias added, and the result through `self.bn`, which in training
mode normalises with the batch statistics and updates the running ones.  `freeze_bn_stats()` puts the bn in eval
mode (the running statistics stop moving and normalise instead); `update_bn_stats()` undoes it.  The QAT module
converts to a quantized conv whose weight is the folded one (`fuse_conv_bn_weights` with the running
statistics).
"""

from __future__ import annotations

import math

import ember as torch
from ember import nn
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.conv import _ConvNd as _FloatConvNd
from ember.nn.parameter import Parameter
from ember.nn.utils.fusion import fuse_conv_bn_weights

from ....qat import modules as _nnqat
from ... import ConvBn2d as _FloatConvBn2d
from ... import ConvBnReLU2d as _FloatConvBnReLU2d
from ... import ConvReLU2d as _FloatConvReLU2d
from ... import _FusedModule

_BN_CLASS_MAP = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}


class _ConvBnNd(_FloatConvNd, _FusedModule):
    """Conv + BatchNorm for QAT: the conv's weight and bias, the batch norm as `bn`, `weight_fake_quant`."""

    _version = 2
    _FLOAT_MODULE: type
    _FLOAT_CONV_MODULE: type
    _FLOAT_BN_MODULE: type
    _FLOAT_RELU_MODULE: type | None = None
    _FUSED_FLOAT_MODULE: type | None = None

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, eps=1e-05, momentum=0.1, freeze_bn=False,
                 qconfig=None, dim=2) -> None:
        _FloatConvNd.__init__(self, dim, in_channels, out_channels, kernel_size, stride, padding, dilation,
                              transposed, output_padding, groups, False, padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = _BN_CLASS_MAP[dim](out_channels, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()
        self._enable_slow_path_for_better_numerical_stability = False

    def reset_running_stats(self) -> None:
        self.bn.reset_running_stats()

    def reset_bn_parameters(self) -> None:
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self):
        """Let the batch norm normalise with batch statistics and update its running ones (in training)."""
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        """Freeze the batch norm's running statistics: it normalises with them from now on."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _forward(self, input):
        if self._enable_slow_path_for_better_numerical_stability:
            return self._forward_slow(input)
        return self._forward_approximate(input)

    def _shapes(self) -> tuple[list, list]:
        weight_shape = [1] * len(self.weight.shape)
        weight_shape[0] = -1
        bias_shape = [1] * len(self.weight.shape)
        bias_shape[1] = -1
        return weight_shape, bias_shape

    def _forward_approximate(self, input):
        """One conv: with the weight scaled by gamma / running_std and fake-quantized, the output divided back
        by the scale factor, the bias added and the result through the bn."""
        if self.bn.running_var is None:
            raise AssertionError("self.bn.running_var must not be None")
        running_std = torch.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        weight_shape, bias_shape = self._shapes()
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        if self.bias is not None:
            zero_bias = torch.zeros_like(self.bias, dtype=input.dtype)
        else:
            zero_bias = torch.zeros(self.out_channels, device=scaled_weight.device, dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        return self.bn(conv_orig)

    def _forward_slow(self, input):
        """Two convs (https://arxiv.org/pdf/1806.08342.pdf): handles bn.weight == 0."""
        if self.bn.running_var is None or self.bn.running_mean is None:
            raise AssertionError("self.bn.running_var and self.bn.running_mean must not be None")
        zero_bias = torch.zeros(self.out_channels, device=self.weight.device, dtype=input.dtype)
        weight_shape, bias_shape = self._shapes()
        if self.bn.training:
            conv_out = self._conv_forward(input, self.weight, zero_bias)
            with torch.no_grad():
                conv_out_bias = conv_out if self.bias is None else conv_out + self.bias.reshape(bias_shape)
                self.bn(conv_out_bias)
            running_std = torch.sqrt(self.bn.running_var + self.bn.eps)
            scale_factor = self.bn.weight / running_std
            scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
            conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
            avg_dims = [0] + list(range(2, len(self.weight.shape)))
            batch_mean = conv_out.mean(avg_dims)
            batch_var = torch.square(conv_out - batch_mean.reshape(bias_shape)).mean(avg_dims)
            batch_std = torch.sqrt(batch_var + self.bn.eps)
            unscale_factor = running_std / batch_std
            conv_bn = conv_bn * unscale_factor.reshape(bias_shape)
            fused_mean, fused_std = batch_mean, batch_std
        else:
            running_std = torch.sqrt(self.bn.running_var + self.bn.eps)
            scale_factor = self.bn.weight / running_std
            scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
            conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
            fused_mean = self.bn.running_mean - (self.bias if self.bias is not None else 0)
            fused_std = running_std
        fused_bias = self.bn.bias - self.bn.weight * fused_mean / fused_std
        conv_bn = conv_bn + fused_bias.reshape(bias_shape)
        if self.bias is not None:  # keeps the bias in the autograd graph (HF's DDP checks)
            conv_bn = conv_bn + (self.bias - self.bias).reshape(bias_shape)
        return conv_bn

    def forward(self, input):
        return self._forward(input)

    def train(self, mode: bool = True):
        """Sets `training`; the children (the bn) follow only while the bn statistics are not frozen."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False):
        """The QAT module sharing the fused float module's conv and bn parameters and buffers."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError("qat." + cls.__name__ + ".from_float only works for " + cls._FLOAT_MODULE.__name__)
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat_convbn = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                         conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode, bn.eps, bn.momentum,
                         False, mod.qconfig)
        qat_convbn.weight = conv.weight
        qat_convbn.bias = conv.bias
        qat_convbn.bn.weight = bn.weight
        qat_convbn.bn.bias = bn.bias
        qat_convbn.bn.running_mean = bn.running_mean
        qat_convbn.bn.running_var = bn.running_var
        qat_convbn.bn.num_batches_tracked = bn.num_batches_tracked
        return qat_convbn

    def to_float(self):
        """The float conv with the bn folded in (running statistics), followed by a ReLU for ConvBnReLU."""
        cls = type(self)
        conv = cls._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size, self.stride,
                                      self.padding, self.dilation, self.groups, self.bias is not None,
                                      self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        if cls._FLOAT_BN_MODULE:
            conv.weight, conv.bias = fuse_conv_bn_weights(conv.weight, conv.bias, self.bn.running_mean,
                                                          self.bn.running_var, self.bn.eps, self.bn.weight,
                                                          self.bn.bias)
        if cls._FLOAT_RELU_MODULE:
            conv_relu = cls._FUSED_FLOAT_MODULE(conv, cls._FLOAT_RELU_MODULE())
            conv_relu.train(self.training)
            return conv_relu
        conv.train(self.training)
        return conv


class ConvBn2d(_ConvBnNd, nn.Conv2d):
    """Conv2d + BatchNorm2d with a FakeQuantize module on the folded weight (quantization-aware training)."""

    _FLOAT_MODULE = _FloatConvBn2d
    _FLOAT_CONV_MODULE = nn.Conv2d
    _FLOAT_BN_MODULE = nn.BatchNorm2d
    _FLOAT_RELU_MODULE = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=None, padding_mode="zeros", eps=1e-05, momentum=0.1, freeze_bn=False, qconfig=None) -> None:
        _ConvBnNd.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                           bias, padding_mode, eps, momentum, freeze_bn, qconfig, dim=2)


class ConvBnReLU2d(ConvBn2d):
    """Conv2d + BatchNorm2d + ReLU with a FakeQuantize module on the folded weight (quantization-aware
    training)."""

    _FLOAT_MODULE = _FloatConvBnReLU2d
    _FLOAT_CONV_MODULE = nn.Conv2d
    _FLOAT_BN_MODULE = nn.BatchNorm2d
    _FLOAT_RELU_MODULE = nn.ReLU
    _FUSED_FLOAT_MODULE = _FloatConvReLU2d

    def forward(self, input):
        return F.relu(self._forward(input))


class ConvReLU2d(_nnqat.Conv2d, _FusedModule):
    """Conv2d + ReLU with a FakeQuantize module on the weight (quantization-aware training)."""

    _FLOAT_MODULE = _FloatConvReLU2d
    _FLOAT_CONV_MODULE = nn.Conv2d
    _FLOAT_BN_MODULE = None
    _FLOAT_RELU_MODULE = nn.ReLU

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", qconfig=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias, padding_mode=padding_mode, qconfig=qconfig)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = self.qconfig.weight()

    def forward(self, input):
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))


_CONV_BN_TYPES = (ConvBn2d, ConvBnReLU2d)


def update_bn_stats(mod: nn.Module) -> None:
    """`model.apply(update_bn_stats)`: unfreeze the bn statistics of every QAT conv + bn module."""
    if type(mod) in _CONV_BN_TYPES:
        mod.update_bn_stats()


def freeze_bn_stats(mod: nn.Module) -> None:
    """`model.apply(freeze_bn_stats)`: freeze the bn statistics of every QAT conv + bn module."""
    if type(mod) in _CONV_BN_TYPES:
        mod.freeze_bn_stats()


__all__ = ["ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "freeze_bn_stats", "update_bn_stats"]
