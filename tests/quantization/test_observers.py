"""HistogramObserver, the moving-average observers and get_default_qconfig against real torch
(ember/ao/quantization/observer.py, qconfig.py): bitwise-equal histograms and qparams, state dicts, torch's
errors, and torch's default x86 post-training recipe end to end."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.ao.quantization.observer import _torch_float_sum

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")

# observer arguments as names, built in either library by _observers
CONFIGS = {
    "quint8": {},
    "quint8_reduce_range": {"reduce_range": True},
    "qint8": {"dtype": "qint8"},
    "quint8_symmetric": {"qscheme": "per_tensor_symmetric"},
    "qint8_symmetric": {"dtype": "qint8", "qscheme": "per_tensor_symmetric"},
}


def _batches(kind: str) -> list[np.ndarray]:
    """Calibration batches (float32) of one kind of data."""
    rng = np.random.default_rng(sum(map(ord, kind)))
    if kind == "normal":
        return [rng.standard_normal((8, 500)).astype(np.float32)]
    if kind == "uniform":
        return [rng.uniform(-1.0, 3.0, 3000).astype(np.float32) for _ in range(2)]
    if kind == "heavy_tailed":
        return [rng.standard_t(2, 4000).astype(np.float32) for _ in range(3)]
    if kind == "skewed":
        return [rng.lognormal(0.0, 1.5, 4000).astype(np.float32) for _ in range(2)]
    if kind == "relu":  # a rectified activation: a spike at 0
        return [np.maximum(rng.standard_normal(5000) * scale, 0).astype(np.float32) for scale in (1.0, 1.3, 0.8)]
    if kind == "all_equal":
        return [np.full(300, 0.7, np.float32), np.full(100, 0.7, np.float32)]
    if kind == "equal_then_spread":  # a one-value histogram moved into a wider range
        return [np.full(300, 0.7, np.float32), rng.standard_normal(2000).astype(np.float32)]
    if kind == "growing":  # every batch widens the range: the histogram is re-binned each time
        return [(rng.standard_normal(3000) * scale + shift).astype(np.float32)
                for scale, shift in ((0.5, 0.0), (1.0, 0.3), (2.5, -1.0), (6.0, 2.0))]
    if kind == "long_growing":  # many re-binnings of large counts: the bins hold long fractions
        return [(rng.standard_normal(100000) * 1.03**step).astype(np.float32) for step in range(10)]
    if kind == "shrinking":  # later batches inside the first range: added bin for bin
        return [(rng.standard_normal(3000) * scale).astype(np.float32) for scale in (4.0, 2.0, 1.0, 0.5)]
    if kind == "outliers":
        batches = []
        for _ in range(3):
            batch = rng.standard_normal(5000)
            batch[:4] = rng.choice([-1.0, 1.0], 4) * rng.uniform(20.0, 60.0, 4)
            batches.append(batch.astype(np.float32))
        return batches
    if kind == "many_batches":  # mixed sizes, scales and shifts, growing and shrinking
        return [(rng.standard_normal(int(rng.integers(50, 4000))) * 10 ** rng.uniform(-2, 1) + rng.normal())
                .astype(np.float32) for _ in range(8)]
    raise ValueError(kind)


KINDS = ["normal", "uniform", "heavy_tailed", "skewed", "relu", "all_equal", "equal_then_spread", "growing",
         "long_growing", "shrinking", "outliers", "many_batches"]


def _arguments(lib, spec: dict) -> dict:
    """Observer keyword arguments for `lib`, dtype and qscheme given by name."""
    return {k: getattr(lib, v) if k in ("dtype", "qscheme") else v for k, v in spec.items()}


def _observers(name: str, **spec):
    """The same observer class and arguments in ember and in torch (reduce_range's deprecation warning off)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        observer_e = getattr(ember.ao.quantization, name)(**_arguments(ember, spec))
        observer_t = getattr(torch.ao.quantization, name)(**_arguments(torch, spec))
    return observer_e, observer_t


def _assert_same_state(observer_e, observer_t, context="") -> None:
    for buffer in ("histogram", "min_val", "max_val"):
        if hasattr(observer_t, buffer):
            expected = getattr(observer_t, buffer).numpy()
            np.testing.assert_array_equal(getattr(observer_e, buffer).numpy(), expected, err_msg=f"{buffer} {context}")


def _assert_same_qparams(observer_e, observer_t) -> None:
    scale_e, zero_point_e = observer_e.calculate_qparams()
    scale_t, zero_point_t = observer_t.calculate_qparams()
    assert scale_e.tolist() == scale_t.tolist()  # bitwise: Python floats from float32
    assert zero_point_e.tolist() == zero_point_t.tolist()
    assert str(scale_e.dtype) == str(scale_t.dtype).replace("torch", "ember")
    assert str(zero_point_e.dtype) == str(zero_point_t.dtype).replace("torch", "ember")


# ---------------------------------------------------------------- HistogramObserver


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("kind", KINDS)
def test_histogram_observer_matches_torch(kind, config):
    observer_e, observer_t = _observers("HistogramObserver", **CONFIGS[config])
    for step, batch in enumerate(_batches(kind)):
        tensor = ember.tensor(batch)
        assert observer_e(tensor) is tensor  # observers pass their input through
        observer_t(torch.tensor(batch))
        _assert_same_state(observer_e, observer_t, f"after batch {step}")  # the running histogram, bit for bit
    _assert_same_qparams(observer_e, observer_t)


def test_histogram_search_narrows_the_range():
    # the range search must do something on these data, or the parity tests above would test only min/max
    observer_e, observer_t = _observers("HistogramObserver")
    for batch in _batches("outliers"):
        observer_e(ember.tensor(batch))
        observer_t(torch.tensor(batch))
    new_min_e, new_max_e = observer_e._non_linear_param_search()
    new_min_t, new_max_t = observer_t._non_linear_param_search()
    assert (new_min_e.item(), new_max_e.item()) == (new_min_t.item(), new_max_t.item())
    assert new_max_e.item() < observer_e.max_val.item()


def _crafted_histograms(fractional: bool, count: int = 60) -> list[np.ndarray]:
    """256-bin histograms of 300000 values with sparse tails, where the search's quantile thresholds
    (alpha * total) fall on or next to the integer cumulative sums, so its float32 comparisons decide the bins;
    with `fractional` the tails hold fractions of 1/4096 (as after re-binning), which a float32 cumulative sum
    would round (torch accumulates in double)."""
    rng = np.random.default_rng(int(fractional))
    histograms = []
    for _ in range(count):
        histogram = np.zeros(256, np.float32)
        histogram[rng.integers(0, 256, 12)] += 1
        if fractional:
            histogram[rng.integers(0, 256, 40)] += rng.integers(1, 4096, 40) / 4096
        histogram[100:150] = rng.integers(0, 100, 50)
        histogram[120] += 300000 - histogram.sum()
        histograms.append(histogram)
    return histograms


@pytest.mark.parametrize("fractional", [False, True])
def test_histogram_search_on_crafted_histograms_matches_torch(fractional):
    moved = 0
    for histogram in _crafted_histograms(fractional):
        observers = _observers("HistogramObserver", bins=256)
        for observer, lib in zip(observers, (ember, torch)):
            observer.load_state_dict({"eps": lib.tensor([2.0**-23]), "histogram": lib.tensor(histogram),
                                      "min_val": lib.tensor(-3.0), "max_val": lib.tensor(5.0)})
        (min_e, max_e), (min_t, max_t) = (observer._non_linear_param_search() for observer in observers)
        assert (min_e.item(), max_e.item()) == (min_t.item(), max_t.item())
        _assert_same_qparams(*observers)
        moved += min_t.item() != -3.0
    assert moved >= 20  # the search moved the lower end too, not only the upper one


@pytest.mark.parametrize("kind", ["growing", "heavy_tailed"])
def test_histogram_quantization_error_matches_torch(kind):
    # every candidate range's L2 error as torch computes it (float32 ops, torch's summation order)
    observer_e, observer_t = _observers("HistogramObserver", reduce_range=True)
    for batch in _batches(kind):
        observer_e(ember.tensor(batch))
        observer_t(torch.tensor(batch))
    rng = np.random.default_rng(0)
    for _ in range(40):
        start, end = sorted(int(v) for v in rng.integers(0, observer_t.bins, 2))
        error_e = observer_e._compute_quantization_error(start, end)
        assert error_e == observer_t._compute_quantization_error(start, end), (start, end)


def test_histogram_observer_other_bins_and_float64_input():
    for bins in (7, 256, 3000):
        observer_e, observer_t = _observers("HistogramObserver", bins=bins)
        for batch in _batches("many_batches")[:5]:
            observer_e(ember.tensor(batch.astype(np.float64)))
            observer_t(torch.tensor(batch.astype(np.float64)))
            _assert_same_state(observer_e, observer_t, f"bins={bins}")
        _assert_same_qparams(observer_e, observer_t)


def test_torch_float_sum_order():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        for count in [1, 3, 7, 8, 9, 31, 33, 100, 511, 2047, 2048, 2049, 5000, 20000]:
            values = (rng.standard_normal(count) * rng.exponential(5, count)).astype(dtype)
            assert _torch_float_sum(ember.tensor(values)) == torch.tensor(values).sum().item(), (dtype, count)


def test_histogram_observer_inf_empty_and_uninitialized():
    observer_e, observer_t = _observers("HistogramObserver")
    with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
        scale_e, zero_point_e = observer_e.calculate_qparams()
    with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
        scale_t, zero_point_t = observer_t.calculate_qparams()
    assert (scale_e.tolist(), zero_point_e.tolist()) == (scale_t.tolist(), zero_point_t.tolist())
    assert observer_e(ember.zeros(0)).numel() == 0
    observer_t(torch.zeros(0))
    _assert_same_state(observer_e, observer_t)
    batch = np.array([1.0, -2.0, np.inf, 0.5, -np.inf, 3.0], np.float32)
    with pytest.warns(UserWarning, match="torch.inf detected in input tensor, ignoring input"):
        observer_e(ember.tensor(batch))
    with pytest.warns(UserWarning, match="torch.inf detected in input tensor, ignoring input"):
        observer_t(torch.tensor(batch))
    _assert_same_state(observer_e, observer_t)
    assert observer_e.min_val.item() == -2.0 and observer_e.max_val.item() == 3.0
    _assert_same_qparams(observer_e, observer_t)


def test_histogram_observer_errors_match_torch():
    cases = [({"qscheme": "per_channel_affine"}, NotImplementedError, "qscheme only support"),
             ({"is_dynamic": True}, NotImplementedError, "doesn't support dynamic quantization"),
             ({"dtype": "float32"}, AssertionError, "Default Observer only works for"),
             ({"quant_min": 3, "quant_max": 100}, AssertionError, "range must include 0")]
    for spec, error, message in cases:
        for lib in (ember, torch):
            with pytest.raises(error, match=message):
                lib.ao.quantization.HistogramObserver(**_arguments(lib, spec))
    for lib in (ember, torch):
        with pytest.warns(UserWarning, match="reduce_range will be deprecated"):
            lib.ao.quantization.HistogramObserver(reduce_range=True)
        observer = lib.ao.quantization.HistogramObserver(bins=10)
        observer(lib.tensor([0.0, 1.0]))
        observer.bins = 11
        with pytest.raises(AssertionError, match="number of bins in histogram should be equal"):
            observer.calculate_qparams()


def test_histogram_observer_repr_and_state_dict_match_torch():
    observer_e, observer_t = _observers("HistogramObserver")
    assert repr(observer_e) == repr(observer_t)
    for batch in _batches("growing"):
        observer_e(ember.tensor(batch))
        observer_t(torch.tensor(batch))
    assert repr(observer_e) == repr(observer_t)
    state_e, state_t = observer_e.state_dict(), observer_t.state_dict()
    assert list(state_e) == list(state_t) == ["eps", "histogram", "min_val", "max_val"]
    for key in state_t:
        np.testing.assert_array_equal(state_e[key].numpy(), state_t[key].numpy(), err_msg=key)
    assert state_e._metadata[""]["version"] == state_t._metadata[""]["version"] == 3


def test_histogram_observer_state_dict_round_trip():
    observer_e, observer_t = _observers("HistogramObserver", reduce_range=True)
    for batch in _batches("outliers"):
        observer_t(torch.tensor(batch))
    # torch's calibrated state loaded into a fresh ember observer gives torch's qparams ...
    loaded, _ = _observers("HistogramObserver", reduce_range=True)
    loaded.load_state_dict({k: ember.tensor(v.numpy()) for k, v in observer_t.state_dict().items()})
    _assert_same_state(loaded, observer_t)
    _assert_same_qparams(loaded, observer_t)
    # ... and ember's own state round-trips, and keeps observing as torch does
    again, _ = _observers("HistogramObserver", reduce_range=True)
    again.load_state_dict(loaded.state_dict())
    extra = _batches("growing")[-1]
    again(ember.tensor(extra))
    observer_t(torch.tensor(extra))
    _assert_same_state(again, observer_t)
    _assert_same_qparams(again, observer_t)


def test_histogram_observer_loads_version_2_state():
    # before version 3 an unobserved min_val/max_val was saved with shape [0]
    for lib in (ember, torch):
        observer = lib.ao.quantization.HistogramObserver(bins=4)
        state = {"eps": lib.tensor([2.0**-23]), "histogram": lib.zeros(4), "min_val": lib.tensor([]),
                 "max_val": lib.tensor([])}
        observer._load_from_state_dict(state, "", {"version": 2}, True, [], [], [])
        assert observer.min_val.shape == () and observer.min_val.item() == float("inf")
        assert observer.max_val.item() == float("-inf")


# ---------------------------------------------------------------- moving-average observers


@pytest.mark.parametrize("averaging_constant", [0.01, 0.25, 1.0])
@pytest.mark.parametrize("config", CONFIGS)
def test_moving_average_min_max_observer_matches_torch(config, averaging_constant):
    observer_e, observer_t = _observers("MovingAverageMinMaxObserver", averaging_constant=averaging_constant,
                                        **CONFIGS[config])
    for batch in _batches("many_batches"):
        observer_e(ember.tensor(batch))
        observer_t(torch.tensor(batch))
        _assert_same_state(observer_e, observer_t)
    _assert_same_qparams(observer_e, observer_t)


@pytest.mark.parametrize("averaging_constant", [0.01, 0.3])
@pytest.mark.parametrize("ch_axis,qscheme,dtype", [(0, "per_channel_affine", "quint8"),
                                                   (1, "per_channel_symmetric", "qint8"),
                                                   (2, "per_channel_affine_float_qparams", "quint8")])
def test_moving_average_per_channel_observer_matches_torch(ch_axis, qscheme, dtype, averaging_constant):
    observer_e, observer_t = _observers("MovingAveragePerChannelMinMaxObserver", ch_axis=ch_axis, qscheme=qscheme,
                                        dtype=dtype, averaging_constant=averaging_constant)
    rng = np.random.default_rng(ch_axis)
    for _ in range(5):
        batch = (rng.standard_normal((3, 4, 5)) * 10 ** rng.uniform(-2, 2) + rng.normal()).astype(np.float32)
        observer_e(ember.tensor(batch))
        observer_t(torch.tensor(batch))
        _assert_same_state(observer_e, observer_t)
    _assert_same_qparams(observer_e, observer_t)


def test_moving_average_errors_match_torch():
    cases = [("MovingAverageMinMaxObserver", {"qscheme": "per_channel_affine"}, "qscheme only support"),
             ("MovingAverageMinMaxObserver", {"is_dynamic": True}, "averaging constant of 0.01"),
             ("MovingAveragePerChannelMinMaxObserver", {"qscheme": "per_tensor_affine"}, "qscheme only support"),
             ("MovingAveragePerChannelMinMaxObserver", {"is_dynamic": True}, "doesn't support dynamic")]
    for name, spec, message in cases:
        for lib in (ember, torch):
            with pytest.raises(NotImplementedError, match=message):
                getattr(lib.ao.quantization, name)(**_arguments(lib, spec))
    for lib in (ember, torch):  # averaging_constant 1 makes a dynamic observer legal
        assert lib.ao.quantization.MovingAverageMinMaxObserver(averaging_constant=1, is_dynamic=True).is_dynamic


# ---------------------------------------------------------------- qconfigs


def _factory_description(factory) -> str:
    """A with_args factory (or class) as text comparable across the libraries."""
    return repr(factory).replace("torch.", "ember.")


def _built_observer_description(factory) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        observer = factory()
    described = {"class": type(observer).__name__}
    for attribute in ("dtype", "qscheme", "reduce_range", "quant_min", "quant_max", "bins", "ch_axis",
                      "is_dynamic", "averaging_constant", "dst_nbins", "upsample_rate"):
        if hasattr(observer, attribute):
            described[attribute] = str(getattr(observer, attribute)).replace("torch.", "ember.")
    if hasattr(observer, "eps"):  # a 1-element buffer, or a float on PlaceholderObserver
        described["eps"] = observer.eps.tolist() if hasattr(observer.eps, "tolist") else observer.eps
    return described


@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_get_default_qconfig_matches_torch(backend):
    with warnings.catch_warnings(record=True) as warned_t:
        warnings.simplefilter("always")
        qconfig_t = torch.ao.quantization.get_default_qconfig(backend)
    with warnings.catch_warnings(record=True) as warned_e:
        warnings.simplefilter("always")
        qconfig_e = ember.ao.quantization.get_default_qconfig(backend)
    assert [str(w.message) for w in warned_e] == [str(w.message) for w in warned_t]
    assert isinstance(qconfig_e, ember.ao.quantization.QConfig)
    for part in ("activation", "weight"):
        factory_e, factory_t = getattr(qconfig_e, part), getattr(qconfig_t, part)
        assert _factory_description(factory_e) == _factory_description(factory_t), part
        assert _built_observer_description(factory_e) == _built_observer_description(factory_t), part
    assert qconfig_e.activation.p.keywords.keys() == qconfig_t.activation.p.keywords.keys()


def test_get_default_qconfig_errors_match_torch():
    for args in (("tensorrt",), ("x86", 1)):
        with pytest.raises(AssertionError) as error_t:
            torch.ao.quantization.get_default_qconfig(*args)
        with pytest.raises(AssertionError) as error_e:
            ember.ao.quantization.get_default_qconfig(*args)
        assert str(error_e.value) == str(error_t.value)


@pytest.mark.parametrize("name", ["default_histogram_observer", "weight_observer_range_neg_127_to_127",
                                  "per_channel_weight_observer_range_neg_127_to_127", "per_channel_dynamic_qconfig",
                                  "default_per_channel_qconfig", "default_symmetric_qnnpack_qconfig",
                                  "default_per_channel_symmetric_qnnpack_qconfig", "default_quint8_weight_qconfig"])
def test_module_level_factories_match_torch(name):
    value_e, value_t = getattr(ember.ao.quantization, name), getattr(torch.ao.quantization, name)
    parts = ("activation", "weight") if isinstance(value_t, tuple) else (None,)
    for part in parts:
        factory_e = value_e if part is None else getattr(value_e, part)
        factory_t = value_t if part is None else getattr(value_t, part)
        assert _factory_description(factory_e) == _factory_description(factory_t), part
        assert _built_observer_description(factory_e) == _built_observer_description(factory_t), part


def test_quantization_namespaces_export_what_torch_exports():
    names = ["HistogramObserver", "MovingAverageMinMaxObserver", "MovingAveragePerChannelMinMaxObserver",
             "get_default_qconfig", "default_histogram_observer", "per_channel_dynamic_qconfig",
             "default_per_channel_qconfig"]
    for name in names:
        assert getattr(ember.ao.quantization, name) is getattr(ember.quantization, name), name
        assert hasattr(torch.quantization, name) and hasattr(torch.ao.quantization, name), name
    assert ember.ao.quantization.observer.HistogramObserver is ember.ao.quantization.HistogramObserver
    chained = ember.ao.quantization.default_histogram_observer.with_args(reduce_range=True)
    assert chained().reduce_range and chained().quant_max == 63  # with_args chains as torch's _PartialWrapper


# ---------------------------------------------------------------- torch's default recipe, end to end


def _model(lib):
    nn, tq = lib.nn, lib.ao.quantization

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(8 * 6 * 6, 10)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.conv(self.quant(x)))
            return self.dequant(self.fc(lib.flatten(x, 1)))

    return Model()


def _capture(model) -> dict:
    outputs = {}
    for name, module in model.named_modules():
        if name and not name.endswith("_packed_params"):
            module.register_forward_hook(lambda m, i, o, name=name: outputs.__setitem__(name, o))
    return outputs


@pytest.mark.parametrize("backend", ["x86", "fbgemm"])
def test_default_qconfig_end_to_end_matches_torch(backend):
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = backend
    try:
        torch.manual_seed(0)
        model_t = _model(torch).eval()
        model_e = _model(ember).eval()
        model_e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in model_t.state_dict().items()})
        model_t.qconfig = torch.ao.quantization.get_default_qconfig(backend)
        model_e.qconfig = ember.ao.quantization.get_default_qconfig(backend)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prepared_t = torch.ao.quantization.prepare(model_t)
            prepared_e = ember.ao.quantization.prepare(model_e)
        assert repr(prepared_e) == repr(prepared_t).replace("torch.", "ember.")
        rng = np.random.default_rng(1)
        for _ in range(4):
            batch = (rng.standard_normal((4, 3, 6, 6)) * 1.5).astype(np.float32)
            prepared_t(torch.tensor(batch))
            prepared_e(ember.tensor(batch))

        for name in ("quant", "conv", "fc"):
            observer_e = getattr(prepared_e, name).activation_post_process
            observer_t = getattr(prepared_t, name).activation_post_process
            assert isinstance(observer_e, ember.ao.quantization.HistogramObserver)
            if name == "quant":  # observes the input itself: torch's histogram and qparams exactly
                _assert_same_state(observer_e, observer_t, name)
                _assert_same_qparams(observer_e, observer_t)
            else:
                # observes a float conv/linear output, a few ulp from torch's (float32 summation order), so the
                # histograms may differ in a bin or two: scales within 1e-6 relative, zero points equal
                scale_e, zero_point_e = observer_e.calculate_qparams()
                scale_t, zero_point_t = observer_t.calculate_qparams()
                np.testing.assert_allclose(scale_e.numpy(), scale_t.numpy(), rtol=1e-6, err_msg=name)
                assert zero_point_e.tolist() == zero_point_t.tolist(), name
            # from here on torch's calibration state in both, so convert and the kernels compare exactly
            observer_e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in observer_t.state_dict().items()})
            _assert_same_qparams(observer_e, observer_t)

        converted_t = torch.ao.quantization.convert(prepared_t)
        converted_e = ember.ao.quantization.convert(prepared_e)
        assert repr(converted_e) == repr(converted_t).replace("torch.", "ember.")
        for name in ("conv", "fc"):
            layer_e, layer_t = getattr(converted_e, name), getattr(converted_t, name)
            assert (layer_e.scale, layer_e.zero_point) == (layer_t.scale, layer_t.zero_point), name
            weight_e, weight_t = layer_e.weight(), layer_t.weight()
            np.testing.assert_array_equal(weight_e.int_repr().numpy(), weight_t.int_repr().numpy())
            assert weight_e.q_per_channel_scales().tolist() == weight_t.q_per_channel_scales().tolist()
        assert converted_e.quant.scale.tolist() == converted_t.quant.scale.tolist()
        assert converted_e.quant.zero_point.tolist() == converted_t.quant.zero_point.tolist()

        outputs_e, outputs_t = _capture(converted_e), _capture(converted_t)
        test_batch = (rng.standard_normal((5, 3, 6, 6)) * 1.5).astype(np.float32)
        final_e = converted_e(ember.tensor(test_batch))
        final_t = converted_t(torch.tensor(test_batch))
        quantized = [name for name, out in outputs_t.items() if out.is_quantized]
        assert sorted(quantized) == ["conv", "fc", "quant", "relu"]
        for name in quantized:
            out_e, out_t = outputs_e[name], outputs_t[name]
            assert (out_e.q_scale(), out_e.q_zero_point()) == (out_t.q_scale(), out_t.q_zero_point()), name
            np.testing.assert_array_equal(out_e.int_repr().numpy(), out_t.int_repr().numpy(), err_msg=name)
            assert len(np.unique(out_t.int_repr().numpy())) > 20, name  # not a saturated or constant output
        np.testing.assert_array_equal(final_e.numpy(), final_t.detach().numpy())
    finally:
        torch.backends.quantized.engine = previous
