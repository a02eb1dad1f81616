"""The projector plugin's files for `add_embedding`: tensors.tsv, metadata.tsv, sprite.png, projector_config.pbtxt.

Written with plain file I/O into the (local) log directory, in the layout torch writes.
"""

from __future__ import annotations

import io
import math
import os
from typing import Any

import numpy as np
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert_np import make_np
from ._utils import make_grid


def make_tsv(metadata: list[Any], save_path: str, metadata_header: list[Any] | None = None) -> None:
    """One label per line (or tab-separated columns under `metadata_header`) in metadata.tsv."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def make_sprite(label_img: Any, save_path: str) -> None:
    """The label images tiled into one square PNG, sprite.png (floats in [0, 1])."""
    from PIL import Image

    nrow = math.ceil(label_img.shape[0] ** 0.5)
    arranged_chw = make_grid(make_np(label_img), ncols=nrow)
    square_hwc = np.zeros((arranged_chw.shape[2], arranged_chw.shape[2], 3))
    arranged_hwc = arranged_chw.transpose(1, 2, 0)
    square_hwc[:arranged_hwc.shape[0], :, :] = arranged_hwc
    picture = Image.fromarray(np.uint8((square_hwc * 255).clip(0, 255)))
    with io.BytesIO() as buf:
        picture.save(buf, format="PNG")
        data = buf.getvalue()
    with open(os.path.join(save_path, "sprite.png"), "wb") as f:
        f.write(data)


def get_embedding_info(metadata: Any, label_img: Any, subdir: str, global_step: int, tag: str) -> EmbeddingInfo:
    """The projector config entry pointing at one embedding's files."""
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = os.path.join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = os.path.join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = os.path.join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return info


def write_pbtxt(save_path: str, contents: str) -> None:
    """projector_config.pbtxt in the log directory."""
    with open(os.path.join(save_path, "projector_config.pbtxt"), "wb") as f:
        f.write(contents.encode("utf-8"))


def make_mat(matlist: np.ndarray, save_path: str) -> None:
    """The embedding matrix, one tab-separated row per point, in tensors.tsv."""
    with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
        for row in matlist:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode("utf-8"))
