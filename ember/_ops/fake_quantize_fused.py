"""torch.fused_moving_avg_obs_fake_quant: the moving-average min/max observer, the choice of scale and zero
point, and fake quantization in one op (what FusedMovingAvgObsFakeQuantize, the module of torch's default QAT
qconfig `get_default_qat_qconfig("x86")`, calls in its forward).

It follows ATen's CPU code (native/quantized/cpu/fused_obs_fake_quant.cpp), not the Python observer:

- the running min and max move in float32, ``running + float(averaging_const) * (batch - running)``, the first
  batch (running value +-inf) setting them outright;
- the scale and zero point come from fbgemm's ChooseQuantizationParams (double arithmetic, the range widened to
  include 0, symmetric ranges with a zero point in the middle of [quant_min, quant_max] when
  `symmetric_quant`), not from the observer's `calculate_qparams`: the two can differ in the last bits of the
  scale, exactly as in torch;
- they are recomputed whenever fake quantization is on (even with the observer off), and written into the
  `scale` and `zero_point` tensors in place, as are the running min and max;
- the output is fake_quantize_per_tensor_affine / per_channel_affine with those parameters (the gradient is
  the straight-through mask); with fake quantization off it is a copy of the input.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import call
from .._tensor import Tensor
from ._api import export
from .quantized import choose_qparams as choose_quantization_params  # fbgemm's, shared


def _moving_average(batch: Tensor, running_min: Tensor, running_max: Tensor, averaging_const: float,
                    per_row: bool) -> None:
    """calculate_moving_average: the batch's min and max (per row of a 2-d tensor) folded into the running
    values in float32; a running value that is still +-inf takes the batch's."""
    from .. import aminmax

    low, high = aminmax(batch, dim=1) if per_row else aminmax(batch)
    constant = np.float32(averaging_const)
    for running, current in ((running_min, low), (running_max, high)):
        old = running._data.astype(np.float32).reshape(-1)
        new = current._data.astype(np.float32).reshape(-1)
        with np.errstate(all="ignore"):
            moved = np.where(np.isinf(old), new, old + constant * (new - old))
        running.copy_(Tensor._make(moved.reshape(running.shape), dt.float32))


def _write(target: Tensor, values: list, dtype: dt.dtype) -> None:
    target.copy_(Tensor._make(np.asarray(values, dtype=dtype.np_dtype).reshape(target.shape), dtype))


@export(method=False)
def fused_moving_avg_obs_fake_quant(input: Tensor, observer_on: Tensor, fake_quant_on: Tensor, running_min: Tensor,
                                    running_max: Tensor, scale: Tensor, zero_point: Tensor, averaging_const: float,
                                    quant_min: int, quant_max: int, ch_axis: int, per_row_fake_quant: bool = False,
                                    symmetric_quant: bool = False) -> Tensor:
    """Observe `input` into the running min/max (when `observer_on` holds a nonzero value), recompute `scale` and
    `zero_point` from them and fake-quantize `input` with them (when `fake_quant_on` does).  `running_min`,
    `running_max`, `scale` and `zero_point` are updated in place.  Per channel (`per_row_fake_quant`) the
    statistics are per slice along `ch_axis` (which must be 0)."""
    from .._autograd.grad_mode import no_grad
    from .fake_quantize import _PER_TENSOR_QPARAMS, fake_quantize_per_channel_affine_cachemask

    if input.numel() == 0:
        return input.clone()
    if not ch_axis < input.dim():
        raise RuntimeError("Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()")
    observe = int(observer_on.item())
    with no_grad():
        x = input.detach().float()
        if per_row_fake_quant:
            if ch_axis != 0:
                raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on "
                                   "axis == 0")
            rows = x
            if x.dim() != 2:
                axes = list(range(x.dim()))
                axes[ch_axis], axes[0] = 0, ch_axis
                rows = x.permute(axes).flatten(1)
            size = input.shape[ch_axis]
            if running_min.numel() == 0:
                running_min.resize_(size).fill_(float("inf"))
                running_max.resize_(size).fill_(float("-inf"))
                scale.resize_(size)
                zero_point.resize_(size)
            if observe:
                _moving_average(rows, running_min, running_max, averaging_const, True)
        elif observe:
            _moving_average(x, running_min, running_max, averaging_const, False)
    if not int(fake_quant_on.item()):
        return input.clone()
    lows = running_min._data.astype(np.float32).reshape(-1)
    highs = running_max._data.astype(np.float32).reshape(-1)
    qparams = [choose_quantization_params(low, high, quant_min, quant_max, symmetric_quant)
               for low, high in zip(lows, highs)]
    with no_grad():
        _write(scale, [each[0] for each in qparams], scale._dtype)
        _write(zero_point, [each[1] for each in qparams], zero_point._dtype)
    if per_row_fake_quant:
        return fake_quantize_per_channel_affine_cachemask(input, scale.detach(), zero_point.detach(), ch_axis,
                                                          quant_min, quant_max)[0]
    params = {"scale": float(qparams[0][0]), "zero_point": int(qparams[0][1]), "quant_min": int(quant_min),
              "quant_max": int(quant_max)}
    return call(_PER_TENSOR_QPARAMS, (input,), params)[0]


__all__ = ["fused_moving_avg_obs_fake_quant"]
