"""Shared test setup: the `gpu` marker skips, with a reason, where no usable GPU is present."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
# the pages' plotly.js cache (reports.html_plotly.cache_dir) of this test session, not the user's; inherited by the
# `graphmode` processes the tests start
os.environ.setdefault("GRAPHMODE_CACHE_DIR", tempfile.mkdtemp(prefix="graphmode-test-cache-"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def unpacked_xz(src: Path, dest: Path) -> Path:
    """A real recording committed compressed (xz -9, SRC = .../NAME.xz), unpacked byte for byte into DEST/NAME."""
    import lzma

    out = dest / src.name.removesuffix(".xz")
    out.write_bytes(lzma.decompress(src.read_bytes()))
    return out


@functools.lru_cache(maxsize=1)
def load_benchmark(name: str) -> Any:
    """benchmarks/<name>.py as a module (the benchmarks are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def gpu_unavailable_reason() -> str | None:
    """None when an NVIDIA GPU with CUDA and CUPTI is usable, else why not."""
    try:
        from cupti import cupti  # noqa: F401
    except Exception as e:
        return f"cupti-python not importable ({type(e).__name__}: {e})"
    try:
        from graphmode.tracer.cuda_util import init_device

        init_device()
    except Exception as e:
        return f"no usable NVIDIA GPU ({e})"
    return None


def needs_module(module: str, name: str) -> pytest.MarkDecorator:
    """Skips a test where `module` does not import (absent, or installed but broken); imports it when called."""
    try:
        __import__(module)
        missing = False
    except Exception:
        missing = True
    return pytest.mark.skipif(missing, reason=f"{name} is not installed")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


def fixture_traces() -> list[Path]:
    return sorted(DATA.glob("*.gmtrace"))
