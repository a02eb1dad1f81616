"""docs/walkthrough.py is the map for new engineers: it must keep running."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys


def test_walkthrough_runs():
    script = pathlib.Path(__file__).resolve().parents[1] / "docs" / "walkthrough.py"
    env = dict(os.environ, EMBER_WALKTHROUGH_STRICT="1")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "=== 4. autograd" in result.stdout
