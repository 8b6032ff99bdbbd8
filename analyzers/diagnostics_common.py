"""What the diagnostics (analyzers.pitfalls, analyzers.torch_diagnostics) share, below both so that neither imports
the other: the script's own line in its exception."""

from __future__ import annotations

from graphmode.tracer.sources import is_library_file
from graphmode.tracer.store import Trace


def _user_frame(trace: Trace) -> str:
    """The innermost frame of the script's exception that is the user's code, as 'file:line function'."""
    exc = (trace.meta.get("script") or {}).get("exception") or {}
    frames = exc.get("frames") or []
    for file, line, function in reversed(frames):
        if not is_library_file(str(file)):
            return f"{file}:{line} {function}"
    return f"{frames[-1][0]}:{frames[-1][1]} {frames[-1][2]}" if frames else ""
