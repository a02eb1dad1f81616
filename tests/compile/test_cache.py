"""The on-disk kernel cache across processes, and the NumPy printer when there is no compiler."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    import ember
    import ember.nn.functional as F

    def block(x, w, b):
        return x + F.gelu(F.layer_norm(x, (x.shape[-1],), w, b))

    x, w, b = ember.randn(4, 8, 32), ember.randn(32), ember.randn(32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = ember.compile(block)
        compiled(x, w, b)
        out = compiled(x, w, b)
    np.testing.assert_allclose(out.numpy(), block(x, w, b).numpy(), rtol=1e-5, atol=1e-5)
    printer = "numpy" if "def fused_" in compiled.kernel_sources[0] else "c"
    fallback = [str(w.message) for w in caught if "NumPy printer" in str(w.message)]
    print("PRINTER", printer, "WARNINGS", len(fallback))
""")


def _run(env):
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="no C compiler")
def test_second_process_reuses_the_disk_cache(tmp_path):
    log = tmp_path / "cc.log"
    wrapper = tmp_path / "cc-wrapper"
    real = shutil.which("gcc") or shutil.which("cc")
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    env = dict(os.environ, CC=str(wrapper), EMBER_CACHE_DIR=str(tmp_path / "cache"))
    assert _run(env) == "PRINTER c WARNINGS 0"
    assert len(log.read_text().splitlines()) == 1
    assert _run(env) == "PRINTER c WARNINGS 0"
    assert len(log.read_text().splitlines()) == 1  # loaded from the cache, the compiler was not run again
    assert any(name.endswith(".so") for name in os.listdir(tmp_path / "cache" / "kernels"))


def test_no_compiler_falls_back_to_numpy_printer_with_one_warning(tmp_path):
    env = dict(os.environ, CC="/nonexistent/cc", EMBER_CACHE_DIR=str(tmp_path / "cache"))
    assert _run(env) == "PRINTER numpy WARNINGS 1"


def test_kernels_differing_only_in_name_share_one_function():
    """Two groups with the same steps (sizes are run-time arguments) print one C function; both run it."""
    import numpy as np

    import ember
    from ember._compile import codegen

    def f(x, y):
        return (x * 2 + 1).relu(), (y * 2 + 1).relu()

    compiled = ember.compile(f)
    x, y = ember.randn(4, 8), ember.randn(16, 3)
    compiled(x, y)
    (entry,) = compiled.cache.values()
    kernels = [group.kernel for group in entry.compiled.groups]
    assert len(kernels) == 2
    built, source = codegen.CPrinter().build(kernels)
    assert source.count(f"void {kernels[0].name}(") == 1 and f"void {kernels[1].name}(" not in source
    outputs = compiled(x, y)
    for out, t in zip(outputs, (x, y)):
        np.testing.assert_allclose(out.numpy(), np.maximum(t.numpy() * 2 + 1, 0), rtol=1e-6)
