"""Summary protobuf builders, one per kind of data: scalar, histogram, image, text, hparams, tensor.

Each returns a `Summary` (tensorboard.compat.proto) laid out as torch.utils.tensorboard.summary lays it out,
so TensorBoard and event-file readers see the same tags, plugin names and values for the same calls.
Histograms follow torch's `make_histogram`: NumPy bins, then trimmed to the support, with an empty bucket on
the left so the leftmost limit is kept.
"""

from __future__ import annotations

import io
import logging
import struct
from typing import Any

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert_np import make_np
from ._utils import convert_to_HWC

__all__ = ["half_to_int", "int_to_half", "hparams", "scalar", "histogram_raw", "histogram", "make_histogram",
           "image", "make_image", "text", "tensor_proto"]

logger = logging.getLogger(__name__)


def half_to_int(f: float) -> int:
    """The bits of `f` as a float32, read as an int32 (what torch writes into a TensorProto's half_val)."""
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i: int) -> float:
    """The inverse of `half_to_int`."""
    return struct.unpack("f", struct.pack("i", i))[0]


def _tensor_type_map() -> dict[Any, tuple[str, str, Any]]:
    """ember dtype -> (TensorProto dtype, value field, converter), torch's table."""
    import ember

    def halves(t: Any) -> list[int]:
        return [half_to_int(x) for x in t.flatten().tolist()]

    def complexes(t: Any) -> list[float]:
        return ember.view_as_real(t).flatten().tolist()

    def plain(t: Any) -> list[Any]:
        return t.flatten().tolist()

    return {
        ember.float16: ("DT_HALF", "half_val", halves),
        ember.bfloat16: ("DT_BFLOAT16", "half_val", halves),
        ember.float32: ("DT_FLOAT", "float_val", plain),
        ember.float64: ("DT_DOUBLE", "double_val", plain),
        ember.int8: ("DT_INT8", "int_val", plain),
        ember.qint8: ("DT_UINT8", "int_val", plain),
        ember.int16: ("DT_INT16", "int_val", plain),
        ember.int32: ("DT_INT32", "int_val", plain),
        ember.qint32: ("DT_INT32", "int_val", plain),
        ember.int64: ("DT_INT64", "int64_val", plain),
        ember.complex64: ("DT_COMPLEX64", "scomplex_val", complexes),
        ember.bool: ("DT_BOOL", "bool_val", plain),
        ember.complex128: ("DT_COMPLEX128", "dcomplex_val", complexes),
        ember.uint8: ("DT_UINT8", "uint32_val", plain),
        ember.quint8: ("DT_UINT8", "uint32_val", plain),
    }


def _calc_scale_factor(tensor: np.ndarray) -> int:
    return 1 if tensor.dtype == np.uint8 else 255


def _plugin_summary(tag: str, plugin_name: str, content: bytes) -> Summary:
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin_name, content=content))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd)])


def hparams(hparam_dict: dict | None = None, metric_dict: dict | None = None,
            hparam_domain_discrete: dict[str, list[Any]] | None = None) -> tuple[Summary, Summary, Summary]:
    """The hparams plugin's three summaries: the experiment (names), the session start (values), the session end.

    Values may be int, float, str, bool or a one-element tensor; None values are skipped.
    """
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (
        EXPERIMENT_TAG,
        PLUGIN_DATA_VERSION,
        PLUGIN_NAME,
        SESSION_END_INFO_TAG,
        SESSION_START_INFO_TAG,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    import ember

    if not isinstance(hparam_dict, dict):
        logger.warning("parameter: hparam_dict should be a dictionary, nothing logged.")
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        logger.warning("parameter: metric_dict should be a dictionary, nothing logged.")
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")

    hps = []
    ssi = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        # torch tests int/float before bool, so a bool is recorded as a number; kept for identical files
        if isinstance(v, (int, float)):
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            kind, field = "DATA_TYPE_STRING", "string_value"
        elif isinstance(v, ember.Tensor):
            ssi.hparams[k].number_value = make_np(v)[0]
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
            continue
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(ssi.hparams[k], field, v)
        domain = None
        if k in hparam_domain_discrete:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in hparam_domain_discrete[k]])
        hps.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=domain))

    ssi_summary = _plugin_summary(SESSION_START_INFO_TAG, PLUGIN_NAME, HParamsPluginData(
        session_start_info=ssi, version=PLUGIN_DATA_VERSION).SerializeToString())
    experiment = Experiment(hparam_infos=hps, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    exp_summary = _plugin_summary(EXPERIMENT_TAG, PLUGIN_NAME, HParamsPluginData(
        experiment=experiment, version=PLUGIN_DATA_VERSION).SerializeToString())
    sei = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    sei_summary = _plugin_summary(SESSION_END_INFO_TAG, PLUGIN_NAME, HParamsPluginData(
        session_end_info=sei, version=PLUGIN_DATA_VERSION).SerializeToString())
    return exp_summary, ssi_summary, sei_summary


def scalar(name: str, tensor: Any, collections: Any = None, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    """A one-value summary: `simple_value` (old style) or a scalars-plugin tensor (new style)."""
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {tensor.size} "
                             f"and {tensor.ndim} dimensions.")
    value = float(tensor)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[value], dtype="DT_FLOAT"))
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=smd)])


def tensor_proto(tag: str, tensor: Any) -> Summary:
    """The whole tensor as a TensorProto under the "tensor" plugin."""
    if tensor.numel() * tensor.element_size() >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    type_map = _tensor_type_map()
    if tensor.dtype not in type_map:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field_name, convert = type_map[tensor.dtype]
    proto = TensorProto(dtype=dtype, tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=x)
                                                                        for x in tensor.shape]),
                        **{field_name: convert(tensor)})
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd, tensor=proto)])


def histogram_raw(name: str, min: float, max: float, num: int, sum: float, sum_squares: float,
                  bucket_limits: Any, bucket_counts: Any) -> Summary:
    """A histogram summary from precomputed statistics and buckets (upper limits and counts)."""
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares, bucket_limit=bucket_limits,
                          bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """A histogram summary of `values` (any shape) with NumPy-style `bins`."""
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(make_np(values).astype(float), bins,
                                                                        max_bins))])


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None = None) -> HistogramProto:
    """The HistogramProto of `values`: buckets over the support only, merged down to `max_bins` if given."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        remainder = num_bins % subsampling
        if remainder != 0:
            counts = np.pad(counts, pad_width=[[0, subsampling - remainder]], mode="constant", constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits
    # the first and last non-empty buckets bound the support
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    # TensorBoard keeps right limits only: keep one (possibly empty) bucket to the left for the leftmost limit
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def image(tag: str, tensor: Any, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """A PNG image summary: floats are taken as [0, 1] and uint8 as [0, 255]; out-of-range values are clipped."""
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    scale_factor = _calc_scale_factor(tensor)
    tensor = (tensor.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(tensor, rescale=rescale))])


def make_image(tensor: np.ndarray, rescale: float = 1) -> Summary.Image:
    """An HWC uint8 array as a PNG-encoded `Summary.Image` (Pillow does the encoding, as in torch)."""
    from PIL import Image

    height, width, channel = tensor.shape
    picture = Image.fromarray(tensor)
    picture = picture.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as output:
        picture.save(output, format="PNG")
        encoded = output.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channel, encoded_image_string=encoded)


def text(tag: str, text: str) -> Summary:
    """A text-plugin summary holding `text` (markdown) under the tag `<tag>/text_summary`."""
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=smd, tensor=proto)])
