"""graphmode: what CUDA Graphs buy you. The public Python API; logic lives in tracer/, analyzers/, reports/.

Names are imported on first use (PEP 562), so that `import graphmode` and `graphmode --help` load
neither numpy nor DuckDB nor the analyzers.
"""

from __future__ import annotations

import importlib
from typing import Any

from graphmode.tracer.version import __version__

_WHERE = {
    "TraceHandle": "graphmode.api", "compare": "graphmode.api", "trace": "graphmode.api",
    "PassInfo": "graphmode.tracer.store", "Trace": "graphmode.tracer.store", "load": "graphmode.notebook",
    "validate_trace": "graphmode.tracer.validate",
    "GraphmodeError": "graphmode.tracer.errors", "TraceError": "graphmode.tracer.errors",
    "NoGpuError": "graphmode.tracer.errors",
}

__all__ = ["GraphmodeError", "NoGpuError", "PassInfo", "Trace", "TraceError", "TraceHandle", "__version__", "compare",
           "load", "trace", "validate_trace"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graphmode' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
