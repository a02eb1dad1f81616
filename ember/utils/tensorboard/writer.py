"""SummaryWriter and FileWriter: torch.utils.tensorboard's writers, on tensorboard's EventFileWriter.

A SummaryWriter owns one FileWriter for its log directory (default `runs/<Mon DD_HH-MM-SS>_<hostname><comment>`)
plus one per `add_scalars` series, each appending `Event` protobufs to its own events file.  Events are queued
and written by tensorboard's writer thread; `flush()` forces them to disk, `close()` (or leaving a `with`
block) flushes and closes every file.  A closed writer reopens a new file on the next `add_*`.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ._convert_np import make_np
from ._embedding import get_embedding_info, make_mat, make_sprite, make_tsv, write_pbtxt
from ._utils import figure_to_image
from .summary import histogram, histogram_raw, hparams, image, scalar, tensor_proto, text

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes Event protobufs to one new events file in `log_dir`, asynchronously (tensorboard's EventFileWriter)."""

    def __init__(self, log_dir: str | os.PathLike, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The directory the events file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: int | None = None, walltime: float | None = None) -> None:
        """Stamp `event` with the wall time (now unless given) and step, and queue it."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)  # a NumPy or tensor step would not pass protobuf's type check
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step: int | None = None, walltime: float | None = None) -> None:
        """Queue `summary` wrapped in an Event."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        """Write every queued event to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the events file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """After `close`, start a new events file in the same directory."""
        self.event_writer.reopen()


def _default_bins() -> list[float]:
    """TensorFlow's histogram bucket edges: +-1e-12 growing by 10 % per bucket up to 1e20, and 0."""
    v = 1e-12
    buckets, neg_buckets = [], []
    while v < 1e20:
        buckets.append(v)
        neg_buckets.append(-v)
        v *= 1.1
    return neg_buckets[::-1] + [0] + buckets


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters and embeddings for TensorBoard.

    Args:
        log_dir: where to write; default `runs/<Mon DD_HH-MM-SS>_<hostname><comment>`.
        comment: appended to the default log_dir (ignored when log_dir is given).
        purge_step: on resuming a crashed run at step T, hide the old events at steps >= T.
        max_queue, flush_secs: queue length and seconds between automatic flushes.
        filename_suffix: appended to the events file names.
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The main FileWriter, created again if the writer was closed."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str | os.PathLike:
        """The directory events are written to."""
        return self.log_dir

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list[Any]] | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Record a run's hyperparameters and final metrics for the HParams dashboard.

        They go to a sub-run `<log_dir>/<run_name>` (default: the current time), with each metric also written
        there as a scalar.
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            w_hp._get_file_writer().add_summary(exp, global_step)
            w_hp._get_file_writer().add_summary(ssi, global_step)
            w_hp._get_file_writer().add_summary(sei, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False, double_precision: bool = False) -> None:
        """Record one number (a Python number, a NumPy scalar or a one-element tensor) at `global_step`."""
        summary = scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Record several series in one chart: each goes to its own run `<log_dir>/<main_tag>_<tag>`."""
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, scalar_value in tag_scalar_dict.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            if fw_tag not in self.all_writers:
                self.all_writers[fw_tag] = FileWriter(fw_tag, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers[fw_tag].add_summary(scalar(main_tag, scalar_value), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None, walltime: float | None = None) -> None:
        """Record a whole tensor's values (the "tensor" plugin)."""
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Record the distribution of `values` (tensor or array).

        `bins` is "tensorflow" (TensorFlow's fixed exponential buckets) or anything np.histogram accepts.
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float, sum_squares: float,
                          bucket_limits: Any, bucket_counts: Any, global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Record a histogram from precomputed statistics; `bucket_limits` are the buckets' upper edges."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(
            histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """Record an image: CHW by default (HWC, HW, ... via `dataformats`); float in [0, 1] or uint8."""
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """Record a batch of images (NCHW by default), tiled into one grid image."""
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """Record a matplotlib figure (or a list of them) rendered to an image; needs matplotlib."""
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats="NCHW" if isinstance(figure, list) else "CHW")

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Record a string (rendered as markdown by TensorBoard)."""
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    @staticmethod
    def _encode(rawstr: str) -> str:
        """Percent-escape `%`, `/` and `\\` so a tag can be a directory name."""
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(self, mat: Any, metadata: list[Any] | None = None, label_img: Any = None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: list[Any] | None = None) -> None:
        """Record points (rows of `mat`, N x D) for the embedding projector, with optional labels and images."""
        mat = make_np(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        save_path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        if os.path.exists(save_path):
            if os.path.isdir(save_path):
                print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
            else:
                raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
        else:
            os.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        make_mat(mat, save_path)
        from google.protobuf import text_format
        from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([get_embedding_info(metadata, label_img, subdir, global_step, tag)])
        write_pbtxt(self._get_file_writer().get_logdir(), text_format.MessageToString(self._projector_config))

    def flush(self) -> None:
        """Write every queued event of every file to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every events file (a second close does nothing)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()
