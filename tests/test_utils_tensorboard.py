"""ember.utils.tensorboard.SummaryWriter: event files read back with TensorBoard's own readers, and compared
event by event with the files torch.utils.tensorboard.SummaryWriter writes for the same calls.
"""

from __future__ import annotations

import glob
import io
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("PIL")

import torch  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchSummaryWriter  # noqa: E402

import ember  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _accumulator(log_dir):
    acc = event_accumulator.EventAccumulator(str(log_dir), size_guidance=event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE)
    acc.Reload()
    return acc


def _events(log_dir):
    """Every Event in the (single) events file directly in log_dir, wall times zeroed so files can be compared."""
    files = sorted(glob.glob(os.path.join(str(log_dir), "events.out.tfevents.*")))
    assert len(files) == 1, files
    events = []
    for raw in RawEventFileLoader(files[0]).Load():
        event = event_pb2.Event.FromString(raw)
        event.wall_time = 0
        events.append(event)
    return events


def _write_both(tmp_path, calls, **writer_kwargs):
    """Run `calls(writer, lib)` with an ember and a torch SummaryWriter; return both log dirs."""
    dirs = {}
    for name, writer_cls, lib in (("ember", SummaryWriter, ember), ("torch", TorchSummaryWriter, torch)):
        log_dir = tmp_path / name
        with writer_cls(str(log_dir), **writer_kwargs) as writer:
            calls(writer, lib)
        dirs[name] = log_dir
    return dirs["ember"], dirs["torch"]


def _same_events_as_torch(tmp_path, calls, **writer_kwargs):
    ember_dir, torch_dir = _write_both(tmp_path, calls, **writer_kwargs)
    ember_events, torch_events = _events(ember_dir), _events(torch_dir)
    assert len(ember_events) == len(torch_events)
    for e, t in zip(ember_events, torch_events):
        assert e == t, (e, t)
    return ember_dir


def test_scalars_read_back_and_match_torch(tmp_path):
    def calls(w, lib):
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=100.0 + step)
        w.add_scalar("tensor_value", lib.tensor(2.5), 7, walltime=1.0)
        w.add_scalar("numpy_value", np.float32(0.25), 8, walltime=1.0)
        w.add_scalar("int_step", 3, np.int64(9), walltime=1.0)
        w.add_scalar("new_style", 1.5, 1, walltime=1.0, new_style=True)
        w.add_scalar("double", 1.0 / 3, 1, walltime=1.0, new_style=True, double_precision=True)

    log_dir = _same_events_as_torch(tmp_path, calls)
    acc = _accumulator(log_dir)
    loss = acc.Scalars("loss")
    assert [s.step for s in loss] == [0, 1, 2, 3, 4]
    assert [s.value for s in loss] == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2])
    assert [s.wall_time for s in loss] == [100.0, 101.0, 102.0, 103.0, 104.0]
    assert [(s.step, s.value) for s in acc.Scalars("tensor_value")] == [(7, 2.5)]
    assert [(s.step, s.value) for s in acc.Scalars("numpy_value")] == [(8, 0.25)]
    assert [(s.step, s.value) for s in acc.Scalars("int_step")] == [(9, 3.0)]
    (new_style,) = acc.Tensors("new_style")
    assert list(new_style.tensor_proto.float_val) == [1.5]
    (double,) = acc.Tensors("double")
    assert list(double.tensor_proto.double_val) == [1.0 / 3]
    with pytest.raises(AssertionError, match="one element"):
        SummaryWriter(str(tmp_path / "x")).add_scalar("bad", ember.ones(2))


def test_add_scalars_writes_one_run_per_series_like_torch(tmp_path):
    def calls(w, lib):
        for step in range(3):
            w.add_scalars("run/main", {"sin": step * 0.5, "cos": lib.tensor(float(step))}, step, walltime=5.0)

    ember_dir, torch_dir = _write_both(tmp_path, calls)
    for log_dir in (ember_dir, torch_dir):
        assert sorted(n for n in os.listdir(log_dir) if not n.startswith("events")) == ["run_main_cos", "run_main_sin"]
    for series, expected in (("sin", [0.0, 0.5, 1.0]), ("cos", [0.0, 1.0, 2.0])):
        ours, theirs = _events(ember_dir / f"run_main_{series}"), _events(torch_dir / f"run_main_{series}")
        assert ours == theirs
        scalars = _accumulator(ember_dir / f"run_main_{series}").Scalars("run/main")
        assert [(s.step, s.value) for s in scalars] == list(zip([0, 1, 2], expected))


def test_histograms_read_back_and_match_torch(tmp_path):
    data = np.random.default_rng(0).normal(size=(40, 25)).astype(np.float32)

    def calls(w, lib):
        values = lib.tensor(data)
        w.add_histogram("weights", values, 0, walltime=1.0)
        w.add_histogram("weights", values * 2 + 1, 1, walltime=2.0)
        w.add_histogram("numpy", data.astype(np.float64), 0, walltime=1.0)
        w.add_histogram("auto", values, 0, bins="auto", walltime=1.0)
        w.add_histogram("ten", values, 0, bins=10, walltime=1.0)
        w.add_histogram("max_bins", values, 0, bins=50, max_bins=7, walltime=1.0)
        w.add_histogram("ints", lib.arange(10), 0, walltime=1.0)
        w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3], global_step=4, walltime=1.0)

    log_dir = _same_events_as_torch(tmp_path, calls)
    acc = _accumulator(log_dir)
    first, second = acc.Histograms("weights")
    assert (first.step, second.step) == (0, 1)
    hist = first.histogram_value
    assert hist.num == data.size and sum(hist.bucket) == data.size
    assert hist.min == pytest.approx(float(data.min())) and hist.max == pytest.approx(float(data.max()))
    assert hist.sum == pytest.approx(float(data.astype(float).sum()))
    assert hist.sum_squares == pytest.approx(float((data.astype(float) ** 2).sum()))
    assert hist.bucket[0] == 0  # torch keeps an empty bucket on the left for the leftmost limit
    ten = acc.Histograms("ten")[0].histogram_value
    counts, edges = np.histogram(data.astype(float).ravel(), bins=10)
    assert list(ten.bucket) == [0] + counts.tolist() and list(ten.bucket_limit) == pytest.approx(edges)
    merged = acc.Histograms("max_bins")[0].histogram_value  # 50 bins merged 7 at a time: 8, plus the empty left one
    assert len(merged.bucket) == 9 and merged.bucket[0] == 0 and sum(merged.bucket) == data.size
    raw = acc.Histograms("raw")[0]
    assert raw.step == 4 and list(raw.histogram_value.bucket) == [1, 2, 3]
    with pytest.raises(ValueError, match="bucket_limits"):
        SummaryWriter(str(tmp_path / "x")).add_histogram_raw("r", 0, 1, 1, 1, 1, [1.0], [1, 2])
    with pytest.raises(ValueError, match="no element"):
        SummaryWriter(str(tmp_path / "y")).add_histogram("empty", ember.zeros(0))


def test_default_bins_are_tensorflows(tmp_path):
    with SummaryWriter(str(tmp_path / "e")) as ours, TorchSummaryWriter(str(tmp_path / "t")) as theirs:
        assert ours.default_bins == theirs.default_bins
    bins = ours.default_bins
    middle = len(bins) // 2
    assert bins[middle] == 0 and bins[middle + 1] == 1e-12 and bins[0] == -bins[-1]


def _png_size(encoded):
    from PIL import Image

    with Image.open(io.BytesIO(encoded)) as picture:
        return picture.size, picture.mode


def test_images_read_back_and_match_torch(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 8, 10), dtype=np.float32)
    hwc_uint8 = (rng.random((6, 5, 3)) * 255).astype(np.uint8)
    batch = rng.random((5, 3, 4, 6), dtype=np.float32)

    def calls(w, lib):
        w.add_image("chw", lib.tensor(chw), 0, walltime=1.0)
        w.add_image("hwc", lib.tensor(hwc_uint8), 0, walltime=1.0, dataformats="HWC")
        w.add_image("hw", lib.tensor(chw[0]), 0, walltime=1.0, dataformats="HW")
        w.add_image("gray", lib.tensor(chw[:1]), 0, walltime=1.0)
        w.add_image("numpy", chw * 2 - 0.5, 0, walltime=1.0)  # out of range: clipped
        w.add_images("batch", lib.tensor(batch), 0, walltime=1.0)
        w.add_images("batch_nhwc", lib.tensor(batch.transpose(0, 2, 3, 1)), 0, walltime=1.0, dataformats="NHWC")

    log_dir = _same_events_as_torch(tmp_path, calls)
    acc = _accumulator(log_dir)
    (chw_event,) = acc.Images("chw")
    assert (chw_event.width, chw_event.height) == (10, 8)
    assert _png_size(chw_event.encoded_image_string) == ((10, 8), "RGB")
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(chw_event.encoded_image_string)))
    assert np.array_equal(pixels, (chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    hwc = np.asarray(Image.open(io.BytesIO(acc.Images("hwc")[0].encoded_image_string)))
    assert np.array_equal(hwc, hwc_uint8)
    assert (acc.Images("hw")[0].width, acc.Images("hw")[0].height) == (10, 8)
    batch_event = acc.Images("batch")[0]  # 5 images in a grid of 5 columns, 1 row
    assert (batch_event.width, batch_event.height) == (30, 4)
    assert acc.Images("batch_nhwc")[0].encoded_image_string == batch_event.encoded_image_string
    with pytest.raises(AssertionError, match="size of input tensor and input format are different"):
        SummaryWriter(str(tmp_path / "x")).add_image("bad", ember.rand(3, 4, 4), dataformats="HWCN")


def test_text_reads_back_and_matches_torch(tmp_path):
    def calls(w, lib):
        w.add_text("notes", "hello **world**", 3, walltime=1.0)
        w.add_text("notes", "ünïcode", 4, walltime=1.0)

    log_dir = _same_events_as_torch(tmp_path, calls)
    acc = _accumulator(log_dir)
    events = acc.Tensors("notes/text_summary")
    assert [e.step for e in events] == [3, 4]
    assert [e.tensor_proto.string_val[0].decode("utf-8") for e in events] == ["hello **world**", "ünïcode"]
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"


def test_tensor_matches_torch(tmp_path):
    def calls(w, lib):
        w.add_tensor("t", lib.tensor([[1.0, 2.0], [3.0, 4.0]]), 0, walltime=1.0)
        w.add_tensor("i", lib.tensor([1, 2, 3]), 0, walltime=1.0)
        w.add_tensor("b", lib.tensor([True, False]), 0, walltime=1.0)

    _same_events_as_torch(tmp_path, calls)


def _hparams_data(run_dir):
    acc = _accumulator(run_dir)
    content = acc.PluginTagToContent("hparams")
    return {tag: plugin_data_pb2.HParamsPluginData.FromString(blob) for tag, blob in content.items()}, acc


def test_hparams_read_back_and_match_torch(tmp_path):
    def calls(w, lib):
        w.add_hparams({"lr": 0.1, "bsize": 16, "optimizer": "adam", "nesterov": True, "skip": None},
                      {"hparam/accuracy": 0.9, "hparam/loss": 0.25}, run_name="trial",
                      hparam_domain_discrete={"optimizer": ["adam", "sgd"]}, global_step=2)

    ember_dir, torch_dir = _write_both(tmp_path, calls)
    assert _events(ember_dir / "trial") == _events(torch_dir / "trial")
    data, acc = _hparams_data(ember_dir / "trial")
    assert set(data) == {"_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    start = data["_hparams_/session_start_info"].session_start_info
    assert start.hparams["lr"].number_value == pytest.approx(0.1)
    assert start.hparams["bsize"].number_value == 16
    assert start.hparams["optimizer"].string_value == "adam"
    assert "skip" not in start.hparams
    experiment = data["_hparams_/experiment"].experiment
    assert [info.name for info in experiment.hparam_infos] == ["lr", "bsize", "optimizer", "nesterov"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy", "hparam/loss"]
    assert [(s.step, s.value) for s in acc.Scalars("hparam/accuracy")] == [(2, pytest.approx(0.9))]
    with pytest.raises(TypeError, match="should be dictionary"):
        SummaryWriter(str(tmp_path / "x")).add_hparams([("lr", 1)], {})
    with pytest.raises(TypeError, match="hparam_domain_discrete"):
        SummaryWriter(str(tmp_path / "y")).add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})
    with pytest.raises(ValueError, match="value should be one of"):
        SummaryWriter(str(tmp_path / "z")).add_hparams({"lr": [1]}, {})


def test_purge_step_and_filename_suffix_match_torch(tmp_path):
    def calls(w, lib):
        w.add_scalar("x", 1.0, 10, walltime=1.0)

    ember_dir = _same_events_as_torch(tmp_path, calls, purge_step=5, filename_suffix=".mine")
    (name,) = os.listdir(ember_dir)
    assert name.startswith("events.out.tfevents.") and name.endswith(".mine")
    events = _events(ember_dir)
    assert events[0].file_version == "brain.Event:2"
    assert events[1].step == 5 and events[1].file_version == "brain.Event:2"
    assert events[2].step == 5 and events[2].session_log.status == event_pb2.SessionLog.START


def test_default_log_dir_and_lifecycle(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    log_dir = writer.get_logdir()
    assert os.path.dirname(log_dir) == "runs"
    assert os.path.basename(log_dir).endswith("_" + socket.gethostname() + "_lr0.1")
    assert os.path.isdir(log_dir)
    writer.add_scalar("a", 1.0, 0)
    writer.flush()  # readable before close
    assert [s.value for s in _accumulator(log_dir).Scalars("a")] == [1.0]
    writer.close()
    writer.close()  # a second close is a no-op
    assert writer.all_writers is None
    writer.add_scalar("a", 2.0, 1)  # writing again opens a new events file
    writer.close()
    assert len(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))) == 2
    with SummaryWriter(tmp_path / "pathlike") as w:
        w.add_scalar("p", 1.0, 0)
    assert w.all_writers is None
    assert [s.value for s in _accumulator(tmp_path / "pathlike").Scalars("p")] == [1.0]


def test_add_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(2, 1.5), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_figure("fig", figure, 0)
        w.add_figure("figs", [plt.figure(figsize=(1, 1), dpi=20), plt.figure(figsize=(1, 1), dpi=20)], 1)
    acc = _accumulator(tmp_path)
    event = acc.Images("fig")[0]
    assert (event.width, event.height) == (100, 75)
    assert not plt.fignum_exists(figure.number)  # closed by default, as torch does
    assert (acc.Images("figs")[0].width, acc.Images("figs")[0].height) == (40, 20)


def test_add_embedding_matches_torch(tmp_path):
    mat = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    label_img = np.random.default_rng(2).random((4, 3, 5, 5), dtype=np.float32)
    labels = ["a", "b", "c", "d"]

    def calls(w, lib):
        w.add_embedding(lib.tensor(mat), metadata=labels, label_img=lib.tensor(label_img), global_step=3, tag="my/emb")
        w.add_embedding(lib.tensor(mat), metadata=[[1, "x"], [2, "y"], [3, "z"], [4, "w"]],
                        metadata_header=["id", "name"])

    ember_dir, torch_dir = _write_both(tmp_path, calls)
    for rel in ("projector_config.pbtxt", "00003/my%2femb/tensors.tsv", "00003/my%2femb/metadata.tsv",
                "00003/my%2femb/sprite.png", "00000/default/tensors.tsv", "00000/default/metadata.tsv"):
        assert (ember_dir / rel).read_bytes() == (torch_dir / rel).read_bytes(), rel
    assert (ember_dir / "00003/my%2femb/metadata.tsv").read_text() == "a\nb\nc\nd\n"
    assert (ember_dir / "00000/default/tensors.tsv").read_text().splitlines()[1] == "0.30000001192092896\t0.4000000059604645\t0.5"


def test_reachable_from_ember_utils_and_no_torch_import():
    code = ("import sys, ember; w = ember.utils.tensorboard.SummaryWriter; "
            "import ember.utils.benchmark, ember.utils._pytree; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/tmp")
    assert out.stdout.split() == ["False"]


def test_missing_tensorboard_is_a_module_not_found_error():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import ember.utils.tensorboard\n"
            "except ImportError as e:\n    print(type(e).__name__, e.name, 'pip install tensorboard' in str(e))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["ModuleNotFoundError", "tensorboard", "True"]
