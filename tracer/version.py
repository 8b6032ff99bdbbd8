"""The tool's version and its bundled data folder: in the lowest layer, so that analyzers and reports can name
them without importing the front door (`graphmode`), which re-exports `__version__`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__version__ = "0.1.0"


def bundled_data_dir() -> Path:
    """graphmode/data/ in the installed package (or the checkout): the bundled recordings and cost models.

    Found through the import system's record of the `graphmode` package, not by importing it: the package is
    already loaded whenever graphmode.tracer is (it is its parent), and this module must not name it as an import.
    """
    spec = importlib.util.find_spec("graphmode")
    assert spec is not None and spec.origin is not None, "graphmode is importable whenever graphmode.tracer is"
    return Path(spec.origin).parent / "data"
