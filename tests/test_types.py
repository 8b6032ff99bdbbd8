"""The packages pass the strict type checker configured in pyproject.toml ([tool.mypy], STYLE.md)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_strict_passes_on_the_packages() -> None:
    # A subprocess, as a developer runs it: the config (strict, the packages) comes
    # from pyproject.toml alone; no cache, so a stale one cannot hide an error.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy found type errors:\n{proc.stdout}{proc.stderr}"
    assert "Success" in proc.stdout
