"""The part of `analyze` that is particular to a runner trace (`graphmode bench`, `graphmode.compare`): the runner's
iteration markers (analyzers.periods.runner_iterations, source 'runner') in its wall pass, per mode, and its `op`
markers as the one-time costs; and the run's one step of one graph (analyzers.steps.runner_step). It returns the
same parts as a script's analysis (analyzers.script_analysis.RunParts), so that `analyze` has one pipeline after it.

Why the runner's figures do not come from the per-graph code (analyzers.per_graph.graph_results) that a script's
do (measured on the four bench recordings of tests/data, docs/metrics.md "Which pass gives what"):
- a runner iteration launches and synchronizes, so its marker span is its period, and the figures are medians with
  a bootstrap of the medians (analyzers.break_even.break_even), which docs/benchmarks.md validated against a C++
  ground truth; the per-graph code takes the 10% trimmed mean (on chain-node: eager 133.0 us, not 122.6 us);
- the wall pass is the timing pass, which records no graph lifecycle (no CUPTI): the one-time cost is the runner's
  `op` markers, its first launch included, not graph_events of the pass;
- the first launch is an `op`, not an iteration: the run replayed its graph once more than it has graph iterations;
- there are two eager baselines (`eager`, `eager_sync_each`), and each pass numbers the same graph anew.

It is also what a trace gets that has no script graphs to analyze (no traced pass, or none that recorded graphs).
"""

from __future__ import annotations

import dataclasses

from graphmode.analyzers.break_even import break_even, overhead_saved
from graphmode.analyzers.graph_cost import graph_costs, has_cost_records
from graphmode.analyzers.iterations import mode_metrics, place_gpu_spans
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.periods import empty_table, runner_iterations
from graphmode.analyzers.results import GraphCost, StepResult
from graphmode.analyzers.run import Run
from graphmode.analyzers.script_analysis import RunParts
from graphmode.analyzers.steps import runner_step
from graphmode.tracer.store import Trace


def _has_iterations(trace: Trace, pass_id: int) -> bool:
    return bool(trace.rows("SELECT count(*) FROM markers WHERE pass_id = ? AND kind = 'iteration'", [pass_id])[0][0])


def analyze_runner(run: Run) -> RunParts:
    """The runner's modes, one-time costs, break-evens and overhead saved against each eager baseline, and its one
    step; `notes` says what it could not compute (the analysis's `cannot_compute`)."""
    trace = run.trace
    timing, traced = run.timing, run.traced
    timing_id = timing.pass_id if timing else None
    traced_id = traced.pass_id if traced else None
    cannot: list[Note] = []
    wall_id: int | None  # the pass that gives wall times: timing if it has iterations, else traced
    if timing is not None and _has_iterations(trace, timing.pass_id):
        wall_id, wall_source = timing.pass_id, "timing"
    elif traced is not None:
        wall_id, wall_source = traced.pass_id, "traced"
        if timing is None:
            cannot.append(note("no_timing_pass"))
        else:
            cannot.append(note("timing_pass_without_iterations", pass_id=timing.pass_id))
    else:
        wall_id, wall_source = timing_id, "timing"
    if traced is None:
        cannot.append(note("no_traced_pass"))

    # The traced pass's GPU spans are fetched and placed in iterations once, for the per-iteration GPU
    # metrics and the per-kernel comparison.
    spans = place_gpu_spans(trace, traced_id) if traced_id is not None else None
    modes = mode_metrics(trace, wall_id, traced_id, wall_source, spans) if wall_id is not None or traced_id is not None else []
    by_mode = {m.mode: m for m in modes}
    if not modes:
        cannot.append(note("no_iteration_markers"))
    for m in modes:
        if m.iterations == 1:
            cannot.append(note("one_iteration", mode=m.mode))
    graph = by_mode.get("graph")
    eager_modes = [by_mode[m] for m in ("eager", "eager_sync_each") if m in by_mode]
    if modes and graph is None:
        cannot.append(note("no_graph_iterations"))
    if modes and not eager_modes:
        cannot.append(note("no_eager_iterations"))

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
            cannot.append(note("costs_from_traced_pass", pass_id=cost_id))
        if any(c.first_launch_ns is None for c in costs):
            cannot.append(note("first_launch_missing"))
    elif traced is not None or timing is not None:
        cannot.append(note("no_graph_built"))
    costs = on_traced_ids(trace, costs, traced_id)
    one_time = sum(c.total_ns for c in costs) if costs else None
    # the first launch is an `op` marker, not an iteration: it is a replay of this run too
    run_replays = (graph.iterations if graph else 0) + (1 if any(c.first_launch_ns is not None for c in costs) else 0)

    saved = [overhead_saved(e, graph) for e in eager_modes] if graph is not None else []
    breaks = [break_even(e, graph, one_time, run_replays) for e in eager_modes]
    for b in breaks:
        if b.replays is None and not b.never and graph is not None and b.reason is not None:
            cannot.append(Note("break_even_unknown", {**b.reason.values, "baseline": b.baseline, "reason": b.reason.kind}))
    # the run model's one step: the runner's graph against the primary baseline's iterations (analyzers.steps)
    step = runner_step(eager_modes[0], graph, breaks[0], costs) if graph is not None and eager_modes else None
    steps: tuple[StepResult, ...] = (step,) if step is not None else ()
    table = runner_iterations(trace, wall_id) if wall_id is not None else empty_table(0)
    return RunParts(structure_pass=traced_id, timing_pass=wall_id, timing_run=wall_source, table=table, graphs=(), totals=None,
                    modes=tuple(modes), costs=tuple(costs), break_even=tuple(breaks), overhead_saved=tuple(saved),
                    spans=spans, notes=tuple(cannot), steps=steps)


def on_traced_ids(trace: Trace, costs: list[GraphCost], traced_id: int | None) -> list[GraphCost]:
    """A built-in workload's costs under the traced pass's graph ids: each pass builds the same graph (one label) and
    CUPTI numbers it anew, so the timing pass's graph 1 is the traced pass's graph 4; the topology, the budget and the
    headline then name one id."""
    if traced_id is None or not costs:
        return costs
    rows = trace.rows("SELECT pass_id, graph_id, label FROM graphs WHERE label <> ''")
    traced = {str(lb): int(g) for p, g, lb in rows if p == traced_id}
    counts: dict[str, int] = {}
    for p, _, lb in rows:
        if p == traced_id:
            counts[str(lb)] = counts.get(str(lb), 0) + 1
    out = []
    for c in costs:
        gid = traced.get(c.label) if c.pass_id != traced_id and counts.get(c.label) == 1 else None
        out.append(dataclasses.replace(c, graph_id=gid) if gid is not None else c)
    return out
