"""ember.utils.safetensors: the safetensors format for ember tensors (see ember/safetensors.py)."""

from ..safetensors import SafetensorError, load, load_file, safe_open, save, save_file  # noqa: F401
