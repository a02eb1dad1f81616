"""Round 23a's real programs (tests/programs/_r23a_programs.py) under torch and under ember: nanoGPT (model.py +
train.py, float32 and bfloat16 autocast, flash and manual attention, checkpoint resume across the two libraries),
torchvision's ResNet (BasicBlock and Bottleneck) with the classification reference recipe, a timm ViT (mixup, layer
decay, LayerScale, DropPath) and a diffusers DDPM training step with EMA and sampling.

torch builds each model, its initial weights are loaded into ember, both train the same steps on the same data;
losses, learning rates, outputs and final parameters must agree (float32: rtol 1e-4; bfloat16 autocast looser).
Each program also runs with ember.compile where the original uses torch.compile, against ember eager.  Then the
focused tests of what the programs found.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _r23a_programs import crop_block_size, ddpm, nanogpt, nanogpt_resume, resnet, resnet_resume, vit  # noqa: E402
from _records import compare  # noqa: E402

torch = pytest.importorskip("torch")
import ember  # noqa: E402

# ------------------------------------------------------------------------------------------------ nanoGPT


def _gpt_data():
    rng = np.random.default_rng(0)
    return {"offsets": [rng.integers(0, 200 - 9, 3) for _ in range(20)], "prompt": rng.integers(0, 40, 3),
            "uniforms": [rng.uniform(size=1) for _ in range(10)], "resume_x": rng.integers(0, 40, (2, 9))}


def _gpt_workdir(tmp_path):
    (np.arange(200) % 40).astype(np.uint16).tofile(tmp_path / "train.bin")  # prepare.py's uint16 token file
    return str(tmp_path)


@pytest.mark.parametrize("flash", [True, False], ids=["flash", "manual"])
def test_nanogpt_matches_torch(tmp_path, flash):
    """float32: losses, lr schedule, grad norms, the final weights, greedy and inverse-CDF sampled tokens, the
    state-dict keys (tied wte / lm_head both listed), parameter counts and the optimizer groups; then train.py's
    resume from each library's checkpoint, loaded by both."""
    workdir, data = _gpt_workdir(tmp_path), _gpt_data()
    torch.manual_seed(0)
    want, state = nanogpt(torch, data, None, None, workdir, flash=flash)
    got, _ = nanogpt(ember, data, state, None, workdir, flash=flash)
    assert not compare(got, want)
    assert got["tied"] and got["fused_available"]
    assert len(set(want["loss"])) == len(want["loss"])  # (it trains)
    resumed = {(src, lib.__name__): nanogpt_resume(lib, f"{workdir}/ckpt_{src}.pt", workdir, data, flash)
               for src in ("torch", "ember") for lib in (torch, ember)}
    reference = resumed[("torch", "torch")]
    for key, record in resumed.items():
        assert not compare(record, reference), key


def test_nanogpt_bfloat16_autocast_matches_torch(tmp_path):
    """torch.amp.autocast(device_type='cpu', dtype=torch.bfloat16) around the forward, as train.py's ctx: the
    first step's loss agrees to float32 rounding (the bfloat16 linears, SDPA and GELU round as torch's kernels),
    later steps within what Adam makes of last-bit differences."""
    workdir, data = _gpt_workdir(tmp_path), _gpt_data()
    torch.manual_seed(0)
    want, state = nanogpt(torch, data, None, None, workdir, dtype="bfloat16")
    got, _ = nanogpt(ember, data, state, None, workdir, dtype="bfloat16")
    # (before ember rounded SDPA and the backward kernels as torch does: 1.5e-5 off, and parameters 2e-3 off)
    assert abs(got["loss"][0] - want["loss"][0]) < 3e-6, (got["loss"], want["loss"])
    # greedy decoding of bfloat16 logits meets exact ties (top_k=1 then keeps both): not compared
    del got["greedy"], want["greedy"], got["sampled"], want["sampled"]
    problems = compare(got, want, rtol=1e-3, atol=2e-4, looser={"logits": (1e-2, 1e-2)})
    assert not problems, problems


def test_nanogpt_compiled_matches_eager(tmp_path):
    """train.py's `model = torch.compile(model)`: the compiled program gives eager's records, and its checkpoint
    carries the `_orig_mod.` prefix that the resume code strips, in either library."""
    workdir, data = _gpt_workdir(tmp_path), _gpt_data()
    torch.manual_seed(0)
    _, state = nanogpt(torch, data, None, None, workdir)
    want, _ = nanogpt(ember, data, state, None, workdir)
    got, _ = nanogpt(ember, data, state, ember.compile, workdir)
    assert not compare(got, want, rtol=1e-5, atol=1e-6)
    checkpoint = ember.load(f"{workdir}/ckpt_ember.pt")
    assert all(k.startswith("_orig_mod.") for k in checkpoint["model"])
    assert list(torch.load(f"{workdir}/ckpt_ember.pt")["model"]) == list(checkpoint["model"])
    resumed = [nanogpt_resume(lib, f"{workdir}/ckpt_ember.pt", workdir, data) for lib in (torch, ember)]
    assert not compare(resumed[1], resumed[0])
    assert list(torch.compile(torch.nn.Linear(2, 2)).state_dict()) == \
        list(ember.compile(ember.nn.Linear(2, 2)).state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]


def test_nanogpt_crop_block_size():
    torch.manual_seed(0)
    model = None
    from _r23a_programs import GPTConfig, nanogpt_module, setup

    model = nanogpt_module(torch, flash=False)(GPTConfig(block_size=8, vocab_size=40, n_layer=2, n_head=2,
                                                         n_embd=16, bias=True))
    state = setup(torch, {"gpt": model}, None)
    assert not compare(crop_block_size(ember, state), crop_block_size(torch, state))


# ------------------------------------------------------------------------------------------------ ResNet


def _resnet_data():
    rng = np.random.default_rng(0)
    return {"train": [(rng.standard_normal((4, 3, 32, 32)).astype(np.float32), rng.integers(0, 5, 4))
                      for _ in range(6)],
            "test": rng.standard_normal((3, 3, 32, 32)).astype(np.float32)}


@pytest.mark.parametrize("bottleneck", [False, True], ids=["basic", "bottleneck"])
def test_resnet_matches_torch(tmp_path, bottleneck):
    """SGD(momentum, nesterov) with norm layers kept out of weight decay (nn.modules.batchnorm._BatchNorm),
    MultiStepLR, label smoothing, channels_last, eval under inference_mode; checkpoints resumed across."""
    data = _resnet_data()
    torch.manual_seed(0)
    want, state = resnet(torch, data, None, None, str(tmp_path), bottleneck=bottleneck)
    got, _ = resnet(ember, data, state, None, str(tmp_path), bottleneck=bottleneck)
    assert not compare(got, want)
    assert got["eval_inference"] and got["channels_last"]
    if not bottleneck:
        for src in ("torch", "ember"):
            records = [resnet_resume(lib, f"{tmp_path}/resnet_{src}.pth", data) for lib in (torch, ember)]
            assert not compare(records[1], records[0]), src
        compiled, _ = resnet(ember, data, state, ember.compile, str(tmp_path))
        assert not compare(compiled, got, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------ ViT


def _vit_data():
    rng = np.random.default_rng(0)
    lam = np.random.RandomState(0).beta(0.8, 0.8, 6)  # Mixup's np.random.beta(alpha, alpha)
    return {"train": [(rng.standard_normal((4, 3, 16, 16)).astype(np.float32), rng.integers(0, 5, 4))
                      for _ in range(6)],
            "test": rng.standard_normal((3, 3, 16, 16)).astype(np.float32), "lam": lam}


@pytest.mark.parametrize("fused", [True, False], ids=["sdpa", "manual"])
def test_vit_matches_torch(tmp_path, fused):
    """Mixup (flip(0), mul_/add_ in place) with SoftTargetCrossEntropy, layer-decay AdamW groups, LayerScale,
    clip_grad_norm_; Beta's log_prob, mean and entropy; DropPath's per-sample masks.  Then compiled vs eager."""
    data = _vit_data()
    torch.manual_seed(0)
    want, state = vit(torch, data, None, None, str(tmp_path), fused_attn=fused)
    got, _ = vit(ember, data, state, None, str(tmp_path), fused_attn=fused)
    assert not compare(got, want)
    assert got["beta_sample_in_range"] and got["drop_path_per_sample"]
    compiled, _ = vit(ember, data, state, ember.compile, str(tmp_path), fused_attn=fused)
    assert not compare(compiled, got, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------ DDPM


def _ddpm_data():
    rng = np.random.default_rng(0)

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    return {"images": [rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32) for _ in range(5)],
            "noise": [normal(2, 3, 8, 8) for _ in range(5)], "timesteps": [rng.integers(0, 50, 2) for _ in range(5)],
            "sample_noise": [normal(1, 3, 8, 8) for _ in range(6)]}


# The attention's key bias has a zero gradient in exact arithmetic (softmax ignores a per-row constant): both
# libraries' gradients are rounding noise, which AdamW turns into lr-sized steps of either sign (5 steps, lr 1e-3).
_KEY_BIAS = {"to_k.bias": (0.0, 1e-2)}


@pytest.mark.parametrize("variant", ["baddbmm-linear-loop", "sdpa-cosine-foreach"])
def test_ddpm_matches_torch(tmp_path, variant):
    """add_noise (gather by timestep, flatten, unsqueeze), GroupNorm/SiLU resnet blocks, nearest upsampling,
    baddbmm or SDPA attention, MSE on the noise, EMA (mul_/sub_ loop or _foreach_sub_), DDPM sampling."""
    kwargs = {} if variant.startswith("baddbmm") else {"use_sdpa": True, "beta_schedule": "squaredcos_cap_v2",
                                                       "foreach": True}
    data = _ddpm_data()
    torch.manual_seed(0)
    want, state = ddpm(torch, data, None, None, str(tmp_path), **kwargs)
    got, _ = ddpm(ember, data, state, None, str(tmp_path), **kwargs)
    assert not compare(got, want, looser=_KEY_BIAS)
    saved = [lib.load(f"{tmp_path}/ema_{name}.pt") for lib, name in ((ember, "torch"), (torch, "ember"))]
    assert saved[0]["optimization_step"] == saved[1]["optimization_step"] == 5
    np.testing.assert_allclose(saved[0]["shadow_params"][0].numpy(), saved[1]["shadow_params"][0].numpy(), rtol=1e-4)
    compiled, _ = ddpm(ember, data, state, ember.compile, str(tmp_path), **kwargs)
    assert not compare(compiled, got, rtol=1e-5, atol=1e-6, looser=_KEY_BIAS)


# ------------------------------------------------------------------------------------------------ what the programs found


def _bf16_grads(lib, fn, arrays, dtype="bfloat16"):
    """fn's output and its inputs' gradients, all in `dtype`, as float32 NumPy arrays."""
    tensors = [lib.tensor(a).to(getattr(lib, dtype)).requires_grad_() for a in arrays]
    out = fn(lib, *tensors)
    grad = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(np.float32))
    out.backward(grad.to(getattr(lib, dtype)))
    return [out.detach().float().numpy()] + [t.grad.float().numpy() for t in tensors]


def _assert_bitwise(fn, *shapes, dtype="bfloat16", seed=0, fraction=0.0):
    """fn's output and gradients in `dtype` equal torch's bit for bit (up to `fraction` of the entries one ulp
    off: torch's vectorised exp is not correctly rounded, which float16's longer mantissa can show)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = _bf16_grads(torch, fn, arrays, dtype)
    got = _bf16_grads(ember, fn, arrays, dtype)
    for i, (a, b) in enumerate(zip(got, want)):
        differ = a != b
        assert np.mean(differ) <= fraction, (i, float(np.mean(differ)))
        np.testing.assert_allclose(a, b, rtol=2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_half_rounds_as_torch_flash_kernel(dtype, causal):
    """nanoGPT's flash path under bfloat16 autocast was an ulp off in a third of its outputs: torch's CPU flash
    kernel rounds the unnormalised exponentials to the half type before multiplying by V (and, in backward, the
    probabilities and the score gradients before their GEMMs).  The math path (3-D operands) stays float32."""
    def attend(lib, q, k, v):
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    fraction = 0.0 if dtype == "bfloat16" else 0.02  # (before: a third of the entries)
    _assert_bitwise(attend, (2, 2, 8, 8), (2, 2, 8, 8), (2, 2, 8, 8), dtype=dtype, fraction=fraction)
    _assert_bitwise(attend, (4, 6, 8), (4, 6, 8), (4, 6, 8), dtype=dtype, fraction=fraction)


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "tanh", "sigmoid", "softmax", "elu", "softplus",
                                  "leaky_relu", "hardsigmoid", "layer_norm"])
def test_half_backward_rounds_once_as_torch_kernels(name):
    """Ops that torch differentiates with one backward kernel (gelu_backward, tanh_backward,
    _softmax_backward_data, native_layer_norm_backward, ...) round a bfloat16 gradient once; ember's formulas in
    ember ops rounded after every step, half the gradient entries an ulp off."""
    F = {
        "gelu": lambda lib, x: lib.nn.functional.gelu(x),
        "gelu_tanh": lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"),
        "silu": lambda lib, x: lib.nn.functional.silu(x),
        "tanh": lambda lib, x: lib.tanh(x),
        "sigmoid": lambda lib, x: x.sigmoid(),
        "softmax": lambda lib, x: x.softmax(-1),
        "elu": lambda lib, x: lib.nn.functional.elu(x),
        "softplus": lambda lib, x: lib.nn.functional.softplus(x),
        "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x, 0.1),
        "hardsigmoid": lambda lib, x: lib.nn.functional.hardsigmoid(x),
        "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, (16,)),
    }[name]
    _assert_bitwise(F, (40, 30) if name != "layer_norm" else (8, 16))


def test_group_norm_half_rounds_once_as_torch():
    """diffusers' GroupNorm on bfloat16 activations: torch normalises, scales and shifts in float32 and rounds
    once; ember rounded after the normalisation and again after each affine step."""
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 6, 5)), rng.standard_normal(6), rng.standard_normal(6)
    outs = []
    for lib in (torch, ember):
        args = [lib.tensor(a.astype(np.float32)).bfloat16() for a in (x, w, b)]
        outs.append(lib.nn.functional.group_norm(args[0], 2, args[1], args[2]).float().numpy())
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.xfail(strict=True, reason="torch's CPU LayerNorm backward sums bfloat16 dgamma/dbeta in bfloat16 "
                                       "buffers, one per thread (results depend on torch.get_num_threads()); "
                                       "ember sums in float32 and rounds once")
def test_layer_norm_bfloat16_parameter_grads_match_torch():
    _assert_bitwise(lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (30,), w, b), (40, 30), (30,), (30,))


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_log_softmax_half_matches_torch_bitwise(dtype, dim):
    """torch's last-dim kernel for half types rounds the row's sum of exponentials and its log to the half
    type before subtracting (its other-dims kernel does not): ember's half_impl does the same."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((40, 30)) * 4).astype(np.float32)
    outs = [lib.log_softmax(lib.tensor(x).to(getattr(lib, dtype)), dim).float().numpy() for lib in (torch, ember)]
    np.testing.assert_array_equal(outs[1], outs[0])


def test_log_softmax_bfloat16_last_dim_output_and_grad_match_torch():
    _assert_bitwise(lambda lib, x: lib.log_softmax(x, -1), (40, 30))


def test_nn_modules_per_file_aliases():
    """timm / torchvision reach norm classes by torch's file names: nn.modules.batchnorm._BatchNorm (the
    classification reference's set_weight_decay), nn.modules.instancenorm._InstanceNorm, ..."""
    import importlib

    for name in ("batchnorm", "instancenorm", "padding", "pixelshuffle", "upsampling", "distance", "fold",
                 "channelshuffle"):
        theirs = importlib.import_module(f"torch.nn.modules.{name}")
        ours = getattr(ember.nn.modules, name)
        assert ours is importlib.import_module(f"ember.nn.modules.{name}")
        assert sorted(ours.__all__) == sorted(theirs.__all__), name
        for cls in ours.__all__:
            assert getattr(ours, cls) is getattr(ember.nn, cls)
    assert issubclass(ember.nn.BatchNorm2d, ember.nn.modules.batchnorm._BatchNorm)
    assert not issubclass(ember.nn.InstanceNorm2d, ember.nn.modules.batchnorm._BatchNorm)
    assert issubclass(ember.nn.InstanceNorm2d, ember.nn.modules.instancenorm._InstanceNorm)
    assert issubclass(torch.nn.InstanceNorm2d, torch.nn.modules.instancenorm._InstanceNorm)


def test_underscore_assert():
    """timm's PatchEmbed: torch._assert(cond, message) raises AssertionError with the message when false."""
    for lib in (torch, ember):
        lib._assert(True, "fine")
        lib._assert(lib.tensor(True), "fine")
        with pytest.raises(AssertionError, match="Input height"):
            lib._assert(3 == 4, "Input height (3) doesn't match model (4).")
