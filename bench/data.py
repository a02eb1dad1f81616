"""DataLoader benchmarks: throughput (samples/s) of ember's loader against torch's, and two of ember's choices.

The harness (`python -m bench --only data`) times WORKLOADS, one epoch per call, ember against torch:

* a TensorDataset of 20k 3x32x32 float32 images, batch 64, num_workers 0 and 2: the loader's own overhead
  (indexing, collating, moving batches between processes);
* a dataset that decodes and augments each sample in Python (NumPy work plus Python loops), 2048 samples,
  num_workers 0 and 2: the case workers exist for.

`python -m bench.data` prints the same as samples/s, plus:

* shared memory against pickling for the worker -> main transfer (NOTE [ Shared-memory batches ]);
* the copy-on-read measurement (NOTE [ Copy-on-read in forked workers ]): the private memory each worker
  holds after one epoch over a dataset whose metadata is a list of Python dicts, against the same records in
  a SerializedList.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.utils.data as torch_data

import ember
import ember.utils.data as ember_data
from ember.utils.data import dataloader as ember_dataloader

from .common import Workload

IMAGES = 20_000
DECODED = 2_048
BATCH = 64

_rng = np.random.default_rng(0)
_images = _rng.standard_normal((IMAGES, 3, 32, 32)).astype(np.float32)
_labels = _rng.integers(0, 10, IMAGES)
_raw = _rng.integers(0, 256, (64, 3, 40, 40), dtype=np.uint8)  # "encoded" source images, decoded per sample


class Decoded:
    """Builds each sample in Python: pick a source, decode row by row, random crop + flip, normalise."""

    def __init__(self, lib, data_module) -> None:
        self.lib = lib

    def __len__(self) -> int:
        return DECODED

    def __getitem__(self, index):
        source = _raw[index % len(_raw)]
        rows = [source[:, row, :].astype(np.float32) for row in range(source.shape[1])]  # a Python loop
        image = np.stack(rows, axis=1)
        rng = np.random.default_rng(index)
        top, left = (int(v) for v in rng.integers(0, 9, 2))
        image = image[:, top : top + 32, left : left + 32]
        if index % 2:
            image = image[:, :, ::-1]
        image = (image / 255.0 - 0.5) / 0.25
        checksum = 0
        for value in image[0, :4, :].ravel().tolist():  # per-pixel Python work, as a real decoder has
            checksum += int(value * 10) % 7
        return self.lib.from_numpy(np.ascontiguousarray(image, dtype=np.float32)), index % 10 + checksum % 1


def _tensor_dataset(lib, data_module):
    return data_module.TensorDataset(lib.from_numpy(_images), lib.from_numpy(_labels))


def _decoded_dataset(lib, data_module):
    return Decoded(lib, data_module)


def _epoch(lib, data_module, make_dataset, num_workers):
    """A callable that runs one epoch (fresh iterator, workers included) and returns the last labels."""
    # persistent workers: one epoch measures loading, not process start-up (as a training loop reuses them)
    loader = data_module.DataLoader(make_dataset(lib, data_module), batch_size=BATCH, num_workers=num_workers,
                                    persistent_workers=num_workers > 0)

    def run():
        last = None
        for _, labels in loader:
            last = labels
        return None if last is None else last.shape

    return run


def _pair(name, make_dataset, num_workers, samples) -> Workload:
    return Workload(
        name=name,
        ember_fn=_epoch(ember, ember_data, make_dataset, num_workers),
        torch_fn=_epoch(torch, torch_data, make_dataset, num_workers),
        note=f"one epoch = {samples} samples",
    )


WORKLOADS = [
    _pair("data: TensorDataset 20k 3x32x32, bs64, workers=0", _tensor_dataset, 0, IMAGES),
    _pair("data: TensorDataset 20k 3x32x32, bs64, workers=2", _tensor_dataset, 2, IMAGES),
    _pair("data: python decode+augment 2k, bs64, workers=0", _decoded_dataset, 0, DECODED),
    _pair("data: python decode+augment 2k, bs64, workers=2", _decoded_dataset, 2, DECODED),
]


# ---------------------------------------------------------------- python -m bench.data


def _samples_per_second(run, samples: int, repeats: int = 2) -> float:
    run()  # warm up (imports, first fork)
    best = min(_timed(run) for _ in range(repeats))
    return samples / best


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def throughput_report() -> None:
    print(f"{'workload':52} {'torch samples/s':>16} {'ember samples/s':>16} {'ember/torch':>12}")
    for name, make_dataset, workers, samples in [
        ("TensorDataset 20k 3x32x32, bs64, workers=0", _tensor_dataset, 0, IMAGES),
        ("TensorDataset 20k 3x32x32, bs64, workers=2", _tensor_dataset, 2, IMAGES),
        ("python decode+augment 2k, bs64, workers=0", _decoded_dataset, 0, DECODED),
        ("python decode+augment 2k, bs64, workers=2", _decoded_dataset, 2, DECODED),
    ]:
        theirs = _samples_per_second(_epoch(torch, torch_data, make_dataset, workers), samples)
        ours = _samples_per_second(_epoch(ember, ember_data, make_dataset, workers), samples)
        print(f"{name:52} {theirs:16,.0f} {ours:16,.0f} {ours / theirs:11.2f}x")


def transport_report() -> None:
    print(f"\n{'ember worker -> main transfer (workers=2)':52} {'samples/s':>16}")
    for transport in ("shared_memory", "pickle"):
        ember_dataloader.BATCH_TRANSPORT = transport
        for name, make_dataset, samples in [("TensorDataset 20k", _tensor_dataset, IMAGES)]:
            rate = _samples_per_second(_epoch(ember, ember_data, make_dataset, 2), samples)
            print(f"{name + ', ' + transport:52} {rate:16,.0f}")
        # the same with bigger samples: 3x128x128 (the transfer is a larger share of the time)
        big = ember.from_numpy(np.repeat(np.repeat(_images[:2000], 4, axis=2), 4, axis=3))
        dataset = ember_data.TensorDataset(big, ember.from_numpy(_labels[:2000]))
        loader = ember_data.DataLoader(dataset, batch_size=BATCH, num_workers=2)
        rate = _samples_per_second(lambda loader=loader: [None for _ in loader], 2000)
        print(f"{'TensorDataset 2k 3x128x128, ' + transport:52} {rate:16,.0f}")
    ember_dataloader.BATCH_TRANSPORT = "shared_memory"


class _Records(ember_data.Dataset):
    def __init__(self, records) -> None:
        self.records = records

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index):
        return self.records[index]["label"]


def _private_megabytes(pid: int) -> float:
    """Memory only this process holds (pages it has written since the fork, or allocated): Private_* in smaps."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total / 1024


def memory_report(count: int = 400_000) -> None:
    """Private memory per worker after one epoch: a list of dicts against a SerializedList of the same dicts."""
    print(f"\ncopy-on-read: {count:,} records {{'name': str, 'label': int}}, 2 forked workers, one epoch")
    records = [{"name": f"image_{i:07d}.png", "label": i % 10} for i in range(count)]
    for label, data in (("list of dicts", records), ("SerializedList", ember_data.SerializedList(records))):
        loader = ember_data.DataLoader(_Records(data), batch_size=1024, num_workers=2, persistent_workers=True)
        iterator = iter(loader)
        next(iterator)
        pids = [worker.pid for worker in iterator._workers]
        before = [_private_megabytes(pid) for pid in pids]
        for _ in iterator:
            pass
        after = [_private_megabytes(pid) for pid in pids]
        growth = ", ".join(f"{b:.0f} -> {a:.0f} MB" for b, a in zip(before, after))
        print(f"  {label:16} worker private memory after batch 1 -> after the epoch: {growth}")
        iterator._shutdown_workers()


if __name__ == "__main__":
    throughput_report()
    transport_report()
    memory_report()
