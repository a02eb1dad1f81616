"""`python -m ember.run script.py [args]`: torch imports resolve to ember, and missing torch API says so.

Each case runs a small script in a subprocess (the runner changes the import system of its process).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _programs import REPOSITORY, environment


def run_script(tmp_path, source: str, *args, name="script.py", check=True):
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    result = subprocess.run(
        [sys.executable, "-m", "ember.run", str(script), *args],
        cwd=str(tmp_path),
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"runner failed ({result.returncode}):\n{result.stderr}")
    return result


def test_torch_modules_are_embers(tmp_path):
    result = run_script(
        tmp_path,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch import optim
        from torch.autograd import Function
        import ember
        import ember.nn.functional
        assert torch is ember and nn is ember.nn and F is ember.nn.functional and optim is ember.optim
        assert Function is ember.autograd.Function and torch.Tensor is ember.Tensor
        assert torch.linalg is ember.linalg
        import sys
        assert sys.modules["torch.nn.functional"] is ember.nn.functional
        assert torch.__spec__.name == "ember"  # ember's own modules, untouched
        x = torch.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        print("grad", x.grad.tolist())
        """,
    )
    assert result.stdout.strip() == "grad [2.0, 2.0, 2.0]"


def test_argv_main_and_script_directory(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 41\n")
    result = run_script(
        tmp_path,
        """
        import sys
        import helper  # a sibling module, importable as under `python script.py`
        if __name__ == "__main__":
            print(sys.argv[1:], helper.VALUE + 1, __file__.endswith("script.py"))
        """,
        "--lr",
        "0.1",
    )
    assert result.stdout.strip() == "['--lr', '0.1'] 42 True"


def test_missing_attribute_names_the_torch_api(tmp_path):
    result = run_script(
        tmp_path,
        """
        import torch
        import torch.nn.functional as F
        print(hasattr(torch, "no_such_function"), hasattr(torch, "zeros"), getattr(F, "no_such", "default"))
        try:
            torch.nn.no_such_layer
        except AttributeError as error:  # an AttributeError, so feature probes keep working ...
            print(isinstance(error, NotImplementedError), error)  # ... and a NotImplementedError that says so
        F.no_such_function(1)
        """,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "False True default"
    assert lines[1] == "True ember does not implement torch.nn.no_such_layer yet"
    assert result.returncode == 1
    assert "ember does not implement torch.nn.functional.no_such_function yet" in result.stderr
    assert "F.no_such_function(1)" in result.stderr  # the traceback points at the user's line


def test_missing_module_and_from_import(tmp_path):
    result = run_script(
        tmp_path,
        """
        try:
            import torch.no_such_module
        except ImportError as error:
            print(type(error).__name__, isinstance(error, NotImplementedError), error)
        try:
            from torch.nn import NoSuchLayer
        except ImportError as error:
            print(type(error).__name__, isinstance(error, NotImplementedError), error)
        from torch import no_such_name
        """,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "TorchModuleNotImplemented True ember does not implement torch.no_such_module yet"
    assert lines[1] == "TorchImportNotImplemented True ember does not implement torch.nn.NoSuchLayer yet"
    assert "ember does not implement torch.no_such_name yet" in result.stderr


def test_module_attribute_assignment_reaches_ember(tmp_path):
    result = run_script(
        tmp_path,
        """
        import torch
        torch.some_flag = 3
        import ember
        print(ember.some_flag)
        """,
    )
    assert result.stdout.strip() == "3"


def test_dash_m_and_usage(tmp_path):
    (tmp_path / "pkgmod.py").write_text("import torch, sys\nprint(torch.__name__, sys.argv[1:])\n")
    env = environment()
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    result = subprocess.run(
        [sys.executable, "-m", "ember.run", "-m", "pkgmod", "a"],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ember ['a']"
    usage = subprocess.run(
        [sys.executable, "-m", "ember.run"],
        cwd=str(REPOSITORY),
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert usage.returncode == 2 and "usage" in usage.stdout


def test_install_refuses_real_torch_already_imported():
    pytest.importorskip("torch")
    import ember.run

    with pytest.raises(RuntimeError, match="real torch is already imported"):
        ember.run.install()
