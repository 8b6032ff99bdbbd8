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

Each unit of GPU work is placed in time by the start of the API call that launched it (its correlation
id), so a kernel and its launch call always fall in the same phase. Everything is SQL and numpy: the
Python loops run per phase and per range name.
"""

from __future__ import annotations

import numpy as np

from graphmode.analyzers.coverage_results import CoverageSlice, EagerLine, GraphCoverage
from graphmode.analyzers.results import SourceLine
from graphmode.tracer.store import Trace

MAX_RANGES = 20  # range names kept, longest total time first
MAX_EAGER_LINES = 10
LAUNCH_SOURCES_HINT = ("the lines that launch eager kernels are recorded with `graphmode run --launch-sources` "
                       "(a CPU callback per launch: it slows the run)")
PHASE_RULE = ("'before the first graph' ends where the first capture, explicit build or instantiation starts; "
              "'building graphs' runs from there to the end of the last one; 'steady state' is the rest")

# GPU work placed at the start of its launch call: a correlation id may match a runtime and a driver
# call (cuda-python's direct driver calls carry their own); the earliest call with the id is the launch.
_SPANS_SQL = """
WITH launch AS (
  SELECT correlation_id, min(start_ns) AS launch_ns FROM api_calls WHERE pass_id = $1 GROUP BY correlation_id
), kernel_nodes AS (
  SELECT graph_id, count(*) FILTER (WHERE node_type = 'kernel') AS k, count(*) AS n
  FROM graph_nodes WHERE pass_id = $1 GROUP BY graph_id
)
SELECT coalesce(l.launch_ns, s.start_ns)::BIGINT AS t,
       (s.end_ns - s.start_ns)::BIGINT AS dur,
       s.kind = 'kernel' AS is_kernel,
       s.kind = 'graph' AS is_graph_span,
       s.graph_id <> 0 AS in_graph,
       s.graph_id,
       coalesce(k.k, 0)::BIGINT AS graph_kernels,
       coalesce(k.n, 0) = 0 AS unknown_topology
FROM gpu_spans s
LEFT JOIN launch l ON s.correlation_id <> 0 AND l.correlation_id = s.correlation_id
LEFT JOIN kernel_nodes k ON s.kind = 'graph' AND k.graph_id = s.graph_id
WHERE s.pass_id = $1
"""

# Outermost launch calls (docs/metrics.md, "Outermost calls"): per thread, ordered by start, longer
# first, runtime before driver; a call ending at or before the running maximum end of the calls
# before it is nested in one of them (a runtime call's own driver call) and is not counted again.
_CALLS_SQL = """
WITH ordered AS (
  SELECT start_ns, end_ns, thread_id, category,
         max(end_ns) OVER (PARTITION BY thread_id ORDER BY start_ns, end_ns DESC, api DESC
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered
  FROM api_calls WHERE pass_id = $1
), captures AS (
  SELECT start_ns, end_ns, thread_id FROM graph_events WHERE pass_id = $1 AND event = 'capture'
)
SELECT o.start_ns AS t, (o.end_ns - o.start_ns)::BIGINT AS dur, o.category = 'graph_launch' AS is_graph_launch,
       EXISTS (SELECT 1 FROM captures c WHERE c.thread_id = o.thread_id
               AND o.start_ns >= c.start_ns AND o.start_ns <= c.end_ns) AS captured
FROM ordered o
WHERE o.category IN ('kernel_launch', 'graph_launch') AND (o.covered IS NULL OR o.end_ns > o.covered)
"""

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


class _Work:
    """The pass's GPU spans and launch calls as columns, each with the time that places it."""

    def __init__(self, trace: Trace, pass_id: int):
        s = trace.sql(_SPANS_SQL, [pass_id])
        self.span_t = s["t"].astype(np.int64)
        self.span_dur = s["dur"].astype(np.float64)
        is_kernel = s["is_kernel"].astype(bool)
        is_graph_span = s["is_graph_span"].astype(bool)
        in_graph = s["in_graph"].astype(bool)
        self.graph_id = s["graph_id"].astype(np.int64)
        # kernels each span stands for: one per kernel span, the graph's kernel nodes per whole-graph span
        self.graph_kernels = np.where(is_graph_span, s["graph_kernels"].astype(np.int64), (is_kernel & in_graph).astype(np.int64))
        self.eager_kernel = is_kernel & ~in_graph
        self.graph_work = in_graph
        self.eager_work = ~in_graph  # kernels, copies, memsets launched one by one
        self.unknown_launch = is_graph_span & s["unknown_topology"].astype(bool)
        self.is_graph_span = is_graph_span
        c = trace.sql(_CALLS_SQL, [pass_id])
        self.call_t = c["t"].astype(np.int64)
        self.call_dur = c["dur"].astype(np.float64)
        self.graph_call = c["is_graph_launch"].astype(bool)
        self.captured = c["captured"].astype(bool) & ~self.graph_call
        self.eager_call = ~self.graph_call & ~self.captured

    def slice(self, name: str, kind: str, start_ns: int, duration_ns: float, occurrences: int,
              spans: np.ndarray | None = None, calls: np.ndarray | None = None) -> CoverageSlice:
        """Figures over the spans and calls selected by the masks (None: all)."""
        sm = np.ones(self.span_t.size, dtype=bool) if spans is None else spans
        cm = np.ones(self.call_t.size, dtype=bool) if calls is None else calls
        gk = int(self.graph_kernels[sm].sum())
        ek = int(np.count_nonzero(self.eager_kernel & sm))
        gt = float(self.span_dur[self.graph_work & sm].sum())
        et = float(self.span_dur[self.eager_work & sm].sum())
        gc = int(np.count_nonzero(self.graph_call & cm))
        ec = int(np.count_nonzero(self.eager_call & cm))
        launched = self.graph_id[self.graph_work & sm]
        return CoverageSlice(
            name=name, kind=kind, start_ns=int(start_ns), duration_ns=float(duration_ns), occurrences=occurrences,
            graph_kernels=gk, eager_kernels=ek, kernel_share=share(gk, ek),
            graph_gpu_ns=gt, eager_gpu_ns=et, gpu_time_share=share(gt, et),
            graph_launch_calls=gc, eager_launch_calls=ec, launch_call_share=share(gc, ec),
            graph_launch_api_ns=float(self.call_dur[self.graph_call & cm].sum()),
            eager_launch_api_ns=float(self.call_dur[self.eager_call & cm].sum()),
            captured_launch_calls=int(np.count_nonzero(self.captured & cm)),
            graphs_launched=int(np.unique(launched).size),
        )

    def between(self, lo: int, hi: int, last: bool) -> tuple[np.ndarray, np.ndarray]:
        """Masks of the spans and calls placed in [lo, hi) ([lo, hi] for the last phase)."""
        if last:
            return (self.span_t >= lo) & (self.span_t <= hi), (self.call_t >= lo) & (self.call_t <= hi)
        return (self.span_t >= lo) & (self.span_t < hi), (self.call_t >= lo) & (self.call_t < hi)


def _phases(trace: Trace, pass_id: int, work: _Work, start: int, end: int) -> tuple[CoverageSlice, ...]:
    (first, last), = trace.rows(_BUILD_SQL, [pass_id])
    if first is None:
        return ()
    first, last = int(first), int(last)
    # work placed before the pass's recorded start (a call that began just before) belongs to the first phase
    lo = min(start, int(work.span_t.min(initial=start)), int(work.call_t.min(initial=start)))
    hi = max(end, int(work.span_t.max(initial=end)), int(work.call_t.max(initial=end)))
    cuts = [("before the first graph", lo, first), ("building graphs", first, last), ("steady state", last, hi)]
    out = []
    for i, (name, a, b) in enumerate(cuts):
        sm, cm = work.between(a, b, last=i == len(cuts) - 1)
        out.append(work.slice(name, "phase", a, max(b - a, 0), 1, sm, cm))
    return tuple(out)


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals sorted by start, as disjoint sorted intervals."""
    run_end = np.maximum.accumulate(ends)
    new = np.ones(starts.size, dtype=bool)
    new[1:] = starts[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    return starts[new], np.maximum.reduceat(ends, idx)


def _inside(t: np.ndarray, us: np.ndarray, ue: np.ndarray) -> np.ndarray:
    """Whether each time lies in one of the disjoint sorted intervals [us, ue]."""
    k = np.searchsorted(us, t, side="right") - 1
    return (k >= 0) & (t <= ue[np.maximum(k, 0)])


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
    out = []
    for total, name, us, ue, count in merged[:MAX_RANGES]:
        out.append(work.slice(name, "range", int(us[0]), total, count,
                              _inside(work.span_t, us, ue), _inside(work.call_t, us, ue)))
    return tuple(out)


def _eager_lines(lines: tuple[SourceLine, ...], eager_gpu_ns: float, launch_sources: bool) -> tuple[tuple[EagerLine, ...], str]:
    eager = [s for s in lines if s.kind == "eager launch"]
    if not eager:
        note = ("no eager GPU work was attributed to a user line" if launch_sources else LAUNCH_SOURCES_HINT)
        return (), note
    out = tuple(EagerLine(s.source, s.kernels, s.count, s.gpu_total_ns,
                          s.gpu_total_ns / eager_gpu_ns if s.gpu_total_ns is not None and eager_gpu_ns > 0 else None)
                for s in eager[:MAX_EAGER_LINES])
    return out, ""


def graph_coverage(trace: Trace, pass_id: int, source_lines: tuple[SourceLine, ...] = ()) -> GraphCoverage | None:
    """Coverage of one traced pass; None when it holds no GPU work and no launch call."""
    p = next((x for x in trace.passes if x.pass_id == pass_id), None)
    if p is None:
        return None
    work = _Work(trace, pass_id)
    if work.span_t.size == 0 and work.call_t.size == 0:
        return None
    run = work.slice("whole run", "run", p.start_ns, float(p.end_ns - p.start_ns), 1)
    params = trace.meta.get("params") or {}
    launch_sources = bool(params.get("launch_sources")) if isinstance(params, dict) else False
    lines, note = _eager_lines(source_lines, run.eager_gpu_ns, launch_sources)
    if run.eager_kernels == 0 and not lines:
        note = ""
    return GraphCoverage(
        pass_id=pass_id, detail=p.detail, kernels_from_topology=bool(work.is_graph_span.any()),
        unknown_graph_launches=int(np.count_nonzero(work.unknown_launch)),
        run=run, phases=_phases(trace, pass_id, work, p.start_ns, p.end_ns), ranges=_ranges(trace, pass_id, work),
        eager_lines=lines, eager_lines_note=note, phase_rule=PHASE_RULE,
    )
