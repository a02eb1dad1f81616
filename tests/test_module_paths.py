"""The submodule paths programs import (`import torch.backends.cudnn as cudnn`, `from torch.optim.adamw import
AdamW`, `from torch.types import Number`) import from ember as from torch."""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("torch")

PATHS = [
    "backends.cudnn", "backends.cuda", "backends.mps", "backends.mkldnn", "backends.opt_einsum", "optim.adamw",
    "optim.adam", "optim.sgd", "optim.optimizer", "optim.lr_scheduler", "optim.swa_utils", "nn.functional",
    "nn.init", "nn.parameter", "nn.modules.module", "nn.modules.linear", "nn.modules.conv", "nn.modules.loss",
    "nn.modules.batchnorm", "nn.modules.activation", "nn.modules.container", "nn.utils.rnn", "nn.utils.parametrize",
    "nn.utils.parametrizations", "nn.utils.prune", "utils.data", "utils.data.distributed", "utils.checkpoint",
    "utils._pytree", "cuda.amp", "amp", "autograd.functional", "autograd.forward_ad", "autograd.graph",
    "distributions.constraints", "distributions.kl", "types", "jit", "fx", "export", "func", "special", "fft", "linalg",
]


@pytest.mark.parametrize("path", PATHS)
def test_submodule_imports_as_torch(path):
    importlib.import_module(f"torch.{path}")  # the path is torch's
    importlib.import_module(f"ember.{path}")


def test_backend_flags_set_through_the_imported_module():
    import ember.backends.cudnn as cudnn

    import ember

    previous = cudnn.benchmark
    cudnn.benchmark = True
    try:
        assert ember.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = previous
