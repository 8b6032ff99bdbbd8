"""Iterations as a table, with the period of each: the one place that says what an iteration of a
script is and how long it takes (docs/metrics.md, "Iterations and periods").

**Period.** When launches queue up without synchronization, the steady-state time of an iteration is
set by whichever side is the bottleneck. The GPU starts an iteration's work when both the work has
been launched and the previous work is done, so the start-to-start cadence of the iteration's GPU work
is the period in both cases: GPU-bound, it is the GPU's time per iteration; CPU-bound, the GPU waits
for each launch and follows the CPU's cadence (a synchronization each iteration included). So:

- `period` = GPU start of the next iteration of the stretch − GPU start of this one; the last
  iteration of a stretch has no period (a stretch of one iteration: its launch to its GPU end);
- `gpu_bound`: the next iteration was launched before this one's GPU work ended (the CPU was ahead);
  without launch records, the GPU was idle less than GPU_BOUND_IDLE of the period;
- `work`: what the iteration's own work took. CPU-bound, the period. GPU-bound, from the end of the
  GPU work before it to the end of its own: other GPU work in between (a benchmark harness's cache
  flush, an optimizer left eager between replays) is not the graph's, and a GPU-bound loop without
  other work gives the period again (each iteration follows the previous one). Savings and
  break-even use `work`; `other_gpu` says how much other work the period held.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.inference import WARMUP_MAX, Occurrences
from graphmode.analyzers.script_graphs import ScriptGraphs
from graphmode.tracer.store import Trace

GPU_BOUND_IDLE = 0.10  # without launch records: GPU-bound when idle less than this share of the period


@dataclass(frozen=True)
class IterationTable:
    """One row per iteration of one pass; numpy columns aligned by row, sorted by `start_ns`.

    Times in ns on the CUPTI clock; -1 where unknown. `period`, `cpu_period`, `work` are float (NaN
    where undefined)."""

    pass_id: int
    mode: np.ndarray  # 'eager' | 'eager_sync_each' | 'graph'
    graph_id: np.ndarray  # the graph whose work the iteration does (0: none, bench eager iterations)
    stretch: np.ndarray  # runs of consecutive iterations of one graph, mode and stream
    role: np.ndarray  # 'steady' | 'warmup' | 'first_launch'
    source: np.ndarray  # 'runner' | 'inferred' | 'nvtx' | 'line FILE:N' (an eager-only loop's step, analyzers.inference.line_iterations)
    thread_id: np.ndarray
    stream_id: np.ndarray
    start_ns: np.ndarray  # first launch call's start, else the GPU start
    end_ns: np.ndarray  # the next iteration's start in the stretch, else its own end
    launch_ns: np.ndarray
    launch_call_ns: np.ndarray  # duration of the first launch call
    gpu_start_ns: np.ndarray
    gpu_end_ns: np.ndarray
    gpu_busy_ns: np.ndarray
    other_gpu_ns: np.ndarray  # other GPU work inside the period
    period: np.ndarray
    cpu_period: np.ndarray
    work: np.ndarray
    gpu_bound: np.ndarray
    timed_by: np.ndarray  # '' : the period is this pass's; 'timing': the timing run's (analyzers.untraced)
    traced_work: np.ndarray  # where timed by the timing run, the work this pass measured (else NaN)

    @property
    def size(self) -> int:
        return int(self.mode.size)

    def select(self, mask: np.ndarray) -> IterationTable:
        return IterationTable(self.pass_id, *(getattr(self, f)[mask] for f in _COLUMNS))


_COLUMNS = ("mode", "graph_id", "stretch", "role", "source", "thread_id", "stream_id", "start_ns", "end_ns", "launch_ns",
            "launch_call_ns", "gpu_start_ns", "gpu_end_ns", "gpu_busy_ns", "other_gpu_ns", "period", "cpu_period", "work",
            "gpu_bound", "timed_by", "traced_work")


def empty_table(pass_id: int) -> IterationTable:
    z = np.zeros(0, dtype=np.int64)
    return IterationTable(pass_id, np.zeros(0, dtype=object), z, z, np.zeros(0, dtype=object), np.zeros(0, dtype=object), z, z,
                          z, z, z, z, z, z, z, z, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool),
                          np.zeros(0, dtype=object), np.zeros(0))


def _split(o: Occurrences, breaks: np.ndarray) -> np.ndarray:
    """Stretch number (from 0) of each occurrence: a break strictly between two starts a new stretch."""
    if o.gpu_start.size == 0:
        return np.zeros(0, dtype=np.int64)
    b = np.sort(breaks)
    new = np.zeros(o.gpu_start.size, dtype=bool)
    new[1:] = np.searchsorted(b, o.gpu_start[:-1], side="right") != np.searchsorted(b, o.gpu_start[1:], side="left")
    return np.cumsum(new)


@dataclass(frozen=True)
class _GpuWork:
    """Every GPU span of the pass: their union as disjoint intervals (for busy time in a window) and
    their ends in order (for the end of the work before a time)."""

    starts: np.ndarray
    ends: np.ndarray
    before: np.ndarray  # busy time before each union interval
    sorted_ends: np.ndarray

    @staticmethod
    def of(trace: Trace, pass_id: int) -> _GpuWork:
        s = trace.sql("SELECT start_ns, end_ns FROM gpu_spans WHERE pass_id = ? AND end_ns >= start_ns ORDER BY start_ns", [pass_id])
        st, en = s["start_ns"].astype(np.int64), s["end_ns"].astype(np.int64)
        if st.size == 0:
            z = np.zeros(0, dtype=np.int64)
            return _GpuWork(z, z, np.zeros(1, dtype=np.int64), z)
        run_end = np.maximum.accumulate(en)
        new = np.ones(st.size, dtype=bool)
        new[1:] = st[1:] > run_end[:-1]
        us, ue = st[new], np.maximum.reduceat(en, np.flatnonzero(new))
        return _GpuWork(us, ue, np.concatenate([[0], np.cumsum(ue - us)]), np.sort(en))

    def covered(self, t: np.ndarray) -> np.ndarray:
        """GPU busy time (any work) before each time t."""
        if self.starts.size == 0:
            return np.zeros(t.size)
        k = np.searchsorted(self.starts, t, side="right") - 1
        kk = np.maximum(k, 0)
        part = np.clip(t - self.starts[kk], 0, self.ends[kk] - self.starts[kk])
        return np.where(k >= 0, self.before[kk] + part, 0).astype(np.float64)

    def last_end_before(self, t: np.ndarray) -> np.ndarray:
        """The latest end of GPU work at or before each time t (-1: none)."""
        k = np.searchsorted(self.sorted_ends, t, side="right") - 1
        return np.where(k >= 0, self.sorted_ends[np.maximum(k, 0)], -1)


def _rows(o: Occurrences, stretch: np.ndarray, gpu: _GpuWork) -> dict[str, np.ndarray]:
    """Periods of one (graph, mode, stream) series, stretch by stretch."""
    n = o.gpu_start.size
    same_next = np.zeros(n, dtype=bool)
    same_next[:-1] = stretch[1:] == stretch[:-1]
    nxt_gpu = np.append(o.gpu_start[1:], -1)
    nxt_launch = np.append(o.launch[1:], -1)
    has_launch = (o.launch >= 0) & (nxt_launch >= 0)
    period = np.where(same_next, nxt_gpu - o.gpu_start, np.nan).astype(np.float64)
    cpu_period = np.where(same_next & has_launch, nxt_launch - o.launch, np.nan).astype(np.float64)
    window_end = np.where(same_next, nxt_gpu, o.gpu_end)
    busy_in_window = gpu.covered(window_end) - gpu.covered(o.gpu_start)
    other = np.clip(busy_in_window - o.gpu_busy, 0, None)
    idle = np.clip(period - busy_in_window, 0, None)
    gpu_bound = np.where(has_launch, nxt_launch < o.gpu_end, idle < GPU_BOUND_IDLE * period) & same_next
    # a stretch of one iteration: from its launch (else its GPU start) to its GPU end
    count = np.bincount(stretch, minlength=int(stretch.max()) + 1 if n else 0)
    single = count[stretch] == 1
    start = np.where(o.launch >= 0, o.launch, o.gpu_start)
    period = np.where(single, o.gpu_end - start, period)
    prev_end = np.maximum(gpu.last_end_before(o.gpu_start), start)
    work = np.where(gpu_bound & (other > 0), o.gpu_end - prev_end, period)
    nxt_start = np.append(start[1:], -1)
    end = np.where(same_next, nxt_start, np.maximum(o.gpu_end, start))
    return {"period": period, "cpu_period": cpu_period, "gpu_bound": gpu_bound, "other_gpu_ns": other.astype(np.int64),
            "work": work, "start_ns": start, "end_ns": end, "timed_by": np.full(n, "", dtype=object),
            "traced_work": np.full(n, np.nan)}


def script_iterations(trace: Trace, sg: ScriptGraphs, replays: list[Occurrences], eager: list[Occurrences],
                      nvtx: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
                      breaks: np.ndarray | None = None) -> IterationTable:
    """The iteration table of a script's timing pass (analyzers.inference gives the occurrences). `breaks`: more times
    that end every stretch across them (the starts of the pass's untraced windows, analyzers.untraced_windows)."""
    pid = sg.timing_pass
    gpu = _GpuWork.of(trace, pid)
    builds = np.array([c.start_ns for c in sg.lifecycle if c.event in ("capture", "build", "instantiate")], dtype=np.int64)
    if breaks is not None and breaks.size:
        builds = np.concatenate([builds, breaks.astype(np.int64)])
    capture_of: dict[int, list[int]] = {}
    for c in sg.lifecycle:
        if c.event in ("capture", "build") and c.graph_id:
            capture_of.setdefault(c.graph_id, []).append(c.start_ns)
    eager_starts: dict[int, list[np.ndarray]] = {}
    for o in eager:
        eager_starts.setdefault(o.graph_id, []).append(o.gpu_start)
    replay_starts: dict[int, list[np.ndarray]] = {}
    for o in replays:
        replay_starts.setdefault(o.graph_id, []).append(o.gpu_start)
    first_launch = {g: min(int(np.min(v)) for v in vs) for g, vs in replay_starts.items()}
    parts: list[dict[str, np.ndarray]] = []
    stretch_base = 0
    for o in [*replays, *eager]:  # per (graph, mode, stream)
        other_work = eager_starts if o.mode == "graph" else replay_starts
        brk = np.concatenate([builds, *other_work.get(o.graph_id, [])]) if other_work.get(o.graph_id) else builds
        stretch = _split(o, brk)
        rows = _rows(o, stretch, gpu)
        role = np.full(o.gpu_start.size, "steady", dtype=object)
        if o.mode == "graph":
            role[o.gpu_start == first_launch.get(o.graph_id, -1)] = "first_launch"
        else:
            role = _warmups(o, stretch, capture_of.get(o.graph_id, []), role)
        n = o.gpu_start.size
        parts.append({
            "mode": np.full(n, o.mode, dtype=object), "graph_id": np.full(n, o.graph_id, dtype=np.int64),
            "stretch": stretch + stretch_base, "role": role, "source": np.full(n, o.source, dtype=object),
            "thread_id": o.thread, "stream_id": np.full(n, o.stream_id, dtype=np.int64), "launch_ns": o.launch,
            "launch_call_ns": o.launch_call_ns, "gpu_start_ns": o.gpu_start, "gpu_end_ns": o.gpu_end, "gpu_busy_ns": o.gpu_busy,
            **rows})
        stretch_base += int(stretch.max()) + 1 if n else 0
    table = _concat(pid, parts)
    for mode, (start, end, thread) in nvtx.items():  # explicit iterations replace the inferred ones of their mode
        table = _with_nvtx(table, mode, start, end, thread, stretch_base)
        stretch_base += 1
    return table


def _warmups(o: Occurrences, stretch: np.ndarray, captures: list[int], role: np.ndarray) -> np.ndarray:
    """Eager stretches of at most WARMUP_MAX iterations that end right before a capture of their graph."""
    if not captures or not o.gpu_start.size:
        return role
    caps = np.sort(np.asarray(captures, dtype=np.int64))
    for s in np.unique(stretch):  # per stretch
        sel = stretch == s
        last = int(o.gpu_start[sel].max())
        j = np.searchsorted(caps, last, side="right")
        if j >= caps.size or int(sel.sum()) > WARMUP_MAX:
            continue
        # no eager iteration of this graph between the stretch's end and the capture
        between = (o.gpu_start > last) & (o.gpu_start < caps[j])
        if not between.any():
            role[sel] = "warmup"
    return role


def _concat(pass_id: int, parts: list[dict[str, np.ndarray]]) -> IterationTable:
    if not parts:
        return empty_table(pass_id)
    cols = {c: np.concatenate([p[c] for p in parts]) for c in _COLUMNS}
    order = np.argsort(cols["start_ns"], kind="stable")
    return IterationTable(pass_id, *(cols[c][order] for c in _COLUMNS))


def _with_nvtx(t: IterationTable, mode: str, start: np.ndarray, end: np.ndarray, thread: np.ndarray, stretch: int) -> IterationTable:
    """Replaces the inferred iterations of `mode` with explicit NVTX ranges (period: range start to start)."""
    keep = t.select(t.mode != mode)
    base = "graph" if mode == "graph" else "eager"
    inferred = t.select(t.mode == base)
    graph = np.zeros(start.size, dtype=np.int64)
    if inferred.size:  # the graph of the first inferred iteration inside each range
        j = np.searchsorted(inferred.start_ns, start, side="left")
        jj = np.minimum(j, inferred.size - 1)
        inside = (j < inferred.size) & (inferred.start_ns[jj] < end)
        graph = np.where(inside, inferred.graph_id[jj], 0)
    n = start.size
    # start to the next range's start; the last range has no next one (its own length is no period), unless
    # it is the only one
    period = np.append(np.diff(start), np.nan).astype(np.float64) if n > 1 else (end - start).astype(np.float64)
    minus = np.full(n, -1, dtype=np.int64)
    part = {"mode": np.full(n, mode, dtype=object), "graph_id": graph, "stretch": np.full(n, stretch, dtype=np.int64),
            "role": np.full(n, "steady", dtype=object), "source": np.full(n, "nvtx", dtype=object), "thread_id": thread,
            "stream_id": np.zeros(n, dtype=np.int64), "start_ns": start, "end_ns": end, "launch_ns": minus, "launch_call_ns": minus,
            "gpu_start_ns": minus, "gpu_end_ns": minus, "gpu_busy_ns": np.zeros(n, dtype=np.int64),
            "other_gpu_ns": np.zeros(n, dtype=np.int64), "period": period, "cpu_period": period.copy(),
            "work": period.copy(), "gpu_bound": np.zeros(n, dtype=bool), "timed_by": np.full(n, "", dtype=object),
            "traced_work": np.full(n, np.nan)}
    rest = {c: getattr(keep, c) for c in _COLUMNS}
    return _concat(t.pass_id, [rest, part])


def runner_iterations(trace: Trace, pass_id: int) -> IterationTable:
    """Bench traces: the runner's iteration markers; each iteration launches and synchronizes, so its
    period is its marker span (launch to the synchronize's return)."""
    r = trace.sql("SELECT mode, graph_id, iteration, start_ns, end_ns, thread_id FROM markers WHERE pass_id = ? AND "
                  "kind = 'iteration' AND name <> 'inferred' AND mode IN ('eager', 'eager_sync_each', 'graph') "
                  "ORDER BY start_ns", [pass_id])
    n = r["start_ns"].size
    if n == 0:
        return empty_table(pass_id)
    start, end = r["start_ns"].astype(np.int64), r["end_ns"].astype(np.int64)
    minus = np.full(n, -1, dtype=np.int64)
    period = (end - start).astype(np.float64)
    modes = r["mode"].astype(object)
    stretch = np.unique(modes.astype(str), return_inverse=True)[1].astype(np.int64)
    return IterationTable(pass_id, modes, r["graph_id"].astype(np.int64), stretch, np.full(n, "steady", dtype=object),
                          np.full(n, "runner", dtype=object), r["thread_id"].astype(np.int64), np.zeros(n, dtype=np.int64),
                          start, end, start, minus, minus, minus, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), period,
                          period.copy(), period.copy(), np.zeros(n, dtype=bool), np.full(n, "", dtype=object), np.full(n, np.nan))
