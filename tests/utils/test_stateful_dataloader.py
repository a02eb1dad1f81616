"""StatefulDataLoader: a loader restored from state_dict() continues with exactly the batches of an
uninterrupted run, mid-epoch and across the following epochs, with and without workers."""

from __future__ import annotations

import pickle

import pytest
from ember_data_helpers import Counter, PlainCounter, Squares

import ember
from ember.utils.data import StatefulDataLoader


def values(batch):
    if isinstance(batch, ember.Tensor):
        return batch.tolist()
    return [values(b) for b in batch]


def make_map_loader(num_workers, **kwargs):
    return StatefulDataLoader(
        Squares(23),
        batch_size=3,
        shuffle=True,
        num_workers=num_workers,
        generator=ember.Generator().manual_seed(7),
        **kwargs,
    )


def uninterrupted(make, epochs=2):
    loader = make()
    return [[values(b) for b in loader] for _ in range(epochs)]


def interrupted(make, stop_after, epochs=2, roundtrip=True):
    """Run `stop_after` batches, save, resume in a fresh loader; the remaining batches of `epochs` epochs."""
    loader = make()
    iterator = iter(loader)
    first = [values(next(iterator)) for _ in range(stop_after)]
    state = loader.state_dict()
    if roundtrip:
        state = pickle.loads(pickle.dumps(state))  # a state survives a checkpoint file
    del iterator, loader
    resumed = make()
    resumed.load_state_dict(state)
    rest = [values(b) for b in resumed]
    later = [[values(b) for b in resumed] for _ in range(epochs - 1)]
    return [first + rest] + later


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("stop_after", [0, 1, 4, 7, 8])
def test_map_style_resume_is_exact(num_workers, stop_after):
    make = lambda: make_map_loader(num_workers)  # noqa: E731
    assert interrupted(make, stop_after) == uninterrupted(make)


def test_map_style_resume_matches_plain_dataloader():
    from ember.utils.data import DataLoader

    plain = DataLoader(Squares(23), batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(7))
    assert [[values(b) for b in plain] for _ in range(2)] == uninterrupted(lambda: make_map_loader(0))


def test_resume_across_worker_counts():
    """The state is the sampler's: save with 2 workers, resume with none."""
    loader = make_map_loader(2)
    iterator = iter(loader)
    first = [values(next(iterator)) for _ in range(3)]
    resumed = make_map_loader(0)
    resumed.load_state_dict(loader.state_dict())
    assert first + [values(b) for b in resumed] == uninterrupted(lambda: make_map_loader(0), epochs=1)[0]


def test_state_at_epoch_end_and_before_start():
    loader = make_map_loader(0)
    list(loader)
    state = loader.state_dict()
    assert state["_finished"]
    resumed = make_map_loader(0)
    resumed.load_state_dict(state)
    assert [values(b) for b in resumed] == uninterrupted(lambda: make_map_loader(0))[1]
    fresh = make_map_loader(0)
    again = make_map_loader(0)
    again.load_state_dict(fresh.state_dict())
    assert [values(b) for b in again] == uninterrupted(lambda: make_map_loader(0), epochs=1)[0]


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("stop_after", [0, 2, 3, 5])
def test_iterable_with_state_dict_resume_is_exact(num_workers, stop_after):
    make = lambda: StatefulDataLoader(Counter(0, 23), batch_size=3, num_workers=num_workers)  # noqa: E731
    assert interrupted(make, stop_after, epochs=1) == uninterrupted(make, epochs=1)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iterable_without_state_dict_is_fast_forwarded(num_workers):
    make = lambda: StatefulDataLoader(PlainCounter(17), batch_size=2, num_workers=num_workers)  # noqa: E731
    assert interrupted(make, 3, epochs=1) == uninterrupted(make, epochs=1)


def test_load_state_dict_rejects_foreign_states():
    with pytest.raises(ValueError, match="unsupported StatefulDataLoader state"):
        make_map_loader(0).load_state_dict({"something": 1})
