"""Image layout helpers: any of torch's `dataformats` (NCHW, CHW, HWC, HW, ...) to one RGB HWC array.

A batch is tiled into a grid of at most 8 columns; one channel is repeated to three.  `figure_to_image`
renders matplotlib figures to CHW uint8 arrays for `add_figure`.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def figure_to_image(figures: Any, close: bool = True) -> np.ndarray:
    """A matplotlib figure as a CHW uint8 array (a list of figures as NCHW); closes them unless `close=False`."""
    import matplotlib.backends.backend_agg as plt_backend_agg
    import matplotlib.pyplot as plt

    def render_to_rgb(figure: Any) -> np.ndarray:
        canvas = plt_backend_agg.FigureCanvasAgg(figure)
        canvas.draw()
        data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        w, h = figure.canvas.get_width_height()
        image_hwc = data.reshape([h, w, 4])[:, :, 0:3]
        if close:
            plt.close(figure)
        return np.moveaxis(image_hwc, source=2, destination=0)

    if isinstance(figures, list):
        return np.stack([render_to_rgb(figure) for figure in figures])
    return render_to_rgb(figures)


def make_grid(I: np.ndarray, ncols: int = 8) -> np.ndarray:  # noqa: N803 (torch's name)
    """N1HW or N3HW images tiled row by row into one 3 x (H*rows) x (W*cols) canvas."""
    if not isinstance(I, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if I.shape[1] == 1:
        I = np.concatenate([I, I, I], 1)
    if I.ndim != 4 or I.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    nimg, _, H, W = I.shape
    ncols = min(nimg, ncols)
    nrows = int(np.ceil(float(nimg) / ncols))
    canvas = np.zeros((3, H * nrows, W * ncols), dtype=I.dtype)
    for i in range(nimg):
        y, x = divmod(i, ncols)
        canvas[:, y * H:(y + 1) * H, x * W:(x + 1) * W] = I[i]
    return canvas


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802 (torch's name)
    """`tensor` laid out as `input_format` (letters N, C, H, W) rearranged to an H x W x 3 (or 4) array."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: "
                             f"{tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        tensor_nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(tensor_nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        tensor_hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        if tensor_hwc.shape[2] == 1:
            tensor_hwc = np.concatenate([tensor_hwc, tensor_hwc, tensor_hwc], 2)
        return tensor_hwc
    if len(input_format) == 2:
        tensor = tensor.transpose([input_format.find(c) for c in "HW"])
        return np.stack([tensor, tensor, tensor], 2)
    raise AssertionError(f"unsupported input_format {input_format}")
