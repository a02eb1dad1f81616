"""torch's shell dtypes uint16/uint32/uint64 (NOTE [ Shell dtypes ] in ember/_dtype.py) against torch: which ops
run, their result dtypes and values, the NotImplementedError of the kernels torch lacks, and the promotion error."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["uint16", "uint32", "uint64"]


def _cases(lib, name):
    d = getattr(lib, name)
    signed = {"uint16": lib.int16, "uint32": lib.int32, "uint64": lib.int64}[name]
    x = lib.tensor([1, 2, 3], dtype=d)
    y = lib.tensor([3, 2, 1], dtype=d)
    i = lib.tensor([0, 2])
    m = lib.tensor([True, False, True])

    def setitem(target, key, value):
        target = target.clone()
        target[key] = value
        return target

    return {
        # kernels torch has
        "mul": lambda: x * y, "mul_scalar": lambda: x * 2, "mul_float_scalar": lambda: x * 1.5,
        "div": lambda: x / y, "div_scalar": lambda: x / 2, "true_divide": lambda: lib.true_divide(x, y),
        "eq": lambda: x == y, "eq_scalar": lambda: x == 1, "ne": lambda: x != y,
        "and": lambda: x & y, "or": lambda: x | y, "xor": lambda: x ^ y, "and_scalar": lambda: x & 1,
        "sum": lambda: x.sum(), "sum_dim": lambda: x.reshape(3, 1).sum(0), "sum_float": lambda: x.sum(dtype=lib.float32),
        "prod": lambda: x.prod(), "cumsum": lambda: x.cumsum(0), "cumprod": lambda: x.cumprod(0),
        "all": lambda: x.all(), "any": lambda: x.any(), "where": lambda: lib.where(m, x, y),
        "sort": lambda: tuple(x.sort(descending=True)), "argsort": lambda: x.argsort(), "unique": lambda: x.unique(),
        "unique_consecutive": lambda: x.unique_consecutive(), "isnan": lambda: x.isnan(), "isfinite": lambda: x.isfinite(),
        "nan_to_num": lambda: x.nan_to_num(), "floor": lambda: x.floor(), "round": lambda: x.round(),
        "sqrt": lambda: x.sqrt(), "exp": lambda: x.exp().round(decimals=4), "add_float_tensor": lambda: x + lib.ones(3),
        "mul_0d_int": lambda: x * lib.tensor(2), "mul_0d_float": lambda: x * lib.tensor(2.0),
        "equal": lambda: lib.equal(x, y), "isclose": lambda: lib.isclose(x, y), "diag": lambda: x.diag(),
        # movement
        "cat": lambda: lib.cat([x, y]), "stack": lambda: lib.stack([x, y]), "getitem": lambda: x[1],
        "getitem_tensor": lambda: x[i], "getitem_mask": lambda: x[m], "slice": lambda: x[1:],
        "setitem": lambda: setitem(x, 0, 5), "setitem_slice": lambda: setitem(x, slice(0, 3), y),
        "fill": lambda: x.clone().fill_(3), "zero": lambda: x.clone().zero_(), "copy": lambda: x.clone().copy_(y),
        "copy_float": lambda: x.clone().copy_(lib.ones(3)), "contiguous": lambda: x.reshape(3, 1).t().contiguous(),
        "view_dtype": lambda: x.view(signed), "reshape": lambda: x.reshape(1, 3), "expand": lambda: x.expand(2, 3),
        "repeat": lambda: x.repeat(2), "roll": lambda: x.roll(1), "split": lambda: x.split(1),
        "unbind": lambda: x.unbind(), "as_strided": lambda: x.as_strided((2,), (1,)), "unfold": lambda: x.unfold(0, 2, 1),
        "pad": lambda: lib.nn.functional.pad(x, (1, 1)),
        "float": lambda: x.float(), "long": lambda: x.long(), "bool": lambda: x.bool(), "to_uint8": lambda: x.to(lib.uint8),
        "from_float": lambda: lib.tensor([1.5, 2.0]).to(d), "from_int": lambda: lib.tensor([-1, 7]).to(d),
        "zeros": lambda: lib.zeros(2, dtype=d), "full": lambda: lib.full((2,), 7, dtype=d),
        "full_like": lambda: lib.full_like(x, 3), "new_tensor": lambda: x.new_tensor([1, 2]),
        "tolist": lambda: x.tolist(), "item": lambda: x[0].item(), "repr": lambda: repr(x).replace(lib.__name__, "T"),
        "numpy": lambda: x.numpy().dtype.name, "max_value": lambda: lib.tensor([lib.iinfo(d).max], dtype=d).tolist(),
        "iinfo": lambda: repr(lib.iinfo(d)), "is_signed": lambda: (x.is_signed(), x.is_floating_point(), x.element_size()),
        "promote_self": lambda: lib.promote_types(d, d), "promote_float": lambda: lib.promote_types(d, lib.float64),
        "result_type_scalar": lambda: lib.result_type(x, 1),
        # kernels torch lacks: NotImplementedError
        "add": lambda: x + y, "sub": lambda: x - y, "lt": lambda: x < y, "neg": lambda: -x, "abs": lambda: x.abs(),
        "max": lambda: x.max(), "maximum": lambda: lib.maximum(x, y), "clamp": lambda: x.clamp(1, 2),
        "pow": lambda: x**2, "floordiv": lambda: x // y, "remainder": lambda: x % y, "bitwise_not": lambda: ~x,
        "lshift": lambda: x << 1, "argmax": lambda: x.argmax(), "topk": lambda: x.topk(1), "flip": lambda: x.flip(0),
        "gather": lambda: x.gather(0, i), "masked_fill": lambda: x.masked_fill(m, 0), "matmul": lambda: x @ y,
        "tril": lambda: x.reshape(3, 1).expand(3, 3).tril(), "sign": lambda: x.sign(),
        "logical_not": lambda: x.logical_not(),
        # dtype errors as torch's
        "mean": lambda: x.mean(), "var": lambda: x.var(),
        # promotion with another bool or integer dtype: RuntimeError
        "mul_int64": lambda: x * lib.ones(3, dtype=lib.long), "mul_uint8": lambda: x * lib.ones(3, dtype=lib.uint8),
        "mul_bool": lambda: x * m, "eq_int64": lambda: x == lib.ones(3, dtype=lib.long),
        "promote_int": lambda: lib.promote_types(d, lib.int64),
    }


CASES = sorted(_cases(torch, "uint16"))

# ember runs these where torch's CPU build has no kernel: the op is a movement ember shares with a supported
# one (index_select is the `index` op of x[i]; setitem with a tensor or mask key writes through NumPy)
EMBER_RUNS = {"setitem_tensor", "setitem_mask", "index_select"}


def _plain(value):
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        return ("tensor", str(value.dtype).split(".")[-1], _plain(value.tolist()))
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, (torch.dtype, ember.dtype)):
        return ("dtype", str(value).split(".")[-1])
    return value


def _outcome(fn):
    try:
        return ("ok", _plain(fn()))
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return (type(error).__name__, str(error) if isinstance(error, RuntimeError) else "")


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_shell_dtype_parity(case, name):
    expected = _outcome(_cases(torch, name)[case])
    actual = _outcome(_cases(ember, name)[case])
    if expected[0] == "NotImplementedError":  # the kernel's name differs ("add_stub"); the dtype must be named
        assert actual[0] == "NotImplementedError"
        return
    assert actual == expected


@pytest.mark.parametrize("name", DTYPES)
def test_ember_runs_some_movements_torch_refuses(name):
    d = getattr(ember, name)
    x = ember.tensor([1, 2, 3], dtype=d)
    target = x.clone()
    target[ember.tensor([0, 2])] = 5
    target[ember.tensor([False, True, False])] = 6
    assert target.tolist() == [5, 6, 5] and x.index_select(0, ember.tensor([2])).tolist() == [3]


def test_not_implemented_message_names_the_dtype():
    with pytest.raises(NotImplementedError, match="not implemented for 'UInt32'"):
        ember.tensor([1], dtype=ember.uint32) + ember.tensor([1], dtype=ember.uint32)


@pytest.mark.parametrize("np_dtype", [np.uint16, np.uint32, np.uint64])
def test_numpy_interop(np_dtype):
    array = np.array([[0, np.iinfo(np_dtype).max], [3, 4]], dtype=np_dtype)
    for convert in (ember.from_numpy, ember.tensor, ember.as_tensor):
        tensor = convert(array)
        expected = torch.from_numpy(array)
        assert str(tensor.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        assert tensor.tolist() == expected.tolist()
    shared = ember.from_numpy(array)
    shared[0, 0] = 9
    assert array[0, 0] == 9  # from_numpy shares memory


@pytest.mark.parametrize("values", [[-1], [2**64], [2**63, 1]])
def test_uint64_python_int_conversion(values):
    expected = _outcome(lambda: torch.tensor(values, dtype=torch.uint64))
    actual = _outcome(lambda: ember.tensor(values, dtype=ember.uint64))
    assert actual[0] == expected[0] and actual[1:] == expected[1:]


def test_uint16_value_overflow_error():
    expected = _outcome(lambda: torch.tensor([70000], dtype=torch.uint16))
    assert _outcome(lambda: ember.tensor([70000], dtype=ember.uint16)) == expected
    assert ember.tensor([-1], dtype=ember.uint16).tolist() == torch.tensor([-1], dtype=torch.uint16).tolist()


def test_safetensors_bytes_equal_torchs(tmp_path):
    from safetensors.torch import save_file as torch_save_file

    from ember.safetensors import load_file, save_file

    tensors = {"c": [7, 2**64 - 1], "b": [5], "a": [1, 65535], "f": [1.5], "i": [-3]}
    dtypes = {"c": "uint64", "b": "uint32", "a": "uint16", "f": "float32", "i": "int64"}
    save_file({k: ember.tensor(v, dtype=getattr(ember, dtypes[k])) for k, v in tensors.items()}, tmp_path / "e")
    torch_save_file({k: torch.tensor(v, dtype=getattr(torch, dtypes[k])) for k, v in tensors.items()}, tmp_path / "t")
    assert (tmp_path / "e").read_bytes() == (tmp_path / "t").read_bytes()
    loaded = load_file(tmp_path / "t")
    assert {k: (v.dtype.name, v.tolist()) for k, v in loaded.items()} == {k: (dtypes[k], v) for k, v in tensors.items()}


# ---------------------------------------------------------------- float8

FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def _float8_cases(lib, name):
    d = getattr(lib, name)
    other = lib.float8_e5m2 if name != "float8_e5m2" else lib.float8_e4m3fn
    x = lib.tensor([1.0, 2.0, 4.0] if name == "float8_e8m0fnu" else [1.0, 2.5, -3.0]).to(d)
    y = x.clone()
    m = lib.tensor([True, False, True])

    def setitem(target, key, value):
        target = target.clone()
        target[key] = value
        return target

    return {
        "mul": lambda: x * y, "abs": lambda: x.abs(), "eq": lambda: x == y, "ne": lambda: x != y,
        "isnan": lambda: x.isnan(), "where": lambda: lib.where(m, x, y), "cat": lambda: lib.cat([x, y]),
        "stack": lambda: lib.stack([x, y]), "getitem": lambda: x[[0, 2]], "slice": lambda: x[1:],
        "setitem": lambda: setitem(x, 0, 1.0), "fill": lambda: x.clone().fill_(2), "zeros": lambda: lib.zeros(2, dtype=d),
        "ones": lambda: lib.ones(2, dtype=d), "full_saturating": lambda: lib.full((2,), 1000.0, dtype=d).float(),
        "copy_": lambda: lib.empty(3, dtype=d).copy_(lib.tensor([1000.0, -0.3, 7.0])).float(),
        "matmul": lambda: x.reshape(3, 1) @ y.reshape(1, 3), "linear": lambda: lib.nn.functional.linear(
            x.reshape(1, 3), y.reshape(1, 3)), "mm": lambda: lib.mm(x.reshape(1, 3), y.reshape(3, 1)),
        "float": lambda: x.float(), "bfloat16": lambda: x.to(lib.bfloat16), "int": lambda: x.to(lib.int32),
        "to_other": lambda: x.to(other), "view_uint8": lambda: x.view(lib.uint8), "reshape": lambda: x.reshape(3, 1),
        "tolist": lambda: x.tolist(), "item": lambda: x[1].item(), "repr": lambda: repr(x).replace(lib.__name__, "T"),
        "is_floating_point": lambda: x.is_floating_point(), "finfo": lambda: repr(lib.finfo(d)),
        "grad": lambda: x.clone().requires_grad_().float().sum().backward(),
        "numpy": lambda: x.numpy(),
        # kernels torch lacks
        "add": lambda: x + y, "sub": lambda: x - y, "div": lambda: x / y, "neg": lambda: -x, "lt": lambda: x < y,
        "sum": lambda: x.sum(), "max": lambda: x.max(), "exp": lambda: x.exp(), "sqrt": lambda: x.sqrt(),
        "sort": lambda: x.sort(), "relu": lambda: lib.relu(x), "clamp": lambda: x.clamp(0, 1), "pow": lambda: x**2,
        "unique": lambda: x.unique(), "mean": lambda: x.mean(),
        # promotion with any other dtype
        "add_float32": lambda: x + lib.ones(3), "mul_bfloat16": lambda: x * lib.ones(3, dtype=lib.bfloat16),
        "mul_other_float8": lambda: x * lib.ones(3).to(other),
        "promote_types": lambda: lib.promote_types(d, lib.float32), "promote_self": lambda: lib.promote_types(d, d),
    }


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("case", sorted(_float8_cases(torch, "float8_e4m3fn")))
def test_float8_parity(case, name):
    expected = _outcome(_float8_cases(torch, name)[case])
    actual = _outcome(_float8_cases(ember, name)[case])
    if expected[0] == "NotImplementedError":
        assert actual[0] == "NotImplementedError"
        return
    assert actual == expected


def _conversion_inputs():
    rng = np.random.default_rng(0)
    scaled = rng.standard_normal(20000) * 10.0 ** rng.integers(-8, 5, 20000)
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 448, 464, 480, 57344, 61440, 65536, 2**-9, 2**-17, -1e6]
    return np.concatenate([scaled, special])


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("source", ["float64", "float32", "float16", "bfloat16", "int64"])
def test_float8_conversion_bits_equal_torchs(name, source):
    """Rounding, saturation (e4m3fn), NaN encodings (e5m2) and e8m0fnu's magnitudes, bit for bit."""
    values = _conversion_inputs()
    if source == "int64":
        values = np.nan_to_num(values, posinf=0, neginf=0).clip(-(2**40), 2**40).astype(np.int64)
    if source == "bfloat16":  # torch's float -> bfloat16 makes every NaN 0x7fc0; ember keeps a NaN's sign there
        values = np.where(np.isnan(values), np.nan, values)
    expected = torch.from_numpy(values).to(getattr(torch, source)).to(getattr(torch, name)).view(torch.uint8)
    actual = ember.from_numpy(values).to(getattr(ember, source)).to(getattr(ember, name)).view(ember.uint8)
    assert np.array_equal(actual.numpy(), expected.numpy())
    back = ember.from_numpy(np.arange(256, dtype=np.uint8)).view(getattr(ember, name)).float().numpy()
    reference = torch.from_numpy(np.arange(256, dtype=np.uint8)).view(getattr(torch, name)).float().numpy()
    assert np.array_equal(back, reference, equal_nan=True)


def test_float8_checkpoints_and_safetensors_both_ways(tmp_path):
    import io

    from safetensors.torch import load_file as torch_load_file
    from safetensors.torch import save_file as torch_save_file

    from ember.safetensors import load_file, save_file

    values = [1.0, -2.5, 448.0, 0.015625]
    state = {name: torch.tensor(values).abs().to(getattr(torch, name)) for name in FLOAT8}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)
    assert {k: (v.dtype.name, _plain(v.float())) for k, v in loaded.items()} == {
        k: (k, _plain(v.float())) for k, v in state.items()}
    buffer = io.BytesIO()
    ember.save(loaded, buffer)
    buffer.seek(0)
    assert all(torch.equal(v.view(torch.uint8), state[k].view(torch.uint8))
               for k, v in torch.load(buffer, weights_only=True).items())
    stored = {k: v for k, v in state.items() if k in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")}
    stored["i8"] = torch.ones(2, dtype=torch.int8)
    stored["i16"] = torch.ones(2, dtype=torch.int16)
    torch_save_file(stored, tmp_path / "t")
    ours = load_file(tmp_path / "t")
    save_file(ours, tmp_path / "e")
    assert (tmp_path / "e").read_bytes() == (tmp_path / "t").read_bytes()
    assert all(torch.equal(v.view(torch.uint8), stored[k].view(torch.uint8))
               for k, v in torch_load_file(tmp_path / "e").items())
