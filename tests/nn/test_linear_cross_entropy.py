"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions (torch 2.13) against torch:
the reference path and the chunked one, losses and gradients, options' validation and resolution, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(4)
N, D, C = 13, 6, 9
X = RNG.standard_normal((N, D)).astype(np.float32)
W = RNG.standard_normal((C, D)).astype(np.float32)
B = RNG.standard_normal(C).astype(np.float32)
T = RNG.integers(0, C, N)
T[[2, 7]] = -100
CLASS_WEIGHT = RNG.random(C).astype(np.float32) + 0.5


def _run(lib, *, reduction="mean", bias=True, class_weight=False, options=None, dtype="float32", unbatched=False,
         ignore_index=None, target=None):
    x = lib.tensor(X[0] if unbatched else X).to(getattr(lib, dtype)).requires_grad_()
    w = lib.tensor(W).to(getattr(lib, dtype)).requires_grad_()
    b = lib.tensor(B).to(getattr(lib, dtype)).requires_grad_() if bias else None
    t = lib.tensor(target if target is not None else (T[0] if unbatched else T))
    made = None if options is None else lib.nn.LinearCrossEntropyOptions(**options)
    loss = lib.nn.functional.linear_cross_entropy(
        x, w, t, linear_bias=b, weight=lib.tensor(CLASS_WEIGHT).to(getattr(lib, dtype)) if class_weight else None,
        reduction=reduction, ignore_index=ignore_index, options=made)
    upstream = lib.tensor(RNG.standard_normal(tuple(loss.shape)).astype(np.float32) if loss.dim() else 1.0)
    loss.backward(upstream.to(loss.dtype))
    return [loss.detach().float().numpy()] + [v.grad.float().numpy() for v in (x, w, b) if v is not None]


CHUNKED = [None, {"batch_chunk_size": 4, "chunking_method": None}, {"batch_chunk_size": 1, "chunking_method": None},
           {}, {"chunking_method": "aspect_ratio:2"}, {"allow_retain_graph": True, "batch_chunk_size": 5}]


@pytest.mark.parametrize("options", CHUNKED, ids=lambda o: "reference" if o is None else str(o))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("class_weight", [False, True])
def test_matches_torch(options, reduction, class_weight):
    seed = RNG.bit_generator.state
    ours = _run(ember, reduction=reduction, class_weight=class_weight, options=options)
    RNG.bit_generator.state = seed  # (the same upstream gradient for both)
    theirs = _run(torch, reduction=reduction, class_weight=class_weight, options=options)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case", ["unbatched", "no_bias", "bfloat16_chunked", "ignore_7"])
def test_variants_match_torch(case):
    settings = {"unbatched": {"unbatched": True, "options": {}}, "no_bias": {"bias": False, "options": {}},
                "bfloat16_chunked": {"dtype": "bfloat16", "options": {"batch_chunk_size": 4, "chunking_method": None}},
                "ignore_7": {"ignore_index": 7, "options": {}, "target": np.where(T < 0, 7, T)}}[case]
    tolerance = 2e-2 if case.startswith("bfloat16") else 2e-5
    seed = RNG.bit_generator.state
    ours = _run(ember, **settings)
    RNG.bit_generator.state = seed
    theirs = _run(torch, **settings)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


def test_k_dimensional_loss_and_module_match_torch():
    results = []
    weights = RNG.standard_normal((12, D)).astype(np.float32)
    for lib in (ember, torch):
        module = lib.nn.LinearCrossEntropyLoss(D, 3, out_features=(4,), bias=True)
        with lib.no_grad():
            module.linear.weight.copy_(lib.tensor(weights))
            module.linear.bias.copy_(lib.tensor(np.arange(12, dtype=np.float32) / 10))
        target = lib.tensor(np.arange(N * 4).reshape(N, 4) % 3)
        loss = module(lib.tensor(X), target)
        loss.backward()
        results.append((repr(module).replace("ember.", "torch."), loss.item(), module.linear.weight.grad.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-4, atol=1e-6)


def test_second_backward_raises_unless_retained():
    for lib in (ember, torch):
        options = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=4, chunking_method=None)
        x = lib.tensor(X, requires_grad=True)
        loss = lib.nn.functional.linear_cross_entropy(x, lib.tensor(W), lib.tensor(T), options=options)
        loss.backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="chunked backward called twice"):
            loss.backward()


def _outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = repr(fn()).replace("torch.", "ember.")
        except Exception as error:  # noqa: BLE001 - compared
            result = (type(error).__name__, str(error).replace("torch.", "ember."))
    return result, [str(w.message).replace("torch.", "ember.") for w in caught]


OPTION_CASES = {
    "bad_policy": lambda lib: lib.nn.LinearCrossEntropyOptions(acc_policy="fast"),
    "bad_method": lambda lib: lib.nn.LinearCrossEntropyOptions(chunking_method="square"),
    "bad_size": lambda lib: lib.nn.LinearCrossEntropyOptions(batch_chunk_size=0),
    "bad_dtype": lambda lib: lib.nn.LinearCrossEntropyOptions(acc_dtype=lib.int32),
    "adjust_auto": lambda lib: lib.nn.LinearCrossEntropyOptions()._adjust(1000, 64, 5000, lib.float32,
                                                                          lib.device("cpu")),
    "adjust_bf16": lambda lib: lib.nn.LinearCrossEntropyOptions()._adjust(1000, 64, 5000, lib.bfloat16,
                                                                          lib.device("cpu")),
    "adjust_conflict": lambda lib: lib.nn.LinearCrossEntropyOptions(
        batch_chunk_size=3, chunking_method="aspect_ratio")._adjust(1000, 64, 5000, lib.float32, lib.device("cpu")),
    "smoothing_ignored": lambda lib: lib.nn.functional.linear_cross_entropy(
        lib.tensor(X), lib.tensor(W), lib.tensor(T), label_smoothing=0.1,
        options=lib.nn.LinearCrossEntropyOptions()).item(),
    "probabilities_with_ignore": lambda lib: lib.nn.functional.linear_cross_entropy(
        lib.tensor(X), lib.tensor(W), lib.ones(N, C) / C, ignore_index=3),
    "bad_input_dim": lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(2, 2, D), lib.tensor(W),
                                                                       lib.tensor(T)),
    "bad_features": lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(2, D + 1), lib.tensor(W),
                                                                      lib.tensor(T[:2])),
    "bad_bias": lambda lib: lib.nn.functional.linear_cross_entropy(lib.tensor(X), lib.tensor(W), lib.tensor(T),
                                                                  linear_bias=lib.ones(C + 1)),
    "bad_module_weight": lambda lib: lib.nn.LinearCrossEntropyLoss(D, C, weight=lib.ones(C + 1)),
}


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_options_and_errors_match_torch(case):
    ours, theirs = _outcome(lambda: OPTION_CASES[case](ember)), _outcome(lambda: OPTION_CASES[case](torch))
    if case == "smoothing_ignored":  # (the loss itself agrees to float32 rounding)
        assert ours[1] == theirs[1] and abs(float(ours[0]) - float(theirs[0])) < 1e-5
        return
    assert ours == theirs
