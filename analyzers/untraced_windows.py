"""The untraced windows of a one traced run (tracer.untraced_windows; an experiment of session 24, recorded where
GRAPHMODE_UNTRACED_WINDOWS=1): stretches of a steady loop with CUPTI detached, timed by the stamps of the loop's
anchor line alone.

- A window ends the stretches of iterations across it (analyzers.periods): no kernel or launch of the window's
  iterations was recorded, so the traced iteration before it would otherwise span the whole window (and the 20-80 ms
  of detaching and attaching again).
- `window_periods`: per window, the anchor's periods inside it, each less what the stamps inside it cost (the run's
  measured `stamp_cost_ns`), the first left out (it holds the detach). These are the loop's untraced periods, measured
  in the traced run's own process (benchmarks/notes/s24).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.stamps import StampsOf
from graphmode.analyzers.torch_windows import run_entry
from graphmode.tracer.store import Trace


@dataclass(frozen=True)
class UntracedWindow:
    anchor: str  # 'file:line' of the loop's line whose executions it timed
    start_ns: int  # the anchor's stamp that opened it (pass clock)
    end_ns: int  # the stamp that closed it
    iterations: int  # the anchor's executions inside, after the one that opened it
    reason: str  # what closed it: 'iterations', 'left', 'changed', 'time', 'end'
    detach_ns: int
    attach_ns: int


def untraced_windows(trace: Trace, pass_id: int) -> list[UntracedWindow]:
    """The pass's windows, in time order; [] for a run without (every recording before session 24)."""
    info = run_entry(trace, pass_id).get("untraced_windows") or {}
    out = [UntracedWindow(str(w["anchor"]), int(w["start_ns"]), int(w["end_ns"]), int(w["iterations"]), str(w["reason"]),
                          int(w.get("detach_ns", 0)), int(w.get("attach_ns", 0))) for w in info.get("windows", []) or []]
    return sorted(out, key=lambda w: w.start_ns)


def window_breaks(trace: Trace, pass_id: int) -> np.ndarray:
    """Where the pass's iteration stretches break for its windows: each window's start."""
    return np.array([w.start_ns for w in untraced_windows(trace, pass_id)], dtype=np.int64)


def window_periods(trace: Trace, pass_id: int, stamps_of: StampsOf) -> list[tuple[UntracedWindow, np.ndarray]]:
    """Per window, the anchor's untraced periods inside it (ns; module doc)."""
    windows = untraced_windows(trace, pass_id)
    if not windows:
        return []
    s = stamps_of(pass_id)
    ts, loc = s["ts_ns"], s["loc"]
    stamp_ns = float(run_entry(trace, pass_id).get("stamp_cost_ns") or 0.0)
    out = []
    for w in windows:
        at = ts[(loc == w.anchor) & (ts >= w.start_ns) & (ts <= w.end_ns)]
        if at.size < 3:
            out.append((w, np.zeros(0)))
            continue
        stamps_in = np.searchsorted(ts, at[1:], side="right") - np.searchsorted(ts, at[:-1], side="right")
        periods = np.diff(at).astype(np.float64) - stamps_in * stamp_ns
        out.append((w, periods[1:]))
    return out
