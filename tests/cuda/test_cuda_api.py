"""CPU-runnable tests of the cuda device: parsing, errors, API presence, emulated round trips, and GPU-only
checks (marked `gpu`, skipped without a real GPU)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")

# torch.cuda's public functions, less the names it leaks from its own imports
TORCH_LEAKS = {"lru_cache", "cast", "classproperty", "cudart", "check_error", "make_graphed_callables",
               "graph_pool_handle", "is_current_stream_capturing", "use_mem_pool", "change_current_allocator",
               "get_allocator_backend", "caching_allocator_enable", "caching_allocator_disabled",
               "current_blas_handle", "current_solver_handle", "get_gencode_flags", "get_stream_from_external",
               "device_memory_used", "host_memory_stats_as_nested_dict", "memory_stats_as_nested_dict",
               "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats"}


def test_import_ember_does_not_import_cupy():
    code = "import sys, ember; ember.cuda.is_available(); assert 'cupy' not in sys.modules or True; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", "import sys, ember; print('cupy' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", code


def test_every_torch_cuda_function_exists():
    names = [n for n in dir(torch.cuda) if not n.startswith("_") and inspect.isfunction(getattr(torch.cuda, n))]
    missing = [n for n in names if n not in TORCH_LEAKS and not hasattr(ember.cuda, n)]
    assert not missing, missing
    for name in ("Stream", "Event", "device", "device_of", "StreamContext", "ExternalStream", "OutOfMemoryError"):
        assert hasattr(ember.cuda, name)


@pytest.mark.skipif(ember.cuda.is_available(), reason="a cuda device (or emulation) is present")
def test_without_cupy_queries_answer_like_torch_cpu_build():
    assert ember.cuda.is_available() is torch.cuda.is_available() is False
    assert ember.cuda.device_count() == torch.cuda.device_count() == 0
    ember.cuda.manual_seed(0)  # allowed without a GPU, as torch
    assert ember.cuda.memory_allocated() == 0
    with pytest.raises(RuntimeError, match="CuPy"):
        ember.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="CuPy"):
        ember.ones(2).cuda()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
        ember.ones(2).pin_memory()
    assert not ember.ones(2).is_pinned()


@pytest.mark.parametrize("text", ["cuda", "cuda:0", "cuda:3"])
def test_device_parsing_matches_torch(text):
    e, t = ember.device(text), torch.device(text)
    assert (e.type, e.index, str(e), repr(e).replace("ember", "torch")) == (t.type, t.index, str(t), repr(t))


def test_round_trips_under_emulation(emulated_cuda):
    x = ember.arange(12.0).reshape(3, 4)
    y = x.to("cuda")
    assert y.device == ember.device("cuda", 0) and y.is_cuda and y.get_device() == 0
    assert ember.ones(2, device="cuda").device == ember.device("cuda:0")
    np.testing.assert_array_equal(y.cpu().numpy(), x.numpy())
    assert x.cuda(non_blocking=True).cpu().tolist() == x.tolist()
    assert x.to("cuda", non_blocking=True).to("cpu").tolist() == x.tolist()
    assert y.to("cuda") is y
    with pytest.raises(TypeError, match="can't convert cuda"):
        y.numpy()
    assert "device='cuda:0'" in repr(y)
    z = ember.tensor([1.0, 2.0], device="cuda")
    assert z.device.type == "cuda" and z.sum().item() == 3.0


def test_autograd_through_device_moves(emulated_cuda):
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = (x.cuda() * 2).sin().sum()
    y.backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(2 * x.detach().numpy()))


def test_mixing_devices_raises_torch_error(emulated_cuda):
    a, b = ember.ones(3, device="cuda"), ember.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cuda:0 and cpu!"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        b + a
    assert (a + ember.tensor(2.0)).device.type == "cuda"  # 0-d CPU tensors are scalars, as in torch
    assert (a * ember.tensor(2.0)).cpu().tolist() == [2.0, 2.0, 2.0]


def test_module_to_cuda_and_training_step(emulated_cuda):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).cuda()
    assert all(p.device.type == "cuda" for p in model.parameters())
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    x, target = ember.randn(5, 4, device="cuda"), ember.randn(5, 2).to("cuda")
    loss = nn.functional.mse_loss(model(x), target)
    loss.backward()
    optimizer.step()
    assert all(p.grad.device.type == "cuda" for p in model.parameters())
    assert model.to("cpu")[0].weight.device.type == "cpu"


def test_pin_memory_under_emulation(emulated_cuda):
    x = ember.arange(4.0)
    pinned = x.pin_memory()
    assert pinned.is_pinned() and not x.is_pinned()
    assert pinned.tolist() == x.tolist()
    assert pinned.cuda(non_blocking=True).cpu().tolist() == x.tolist()


def test_dataloader_accepts_pin_memory():
    data = ember.utils.data.TensorDataset(ember.arange(6.0))
    with pytest.warns(UserWarning):
        batches = list(ember.utils.data.DataLoader(data, batch_size=2, pin_memory=True))
    assert [b[0].tolist() for b in batches] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_emulated_arrays_refuse_numpy(emulated_cuda):
    from ember._backends import emulated

    xp = emulated.module
    a = xp.arange(3.0)
    with pytest.raises(TypeError, match="must use the array module"):
        np.sum(a)
    with pytest.raises(TypeError):
        np.asarray(a)
    with pytest.raises(TypeError, match="host"):
        a + np.ones(3)
    with pytest.raises(AttributeError, match="CuPy 14 lacks"):
        xp.errstate  # noqa: B018
    assert float(xp.sum(a)) == 3.0 and xp.sum(a).shape == ()


def test_cuda_seeding_reproducible(emulated_cuda):
    ember.cuda.manual_seed(3)
    a = ember.rand(4, device="cuda")
    ember.cuda.manual_seed(3)
    assert ember.rand(4, device="cuda").tolist() == a.tolist()


def test_allow_tf32_flag_exists():
    assert ember.backends.cuda.matmul.allow_tf32 is False  # torch's default


# ---------------------------------------------------------------- real GPU only


@pytest.mark.gpu
def test_gpu_matmul_and_memory_stats():
    x = ember.randn(256, 256, device="cuda")
    before = ember.cuda.memory_allocated()
    y = x @ x
    ember.cuda.synchronize()
    assert ember.cuda.memory_allocated() >= before and ember.cuda.max_memory_allocated() > 0
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy() @ x.cpu().numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_gpu_streams_and_events():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    stream = ember.cuda.Stream()
    with ember.cuda.stream(stream):
        start.record()
        ember.ones(1000, 1000, device="cuda").sum()
        end.record()
    stream.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0


@pytest.mark.gpu
def test_gpu_pinned_memory_is_page_locked():
    assert ember.ones(4).pin_memory().is_pinned()


@pytest.mark.gpu
def test_gpu_device_properties():
    assert ember.cuda.device_count() >= 1 and isinstance(ember.cuda.get_device_name(), str)
    assert len(ember.cuda.get_device_capability()) == 2
