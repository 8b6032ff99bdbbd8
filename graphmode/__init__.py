"""graphmode: what CUDA Graphs buy you. The public Python API; logic lives in tracer/, analyzers/, reports/."""

from graphmode.api import TraceHandle, compare, trace
from graphmode.tracer.store import PassInfo, Trace, TraceError, load
from graphmode.tracer.validate import validate_trace

__version__ = "0.1.0"

__all__ = ["PassInfo", "Trace", "TraceError", "TraceHandle", "__version__", "compare", "load", "trace", "validate_trace"]
