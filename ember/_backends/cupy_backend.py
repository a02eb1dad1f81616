"""The CUDA backend: CuPy as the array module (loaded only when a cuda tensor is made)."""

from __future__ import annotations


def load():
    """Import CuPy lazily so that `import ember` never needs it."""
    try:
        import cupy
    except ImportError as error:
        raise RuntimeError(
            "ember's cuda device needs CuPy: pip install 'ember[cuda12]' (or cuda13)"
        ) from error
    return cupy
