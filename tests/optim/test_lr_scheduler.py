"""Learning-rate schedulers vs torch: 40-step lr (and momentum) sequences with a state_dict round trip mid-way."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import ember

STEPS = 40
RESUME_AT = 17


def _optimizer(lib, kind="SGD"):
    params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.5}]
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=1.0)
    return lib.optim.SGD(groups, lr=1.0, momentum=0.9)


def _lambda(epoch):
    return 0.95**epoch


def _sequential(lib, opt):
    s = lib.optim.lr_scheduler
    return s.SequentialLR(opt, [s.ConstantLR(opt, factor=0.5, total_iters=4), s.ExponentialLR(opt, gamma=0.9)],
                          milestones=[8])


def _chained(lib, opt):
    s = lib.optim.lr_scheduler
    return s.ChainedScheduler([s.ConstantLR(opt, factor=0.5, total_iters=6), s.ExponentialLR(opt, gamma=0.95)])


# name -> (optimizer kind, scheduler builder); the builder takes (lib, optimizer)
SCHEDULERS = {
    "LambdaLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, _lambda)),
    "LambdaLR-list": ("SGD", lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, [_lambda, lambda e: 1 / (e + 1)])),
    "MultiplicativeLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9)),
    "StepLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=7, gamma=0.5)),
    "MultiStepLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.MultiStepLR(o, [5, 12, 12, 30], gamma=0.5)),
    "ConstantLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=6)),
    "LinearLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, 0.2, 0.9, total_iters=15)),
    "ExponentialLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.93)),
    "PolynomialLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.PolynomialLR(o, total_iters=25, power=2.0)),
    "CosineAnnealingLR": ("SGD", lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=1e-3)),
    "CosineAnnealingWarmRestarts": (
        "SGD",
        lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
    ),
    "CyclicLR-triangular": ("SGD", lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, step_size_up=4)),
    "CyclicLR-triangular2": (
        "SGD",
        lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, [0.1, 0.05], [1.0, 0.5], 3, 5, mode="triangular2"),
    ),
    "CyclicLR-exp_range-adam": (
        "Adam",
        lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, step_size_up=5, mode="exp_range", gamma=0.97),
    ),
    "CyclicLR-no-momentum": (
        "SGD",
        lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, step_size_up=6, cycle_momentum=False),
    ),
    "OneCycleLR-cos": ("SGD", lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=45)),
    "OneCycleLR-linear-adam": (
        "Adam",
        lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, 1.0, epochs=5, steps_per_epoch=9, anneal_strategy="linear"),
    ),
    "OneCycleLR-three-phase": (
        "SGD",
        lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=41, three_phase=True, pct_start=0.25),
    ),
    "SequentialLR": ("SGD", _sequential),
    "ChainedScheduler": ("SGD", _chained),
    "SWALR-cos": ("SGD", lambda lib, o: lib.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=5)),
    "SWALR-linear": (
        "SGD",
        lambda lib, o: lib.optim.swa_utils.SWALR(o, swa_lr=[0.05, 0.1], anneal_epochs=8, anneal_strategy="linear"),
    ),
}


def _snapshot(optimizer, scheduler):
    groups = optimizer.param_groups
    momentum = [g["betas"][0] if "betas" in g else g.get("momentum") for g in groups]
    return [float(x) for x in scheduler.get_last_lr()], [g["lr"] for g in groups], momentum


def _sequence(lib, name, resume: bool):
    kind, build = SCHEDULERS[name]
    optimizer = _optimizer(lib, kind)
    scheduler = build(lib, optimizer)
    seen = [_snapshot(optimizer, scheduler)]
    for step in range(1, STEPS):
        optimizer.step()
        scheduler.step()
        if resume and step == RESUME_AT:
            saved_scheduler = copy.deepcopy(scheduler.state_dict())
            saved_optimizer = copy.deepcopy(optimizer.state_dict())
            optimizer = _optimizer(lib, kind)
            scheduler = build(lib, optimizer)
            scheduler.load_state_dict(saved_scheduler)
            optimizer.load_state_dict(saved_optimizer)
        seen.append(_snapshot(optimizer, scheduler))
    return seen


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_sequence_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _sequence(torch, name, resume=False)
        actual = _sequence(ember, name, resume=False)
        resumed = _sequence(ember, name, resume=True)
    assert actual == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert resumed == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("threshold_mode", ["rel", "abs"])
def test_reduce_lr_on_plateau(mode, threshold_mode):
    metrics = [1.0, 0.9, 0.95, 0.94, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.49, 0.7, 0.7, 0.7, 0.7, 0.7] * 2
    sequences = []
    for lib in (torch, ember):
        optimizer = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode=mode, factor=0.5, patience=2, cooldown=1, threshold=0.01,
            threshold_mode=threshold_mode, min_lr=[0.01, 0.05],
        )
        seen = []
        for index, metric in enumerate(metrics):
            optimizer.step()
            scheduler.step(metric)
            if index == 10:
                saved = copy.deepcopy(scheduler.state_dict())
                scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
                scheduler.load_state_dict(saved)
            seen.append((scheduler.get_last_lr(), scheduler.num_bad_epochs, scheduler.cooldown_counter))
        sequences.append(seen)
    assert sequences[1] == sequences[0]


def test_scheduler_state_dict_keys_match_torch():
    for name in ("StepLR", "CyclicLR-triangular", "OneCycleLR-cos", "SequentialLR", "LambdaLR"):
        kind, build = SCHEDULERS[name]
        keys = []
        for lib in (torch, ember):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                keys.append(sorted(build(lib, _optimizer(lib, kind)).state_dict()))
        assert keys[1] == keys[0], name


def _step_order_warnings(lib, optimizer_first: bool):
    optimizer = _optimizer(lib)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if optimizer_first:
            optimizer.step()
        scheduler.step()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_step_order_warning():
    for optimizer_first in (False, True):
        expected = _step_order_warnings(torch, optimizer_first)
        assert _step_order_warnings(ember, optimizer_first) == expected
    assert any("Detected call of `lr_scheduler.step()` before `optimizer.step()`" in m
               for m in _step_order_warnings(ember, False))


def test_get_lr_outside_step_and_epoch_argument_warn():
    optimizer = _optimizer(ember)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        scheduler.get_lr()
    optimizer.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        scheduler.step(4)
    assert scheduler.get_last_lr() == pytest.approx([0.01, 0.005])  # closed form: gamma ** (4 // 2)


def test_scheduler_errors_match_torch():
    cases = [
        lambda lib: lib.optim.lr_scheduler.StepLR(object(), step_size=2),
        lambda lib: lib.optim.lr_scheduler.ConstantLR(_optimizer(lib), factor=2.0),
        lambda lib: lib.optim.lr_scheduler.LinearLR(_optimizer(lib), start_factor=0.0),
        lambda lib: lib.optim.lr_scheduler.OneCycleLR(_optimizer(lib), 1.0),
        lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_optimizer(lib), T_0=0),
        lambda lib: lib.optim.lr_scheduler.StepLR(_optimizer(lib), step_size=2, last_epoch=3),
        lambda lib: lib.optim.lr_scheduler.LambdaLR(_optimizer(lib), [_lambda]),
        lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(lib), factor=1.0),
        lambda lib: lib.optim.lr_scheduler.CyclicLR(lib.optim.Adagrad([lib.zeros(1, requires_grad=True)]), 0.1, 1.0),
    ]
    for build in cases:
        errors = []
        for lib in (torch, ember):
            with pytest.raises(Exception) as error:
                build(lib)
            errors.append((type(error.value), str(error.value)))
        assert errors[1] == errors[0]


def test_one_cycle_too_many_steps():
    optimizer = _optimizer(ember)
    scheduler = ember.optim.lr_scheduler.OneCycleLR(optimizer, 1.0, total_steps=3)
    for _ in range(2):
        optimizer.step()
        scheduler.step()
    optimizer.step()
    scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        scheduler.step()
