"""torch.ao.nn.quantized.FloatFunctional / FXFloatFunctional / QFunctional: tensor arithmetic as modules.

Eager-mode quantization observes modules, not `x + y`; a model writes `self.skip_add.add(x, y)` instead, with a
FloatFunctional.  `prepare` replaces its `activation_post_process` (an Identity) by an observer, and `convert`
swaps it for a QFunctional holding the observed scale and zero point, whose methods are torch's quantized::
kernels (ember/_ops/quantized_ops.py).
"""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._ops import quantized_ops
from ember._tensor import Tensor

from .utils import OutputQParams

__all__ = ["FloatFunctional", "FXFloatFunctional", "QFunctional"]


def _no_forward(self, x):
    raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying operation")


class FloatFunctional(nn.Module):
    r"""State collector for float operations: use its methods instead of the ``torch.`` functions so that
    eager-mode quantization can observe (and later quantize) their results.

    Each of add, mul, cat, add_relu and matmul passes its result through ``self.activation_post_process`` (an
    Identity until `prepare` makes it an observer); add_scalar and mul_scalar are not observed (their quantized
    forms derive the output parameters from the input's).

    Example::

        >>> f_add = FloatFunctional()
        >>> f_add.add(ember.tensor(3.0), ember.tensor(4.0))
        tensor(7.)
    """

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = nn.Identity()

    forward = _no_forward

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.add(x, y), observed."""
        return self.activation_post_process(torch.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        """torch.add(x, y) with a number y; not observed."""
        return torch.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.mul(x, y), observed."""
        return self.activation_post_process(torch.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        """torch.mul(x, y) with a number y; not observed."""
        return torch.mul(x, y)

    def cat(self, x: list, dim: int = 0) -> Tensor:
        """torch.cat(x, dim=dim), observed."""
        return self.activation_post_process(torch.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        """relu(torch.add(x, y)), observed."""
        return self.activation_post_process(nn.functional.relu(torch.add(x, y)))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.matmul(x, y), observed."""
        return self.activation_post_process(torch.matmul(x, y))


class FXFloatFunctional(nn.Module):
    """FloatFunctional for FX graph mode: the same operations with no observer (FX inserts its own)."""

    forward = _no_forward

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return torch.add(x, y)

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return torch.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return torch.mul(x, y)

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return torch.mul(x, y)

    def cat(self, x: list, dim: int = 0) -> Tensor:
        return torch.cat(x, dim=dim)

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return nn.functional.relu(torch.add(x, y))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return torch.matmul(x, y)


class QFunctional(OutputQParams):
    """The quantized FloatFunctional: torch.ops.quantized.* with the module's output scale and zero point.

    add / mul / cat / add_relu / matmul requantize to (scale, zero_point); add_scalar / mul_scalar derive their
    output parameters from the input's, as torch's kernels do."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = nn.Identity()

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the underlying operation")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.ops.quantized.add(x, y, scale, zero_point)."""
        return self.activation_post_process(quantized_ops.add(x, y, self.scale, self.zero_point))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        """torch.ops.quantized.add_scalar(x, y)."""
        return quantized_ops.add_scalar(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.ops.quantized.mul(x, y, scale, zero_point)."""
        return self.activation_post_process(quantized_ops.mul(x, y, self.scale, self.zero_point))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        """torch.ops.quantized.mul_scalar(x, y)."""
        return quantized_ops.mul_scalar(x, y)

    def cat(self, x: list, dim: int = 0) -> Tensor:
        """torch.ops.quantized.cat(x, scale, zero_point, dim)."""
        return self.activation_post_process(quantized_ops.quantized_cat(list(x), self.scale, self.zero_point, dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.ops.quantized.add_relu(x, y, scale, zero_point)."""
        return self.activation_post_process(quantized_ops.add_relu(x, y, self.scale, self.zero_point))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        """torch.ops.quantized.matmul(x, y, scale, zero_point); not observed."""
        return quantized_ops.matmul(x, y, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> QFunctional:
        """From a FloatFunctional observed by `prepare`: its observer's scale and zero point."""
        if type(mod) is not FloatFunctional:
            raise AssertionError(f"QFunctional.from_float expects an instance of FloatFunctional, got "
                                 f"{type(mod).__name__}")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new_mod = QFunctional()
        new_mod.scale = float(scale)
        new_mod.zero_point = int(zero_point)
        return new_mod
