"""The untraced windows of a one traced run (tracer.untraced_windows; since session 24, on unless
GRAPHMODE_UNTRACED_WINDOWS=0): stretches of a steady loop with CUPTI detached, timed by the stamps of the loop's
anchor line alone.

- A window ends the stretches of iterations across it (analyzers.periods): no kernel or launch of the window's
  iterations was recorded, so the traced iteration before it would otherwise span the whole window (and the 20-80 ms
  of detaching and attaching again).
- `window_periods`: per window, the anchor's periods inside it, each less what the run's own host work inside it
  cost: its stamps (the run's measured `stamp_cost_ns`) and PyTorch's allocator history's actions (their measured
  `entry_cost_ns`), as analyzers.tracer_cost takes them off traced periods; the first period left out (it holds the
  detach). These are the loop's untraced periods, measured
  in the traced run's own process (benchmarks/notes/s24).
- `with_windows`: the loop's traced CPU-bound iterations (the stretch the window broke, and the one after it where the
  loop went on once the window closed) take the window's level: each period scaled by the window's median over their
  traced median, never below the iteration's own GPU busy time (`timed_by` 'window', the traced figure kept in
  `traced_work`). The window's own iterations have no kernel records, so the traced ones give the per-iteration spread
  and the GPU work; the window gives the level, untraced, in the same process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import dataclasses

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.stamps import StampsOf
from graphmode.analyzers.torch_windows import run_entry
from graphmode.analyzers.tracer_cost import host_work_costs
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
    # where the run kept CUPTI detached after the loop ended, up to (the linger,
    # tracer.untraced_windows.WindowController.linger_ns); 0: it did not
    linger_end_ns: int = 0

    @property
    def untraced_end_ns(self) -> int:
        """Where CUPTI attached again: nothing was recorded up to here (end_ns, or the linger's end)."""
        return max(self.end_ns, self.linger_end_ns)


def untraced_windows(trace: Trace, pass_id: int) -> list[UntracedWindow]:
    """The pass's windows, in time order; [] for a run without (every recording before session 24)."""
    info = run_entry(trace, pass_id).get("untraced_windows") or {}
    out = [UntracedWindow(str(w["anchor"]), int(w["start_ns"]), int(w["end_ns"]), int(w["iterations"]), str(w["reason"]),
                          int(w.get("detach_ns", 0)), int(w.get("attach_ns", 0)), int(w.get("linger_end_ns", 0)))
           for w in info.get("windows", []) or []]
    return sorted(out, key=lambda w: w.start_ns)


def window_breaks(trace: Trace, pass_id: int) -> np.ndarray:
    """Where the pass's iteration stretches break for its windows: each window's start."""
    return np.array([w.start_ns for w in untraced_windows(trace, pass_id)], dtype=np.int64)


def _between(x: np.ndarray, at: np.ndarray) -> np.ndarray:
    """How many of the sorted times `x` fall in each (at[i], at[i + 1]]."""
    out: np.ndarray = np.searchsorted(x, at[1:], side="right") - np.searchsorted(x, at[:-1], side="right")
    return out


def window_periods(trace: Trace, pass_id: int, stamps_of: StampsOf) -> list[tuple[UntracedWindow, np.ndarray]]:
    """Per window, the anchor's untraced periods inside it (ns; module doc)."""
    windows = untraced_windows(trace, pass_id)
    if not windows:
        return []
    s = stamps_of(pass_id)
    ts, loc = s["ts_ns"], s["loc"]
    stamp_ns, action_ns, actions = host_work_costs(trace, pass_id)
    out = []
    for w in windows:
        at = ts[(loc == w.anchor) & (ts >= w.start_ns) & (ts <= w.end_ns)]
        if at.size < 3:
            out.append((w, np.zeros(0)))
            continue
        periods = (np.diff(at).astype(np.float64) - _between(ts, at) * stamp_ns - _between(actions, at) * action_ns)
        out.append((w, periods[1:]))
    return out


WINDOW = "window"  # IterationTable.timed_by of a period leveled by an untraced window
MIN_WINDOW_PERIODS = 5  # a window gives a level from this many of its loop's periods or more


def _loop_rows(t: IterationTable, w: UntracedWindow) -> np.ndarray:
    """Rows of the window's loop: the eager stretch whose last iteration started before the window (the one it broke),
    and, where the loop went on after the window closed (by count or time), the stretch of the same graph and mode
    that starts after it."""
    eager = (t.mode != "graph") & (t.start_ns >= 0)
    before = np.flatnonzero(eager & (t.start_ns < w.start_ns))
    if not before.size:
        return np.zeros(0, dtype=np.int64)
    last = before[np.argmax(t.start_ns[before])]
    rows = t.stretch == t.stretch[last]
    if w.reason in ("iterations", "time"):
        after = np.flatnonzero(eager & (t.start_ns > w.end_ns) & (t.graph_id == t.graph_id[last]) & (t.mode == t.mode[last]))
        if after.size:
            rows |= t.stretch == t.stretch[after[np.argmin(t.start_ns[after])]]
    return np.flatnonzero(rows)


def with_windows(t: IterationTable, windows: list[tuple[UntracedWindow, np.ndarray]]) -> tuple[IterationTable, list[Note]]:
    """The table with each window's loop leveled by it (module doc); rows already timed (by the timing run) keep
    their periods. Notes: one per window used (`eager_untraced_window`) or too short (`untraced_window_too_short`)."""
    notes: list[Note] = []
    period, work, gpu_bound = t.period.copy(), t.work.copy(), t.gpu_bound.copy()
    timed, traced = t.timed_by.copy(), t.traced_work.copy()
    for w, p in windows:
        if p.size < MIN_WINDOW_PERIODS:
            notes.append(note("untraced_window_too_short", anchor=w.anchor, periods=int(p.size), needed=MIN_WINDOW_PERIODS))
            continue
        rows = _loop_rows(t, w)
        rows = rows[~t.gpu_bound[rows] & np.isfinite(t.period[rows]) & (t.timed_by[rows] == "")]
        if not rows.size:
            continue
        level, traced_level = float(np.median(p)), float(np.median(t.period[rows]))
        scale = level / traced_level if traced_level > 0 else 1.0
        busy = t.gpu_busy_ns[rows].astype(np.float64)
        scaled = np.maximum(t.period[rows] * scale, busy)
        period[rows], work[rows] = scaled, scaled
        gpu_bound[rows] = busy >= t.period[rows] * scale
        traced[rows] = t.work[rows]
        timed[rows] = WINDOW
        notes.append(note("eager_untraced_window", anchor=w.anchor, periods=int(p.size), untraced_ns=level,
                          traced_ns=traced_level, iterations=int(rows.size)))
    if not (timed == WINDOW).any():
        return t, notes
    cpu_period = np.where(timed == WINDOW, period, t.cpu_period)
    return dataclasses.replace(t, period=period, work=work, gpu_bound=gpu_bound, cpu_period=cpu_period, timed_by=timed,
                               traced_work=traced), notes
