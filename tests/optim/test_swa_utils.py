"""swa_utils vs torch: AveragedModel (SWA, EMA, use_buffers) and update_bn."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _model(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def _copy_weights(torch_model, ember_model):
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in torch_model.state_dict().items()}
    ember_model.load_state_dict(state)


def _models():
    torch.manual_seed(0)
    torch_model = _model(torch).double()
    ember_model = _model(ember).double()
    _copy_weights(torch_model, ember_model)
    return torch_model, ember_model


def _perturb(lib, model, seed):
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.add_(lib.tensor(rng.standard_normal(tuple(p.shape))))
        for b in model.buffers():
            if b.is_floating_point():
                b.mul_(1.5).add_(0.1)
            else:
                b.add_(3)


def _batches(lib, count=4):
    rng = np.random.default_rng(7)
    return [lib.tensor(rng.standard_normal((8, 3))) for _ in range(count)]


def _assert_state_close(torch_module, ember_module):
    torch_state, ember_state = torch_module.state_dict(), ember_module.state_dict()
    assert list(ember_state) == list(torch_state)
    for key, value in torch_state.items():
        np.testing.assert_allclose(ember_state[key].numpy(), value.numpy(), rtol=1e-12, atol=1e-12, err_msg=key)


AVERAGING = {
    "swa": lambda lib: {},
    "ema-multi": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.9)},
    "ema-single": lambda lib: {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.8)},
    "swa-single": lambda lib: {"avg_fn": lib.optim.swa_utils.get_swa_avg_fn()},
    "swa-buffers": lambda lib: {"use_buffers": True},
    "ema-buffers": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.9), "use_buffers": True},
}


@pytest.mark.parametrize("kind", list(AVERAGING))
def test_averaged_model_matches_torch(kind):
    torch_model, ember_model = _models()
    torch_avg = torch.optim.swa_utils.AveragedModel(torch_model, **AVERAGING[kind](torch))
    ember_avg = ember.optim.swa_utils.AveragedModel(ember_model, **AVERAGING[kind](ember))
    for seed in range(4):
        _perturb(torch, torch_model, seed)
        _perturb(ember, ember_model, seed)
        torch_avg.update_parameters(torch_model)
        ember_avg.update_parameters(ember_model)
        _assert_state_close(torch_avg, ember_avg)
    assert int(ember_avg.n_averaged) == 4
    x = _batches(torch, 1)[0]
    torch_avg.eval()
    ember_avg.eval()
    np.testing.assert_allclose(ember_avg(ember.tensor(x.numpy())).detach().numpy(), torch_avg(x).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_avg_fn_and_multi_avg_fn_exclusive():
    model = _model(ember)
    fn = ember.optim.swa_utils.get_swa_avg_fn()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        ember.optim.swa_utils.AveragedModel(model, avg_fn=fn, multi_avg_fn=ember.optim.swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5 provided"):
        ember.optim.swa_utils.get_ema_multi_avg_fn(1.5)


@pytest.mark.parametrize("tuples", [False, True])
def test_update_bn_matches_torch(tuples):
    torch_model, ember_model = _models()
    _perturb(torch, torch_model, 3)
    _perturb(ember, ember_model, 3)
    torch_batches, ember_batches = _batches(torch), _batches(ember)
    if tuples:
        torch_batches = [(b, 0) for b in torch_batches]
        ember_batches = [(b, 0) for b in ember_batches]
    torch_model.eval()
    ember_model.eval()
    torch.optim.swa_utils.update_bn(torch_batches, torch_model)
    ember.optim.swa_utils.update_bn(ember_batches, ember_model)
    assert not ember_model.training
    assert ember_model[1].momentum == torch_model[1].momentum == 0.1
    _assert_state_close(torch_model, ember_model)


def test_update_bn_without_batch_norm_is_a_no_op():
    model = ember.nn.Linear(3, 2)
    ember.optim.swa_utils.update_bn([ember.ones(2, 3)], model)
