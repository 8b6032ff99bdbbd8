"""The part of `analyze` that is particular to script traces (no runner markers): per-graph results,
and the per-mode metrics of the headline's graph, timed by the measuring run and broken down (CPU in
API calls, GPU busy and idle) by the detail run, which recorded every call."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.break_even import overhead_saved
from graphmode.analyzers.costmodel import CostModel
from graphmode.analyzers.counterfactual import with_counterfactuals, with_predicted_steps
from graphmode.analyzers.iterations import PlacedGpuSpans, iterations_of, mode_metrics, place_gpu_spans
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.per_graph import graph_results
from graphmode.analyzers.periods import IterationTable, empty_table, runner_iterations
from graphmode.analyzers.results import BreakEven, GraphCost, GraphResult, GraphTotals, ModeMetrics, OverheadSaved, Stat, StepResult
from graphmode.analyzers.run import Run, build_run
from graphmode.analyzers.steps import eager_step_rows, find_steps, with_other_ways
from graphmode.analyzers.tracer_cost import (
    NODE_RECORDS_REPLAY_SLOWDOWN,
    launch_extra,
    replays_from_nodes,
    tracer_correction,
    with_tracer_cost,
)
from graphmode.analyzers.untraced_windows import WINDOW, with_windows
from graphmode.analyzers.untraced import stamp_overhead, with_untraced
from graphmode.tracer.store import Trace

# The one traced run's stamps of the user's lines are said where they cost the program at least this share of the run
# (a Python-heavy script of the user's own lines: each stamp about 1 us on the H200)
STAMPS_SAID_SHARE = 0.01


@dataclass(frozen=True)
class RunParts:
    """What `analyze` reads of a run before its shared part: a script's (analyze_script) or a runner trace's
    (analyzers.runner_analysis.analyze_runner) per-graph results, steps, and the headline's modes."""

    structure_pass: int | None  # the pass whose calls and GPU work break the modes down (None: no traced pass)
    timing_pass: int | None  # the pass that times the iterations
    timing_run: str  # the timing pass's name ('measure', 'detail', 'single', 'script', ...); a runner's: 'timing' | 'traced'
    table: IterationTable  # iterations of the timing pass
    graphs: tuple[GraphResult, ...]
    totals: GraphTotals | None
    modes: tuple[ModeMetrics, ...]  # of the headline's graph
    costs: tuple[GraphCost, ...]
    break_even: tuple[BreakEven, ...]
    overhead_saved: tuple[OverheadSaved, ...]
    spans: PlacedGpuSpans | None  # the structure pass's GPU spans placed in the headline graph's iterations
    notes: tuple[Note, ...]  # what could not be computed (the analysis's cannot_compute)
    steps: tuple[StepResult, ...] = ()


def _headline_rows(t: IterationTable, graph_id: int) -> IterationTable:
    """The steady eager iterations and replays of one graph, with a period (warm-ups if no steady eager)."""
    mine = (t.graph_id == graph_id) & np.isfinite(t.work)
    steady = mine & (t.role == "steady")
    if not (steady & (t.mode == "eager")).any():
        steady |= mine & (t.role == "warmup")
    return t.select(steady & np.isin(t.mode, ("eager", "graph")))


def analyze_script(run: Run, model: CostModel | None = None, torch_program: bool = False) -> RunParts | None:
    """A script trace's per-graph results and its headline's modes, from the run's script graphs and iterations
    (derived once on the Run, which the diagnostics and the page then read again). `model`: the cost model whose launch
    costs price the graphs with no eager twin (analyzers.counterfactual)."""
    trace = run.trace
    sg = run.script_graphs()
    if sg is None:
        return None
    notes = list(sg.notes)
    timing = next(p for p in trace.passes if p.pass_id == sg.timing_pass)
    table, units = run.iterations(sg)
    detail: IterationTable | None = None
    overhead: dict[tuple[int, str], float] = {}
    if sg.structure_pass != sg.timing_pass:
        detail_sg = run.script_graphs(timing_pass=sg.structure_pass)
        detail = run.iterations(detail_sg)[0] if detail_sg is not None else None
    else:
        detail = table
    lt = run.line_timing(sg)
    if lt is not None:
        # CPU-bound periods from the run without CUPTI (analyzers.untraced)
        table = with_untraced(table, lt)
        overhead = stamp_overhead(table, lt)
        notes.extend(lt.notes)
    # the one traced run's untraced windows (analyzers.untraced_windows): its loops' level, untraced, in its own process
    if windows := run.window_periods(sg.timing_pass):
        table, window_notes = with_windows(table, windows)
        notes.extend(window_notes)
    # the one traced run: its calibrated tracer cost taken off its CPU-bound periods and captures (analyzers.tracer_cost)
    tracer = tracer_correction(trace, sg.timing_pass, model, torch_program, run.line_stamps)
    if tracer is not None:
        table = with_tracer_cost(table, launch_extra(trace, sg.timing_pass, table, tracer)[0])
        # what the run's own host work cost the program (its stamps of the user's lines; PyTorch's allocator history,
        # for what each step would hold as a graph), said where it is more than a trace of the run
        took = float(timing.end_ns - timing.start_ns)

        def said(spent: float) -> bool:
            return spent > 0 and took > 0 and spent >= STAMPS_SAID_SHARE * took

        if said(spent := tracer.stamps.size * tracer.per_stamp):
            notes.append(note("one_run_stamps", stamps=int(tracer.stamps.size), per_stamp_ns=tracer.per_stamp,
                              total_ns=spent, share=spent / took))
        if said(spent := tracer.actions.size * tracer.per_action):
            notes.append(note("one_run_allocator_history", actions=int(tracer.actions.size),
                              per_action_ns=tracer.per_action, total_ns=spent, share=spent / took))
    node_replays = replays_from_nodes(trace, sg.timing_pass) and bool((table.mode == "graph").any())
    if node_replays:
        notes.append(note("replays_from_node_records", slowdown_bound=NODE_RECORDS_REPLAY_SLOWDOWN))
    failed = {int(g) for (g,) in trace.rows(
        "SELECT DISTINCT e.graph_id FROM graph_events e JOIN api_calls a ON a.pass_id = e.pass_id AND a.thread_id = e.thread_id "
        "AND a.start_ns BETWEEN e.start_ns AND e.end_ns WHERE e.pass_id = ? AND e.event = 'capture' "
        "AND a.return_code BETWEEN 900 AND 908", [sg.structure_pass])}
    graphs, totals = graph_results(sg, table, timing.name, timing_traced=True, units_by_graph=units, failed_captures=failed,
                                   stamp_overhead=overhead, tracer=tracer,
                                   replay_inflation=NODE_RECORDS_REPLAY_SLOWDOWN if node_replays else 0.0)
    # graphs with no eager twin: their saving predicted, before the steps read their break-evens
    graphs = with_counterfactuals(trace, sg.structure_pass, graphs, model, torch_program)
    try:
        lines = eager_step_rows(trace, detail, table, run.line_stamps) if detail is not None and detail is not table else None
        steps, graphs = find_steps(trace, sg, table, graphs, timing.name, lines, run.line_stamps, tracer)
        # A multi-graph step's graphs are measured as its segments (their results rebuilt): where the step had an
        # eager twin, a graph without its own states no saving, measured or predicted; otherwise each is priced again
        # on its segment, then the step.
        measured = {gid for s in steps if s.basis == "measured" for gid in s.graphs}
        graphs = tuple(dataclasses.replace(g, counterfactual=None) if g.graph_id in measured else g for g in graphs)
        graphs = with_counterfactuals(trace, sg.structure_pass, graphs, model, torch_program, skip=measured)
        steps = with_predicted_steps(steps, graphs)
        # a step with no eager twin, beside a loop that ran the same line without graphs: compared at step level
        if detail is not None and run.has_stamps(detail.pass_id):
            steps = with_other_ways(trace, sg, detail, table, steps, run.line_stamps)
    except Exception as e:  # a bug in the step model must not take the per-graph report with it
        steps = ()
        notes.append(note("step_model_failed", error_type=type(e).__name__, error=str(e)))
    multi = next((s for s in steps if len(s.graphs) > 1), None)
    if multi is not None:
        # the step's graphs first (in step order), then the rest as graph_results ordered them
        order = {gid: i for i, gid in enumerate(multi.graphs)}
        graphs = tuple(sorted(graphs, key=lambda g: order.get(g.graph_id, len(order))))
        totals = step_totals(totals, steps, graphs)
    costs = tuple(g.cost for g in graphs if g.cost is not None)
    primary = next((g for g in graphs if g.status == "replayed"), graphs[0] if graphs else None)
    # The headline's iterations: the primary graph's, or a script that built no graph: its synchronized loop (graph 0)
    head = multi.graphs[0] if multi is not None else primary.graph_id if primary is not None else (0 if not graphs and (table.graph_id == 0).any() else None)
    modes: list[ModeMetrics] = []
    spans: PlacedGpuSpans | None = None
    breaks: tuple[BreakEven, ...] = ()
    saved: tuple[OverheadSaved, ...] = ()
    if head is not None:
        wall_rows = _headline_rows(table, head)
        traced_rows = _headline_rows(detail, head) if detail is not None else wall_rows
        if wall_rows.size or traced_rows.size:
            spans = place_gpu_spans(trace, sg.structure_pass, iterations_of(traced_rows, traced_rows.work))
            modes = mode_metrics(trace, sg.timing_pass, sg.structure_pass, timing.name, spans,
                                 wall_iterations=iterations_of(wall_rows, wall_rows.work))
            # A replay's GPU work can start long after its launch (GPU-bound loops queue up): the GPU
            # figures of an iteration are those of its own work (by correlation), not of the spans that
            # happen to start inside its CPU-side span.
            modes = [_own_gpu(m, traced_rows) for m in modes]
            # periods the timing run gave (analyzers.untraced): named as the per-graph answer names them
            timed = {str(m) for m in wall_rows.mode[wall_rows.timed_by == "timing"]}
            leveled = {str(m) for m in wall_rows.mode[wall_rows.timed_by == WINDOW]} - timed
            modes = [dataclasses.replace(m, wall_source="timing" if m.mode in timed else WINDOW) if m.mode in timed | leveled else m
                     for m in modes]
    no_baseline = (multi.basis in ("none", "predicted")) if multi is not None else (
        primary is not None and (primary.break_even is None or primary.break_even.eager_ns is None
                                 or primary.break_even.basis == "predicted"))
    if no_baseline:
        # the headline's graph has no eager baseline (its only eager run was a first call or none): its iterations
        # table keeps no eager mode, so that no table states a saving the headline calls unknown
        modes = [m for m in modes if m.mode == "graph"]
    if multi is not None and multi.break_even is not None:
        breaks = (multi.break_even,)  # the headline is the step's: its graphs' one-time costs against its saving
    elif primary is not None:
        if primary.break_even is not None:
            breaks = (primary.break_even,)
        by_mode = {m.mode: m for m in modes}
        if "eager" in by_mode and "graph" in by_mode:
            if primary.units_per_replay == 1:
                saved = (overhead_saved(by_mode["eager"], by_mode["graph"]),)
            elif primary.break_even is not None:
                s = primary.break_even.saved_per_replay_ns
                k = (by_mode["eager"].kernels.median * primary.units_per_replay) if by_mode["eager"].kernels else None
                saved = (OverheadSaved("eager", k, s, None, None, s / k if s is not None and k else None, None, None,
                                       (s > 0) if s is not None else None),)
    if not graphs:
        notes.append(note("no_graph"))
    elif not any(g.status == "replayed" for g in graphs):
        notes.append(note("no_graph_replayed"))
    for g in graphs:
        if g.status == "replayed" and g.eager is None and g.counterfactual is None:
            notes.append(note("graph_without_eager", graph_id=g.graph_id))
    return RunParts(sg.structure_pass, sg.timing_pass, timing.name, table, graphs, totals, tuple(modes), costs, breaks, saved,
                       spans, tuple(notes), steps)


def step_totals(totals: GraphTotals | None, steps: tuple[StepResult, ...], graphs: tuple[GraphResult, ...]) -> GraphTotals | None:
    """The run's totals counting each step once: what a multi-graph step saved is its own saving per step times its
    graphed steps (its graphs' segments and the change in the eager work between them), not its graphs' savings
    added up; graphs outside such a step count as before."""
    if totals is None:
        return None
    multi = [s for s in steps if len(s.graphs) > 1]
    in_multi = {g for s in multi for g in s.graphs}
    # the one-time cost of all graphs, a multi-graph step's as the step's (its graphing statement, warm-ups included)
    outside = [g for g in graphs if g.graph_id not in in_multi and g.cost is not None]
    one_time_all = float(sum(s.one_time_ns if s.one_time_ns is not None else
                             sum(g.cost.total_ns for g in graphs if g.graph_id in s.graphs and g.cost is not None)
                             for s in multi) + sum(g.cost.total_ns for g in outside if g.cost is not None))
    totals = dataclasses.replace(totals, one_time_ns=one_time_all)
    rest = [g for g in outside if g.saved_in_run_ns is not None]
    parts = [s.saved_in_run_ns for s in multi] + [g.saved_in_run_ns for g in rest]
    if any(p is None for p in parts) or not parts:
        return dataclasses.replace(totals, saved_ns=None, net_ns=None)
    saved = float(sum(p for p in parts if p is not None))
    one_time = float(sum(s.one_time_ns or 0.0 for s in multi) + sum(g.cost.total_ns for g in rest if g.cost is not None))
    return dataclasses.replace(totals, saved_ns=saved, net_ns=saved - one_time)


def _own_gpu(m: ModeMetrics, rows: IterationTable) -> ModeMetrics:
    sel = rows.mode == m.mode
    busy = rows.gpu_busy_ns[sel].astype(np.float64)
    idle = np.clip(rows.work[sel] - busy, 0, None)
    return dataclasses.replace(m, gpu_busy=Stat.of(busy), gpu_idle=Stat.of(idle), gpu_gap=None)


def find_iterations(source: Trace | Run, pass_id: int | None = None) -> IterationTable:
    """The iterations of a pass, with their periods: the runner's markers in bench traces, those
    inferred from the recorded work in script traces (analyzers.inference, analyzers.periods).

    `pass_id` defaults to the pass that times the run: the timing pass of a bench trace, the
    measuring run of a script trace. Graph ids are those of the pass that recorded the structure.
    Given the command's Run, a script's iterations are those it already derived.
    """
    run = source if isinstance(source, Run) else build_run(source)
    trace = run.trace
    if pass_id is None:
        runner = trace.rows("SELECT pass_id FROM markers WHERE kind = 'iteration' AND name <> 'inferred' ORDER BY pass_id LIMIT 1")
        if runner:
            pass_id = int(runner[0][0])
    if pass_id is not None and trace.rows("SELECT count(*) FROM markers WHERE pass_id = ? AND kind = 'iteration' AND "
                                          "name <> 'inferred'", [pass_id])[0][0]:
        return runner_iterations(trace, pass_id)
    sg = run.script_graphs(timing_pass=pass_id)
    if sg is None:
        return empty_table(pass_id if pass_id is not None else 0)
    return run.iterations(sg)[0]
