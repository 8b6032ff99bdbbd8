"""Graph coverage: how much of a run's GPU work ran inside CUDA graphs, per phase and per range.

Works on any traced pass, whatever made the graphs (PyTorch, CuPy, raw cuda-python, XLA's command
buffers): it reads only api_calls, gpu_spans, graph_nodes, graph_events and markers. Three measures
(docs/metrics.md, "Graph coverage"):

- **kernels**: kernel spans with a graph id (node detail), or for each whole-graph span of a
  graph-detail pass the number of kernel nodes of its graph (the topology the tracer recorded);
- **GPU time**: summed durations of graph work (node spans, or whole graph spans) vs eager kernels,
  copies and memsets;
- **launch calls**: outermost graph-launch calls vs outermost kernel-launch calls, those made while the
  calling thread's stream was capturing counted apart (they record work, they do not run it).

GPU work counts where it ran (its GPU start), a launch call where it was made (its start). Events are
sorted by time once and summed with prefix sums, so a phase or a range of any number of occurrences costs
two binary searches per interval; the Python loops run per launching thread and per range name.
"""

from __future__ import annotations

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.coverage_results import CoverageSlice, EagerLine, GraphCoverage
from graphmode.analyzers.results import SourceLine
from graphmode.tracer.store import Trace

MAX_RANGES = 20  # range names kept, longest total time first
MAX_EAGER_LINES = 10
LAUNCH_SOURCES_HINT = note("launch_sources_hint")  # the eager lines need `graphmode run --launch-sources`
# 'before the first graph' ends where the first capture, explicit build or instantiation starts; 'building graphs' runs
# from there to the end of the last one; 'steady state' is the rest
PHASE_RULE = note("phase_rule")

# Few numeric columns leave DuckDB, computed there (converting columns to numpy is most of the cost on a
# 10M-event trace): `kernels` packs graph kernels (a kernel node span counts 1, a whole-graph span its graph's
# kernel nodes) in the high 32 bits and eager kernels in the low 32 bits, so one cumulative sum serves both;
# `signed_dur` is the span's duration, negative for graph work.
_SPANS_SQL = """
WITH kernel_nodes AS (
  SELECT graph_id, count(*) FILTER (WHERE node_type = 'kernel') AS k, count(*) AS n
  FROM graph_nodes WHERE pass_id = $1 GROUP BY graph_id
)
SELECT s.start_ns,
       CASE WHEN s.graph_id = 0 THEN (s.kind = 'kernel')::BIGINT
            WHEN s.kind = 'graph' THEN coalesce(k.k, 0)::BIGINT << 32
            ELSE (s.kind = 'kernel')::BIGINT << 32 END AS kernels,
       CASE WHEN s.graph_id <> 0 THEN s.start_ns - s.end_ns ELSE s.end_ns - s.start_ns END::BIGINT AS signed_dur
FROM gpu_spans s LEFT JOIN kernel_nodes k ON s.kind = 'graph' AND k.graph_id = s.graph_id
WHERE s.pass_id = $1
"""
_GRAPH_SPANS_SQL = """
SELECT count(*) AS spans, count(*) FILTER (WHERE graph_id NOT IN (SELECT graph_id FROM graph_nodes WHERE pass_id = $1))
FROM gpu_spans WHERE pass_id = $1 AND kind = 'graph'
"""
_LAUNCH_THREADS_SQL = """
SELECT thread_id, count(DISTINCT api) = 2 AS mixed FROM api_calls
WHERE pass_id = $1 AND category IN ('kernel_launch', 'graph_launch') GROUP BY thread_id
"""
# one thread's launch calls: start, and a code = duration * 4 + runtime * 2 + graph launch
_CALLS_SQL = """
SELECT start_ns, ((end_ns - start_ns) * 4 + (api = 'runtime')::BIGINT * 2 + (category = 'graph_launch')::BIGINT)::BIGINT AS code
FROM api_calls WHERE pass_id = $1 AND thread_id = $2 AND category IN ('kernel_launch', 'graph_launch')
"""
_CAPTURES_SQL = "SELECT start_ns, end_ns, thread_id FROM graph_events WHERE pass_id = $1 AND event = 'capture' ORDER BY start_ns"
_LAUNCHES_SQL = "SELECT start_ns, graph_id FROM graph_events WHERE pass_id = $1 AND event = 'launch' ORDER BY start_ns"

_BUILD_SQL = """
SELECT min(start_ns), max(end_ns) FROM graph_events
WHERE pass_id = $1 AND event IN ('capture', 'build', 'instantiate')
"""

_RANGES_SQL = """
SELECT name, start_ns, end_ns FROM markers
WHERE pass_id = $1 AND kind IN ('nvtx', 'phase') AND end_ns > start_ns AND name <> ''
ORDER BY name, start_ns
"""


def share(part: float, other: float) -> float | None:
    """part / (part + other); None when both are zero."""
    total = part + other
    return float(part / total) if total > 0 else None


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals sorted by start, as disjoint sorted intervals."""
    if starts.size == 0:
        return starts, ends
    run_end = np.maximum.accumulate(ends)
    new = np.ones(starts.size, dtype=bool)
    new[1:] = starts[1:] > run_end[:-1]
    return starts[new], np.maximum.reduceat(run_end, np.flatnonzero(new))


def _inside(t: np.ndarray, us: np.ndarray, ue: np.ndarray) -> np.ndarray:
    """Whether each time lies in one of the disjoint sorted intervals [us, ue]."""
    if us.size == 0:
        return np.zeros(t.size, dtype=bool)
    k = np.searchsorted(us, t, side="right") - 1
    return (k >= 0) & (t <= ue[np.maximum(k, 0)])


class _Prefix:
    """Events sorted by time with cumulative sums of their columns: the sums over any set of disjoint time
    intervals cost two binary searches per interval, whatever the number of events."""

    def __init__(self, t: np.ndarray, columns: dict[str, np.ndarray]):
        order = None if t.size < 2 or bool(np.all(t[1:] >= t[:-1])) else np.argsort(t, kind="stable")
        self.t = t if order is None else t[order]
        self.cum: dict[str, np.ndarray] = {}
        for key, values in columns.items():
            c = np.zeros(values.size + 1, dtype=np.int64)
            np.cumsum(values if order is None else values[order], out=c[1:])
            self.cum[key] = c

    def sums(self, starts: np.ndarray, ends: np.ndarray, closed: bool = True) -> dict[str, int]:
        """Sums of every column over events with time in [start, end] (or [start, end)) of each interval."""
        lo = np.searchsorted(self.t, starts, side="left")
        hi = np.searchsorted(self.t, ends, side="right" if closed else "left")
        return {k: int((c[hi] - c[lo]).sum()) for k, c in self.cum.items()}


# two counts packed in one int64 (high and low 32 bits) so one cumulative sum serves both
_HIGH = np.int64(1 << 32)


def _unpack(packed: int) -> tuple[int, int]:
    return packed >> 32, packed & 0xFFFFFFFF


class _Work:
    """The pass's GPU work and launch calls, placed in time, as prefix sums (see _Prefix)."""

    def __init__(self, trace: Trace, pass_id: int):
        s = trace.sql(_SPANS_SQL, [pass_id])
        signed = s["signed_dur"]
        self.spans = _Prefix(s["start_ns"], {"kernels": s["kernels"], "gpu_ns": np.abs(signed),
                                              "graph_gpu_ns": np.maximum(-signed, 0)})
        del s, signed
        (graph_spans, unknown), = trace.rows(_GRAPH_SPANS_SQL, [pass_id])
        self.kernels_from_topology = bool(graph_spans)
        self.unknown_launches = int(unknown)  # launches of graphs built before tracing: no topology, no kernels counted
        caps = trace.sql(_CAPTURES_SQL, [pass_id])
        parts: list[tuple[np.ndarray, ...]] = []
        for tid, mixed in trace.rows(_LAUNCH_THREADS_SQL, [pass_id]):  # launching threads: a handful
            c = trace.sql(_CALLS_SQL, [pass_id, tid])
            start, code = c["start_ns"], c["code"]
            dur = code >> 2
            runtime, graph = ((code >> 1) & 1).astype(bool), (code & 1).astype(bool)
            keep = np.ones(start.size, dtype=bool)
            if mixed:
                # outermost calls (docs/metrics.md): launch calls nest at most runtime -> driver, and a thread's
                # runtime calls do not overlap, so a driver call is nested when the runtime call that started
                # last at or before it ends at or after it
                r_idx = np.flatnonzero(runtime)
                r_idx = r_idx[np.argsort(start[r_idx], kind="stable")]
                d_idx = np.flatnonzero(~runtime)
                k = np.searchsorted(start[r_idx], start[d_idx], side="right") - 1
                r_end = (start[r_idx] + dur[r_idx])[np.maximum(k, 0)]
                keep[d_idx[(k >= 0) & (r_end >= start[d_idx] + dur[d_idx])]] = False
            on = caps["thread_id"] == tid
            captured = np.zeros(start.size, dtype=bool)
            if on.any():
                us, ue = _merge(caps["start_ns"][on].astype(np.int64), caps["end_ns"][on].astype(np.int64))
                captured = _inside(start, us, ue) & ~graph
            parts.append((start[keep], graph[keep], captured[keep], dur[keep]))
        start, graph, captured, dur = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
                                       for i in range(4))
        graph, captured = graph.astype(bool), captured.astype(bool)
        # launch calls: graph << 32 | eager; captured calls apart; CPU time in the launches that ran work, and in graph
        # launches
        self.calls = _Prefix(start.astype(np.int64), {
            "calls": np.where(graph, _HIGH, (~captured).astype(np.int64)), "captured": captured.astype(np.int64),
            "api_ns": np.where(captured, 0, dur), "graph_api_ns": np.where(graph, dur, 0)})
        launches = trace.sql(_LAUNCHES_SQL, [pass_id])
        self.launch_t, self.launch_graph = launches["start_ns"].astype(np.int64), launches["graph_id"].astype(np.int64)

    @property
    def first_ns(self) -> int:
        return int(min(self.spans.t[0] if self.spans.t.size else np.iinfo(np.int64).max,
                       self.calls.t[0] if self.calls.t.size else np.iinfo(np.int64).max))

    @property
    def last_ns(self) -> int:
        return int(max(self.spans.t[-1] if self.spans.t.size else np.iinfo(np.int64).min,
                       self.calls.t[-1] if self.calls.t.size else np.iinfo(np.int64).min))

    def slice(self, name: str, kind: str, start_ns: int, duration_ns: float, occurrences: int,
              starts: np.ndarray, ends: np.ndarray, closed: bool = True) -> CoverageSlice:
        """Figures over the work placed in the disjoint intervals [starts, ends] ([starts, ends) if not closed)."""
        s = self.spans.sums(starts, ends, closed)
        c = self.calls.sums(starts, ends, closed)
        gk, ek = _unpack(s["kernels"])
        gc, ec = _unpack(c["calls"])
        gt, et = s["graph_gpu_ns"], s["gpu_ns"] - s["graph_gpu_ns"]
        graphs = self.launch_graph[_inside_any(self.launch_t, starts, ends, closed)]
        return CoverageSlice(
            name=name, kind=kind, start_ns=int(start_ns), duration_ns=float(duration_ns), occurrences=occurrences,
            graph_kernels=gk, eager_kernels=ek, kernel_share=share(gk, ek),
            graph_gpu_ns=float(gt), eager_gpu_ns=float(et), gpu_time_share=share(gt, et),
            graph_launch_calls=gc, eager_launch_calls=ec, launch_call_share=share(gc, ec),
            graph_launch_api_ns=float(c["graph_api_ns"]), eager_launch_api_ns=float(c["api_ns"] - c["graph_api_ns"]),
            captured_launch_calls=c["captured"], graphs_launched=int(np.unique(graphs).size),
        )


def _inside_any(t: np.ndarray, starts: np.ndarray, ends: np.ndarray, closed: bool) -> np.ndarray:
    """Whether each (few) time lies in one of the disjoint sorted intervals."""
    if starts.size == 0:
        return np.zeros(t.size, dtype=bool)
    k = np.searchsorted(starts, t, side="right") - 1
    end = ends[np.maximum(k, 0)] if starts.size else np.zeros(t.size, dtype=np.int64)
    return (k >= 0) & ((t <= end) if closed else (t < end))


def _phases(trace: Trace, pass_id: int, work: _Work, start: int, end: int) -> tuple[CoverageSlice, ...]:
    (first, last), = trace.rows(_BUILD_SQL, [pass_id])
    if first is None:
        return ()
    first, last = int(first), int(last)
    # work placed before the pass's recorded start (a call that began just before) belongs to the first phase
    lo, hi = min(start, work.first_ns), max(end, work.last_ns)
    cuts = [("before the first graph", lo, first), ("building graphs", first, last), ("steady state", last, hi)]
    out = []
    for i, (name, a, b) in enumerate(cuts):
        closed = i == len(cuts) - 1  # [a, b) but the last phase [a, b]: each event in exactly one phase
        out.append(work.slice(name, "phase", a, max(b - a, 0), 1, np.array([a]), np.array([b]), closed))
    return tuple(out)


def _ranges(trace: Trace, pass_id: int, work: _Work) -> tuple[CoverageSlice, ...]:
    r = trace.sql(_RANGES_SQL, [pass_id])
    if r["name"].size == 0:
        return ()
    names = r["name"].astype(str)
    starts, ends = r["start_ns"].astype(np.int64), r["end_ns"].astype(np.int64)
    bounds = np.flatnonzero(np.r_[True, names[1:] != names[:-1], True])
    merged = []
    for a, b in zip(bounds[:-1], bounds[1:]):  # per range name
        us, ue = _merge(starts[a:b], ends[a:b])
        merged.append((float((ue - us).sum()), str(names[a]), us, ue, int(b - a)))
    merged.sort(key=lambda m: (-m[0], m[1]))
    return tuple(work.slice(name, "range", int(us[0]), total, count, us, ue) for total, name, us, ue, count in merged[:MAX_RANGES])


def _eager_lines(lines: tuple[SourceLine, ...], eager_gpu_ns: float, launch_sources: bool) -> tuple[tuple[EagerLine, ...], Note | None]:
    eager = [s for s in lines if s.kind == "eager launch"]
    if not eager:
        return (), (note("no_eager_line_attributed") if launch_sources else LAUNCH_SOURCES_HINT)
    out = tuple(EagerLine(s.source, s.kernels, s.count, s.gpu_total_ns,
                          s.gpu_total_ns / eager_gpu_ns if s.gpu_total_ns is not None and eager_gpu_ns > 0 else None)
                for s in eager[:MAX_EAGER_LINES])
    return out, None


def graph_coverage(trace: Trace, pass_id: int, source_lines: tuple[SourceLine, ...] = ()) -> GraphCoverage | None:
    """Coverage of one traced pass; None when it holds no GPU work and no launch call."""
    p = next((x for x in trace.passes if x.pass_id == pass_id), None)
    if p is None:
        return None
    work = _Work(trace, pass_id)
    if work.spans.t.size == 0 and work.calls.t.size == 0:
        return None
    lo, hi = min(p.start_ns, work.first_ns), max(p.end_ns, work.last_ns)
    run = work.slice("whole run", "run", p.start_ns, float(p.end_ns - p.start_ns), 1, np.array([lo]), np.array([hi]))
    params = trace.meta.get("params") or {}
    launch_sources = bool(params.get("launch_sources")) if isinstance(params, dict) else False
    lines, lines_note = _eager_lines(source_lines, run.eager_gpu_ns, launch_sources)
    if run.eager_kernels == 0 and not lines:
        lines_note = None
    return GraphCoverage(
        pass_id=pass_id, detail=p.detail, kernels_from_topology=work.kernels_from_topology,
        unknown_graph_launches=work.unknown_launches,
        run=run, phases=_phases(trace, pass_id, work, p.start_ns, p.end_ns), ranges=_ranges(trace, pass_id, work),
        eager_lines=lines, eager_lines_note=lines_note, phase_rule=PHASE_RULE,
    )
