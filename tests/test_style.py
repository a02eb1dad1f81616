"""Architecture rules that a test can check: ember never imports torch at run time."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1] / "ember"


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_ember_source_never_imports_torch():
    offenders = []
    for path in ROOT.rglob("*.py"):
        for name in _imports(path):
            if name == "torch" or name.startswith("torch."):
                offenders.append(f"{path.relative_to(ROOT.parent)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_import_ember_loads_no_torch_and_no_cupy():
    code = "import sys, ember, ember.nn, ember.optim; print('torch' in sys.modules, 'cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"], out
