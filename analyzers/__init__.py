"""Analyzers: pure functions of a Trace that return plain data (no GPU, no printing, no plotting).

Entry points (stable names; the reports call them):

- `analyze(trace) -> TraceAnalysis`: every metric of docs/metrics.md for one trace.
- `to_dict(analysis) -> dict`: the same as JSON-ready builtins (what `graphmode report --json` writes
  under reports/report.schema.json, without the per-iteration series).
- `analyzers.ranks.analyze_ranks(paths) -> RankSetAnalysis`: the traces of a multi-process run's ranks as one
  run (analyzers.rank_results, docs/ranks.md), one rank at a time.

Result types (analyzers.results): `TraceAnalysis`, `ModeMetrics`, `Stat`, `IterationSeries`,
`OverheadSaved`, `GraphCost`, `BreakEven`, `KernelComparison`, `CriticalPath`, `Distortion`, `Pitfall`
(diagnostics, analyzers.pitfalls), `CpuProfile` (analyzers.cpu_profile), `SourceLine` (analyzers.sources).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from graphmode.analyzers.break_even import break_even, overhead_saved
from graphmode.analyzers.cpu_profile import cpu_profile_summary
from graphmode.analyzers.critical_path import critical_paths
from graphmode.analyzers.graph_cost import graph_costs, has_cost_records
from graphmode.analyzers.iterations import mode_metrics, place_gpu_spans
from graphmode.analyzers.kernels import MAX_KERNELS, kernel_comparisons
from graphmode.analyzers.pitfalls import find_pitfalls
from graphmode.analyzers.results import (
    BreakEven,
    CpuProfile,
    CriticalPath,
    Distortion,
    GraphCost,
    IterationSeries,
    KernelComparison,
    ModeMetrics,
    OverheadSaved,
    Pitfall,
    SourceLine,
    Stat,
    TraceAnalysis,
)
from graphmode.analyzers.sources import MAX_SOURCE_LINES, kernel_sources, source_lines
from graphmode.tracer.store import Trace

# A traced pass this much slower than the timing pass earns a warning in the report.
DISTORTION_WARNING_RATIO = 1.05

__all__ = [
    "BreakEven", "CriticalPath", "Distortion", "GraphCost", "IterationSeries", "KernelComparison",
    "ModeMetrics", "OverheadSaved", "Stat", "TraceAnalysis", "analyze", "to_dict", "Pitfall", "CpuProfile",
    "SourceLine",
]


def _has_iterations(trace: Trace, pass_id: int) -> bool:
    return bool(trace.rows("SELECT count(*) FROM markers WHERE pass_id = ? AND kind = 'iteration'", [pass_id])[0][0])


def analyze(trace: Trace) -> TraceAnalysis:
    """Computes every metric that the trace allows; says in `cannot_compute` what it does not, and why."""
    warnings: list[str] = []
    cannot: list[str] = []
    timing = trace.pass_by_detail("timing")
    traced = trace.pass_by_detail("node", "graph")
    timing_id = timing.pass_id if timing else None
    traced_id = traced.pass_id if traced else None

    status = str(trace.meta.get("status", "unknown"))
    reason = str(trace.meta.get("status_reason", "") or "")
    if status != "complete":
        warnings.append(f"the run did not complete (status '{status}'{': ' + reason if reason else ''}): figures cover only what was recorded")
    for p in trace.passes:
        if p.status != "complete":
            warnings.append(f"pass {p.pass_id} ({p.detail}) has status '{p.status}'")
    dropped = max(int(trace.meta.get("dropped_records", 0) or 0), sum(p.dropped_records for p in trace.passes))
    if dropped:
        warnings.append(f"{dropped:,} CUPTI activity records were dropped for lack of buffer space: API and GPU figures undercount")

    wall_id: int | None  # the pass that gives wall times: timing if it has iterations, else traced
    if timing is not None and _has_iterations(trace, timing.pass_id):
        wall_id, wall_source = timing.pass_id, "timing"
    elif traced is not None:
        wall_id, wall_source = traced.pass_id, "traced"
        if timing is None:
            cannot.append("no timing pass: wall times come from the traced pass and include the tracer's overhead; the tracer distortion cannot be measured")
        else:
            cannot.append("the timing pass has no iteration markers: wall times come from the traced pass and include the tracer's overhead")
    else:
        wall_id, wall_source = timing_id, "timing"
    if traced is None:
        cannot.append("no traced pass (graph or node detail): CPU time in CUDA API calls, GPU busy/idle time, kernel counts, per-kernel durations and critical paths need CUDA activity")

    # The traced pass's GPU spans are fetched and placed in iterations once, for the per-iteration GPU
    # metrics and the per-kernel comparison.
    spans = place_gpu_spans(trace, traced_id) if traced_id is not None else None
    modes = mode_metrics(trace, wall_id, traced_id, wall_source, spans) if wall_id is not None or traced_id is not None else []
    by_mode = {m.mode: m for m in modes}
    if not modes:
        cannot.append("no iteration markers (markers.kind = 'iteration'): per-iteration metrics, overhead saved and break-even need the runner's iterations (record with `graphmode bench`)")
    for m in modes:
        if m.iterations == 1:
            cannot.append(f"{m.mode} has one iteration: its p10/p90 equal the median and give no spread")
    graph = by_mode.get("graph")
    eager_modes = [by_mode[m] for m in ("eager", "eager_sync_each") if m in by_mode]
    if modes and graph is None:
        cannot.append("no graph-mode iterations (zero steady replays): launch overhead saved and break-even need graph replays")
    if modes and not eager_modes:
        cannot.append("no eager iterations: launch overhead saved and break-even need an eager baseline")

    # One-time costs: from the wall pass when it has them, so break-even compares like with like.
    cost_id = next((p for p in (wall_id, traced_id) if p is not None and has_cost_records(trace, p)), None)
    costs: list[GraphCost] = []
    if cost_id is not None:
        steady = None
        if graph is not None:
            steady_stat = graph.wall if cost_id == wall_id else graph.traced_wall
            steady = steady_stat.median if steady_stat else None
        costs = graph_costs(trace, cost_id, steady)
        if cost_id != wall_id:
            cannot.append(f"one-time graph costs come from pass {cost_id} (traced): the wall pass recorded none")
        if any(c.first_launch_ns is None for c in costs):
            cannot.append("some graphs have no first_launch op marker: their first launch's excess is not included in the one-time cost")
    elif traced is not None or timing is not None:
        cannot.append("no graph was built (no op markers or graph lifecycle events): no one-time graph cost")
    one_time = sum(c.total_ns for c in costs) if costs else None
    run_replays = (graph.iterations if graph else 0) + (1 if any(c.first_launch_ns is not None for c in costs) else 0)

    saved = [overhead_saved(e, graph) for e in eager_modes] if graph is not None else []
    breaks = [break_even(e, graph, one_time, run_replays) for e in eager_modes]
    for b in breaks:
        if b.replays is None and not b.never and graph is not None:
            cannot.append(f"break-even against {b.baseline}: {b.reason}")

    kernels: list[KernelComparison] = []
    paths: list[CriticalPath] = []
    if traced is not None:
        if traced.detail == "node":
            if eager_modes or graph is not None:
                base = eager_modes[0].mode if eager_modes else "eager"
                kernels, truncated = kernel_comparisons(trace, traced.pass_id, base, spans)
                if truncated:
                    cannot.append(f"more than {MAX_KERNELS} kernel names: the per-kernel table keeps the {MAX_KERNELS} with the most GPU time")
            paths, notes = critical_paths(trace, traced.pass_id)
            cannot.extend(notes)
        else:
            cannot.append("graph-detail trace: kernels inside a graph launch are recorded as one 'graph' span, so per-kernel eager-vs-graph durations and the critical path need a node-detail recording (`--detail node`)")
            if eager_modes:
                kernels, _ = kernel_comparisons(trace, traced.pass_id, eager_modes[0].mode, spans)

    # Source lines come from the pass with CUDA activity; a trace with only a timing pass still has its
    # graph nodes' lines (without GPU time).
    lines: tuple[SourceLine, ...] = ()
    source_pass = traced_id if traced_id is not None else timing_id
    if source_pass is not None:
        lines, lines_truncated = source_lines(trace, source_pass)
        if lines_truncated:
            cannot.append(f"more than {MAX_SOURCE_LINES} source lines launched GPU work: the table keeps the {MAX_SOURCE_LINES} with the most GPU time")
        if lines and kernels:
            by_name = kernel_sources(trace, source_pass)
            kernels = [dataclasses.replace(k, sources=by_name.get(k.name, ())) for k in kernels]

    distortion: list[Distortion] = []
    if wall_source == "timing" and traced is not None:
        for m in modes:
            if m.wall is not None and m.traced_wall is not None and m.wall.median > 0:
                ratio = m.traced_wall.median / m.wall.median
                distortion.append(Distortion(m.mode, m.wall.median, m.traced_wall.median, m.traced_wall.median - m.wall.median, ratio))
                if ratio > DISTORTION_WARNING_RATIO:
                    warnings.append(
                        f"the tracer slowed {m.mode} iterations by {100 * (ratio - 1):.0f}% (median {m.traced_wall.median / 1e3:.1f} us traced "
                        f"vs {m.wall.median / 1e3:.1f} us untraced): CPU and GPU figures come from the slowed pass"
                    )

    result = TraceAnalysis(
        path=str(trace.path), workload=str(trace.meta.get("workload", "")), status=status, status_reason=reason,
        dropped_records=dropped, timing_pass_id=timing_id, traced_pass_id=traced_id,
        traced_detail=traced.detail if traced else None, modes=tuple(modes), overhead_saved=tuple(saved),
        graph_costs=tuple(costs), break_even=tuple(breaks), kernels=tuple(kernels), critical_paths=tuple(paths),
        distortion=tuple(distortion), warnings=tuple(warnings), cannot_compute=tuple(cannot), source_lines=lines,
    )
    # Diagnostics and the CPU profile read the metrics above (break-even, medians), so they come last.
    return dataclasses.replace(result, pitfalls=find_pitfalls(trace, result),
                               cpu_profile=cpu_profile_summary(trace, traced_id))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name != "series"}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy scalar
        return _plain(value.item())
    return value


def to_dict(analysis: TraceAnalysis) -> dict[str, Any]:
    """The analysis as JSON-ready builtins (per-iteration series left out; non-finite floats as null)."""
    out = _plain(analysis)
    assert isinstance(out, dict)
    return out
