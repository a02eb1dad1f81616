"""Modern architectures end to end (tests/programs/_architectures.py): LLaMA, T5, Swin, a UNet block, MobileNetV3
pieces, a ViT with interpolated position embeddings, a Conformer/Whisper frontend with CTC.

(a) ember eager against torch: forward outputs, loss, every parameter gradient and the parameters (and buffers)
after 3 AdamW steps, in float32 (rtol 1e-4) and float64 (rtol 1e-9, which separates rounding from bugs);
(b) ember.compile(model) against ember eager: the same, plus one capture, no graph breaks, and a second batch size
recompiling at most once (a third replays the size-generic graph).
"""

from __future__ import annotations

import numpy as np
import pytest
from _architectures import build, compare, conformer, llama, mobilenet, state_of, swin, t5, to_lib, train, unet, vit

torch = pytest.importorskip("torch")
import ember  # noqa: E402


def _tokens(vocab):
    def batch(B, rng):
        T = 8
        return [rng.integers(0, vocab, (B, T)), rng.integers(0, vocab, (B, T))]
    return batch


def _t5_batch(B, rng):
    S, T = 7, 5
    mask = np.ones((B, S), np.int64)
    mask[0, -2:] = 0
    labels = rng.integers(0, 40, (B, T))
    labels[-1, -1] = -100
    return [rng.integers(0, 40, (B, S)), mask, rng.integers(0, 40, (B, T)), labels]


def _images(size, classes):
    def batch(B, rng):
        return [rng.standard_normal((B, 3, size, size)), rng.integers(0, classes, (B,))]
    return batch


def _unet_batch(B, rng):
    return [rng.standard_normal((B, 3, 8, 8)), rng.integers(0, 1000, (B,)), rng.standard_normal((B, 3, 8, 8))]


def _audio_batch(B, rng):
    T = 12
    lengths = np.full((B,), T, np.int64)
    lengths[0] = T - 3
    target_lengths = np.full((B,), 3, np.int64)
    target_lengths[-1] = 2
    return [rng.standard_normal((B, 8, T)), lengths, rng.integers(1, 6, (B, 3)), target_lengths]


# name -> (factory, kwargs, batch(B, rng))
MODELS = {
    "llama-cos_sin-sdpa_gqa": (llama, {"rope": "cos_sin", "gqa": "sdpa"}, _tokens(32)),
    "llama-complex-repeat_interleave": (llama, {"rope": "complex", "gqa": "repeat"}, _tokens(32)),
    "t5": (t5, {}, _t5_batch),
    "t5-relu": (t5, {"gated": False}, _t5_batch),
    "swin": (swin, {}, _images(16, 5)),
    "unet": (unet, {}, _unet_batch),
    "mobilenet": (mobilenet, {}, _images(16, 6)),
    "vit": (vit, {}, _images(16, 5)),
    "vit-interpolated": (vit, {}, _images(24, 5)),
    "conformer": (conformer, {}, _audio_batch),
}

TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}


def _pair(name, dtype):
    factory, kwargs, batch = MODELS[name]
    torch.manual_seed(0)
    reference = build(torch, factory, kwargs, dtype)
    state = state_of(reference)
    return reference, build(ember, factory, kwargs, dtype, state), batch


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(MODELS))
def test_eager_matches_torch(name, dtype):
    reference, model, batch = _pair(name, dtype)
    data = batch(3, np.random.default_rng(0))
    want = train(torch, reference, reference, to_lib(torch, data, dtype))
    got = train(ember, model, model, to_lib(ember, data, dtype))
    rtol, atol = TOLERANCE[dtype]
    assert not compare(got, want, rtol, atol)


@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_matches_eager(name):
    _, eager, batch = _pair(name, "float32")
    state = state_of(eager)
    model = build(ember, MODELS[name][0], MODELS[name][1], "float32", state)
    compiled = ember.compile(model)
    data = batch(3, np.random.default_rng(0))
    want = train(ember, eager, eager, to_lib(ember, data, "float32"), seed=1)
    got = train(ember, compiled, model, to_lib(ember, data, "float32"), seed=1)
    assert not compare(got, want, 1e-4, 1e-5)
    assert compiled._compiled.captures == 1 and not compiled._compiled.graph_breaks
    for B in (5, 4):  # a second batch size recompiles once (size-generic); a third replays it
        more = to_lib(ember, batch(B, np.random.default_rng(B)), "float32")
        out, loss = compiled(*more)
        want_out, want_loss = eager(*more)
        np.testing.assert_allclose(out.detach().numpy(), want_out.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(loss.item(), want_loss.item(), rtol=1e-4, atol=1e-5)
    assert compiled._compiled.captures <= 2 and not compiled._compiled.graph_breaks


def test_drop_path_and_batchnorm_eval_compiled():
    """MobileNet with stochastic depth (torch.rand + floor_): compiled replays draw what eager draws; then eval."""
    state = state_of(mobilenet(ember, drop_path=0.3))
    eager = build(ember, mobilenet, {"drop_path": 0.3}, "float32", state)
    model = build(ember, mobilenet, {"drop_path": 0.3}, "float32", state)
    compiled = ember.compile(model)
    data = to_lib(ember, _images(16, 6)(4, np.random.default_rng(0)), "float32")
    want = train(ember, eager, eager, data, seed=3)
    got = train(ember, compiled, model, data, seed=3)
    assert not compare(got, want, 1e-4, 1e-5)
    eager.eval()
    model.eval()
    np.testing.assert_allclose(compiled(*data)[0].detach().numpy(), eager(*data)[0].detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_batchnorm_eval_matches_torch():
    """MobileNet in eval mode (running statistics) after training in train mode, against torch."""
    reference, model, batch = _pair("mobilenet", "float64")
    data = batch(4, np.random.default_rng(0))
    train(torch, reference, reference, to_lib(torch, data, "float64"))
    train(ember, model, model, to_lib(ember, data, "float64"))
    want = train(torch, reference, reference, to_lib(torch, data, "float64"), train_mode=False)
    got = train(ember, model, model, to_lib(ember, data, "float64"), train_mode=False)
    assert not compare(got, want, 1e-9, 1e-12)
