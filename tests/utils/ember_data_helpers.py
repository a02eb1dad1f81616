"""Datasets for the DataLoader tests, at module level so worker processes (fork or spawn) can load them."""

from __future__ import annotations

import os
import random
import signal
import time

import numpy as np

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """dataset[i] = (float i, i * i): deterministic, cheap."""

    def __init__(self, n: int = 20) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return ember.tensor([float(i)]), i * i


class Augmented(Dataset):
    """Each sample mixes in ember, Python and NumPy random draws: equal across runs only if workers are seeded."""

    def __init__(self, n: int = 16) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        noise = float(ember.rand(()).item())
        return {"index": i, "noise": noise, "py": random.random(), "np": float(np.random.rand())}


class Faulty(Dataset):
    """Raises `error` at index `bad`."""

    def __init__(self, n: int = 20, bad: int = 5, error=ValueError) -> None:
        self.n, self.bad, self.error = n, bad, error

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise self.error(f"bad sample {i}")
        return i


class Dying(Dataset):
    """The worker that loads index `bad` exits at once (os._exit) or is killed (SIGKILL)."""

    def __init__(self, n: int = 40, bad: int = 7, how: str = "exit") -> None:
        self.n, self.bad, self.how = n, bad, how

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "exit":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Slow(Dataset):
    """Sleeps `delay` seconds per sample."""

    def __init__(self, n: int = 100, delay: float = 0.05) -> None:
        self.n, self.delay = n, delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


class Counter(IterableDataset):
    """Yields start..end-1, sharded across workers by striding; resumable with state_dict/load_state_dict."""

    def __init__(self, start: int = 0, end: int = 23) -> None:
        self.start, self.end = start, end
        self.next = None  # the next value to yield, once iterating

    def __iter__(self):
        info = get_worker_info()
        worker_id, count = (0, 1) if info is None else (info.id, info.num_workers)
        if self.next is None:
            self.next = self.start + worker_id
        while self.next < self.end:
            value = self.next
            self.next += count
            yield value

    def state_dict(self):
        return {"next": self.next}

    def load_state_dict(self, state) -> None:
        self.next = state["next"]


class PlainCounter(IterableDataset):
    """Like Counter, without state_dict: resumed by fast-forwarding."""

    def __init__(self, end: int = 23) -> None:
        self.end = end

    def __iter__(self):
        info = get_worker_info()
        worker_id, count = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(worker_id, self.end, count))


class Unequal(IterableDataset):
    """Worker w yields 3 * (w + 1) items: workers run out at different times."""

    def __iter__(self):
        info = get_worker_info()
        worker_id = 0 if info is None else info.id
        for k in range(3 * (worker_id + 1)):
            yield 100 * worker_id + k


def add_offset_init(worker_id: int) -> None:
    """A worker_init_fn that leaves a mark the dataset can see."""
    info = get_worker_info()
    info.dataset.offset = 1000 * (worker_id + 1)


class WithOffset(Dataset):
    offset = 0

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i):
        return i + self.offset


class Pids(Dataset):
    """Each sample is (index, the pid of the process that loaded it), slowly."""

    def __len__(self) -> int:
        return 100

    def __getitem__(self, i):
        time.sleep(0.01)
        return i, os.getpid()
