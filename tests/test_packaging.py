"""The distribution installs one import name, graphmode, with its data files."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="setuptools is not installed (pip install -e '.[test]')")
def test_the_wheel_holds_one_top_level_package_with_its_data(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                           "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("graphmode-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"graphmode"}
    for path in ("graphmode/tracer/store.py", "graphmode/tracer/workloads/chain.py", "graphmode/analyzers/__init__.py",
                 "graphmode/reports/terminal.py", "graphmode/reports/report.schema.json", "graphmode/reports/assets/report.js",
                 "graphmode/data/chain-h200.gmtrace", "graphmode/cli.py"):
        assert path in names, f"{path} missing from the wheel"
