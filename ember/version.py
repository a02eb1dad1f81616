"""torch.version: the build's version strings.

`__version__` is the PyTorch release whose API ember implements, with ember's
own release (the distribution's version in pyproject.toml) as the local label,
"2.13.0+ember.0.1.0", as torch's CPU build says "2.13.0+cpu": a TorchVersion, so
programs' version gates (`torch.__version__ >= "2.0"`) take the paths written
for the API ember implements.  `ember_version` is ember's release alone.  `cuda` is
the CUDA runtime's version ("12.4") when ember's cuda device is usable (CuPy
and a GPU), else None as on torch's CPU build; it is looked up on first read
so `import ember` never imports CuPy.  `git_version` is "Unknown", what torch
reports for a build made outside a git checkout.
"""

from __future__ import annotations

from .torch_version import TorchVersion

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu",  # noqa: F822 - cuda: __getattr__
           "ember_version"]

TORCH_API = "2.13.0"  # the PyTorch release ember's API and numbers follow (the tests compare with it)
ember_version = "0.1.0"
__version__ = TorchVersion(f"{TORCH_API}+ember.{ember_version}")
debug = False
git_version = "Unknown"
hip: str | None = None
rocm: str | None = None
xpu: str | None = None


def _cuda_version() -> str | None:
    """"major.minor" of the CUDA runtime CuPy runs on, or None without a usable cuda device."""
    from ._backends import cupy_backend, emulated

    if emulated.is_enabled() or not cupy_backend.available():
        return None
    number = cupy_backend.load().cuda.runtime.runtimeGetVersion()  # e.g. 12040
    return f"{number // 1000}.{number % 1000 // 10}"


def __getattr__(name: str):
    if name == "cuda":
        return _cuda_version()
    raise AttributeError(f"module 'ember.version' has no attribute '{name}'")
