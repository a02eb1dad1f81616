"""ember: PyTorch's API, written in Python, on NumPy (CPU) and CuPy (CUDA).

`import ember as torch` and keep your program.  This module only re-exports:
the pieces live in the private modules named in DESIGN.md.
"""

from __future__ import annotations

from . import _dtype
from ._device import device, get_default_device, set_default_device
from ._dtype import (
    bfloat16,
    can_cast,
    complex64,
    complex128,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    qint8,
    qint32,
    quint8,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
    float8_e4m3fn,
    float8_e5m2,
    float8_e4m3fnuz,
    float8_e5m2fnuz,
    float8_e8m0fnu,
)
from ._dtype import bool_ as bool  # noqa: A001 - torch.bool
from ._tensor import Size, Tensor
from . import _torch_function  # noqa: F401 - Tensor.__torch_function__ and the protocol (ember/_torch_function.py)
from . import _C  # noqa: E402 - torch._C's protocol switches
from ._autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from . import _ops
from ._ops import operators as _operators

half = float16
float = float32  # noqa: A001 - torch.float
double = float64
short = int16
int = int32  # noqa: A001 - torch.int
long = int64
cfloat = complex64
cdouble = complex128
chalf = complex64


class layout:
    """torch.layout: strided, or sparse_coo (ember/_ops/sparse_ops.py)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


class memory_format:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_ops.install(globals())
from ._ops.quantized import (  # noqa: E402 - torch's quantization schemes
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qscheme,
)
_operators.install()
from . import linalg  # noqa: E402
from . import sparse  # noqa: E402 - torch.sparse (ember/sparse)

from . import autograd  # noqa: E402
from . import nn  # noqa: E402
from . import optim  # noqa: E402
from . import distributed  # noqa: E402
from . import utils  # noqa: E402
from ._ops.misc import is_tensor, is_floating_point, is_complex, numel, result_type, typename  # noqa: E402
from ._ops.misc import _assert  # noqa: E402 - torch._assert
from . import random  # noqa: E402
from ._ops.random import (  # noqa: E402
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

from . import backends, cpu, cuda, export, onnx  # noqa: E402
from ._runtime import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_device_module,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    init_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_num_interop_threads,
    set_num_threads,
    use_deterministic_algorithms,
)
from ._tensor_str import set_printoptions, get_printoptions, printoptions  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_enabled, is_anomaly_check_nan_enabled, set_anomaly_enabled  # noqa: E402

from . import amp, func, jit, testing  # noqa: E402
from . import multiprocessing, profiler  # noqa: E402 - torch.multiprocessing, torch.profiler
from . import distributions  # noqa: E402 - torch.distributions (ember/distributions)
from . import special  # noqa: E402
from .func import vmap  # noqa: E402 - torch.vmap (ember/func/_vmap.py)
from . import fft  # noqa: E402
from . import signal  # noqa: E402 - torch.signal.windows (ember/signal)
from . import ao, quantization  # noqa: E402 - torch.ao.quantization and its old name (docs/quantization.md)
from .amp.autocast_mode import (  # noqa: E402
    autocast, clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype,
    is_autocast_available, is_autocast_cache_enabled, is_autocast_cpu_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled,
    set_autocast_cpu_dtype, set_autocast_cpu_enabled, set_autocast_gpu_dtype,
)

from . import torch_version, version  # noqa: E402 - torch.version, torch.torch_version
from .version import __version__  # noqa: E402 - a TorchVersion: compares as a version with "2.0" and (2, 0)
from .amp import GradScaler  # noqa: E402 - torch.GradScaler (torch.amp.GradScaler)
from . import accelerator, library  # noqa: E402 - torch.accelerator, torch.library
from .library._namespace import ops  # noqa: E402 - torch.ops: custom ops by namespace
from ._legacy_types import LEGACY_TYPES as _LEGACY_TYPES, _set_layout as _set_legacy_layout  # noqa: E402
from ._sym_functions import (  # noqa: E402 - torch.sym_int & co. on plain numbers
    SymBool, SymFloat, SymInt, sym_float, sym_int, sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum,
)

globals().update({name: cls for name, cls in _LEGACY_TYPES.items() if "." not in name})  # FloatTensor, ...
_set_legacy_layout()
from .serialization import save, load  # noqa: E402
from ._compile import compile  # noqa: E402,A001 - torch.compile (ember/_compile, docs/compile.md)
from . import _dynamo  # noqa: E402 - torch._dynamo's reset/config aliases (ember/_dynamo)
from . import fx  # noqa: E402 - torch.fx: symbolic tracing, Graph, GraphModule (ember/fx)
from ._memory import keep_freed_memory as _keep_freed_memory  # noqa: E402

_keep_freed_memory()  # freed NumPy buffers stay in the process (ember/_memory.py)
from . import quasirandom  # noqa: E402 - torch.quasirandom (SobolEngine)
from . import functional, hub, overrides, storage  # noqa: E402 - torch's module aliases of the same names
