"""The packages pass the strict type checker configured in pyproject.toml ([tool.mypy], STYLE.md)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def installed_layout(dest: Path) -> Path:
    """A copy of the package as pip installs it: graphmode/ with tracer/, analyzers/, reports/ inside."""
    pkg = dest / "graphmode"
    shutil.copytree(REPO / "graphmode", pkg, ignore=shutil.ignore_patterns("__pycache__", "data"))
    for sub in ("tracer", "analyzers", "reports"):
        shutil.copytree(REPO / sub, pkg / sub, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    return pkg


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_strict_passes_on_the_packages(tmp_path: Path) -> None:
    # A subprocess, as a developer runs it, with pyproject.toml's settings (strict); no cache, so a
    # stale one cannot hide an error.
    installed_layout(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "--no-incremental",
                           "--cache-dir", "/dev/null", "-p", "graphmode"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy found type errors:\n{proc.stdout}{proc.stderr}"
    assert "Success" in proc.stdout
    assert "source files" in proc.stdout and int(proc.stdout.split("in ")[-1].split()[0]) >= 40  # it checked the whole package


def test_no_module_imports_the_folders_by_their_bare_names() -> None:
    # tracer, analyzers and reports install as graphmode.*: a bare `import tracer` would work in a source
    # checkout (the repository root is on sys.path) and fail for every user who installed the package.
    import re

    bare = re.compile(r"^\s*(from|import)\s+(tracer|analyzers|reports)\b", re.M)
    offenders = [str(p.relative_to(REPO)) for d in ("graphmode", "tracer", "analyzers", "reports", "tests", "benchmarks")
                 for p in (REPO / d).rglob("*.py") if bare.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
