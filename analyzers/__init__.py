"""Analyzers: pure functions of a Trace that return plain data (no GPU, no printing, no plotting).

Entry points (stable names; the front door, graphmode/cli.py and graphmode/views.py, calls them once per command):

- `analyzers.run.build_run(trace) -> Run`: the run model (passes by role; a script's graphs, iterations and line
  stamps derived once and kept), which every analyzer below reads.
- `analyze(run_or_trace) -> TraceAnalysis`: every metric of docs/metrics.md for one trace; the views (terminal,
  JSON, page) render it and do not analyze again.
- `analyzers.page.page_data(run, analysis) -> PageData`: what the page draws beyond the metrics (timelines,
  kernel table, topologies), read from the same run.
- `to_dict(analysis) -> dict`: the same as JSON-ready builtins (what `graphmode report --json` writes
  under reports/report.schema.json, without the per-iteration series).
- `analyzers.ranks.analyze_ranks(paths) -> RankSetAnalysis`: the traces of a multi-process run's ranks as one
  run (analyzers.rank_results, docs/ranks.md), one rank at a time.

Result types (analyzers.results): `TraceAnalysis`, `ModeMetrics`, `Stat`, `IterationSeries`,
`OverheadSaved`, `GraphCost`, `BreakEven`, `KernelComparison`, `CriticalPath`, `Distortion`, `Pitfall`
(diagnostics, analyzers.pitfalls), `CpuProfile` (analyzers.cpu_profile), `SourceLine` (analyzers.sources),
`Prediction` / `RegionPrediction` (analyzers.predict: a graph's cost and saving predicted from eager work).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from graphmode.analyzers.costmodel import ModelChoice, find_model
from graphmode.analyzers.cpu_profile import cpu_profile_summary
from graphmode.analyzers.cpu_speed import cpu_speeds, speed_notes
from graphmode.analyzers.critical_path import critical_path_notes, critical_paths
from graphmode.analyzers.graph_use import graph_use_fields
from graphmode.analyzers.headline import headline_of
from graphmode.analyzers.kernels import MAX_KERNELS, kernel_comparisons
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.pitfalls import find_pitfalls
from graphmode.analyzers.runner_analysis import analyze_runner
from graphmode.analyzers.script_analysis import analyze_script
from graphmode.analyzers.predict import check_build, predict, uses_torch
from graphmode.analyzers.run import Run, build_run
from graphmode.analyzers.regions import parse_line_spec
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
    Prediction,
    RegionPrediction,
    SourceLine,
    Stat,
    TraceAnalysis,
)
from graphmode.analyzers.sources import MAX_SOURCE_LINES, kernel_sources, source_lines, source_lines_truncated
from graphmode.tracer.store import Trace

# A traced pass this much slower than the timing pass earns a warning in the report.
DISTORTION_WARNING_RATIO = 1.05

__all__ = [
    "BreakEven", "CriticalPath", "Distortion", "GraphCost", "IterationSeries", "KernelComparison",
    "ModeMetrics", "OverheadSaved", "Stat", "TraceAnalysis", "analyze", "to_dict", "Pitfall", "CpuProfile",
    "SourceLine", "Prediction", "RegionPrediction",
]


def analyze(source: Trace | Run, cost_model: ModelChoice | None = None, predict_lines: Sequence[str] = (),
            predict_build: str = "auto") -> TraceAnalysis:
    """Computes every metric that the trace allows; says in `cannot_compute` what it does not, and why.

    `source`: the command's Run (analyzers.run.build_run), whose derived parts (script graphs, iterations, line
    stamps) the page's data then reuses; a Trace gets a Run of its own.

    `cost_model`: the model for the graph prediction (default: the installed one for the trace's GPU,
    analyzers.costmodel.find_model); `predict_lines`: extra regions to predict, as 'file.py:FIRST-LAST';
    `predict_build`: how the predicted graphs are made ('auto', 'capture' or 'node_api': analyzers.predict.predict).
    """
    run = source if isinstance(source, Run) else build_run(source)
    choice = cost_model if cost_model is not None else find_model(run.trace.meta)
    result = analyze_metrics(run, choice)
    trace = run.trace
    # each kernel's source lines, from the pass the source lines come from (analyze_metrics)
    source_pass = result.traced_pass_id if result.traced_pass_id is not None else result.timing_pass_id
    if source_pass is not None and result.source_lines and result.kernels:
        by_name = kernel_sources(trace, source_pass)
        result = dataclasses.replace(result, kernels=tuple(dataclasses.replace(k, sources=by_name.get(k.name, ()))
                                                           for k in result.kernels))
    result = dataclasses.replace(result, **graph_use_fields(trace, result))  # coverage, PyTorch, graph budget
    # Diagnostics and the CPU profile read the metrics above (break-even, medians), so they come last.
    try:
        profile = cpu_profile_summary(trace, result.traced_pass_id)
    except ValueError as e:  # a damaged profile costs the profile section, not the report
        profile = None
        result = dataclasses.replace(result, warnings=(*result.warnings, note("cpu_profile_unreadable", error=str(e))))
    result = dataclasses.replace(result, pitfalls=find_pitfalls(run, result), cpu_profile=profile)
    # The prediction compares itself with the graph measured above, so it comes after everything.
    for spec in predict_lines:
        parse_line_spec(spec)  # a user mistake raises ValueError saying what to write, before any work
    check_build(predict_build)  # before any work: inside predict() below, a mistake would become a failed prediction
    try:
        prediction = predict(run, result, choice, predict_lines, build=predict_build)
    except Exception as e:  # a bug in the prediction must not take the measured report with it
        result = dataclasses.replace(result, cannot_compute=(*result.cannot_compute,
                                     note("prediction_failed", error_type=type(e).__name__, error=str(e))))
        return dataclasses.replace(result, headline=headline_of(result))
    result = dataclasses.replace(result, prediction=prediction)
    return dataclasses.replace(result, headline=headline_of(result))


def analyze_metrics(run: Run, choice: ModelChoice, details: bool = True) -> TraceAnalysis:
    """The measured metrics of `analyze` and every note about them (modes, one-time costs, savings, break-even,
    per-graph results, per-kernel comparison, critical paths, source lines, distortion), without what is derived
    from them (each kernel's source lines, coverage, PyTorch's graphs, the graph budget, diagnostics, the CPU
    profile, the prediction, the headline): the fields those fill keep their defaults. `analyze` is this and the
    rest. `choice`: the cost model (analyzers.costmodel.find_model).

    `details` False: no critical paths and no source lines either, only what they say they could not do (the same
    notes): what a multi-rank analysis reads of each rank (analyzers.ranks), which shows neither."""
    trace = run.trace
    warnings: list[Note] = []
    cannot: list[Note] = []
    timing = run.timing
    traced = run.traced
    timing_id = timing.pass_id if timing else None
    traced_id = traced.pass_id if traced else None

    status = str(trace.meta.get("status", "unknown"))
    reason = str(trace.meta.get("status_reason", "") or "")
    if status != "complete":
        warnings.append(note("run_incomplete", status=status, reason=reason))
    for p in trace.passes:
        if p.status != "complete":
            warnings.append(note("pass_incomplete", pass_id=p.pass_id, detail=p.detail, status=p.status))
    warnings.extend(recording_problems(trace))
    dropped = max(int(trace.meta.get("dropped_records", 0) or 0), sum(p.dropped_records for p in trace.passes))
    if dropped:
        warnings.append(note("records_dropped", count=dropped))
    speeds = cpu_speeds(trace)  # how fast the CPU ran under each run's figures (analyzers.cpu_speed)
    warnings.extend(speed_notes(speeds))

    # One pipeline: the parts particular to the trace's kind (a script's per-graph results and steps, from the measuring
    # run and the run that recorded the graphs, analyzers.script_analysis; a runner's modes against each eager baseline
    # and its one step, from its markers, analyzers.runner_analysis), then everything below, shared.
    script = None if run.runner or traced is None else analyze_script(run, choice.model, uses_torch(trace))
    parts = script if script is not None else analyze_runner(run)
    traced = run.pass_info(parts.structure_pass)
    traced_id = traced.pass_id if traced is not None else None
    wall_source = parts.timing_run
    modes, spans, costs, breaks, saved = list(parts.modes), parts.spans, list(parts.costs), list(parts.break_even), list(parts.overhead_saved)
    by_mode = {m.mode: m for m in modes}
    graph = by_mode.get("graph")
    eager_modes = [by_mode[m] for m in ("eager", "eager_sync_each") if m in by_mode]
    cannot.extend(parts.notes)

    kernels: list[KernelComparison] = []
    paths: list[CriticalPath] = []
    if traced is not None:
        if traced.detail == "node":
            if eager_modes or graph is not None:
                base = eager_modes[0].mode if eager_modes else "eager"
                kernels, truncated = kernel_comparisons(trace, traced.pass_id, base, spans)
                if truncated:
                    cannot.append(note("kernel_table_truncated", limit=MAX_KERNELS))
            if details:
                paths, notes = critical_paths(trace, traced.pass_id)
            else:
                notes = critical_path_notes(trace, traced.pass_id)
            cannot.extend(notes)
        else:
            if graph is not None:  # (a run without graph launches loses nothing to graph detail)
                cannot.append(note("graph_detail_no_kernels"))
            if eager_modes:
                kernels, _ = kernel_comparisons(trace, traced.pass_id, eager_modes[0].mode, spans)

    # Source lines come from the pass with CUDA activity; a trace with only a timing pass still has its
    # graph nodes' lines (without GPU time).
    lines: tuple[SourceLine, ...] = ()
    source_pass = traced_id if traced_id is not None else timing_id
    if source_pass is not None:
        if details:
            lines, lines_truncated = source_lines(trace, source_pass)
        else:
            lines_truncated = source_lines_truncated(trace, source_pass)
        if lines_truncated:
            cannot.append(note("source_table_truncated", limit=MAX_SOURCE_LINES))

    distortion: list[Distortion] = []
    if wall_source == "timing" and traced is not None:
        for m in modes:
            if m.wall is not None and m.traced_wall is not None and m.wall.median > 0:
                ratio = m.traced_wall.median / m.wall.median
                distortion.append(Distortion(m.mode, m.wall.median, m.traced_wall.median, m.traced_wall.median - m.wall.median, ratio))
                if ratio > DISTORTION_WARNING_RATIO:
                    warnings.append(note("tracer_slowed", mode=m.mode, ratio=ratio, traced_ns=m.traced_wall.median,
                                         untraced_ns=m.wall.median))

    result = TraceAnalysis(
        path=str(trace.path), workload=str(trace.meta.get("workload", "")), status=status, status_reason=reason,
        dropped_records=dropped, timing_pass_id=timing_id, traced_pass_id=traced_id,
        traced_detail=traced.detail if traced else None, modes=tuple(modes), overhead_saved=tuple(saved),
        graph_costs=tuple(costs), break_even=tuple(breaks), kernels=tuple(kernels), critical_paths=tuple(paths),
        distortion=tuple(distortion), warnings=tuple(warnings), cannot_compute=tuple(cannot), source_lines=lines,
        graphs=parts.graphs, totals=parts.totals, steps=parts.steps, cpu_speed=speeds,
    )
    return result


def recording_problems(trace: Trace) -> list[Note]:
    """What went wrong while recording or reading the trace, as report warnings: errors the tracer hit
    (meta.callback_errors: e.g. a graph whose topology could not be read is missing from the topology
    tables), notes it recorded (meta.notes: a lost CPU profile, skipped inference), and what the loader
    left out (Trace.notes)."""
    out: list[Note] = []
    errors = trace.meta.get("callback_errors") or []
    if isinstance(errors, list) and errors:  # the first three, as the tracer wrote them
        out.append(note("tracer_errors", count=len(errors), errors=tuple(str(e) for e in errors[:3])))
    notes = trace.meta.get("notes") or []
    if isinstance(notes, list):  # the tracer's own text (meta.notes), recorded in the trace
        out.extend(note("recording_note", text=str(n)) for n in notes)
    out.extend(note("reading_note", text=str(n)) for n in getattr(trace, "notes", ()))
    return out



def _plain(value: Any, word: Callable[[Note], str] | None = None) -> Any:
    if isinstance(value, Note):
        out = {"kind": value.kind, "values": {k: _plain(v) for k, v in value.values.items()}}
        return {**out, "text": word(value)} if word is not None else out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), word) for f in dataclasses.fields(value) if f.name != "series"}
    if isinstance(value, (list, tuple)):
        return [_plain(v, word) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy scalar
        return _plain(value.item())
    return value


def to_dict(analysis: TraceAnalysis, word: Callable[[Note], str] | None = None) -> dict[str, Any]:
    """The analysis as JSON-ready builtins (per-iteration series left out; non-finite floats as null). A note is
    {"kind", "values"}, and its sentence under "text" when the caller gives `word` (reports.notes.word)."""
    out = _plain(analysis, word)
    assert isinstance(out, dict)
    return out
