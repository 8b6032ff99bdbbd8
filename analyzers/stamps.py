"""The line stamps of a pass (tracer.line_stamps, Python 3.12+): whether it has them, and the stamps as typed columns.
Below every reader (analyzers.inference, analyzers.untraced, analyzers.timing_run, analyzers.run_plan)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphmode.tracer.store import Trace


def has_stamps(trace: Trace, pass_id: int) -> bool:
    """The pass stamped the script's lines (a detail run on Python 3.12+)."""
    return bool(trace.rows("SELECT count(*) FROM line_stamps WHERE pass_id = ?", [pass_id])[0][0])


def line_stamps(trace: Trace, pass_id: int) -> dict[str, np.ndarray]:
    """The pass's line stamps by time, typed once for every reader (analyzers.inference, analyzers.untraced, analyzers.timing_run): thread_id, ts_ns and
    seq int64, thread_name and loc ('file:line') str, top bool (a line of the script's top level, not of a function)."""
    s = trace.sql("SELECT thread_id, thread_name, file || ':' || CAST(line AS VARCHAR) AS loc, ts_ns, "
                  "row_number() OVER (PARTITION BY thread_id, file, line ORDER BY ts_ns) - 1 AS seq, function = '<module>' AS top "
                  "FROM line_stamps WHERE pass_id = ? ORDER BY ts_ns", [pass_id])
    return {"thread_id": s["thread_id"].astype(np.int64), "thread_name": s["thread_name"].astype(str), "loc": s["loc"].astype(str),
            "ts_ns": s["ts_ns"].astype(np.int64), "seq": s["seq"].astype(np.int64), "top": s["top"].astype(bool)}


# reads a pass's line stamps (by pass id): the trace's (line_stamps) or the command's Run's, read once (analyzers.run)
StampsOf = Callable[[int], dict[str, np.ndarray]]
