"""Public API that modern torch programs use, against real PyTorch: torch.accelerator, torch.version and
TorchVersion comparisons, torch.GradScaler, the legacy tensor types (FloatTensor & co.), torch.nn.attention
(SDPBackend, sdpa_kernel, bias), torch.sym_* helpers, torch.nn.common_types and torch.nn.factory_kwargs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.attention.bias")  # a submodule torch does not import by itself


def _outcome(fn):
    """(type name of the result or of the exception, message or repr) for comparing behaviours."""
    try:
        return ("ok", fn())
    except Exception as error:  # noqa: BLE001 - the error type is what is compared
        return (type(error).__name__, str(error))


# ---------------------------------------------------------------- torch.accelerator

requires_no_accelerator = pytest.mark.skipif(ember.cuda.is_available() or torch.accelerator.is_available(),
                                             reason="compares the CPU-only answers")


@requires_no_accelerator
def test_accelerator_queries_without_one_match_torch_cpu():
    for lib in (ember, torch):
        assert lib.accelerator.is_available() is False
        assert lib.accelerator.current_accelerator() is None
        assert lib.accelerator.current_accelerator(check_available=True) is None
        assert lib.accelerator.device_count() == 0


@requires_no_accelerator
@pytest.mark.parametrize("call", [
    "current_device_index()", "set_device_index(0)", "synchronize()", "current_stream()", "memory_allocated()",
    "max_memory_allocated()", "memory_reserved()", "memory_stats()", "reset_peak_memory_stats()", "empty_cache()",
    "get_memory_info()", "empty_host_cache()", "synchronize('cpu')", "set_device_index('cuda:0')",
    "get_device_capability('cpu')", "set_device_index(-1)", "set_device_index(None)", "memory_allocated('cpu')",
])
def test_accelerator_calls_that_need_a_device_match_torch(call):
    mine = _outcome(lambda: eval(f"ember.accelerator.{call}"))
    theirs = _outcome(lambda: eval(f"torch.accelerator.{call}"))
    assert mine == theirs


@requires_no_accelerator
def test_accelerator_device_index_context():
    for lib in (ember, torch):
        with lib.accelerator.device_index(None):
            pass
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            with lib.accelerator.device_index(0):
                pass


def test_accelerator_forwards_to_cuda_when_it_exists(emulated_cuda):
    acc = ember.accelerator
    assert acc.is_available() and acc.current_accelerator() == ember.device("cuda") and acc.device_count() == 1
    assert acc.current_device_index() == 0
    acc.set_device_index(0)
    acc.synchronize()
    acc.synchronize("cuda:0")
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    assert isinstance(acc.current_stream(), ember.cuda.Stream)
    assert acc.memory_allocated() == ember.cuda.memory_allocated()
    assert ember.float32 in acc.get_device_capability()["supported_dtypes"]
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator cuda"):
        acc.synchronize("cpu")
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index"):
        acc.set_device_index("cuda")
    t = ember.zeros(2, device="cuda")
    assert t.type() == "torch.cuda.FloatTensor"
    assert not isinstance(t, ember.FloatTensor)
    assert ember.zeros(2).type("torch.cuda.LongTensor").device.type == "cuda"


def test_accelerator_public_names_match_torch():
    missing = set(torch.accelerator.__all__) - set(ember.accelerator.__all__)
    assert not missing


# ---------------------------------------------------------------- torch.version, TorchVersion


def test_version_module():
    assert isinstance(ember.__version__, str)
    assert ember.version.__version__ == ember.__version__
    assert type(ember.__version__).__name__ == "TorchVersion"
    if not ember.cuda.is_available():
        assert ember.version.cuda is None
    assert ember.version.debug is False and ember.version.hip is None
    assert isinstance(ember.version.git_version, str)
    assert set(torch.version.__all__) <= set(ember.version.__all__)


_VERSIONS = ["2.13.0+cpu", "2.1.0", "2.0", "1.13.1", "0.1.0", "2.1.0a0+git123", "2.1.0.dev20230101", "2.1.0rc1",
             "2.1.0.post1", "10.0", "parrot"]
_OTHERS = ["2.0", "2.1", "2.1.0", "2.13.0", "2.13.0+cpu", "1.9", "10", "2.1.0rc1", "2.1.0a0", "parrot", (2, 0),
           (2, 1, 0), (1, 13), [2, 13], (2, 13, 0)]


@pytest.mark.parametrize("text", _VERSIONS)
@pytest.mark.parametrize("other", _OTHERS, ids=str)
def test_torch_version_comparisons_match_torch(text, other):
    from torch.torch_version import TorchVersion as TheirVersion

    from ember.torch_version import TorchVersion

    mine, theirs = TorchVersion(text), TheirVersion(text)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        assert _outcome(lambda: getattr(mine, op)(other)) == _outcome(lambda: getattr(theirs, op)(other)), op
    assert hash(mine) == hash(text)


def test_version_gate_idiom():
    # the comparisons programs write take the paths for the torch API ember implements, compared as versions
    version = ember.__version__
    assert version == f"{torch.__version__.split('+')[0]}+ember.{ember.version.ember_version}"
    assert (version >= "2.0") is True and (version >= (2, 0)) is True and (version >= "1.12") is True
    assert (version < "10.0") is True  # a plain string comparison would say "2.13" > "10.0"
    assert version.split("+")[0] == torch.__version__.split("+")[0]
    import importlib.metadata

    assert ember.version.ember_version == importlib.metadata.version("ember")


# ---------------------------------------------------------------- torch.GradScaler


def test_grad_scaler_top_level_alias():
    assert torch.GradScaler is torch.amp.GradScaler
    assert ember.GradScaler is ember.amp.GradScaler


# ---------------------------------------------------------------- legacy tensor types

_TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
          "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", _TYPES)
def test_legacy_type_constructors_match_torch(name):
    mine, theirs = getattr(ember, name), getattr(torch, name)
    assert str(mine.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert mine.is_cuda is False and mine.is_sparse is False
    assert repr(mine) == repr(theirs)
    for args in [(2, 3), (ember.Size([2, 3]),), ()]:
        made = mine(*args)
        assert tuple(made.shape) == tuple(theirs(*[torch.Size(a) if isinstance(a, ember.Size) else a
                                                   for a in args]).shape)
        assert made.type() == f"torch.{name}"
    data = [[1, 0], [3, 1]]
    assert mine(data).tolist() == theirs(data).tolist()
    assert mine((1, 0)).tolist() == theirs((1, 0)).tolist()
    assert mine([]).shape == (0,)
    assert mine(device="cpu").shape == (0,)


@pytest.mark.parametrize("call", [
    "FloatTensor(2.5)", "FloatTensor('a')", "FloatTensor(2, 3, dtype=lib.float64)", "FloatTensor(-1)",
    "FloatTensor([1], [2])", "FloatTensor(2, device='meta')", "FloatTensor(lib.zeros(2, dtype=lib.int64))",
    "LongTensor([1.5, 2.7]).tolist()", "FloatTensor(lib.zeros(2)).tolist()",
])
def test_legacy_type_constructor_errors_match_torch(call):
    mine = _outcome(lambda: eval(f"lib.{call}", {"lib": ember}))
    theirs = _outcome(lambda: eval(f"lib.{call}", {"lib": torch}))
    assert mine[0] == theirs[0]
    if mine[0] == "ok":
        assert mine == theirs
    elif mine[0] != "TypeError" or "invalid combination" not in theirs[1]:
        assert mine[1] == theirs[1].replace("torch.", "ember.") or mine[1] == theirs[1]


def test_legacy_type_from_same_type_tensor_is_returned():
    t = ember.zeros(3)
    assert ember.FloatTensor(t) is t


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                                   "uint8", "bool"])
def test_isinstance_against_legacy_types_matches_torch(dtype):
    mine = ember.zeros(2, dtype=getattr(ember, dtype))
    theirs = torch.zeros(2, dtype=getattr(torch, dtype))
    for name in _TYPES:
        assert isinstance(mine, getattr(ember, name)) == isinstance(theirs, getattr(torch, name)), name
    assert not issubclass(ember.FloatTensor, ember.Tensor)
    assert type(ember.FloatTensor([1.0])) is ember.Tensor


def test_isinstance_of_parameter_and_meta():
    assert isinstance(ember.nn.Parameter(ember.zeros(2)), ember.FloatTensor)
    assert isinstance(ember.zeros(2, requires_grad=True), ember.FloatTensor)
    assert not isinstance(ember.zeros(2, device="meta"), ember.FloatTensor)
    assert not isinstance(3.0, ember.FloatTensor)


@pytest.mark.parametrize("target", ["LongTensor", "DoubleTensor", "'torch.LongTensor'", "'torch.BoolTensor'",
                                    "lib.float64", "'torch.Foo'", "'FloatTensor'", "int", "'torch.FloatTensor'"])
def test_tensor_type_conversion_matches_torch(target):
    def run(lib):
        t = lib.tensor([1.5, -2.0, 0.0])
        value = eval(target if not target[0].isupper() else f"lib.{target}", {"lib": lib})
        result = t.type(value)
        return result.type(), result.tolist(), result is t

    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


def test_tensor_type_name_and_typename():
    assert ember.zeros(2, dtype=ember.int64).type() == "torch.LongTensor"
    assert ember.typename(ember.zeros(2)) == torch.typename(torch.zeros(2))


# ---------------------------------------------------------------- torch.nn.attention


def _attention_inputs(lib, shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes]


def test_sdp_backend_enum_matches_torch():
    mine, theirs = ember.nn.attention.SDPBackend, torch.nn.attention.SDPBackend
    assert {k: int(v) for k, v in mine.__members__.items()} == {k: int(v) for k, v in theirs.__members__.items()}
    assert str(mine.MATH) == str(theirs.MATH) and repr(mine.MATH) == repr(theirs.MATH)


def test_sdpa_kernel_rejects_non_backends():
    for lib in (ember, torch):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with lib.nn.attention.sdpa_kernel("MATH"):
                pass


def test_sdpa_kernel_sets_and_restores_backend_flags():
    for lib in (ember, torch):
        A = lib.nn.attention
        assert lib.backends.cuda.flash_sdp_enabled() and lib.backends.cuda.math_sdp_enabled()
        with A.sdpa_kernel(A.SDPBackend.MATH):
            assert not lib.backends.cuda.flash_sdp_enabled() and lib.backends.cuda.math_sdp_enabled()
            assert not lib.backends.cuda.mem_efficient_sdp_enabled() and not lib.backends.cuda.cudnn_sdp_enabled()
        assert lib.backends.cuda.flash_sdp_enabled() and lib.backends.cuda.mem_efficient_sdp_enabled()
        lib.backends.cuda.enable_flash_sdp(False)
        try:
            assert not lib.backends.cuda.flash_sdp_enabled()
        finally:
            lib.backends.cuda.enable_flash_sdp(True)


_SDPA_CASES = {
    "plain": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8)], {}),
    "3d": ([(3, 4, 8), (3, 5, 8), (3, 5, 8)], {}),
    "5d": ([(1, 2, 3, 4, 8), (1, 2, 3, 5, 8), (1, 2, 3, 5, 8)], {}),
    "value_dim": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], {}),
    "causal": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8)], {"is_causal": True}),
    "gqa": ([(2, 4, 4, 8), (2, 2, 5, 8), (2, 2, 5, 8)], {"enable_gqa": True}),
    "broadcast_batch": ([(2, 3, 4, 8), (1, 3, 5, 8), (1, 3, 5, 8)], {}),
    "broadcast_heads": ([(2, 3, 4, 8), (2, 1, 5, 8), (2, 1, 5, 8)], {}),
    "float_mask": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8), (4, 5)], {}),
    "mask_3d": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8)], {"bool_mask": (3, 4, 5)}),
    "mask_4d": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8)], {"bool_mask": (2, 1, 4, 5)}),
    "blind_rows": ([(1, 1, 2, 4), (1, 1, 3, 4), (1, 1, 3, 4)], {"blind": True}),
    "transposed_query": ([(2, 3, 8, 4), (2, 3, 5, 8), (2, 3, 5, 8)], {"transpose": True}),
    "dropout": ([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8)], {"dropout_p": 0.5}),
}


def _run_sdpa(lib, case, backends):
    shapes, options = _SDPA_CASES[case]
    options = dict(options)
    tensors = _attention_inputs(lib, shapes)
    q, k, v = tensors[:3]
    if len(tensors) == 4:
        options["attn_mask"] = tensors[3]
    if options.pop("transpose", False):
        q = q.transpose(-1, -2)
    if "bool_mask" in options:
        size = options.pop("bool_mask")
        options["attn_mask"] = lib.tensor(np.random.default_rng(1).random(size) > 0.3)
    if options.pop("blind", False):
        options["attn_mask"] = lib.tensor([[False] * 3, [True] * 3])
    A = lib.nn.attention
    chosen = None if backends is None else [getattr(A.SDPBackend, b) for b in backends]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if chosen is None:
                out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **options)
            else:
                with A.sdpa_kernel(chosen):
                    out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **options)
            result = ("ok", None if options.get("dropout_p") else out.numpy())
        except Exception as error:  # noqa: BLE001
            result = (type(error).__name__, str(error))
    messages = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return result, messages


@pytest.mark.parametrize("backends", [["FLASH_ATTENTION"], ["MATH"], ["EFFICIENT_ATTENTION"], ["CUDNN_ATTENTION"],
                                      [], ["EFFICIENT_ATTENTION", "CUDNN_ATTENTION"], ["MATH", "FLASH_ATTENTION"],
                                      None], ids=str)
@pytest.mark.parametrize("case", list(_SDPA_CASES))
def test_sdpa_backend_selection_matches_torch_cpu(case, backends):
    (mine, mine_warnings), (theirs, their_warnings) = _run_sdpa(ember, case, backends), _run_sdpa(torch, case,
                                                                                                  backends)
    assert mine[0] == theirs[0], (mine, theirs)
    if mine[0] == "ok":
        if theirs[1] is not None:
            np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-5, atol=1e-6)
    else:
        assert mine[1] == theirs[1]
    assert mine_warnings == their_warnings


def test_sdpa_math_backend_gradients_match_torch():
    def grads(lib, backend):
        q, k, v = _attention_inputs(lib, [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)], seed=3)
        mask = lib.tensor([[True] * 5, [False] * 5, [True, False, True, False, True]])
        for t in (q, k, v):
            t.requires_grad_(True)
        with lib.nn.attention.sdpa_kernel(getattr(lib.nn.attention.SDPBackend, backend)):
            out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.pow(2).sum().backward()
        return [t.grad.numpy() for t in (q, k, v)] + [out.detach().numpy()]

    for backend in ("MATH", "FLASH_ATTENTION"):
        for mine, theirs in zip(grads(ember, backend), grads(torch, backend)):
            np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-5)


def test_sdpa_kernel_set_priority_restores_state():
    A = ember.nn.attention
    before = A._cur_sdpa_kernel_backends(with_priority=True)
    with A.sdpa_kernel([A.SDPBackend.MATH, A.SDPBackend.FLASH_ATTENTION], set_priority=True):
        assert A._cur_sdpa_kernel_backends(with_priority=True) == [A.SDPBackend.MATH, A.SDPBackend.FLASH_ATTENTION]
    assert A._cur_sdpa_kernel_backends(with_priority=True) == before


@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
@pytest.mark.parametrize("sizes", [(4, 4), (3, 6)])
def test_causal_bias_matches_torch(variant, sizes):
    def run(lib):
        bias = getattr(lib.nn.attention.bias, variant)(*sizes)
        q, k, v = _attention_inputs(lib, [(2, 2, sizes[0], 8), (2, 2, sizes[1], 8), (2, 2, sizes[1], 8)], seed=5)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return bias._materialize().numpy(), out.numpy(), int(bias.variant), bias.seq_len_q, bias.seq_len_kv

    mine, theirs = run(ember), run(torch)
    np.testing.assert_array_equal(mine[0], theirs[0])
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-5, atol=1e-6)
    assert mine[2:] == theirs[2:]


def test_causal_bias_errors_and_warning_match_torch():
    for lib in (ember, torch):
        bias = lib.nn.attention.bias
        with pytest.raises(AssertionError, match="only supports 2D"):
            bias.causal_lower_right(2, 3, 4)
        with pytest.warns(UserWarning, match="Lower right causal bias will produce NaNs"):
            bias.causal_lower_right(5, 3)
        q = lib.zeros(1, 1, 2, 4)
        with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
            lib.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=bias.causal_upper_left(2, 2),
                                                           is_causal=True)


def test_nn_attention_public_names():
    assert set(torch.nn.attention.__all__) <= set(ember.nn.attention.__all__)
    assert set(torch.nn.attention.bias.__all__) <= set(ember.nn.attention.bias.__all__)


# ---------------------------------------------------------------- torch.sym_*

_SYM_CALLS = [
    "sym_int(2.7)", "sym_int(-2.7)", "sym_int('3')", "sym_int(lib.tensor(2.7))", "sym_float(2)", "sym_float('1.5')",
    "sym_float(lib.tensor(2))", "sym_max(2, 3.0)", "sym_max(2, 3)", "sym_max(np.float32(2), 3)", "sym_max(True, 3)",
    "sym_max(np.int64(2), 3)", "sym_max(lib.tensor(2), 3)", "sym_max('a', 'b')", "sym_min(1, 2)",
    "sym_min(1.5, 2)", "sym_min(lib.tensor([1, 2]), 1)", "sym_not(0)", "sym_not(True)",
    "sym_not(lib.tensor(True))", "sym_ite(True, 1, 2)", "sym_ite(False, 1, 2)", "sym_ite(True, 1, 2.0)",
    "sym_ite(lib.tensor(True), 1, 2)", "sym_ite(1, 1, 2)", "sym_sqrt(4)", "sym_sqrt(2.0)", "sym_sqrt(lib.tensor(4.0))",
    "sym_sum([1, 2, 3])", "sym_sum(1, 2.5)", "sym_sum([])", "sym_sum((1, 2))",
]


@pytest.mark.parametrize("call", _SYM_CALLS)
def test_sym_helpers_match_torch(call):
    def run(lib):
        value = eval(f"lib.{call}", {"lib": lib, "np": np})
        return type(value).__name__, value

    mine, theirs = _outcome(lambda: run(ember)), _outcome(lambda: run(torch))
    if mine[0] == "AssertionError":
        assert theirs[0] == "AssertionError"
        assert mine[1].replace("ember._tensor.", "torch.") == theirs[1] or "Tensor" in theirs[1]
    else:
        assert mine == theirs


def test_sym_sum_of_tensors_adds_them():
    mine = ember.sym_sum([ember.tensor(1), 2])
    assert isinstance(mine, ember.Tensor) and mine.item() == 3
    assert ember.sym_sqrt.__name__ == torch.sym_sqrt.__name__


def test_sym_types_exist_for_isinstance_checks():
    assert not isinstance(3, (ember.SymInt, ember.SymFloat, ember.SymBool))
    with pytest.raises(RuntimeError):
        ember.SymInt(None)


# ---------------------------------------------------------------- torch.nn.common_types, torch.nn.factory_kwargs


def test_common_types_names_match_torch():
    names = {n for n in dir(torch.nn.common_types) if n.startswith("_") and n.endswith("_t")}
    assert names and names <= set(dir(ember.nn.common_types))
    assert ember.nn.common_types._size_2_t == (int | tuple[int, int])


@pytest.mark.parametrize("kwargs", [None, {}, {"dtype": "D"}, {"device": "cpu", "dtype": "D"},
                                    {"factory_kwargs": {"dtype": "D"}, "device": "cpu"},
                                    {"factory_kwargs": {"dtype": "D"}, "dtype": "E"}, {"bias": True},
                                    {"memory_format": "M"}])
def test_factory_kwargs_matches_torch(kwargs):
    assert _outcome(lambda: ember.nn.factory_kwargs(kwargs)) == _outcome(lambda: torch.nn.factory_kwargs(kwargs))


def test_factory_kwargs_feed_a_factory():
    made = ember.empty(3, **ember.nn.factory_kwargs({"dtype": ember.float64, "device": "cpu"}))
    assert made.dtype == ember.float64
