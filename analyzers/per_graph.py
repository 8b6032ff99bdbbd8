"""One answer per graph of a script: its one-time cost, the eager work it replaces, what a replay
saves and after how many replays it pays back; and the run's totals (docs/metrics.md, "Per graph").

Reads the iteration table of the timing pass (analyzers.periods) and the graphs mapped onto it
(analyzers.script_graphs); returns plain results.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from graphmode.analyzers.break_even import (
    CAPTURE_SLOWDOWN_BOUND,
    CORRECTED_CAPTURE_BOUND,
    CORRECTED_CAPTURE_LOW_BOUND,
    CORRECTED_SLOWDOWN_BOUND,
    CPU_BOUND_SLOWDOWN_BOUND,
    SINGLE_CAPTURE_BOUND,
    SINGLE_CPU_BOUND,
    TIMING_RUN_SLOWDOWN_BOUND,
    UNTRACED_CAPTURE_BOUND,
    UNTRACED_CAPTURE_LOW_BOUND,
    WINDOW_EAGER_BOUND,
    break_even_series,
)
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.results import GraphCost, GraphResult, GraphTotals, Period, Stat
from graphmode.analyzers.sample_size import tiny_sample_note
from graphmode.analyzers.script_graphs import GraphStructure, ScriptGraphs, one_time_parts, recording_work
from graphmode.analyzers.timing_run import RecordingCall
from graphmode.analyzers.tracer_cost import CORRECTED, TracerCorrection, capture_correction
from graphmode.analyzers.untraced import short_loc
from graphmode.analyzers.untraced_windows import WINDOW

BOUND_MAJORITY = 0.8  # a mode is 'gpu' or 'cpu' bound when this share of its iterations is


def period_of(t: IterationTable, mode: str, run: str) -> Period | None:
    """Stats of the steady iterations of `t` (already one graph's) in `mode`."""
    sel = (t.mode == mode) & (t.role == "steady") & np.isfinite(t.period)
    if not sel.any():
        return None
    share = float(t.gpu_bound[sel].mean())
    sizes = np.bincount(t.stretch[t.mode == mode])  # iterations per stretch, steady or not
    single = bool((sizes[t.stretch[sel]] <= 1).all())
    bound = "single" if single else "gpu" if share >= BOUND_MAJORITY else "cpu" if share <= 1 - BOUND_MAJORITY else "mixed"
    cpu = t.cpu_period[sel]
    timed = sel & (t.timed_by == "timing")
    corrected = sel & (t.timed_by == CORRECTED)  # the tracer's calibrated cost taken off (analyzers.tracer_cost)
    leveled = sel & (t.timed_by == WINDOW)  # leveled by an untraced window of the same run (analyzers.untraced_windows)
    mostly_corrected = 2 * int(corrected.sum()) >= int(sel.sum())
    mostly_leveled = 2 * int(leveled.sum()) >= int(sel.sum())
    traced = np.where(timed | corrected | leveled, t.traced_work, t.work)[sel]  # what the traced run read for the same rows
    return Period(mode=mode, iterations=int(sel.sum()), period=Stat.of(t.period[sel]), work=Stat.of(t.work[sel]),
                  cpu_period=Stat.of_finite(cpu), gpu_busy=Stat.of(t.gpu_busy_ns[sel]),
                  other_gpu=Stat.of(t.other_gpu_ns[sel]), bound=bound, gpu_bound_share=share, pass_id=t.pass_id,
                  run="timing" if timed.any() else WINDOW if mostly_leveled else CORRECTED if mostly_corrected else run,
                  streams=int(np.unique(t.stream_id[sel]).size),
                  traced_work=Stat.of_finite(traced) if timed.any() or mostly_corrected or mostly_leveled else None)


def _cost(sg: ScriptGraphs, g: GraphStructure | None, graph_id: int, label: str, t: IterationTable,
          tracer: TracerCorrection | None = None) -> GraphCost | None:
    if not sg.builds_recorded:
        # built before tracing started: its first replay here is not its first, and what it read beyond a steady one
        # is the newly attached tracer's (a 4-kernel graph's first replay in such a region read 7.1 ms:
        # benchmarks/notes/s22): no one-time cost
        return None
    parts = one_time_parts(sg, graph_id)
    first = np.flatnonzero((t.mode == "graph") & (t.role == "first_launch"))
    steady = (t.mode == "graph") & (t.role == "steady")
    first_ns = steady_ns = excess = None
    if first.size:
        # a replay's cost on the critical path: its GPU span plus its launch call (where recorded)
        def cost(rows: np.ndarray) -> np.ndarray:
            span = (t.gpu_end_ns[rows] - t.gpu_start_ns[rows]).astype(np.float64)
            out: np.ndarray = span + np.where(t.launch_call_ns[rows] >= 0, t.launch_call_ns[rows], 0)
            return out

        first_ns = float(cost(first[:1])[0])
        if steady.any():
            steady_ns = float(np.median(cost(np.flatnonzero(steady))))
            excess = first_ns - steady_ns
    build = sum(parts.get(k, 0.0) for k in ("capture", "build")) if ("capture" in parts or "build" in parts) else None
    if not parts and first_ns is None:
        return None
    framework = None
    insides: list[float] = []
    tracer_spans = [sg.gaps_in(*w) for w in parts.get("recordings") or []]  # the tracer's time in each window
    if parts.get("recordings"):
        # a cudagraph-tree recording or a torch.cuda.graph block: its wall time less the CUDA calls in it and the
        # first replay, which a recording makes itself (the replay's excess over a steady one is first-launch excess)
        framework = 0.0
        for w, tracers in zip(parts["recordings"], tracer_spans):
            inside = first_ns if first_ns is not None and w[0] <= t.launch_ns[first[0]] <= w[1] else 0.0
            insides.append(inside)
            framework += max(0.0, float(w[1] - w[0]) - tracers - recording_work(sg, w) - inside)
    correction = None
    span = sg.capture_spans.get(graph_id) if not parts.get("recordings") else None
    if parts.get("untraced_recordings"):
        # the same windows untraced: what CUPTI added inside them comes off the one-time cost
        correction = float(sum(u1 - u0 for u0, u1 in parts["untraced_recordings"]) - sum(w1 - w0 for w0, w1 in parts["recordings"]))
    elif span is not None and build is not None:
        # a capture outside PyTorch, through its instantiation, as the timing run timed it between two line stamps:
        # it replaces the measuring run's capture, instantiate and upload calls
        correction = span.span_ns - float(build + (parts.get("instantiate") or 0.0) + (parts.get("upload") or 0.0))
    call = None
    # the statements around cudagraph-tree recordings: a call of the compiled function (a torch.cuda.graph block is
    # a statement of its own, with nothing outside the window; the empty capture that sets up a tree's memory pool
    # lies inside the function's first call, which compiles and runs it: not this graph's)
    kinds = parts.get("recording_kinds") or [""] * len(parts.get("recordings") or [])
    recorded = [(c, inside) for c, kind, inside in zip(parts.get("recording_calls") or [], kinds, insides) if kind == "recording"]
    calls = [c for c, _ in recorded]
    if correction is not None and calls and all(c is not None for c in calls):
        replay = t.period[steady]
        replay_ns = float(np.median(replay[np.isfinite(replay)])) if np.isfinite(replay).any() else 0.0
        call = sum(call_part(c, inside, replay_ns) for c, inside in recorded)
    taken_off = None
    # a capture made with CUPTI detached (its body untraced, tracer.untraced_windows): nothing calibrated comes off
    if tracer is not None and correction is None and graph_id not in sg.untraced_captures and (
            build is not None or parts.get("recordings")):
        # a capture in the corrected pass, not timed by a timing run: the calibrated cost of tracing it comes off,
        # never more than the capture's own measured parts
        extra = capture_correction(tracer, g.num_nodes if g is not None else 0)
        measured = sum(x or 0.0 for x in (build, parts.get("instantiate"), parts.get("upload"), framework))
        if extra is not None and measured > 0:
            taken_off = -min(extra, measured)
    total = float(np.nansum([x if x is not None else np.nan
                             for x in (build, parts.get("instantiate"), parts.get("upload"), excess, framework, correction,
                                       call, taken_off)]))
    return GraphCost(pass_id=sg.timing_pass, graph_id=graph_id, label=label, source="graph_events", build_ns=build,
                     instantiate_ns=parts.get("instantiate"), upload_ns=parts.get("upload"), first_launch_ns=first_ns,
                     steady_replay_ns=steady_ns, first_launch_excess_ns=excess, total_ns=total, framework_ns=framework,
                     untraced_correction_ns=correction, call_ns=call, call_lines=tuple(c.lines for c in calls) if call is not None else (),
                     capture_lines=span.lines if span is not None and correction is not None else (),
                     tracer_correction_ns=taken_off, capture_untraced=graph_id in sg.untraced_captures,
                     tracer_gaps_ns=sum(tracer_spans) or None)


def call_part(call: RecordingCall, inside_ns: float, replay_ns: float) -> float:
    """What the statement around one cudagraph-tree recording adds to the one-time cost beyond its window (which the
    other parts hold, less the first replay the recording makes inside it: `inside_ns`): its time outside the window,
    plus that replay, less what the same statement takes where it runs without a window. The statement is the
    compiled function's call, which also runs the step: without steady runs of it (a call made once), a steady
    replay's period (`replay_ns`) stands for one. Never below zero. (A torch.cuda.graph block is a statement of its
    own, with nothing outside its window: it gets no call part.)"""
    steady = call.steady_ns if call.steady_ns is not None else replay_ns
    return max(0.0, call.outside_ns + inside_ns - steady)


def graph_results(sg: ScriptGraphs, t: IterationTable, run: str, timing_traced: bool,
                  units_by_graph: dict[int, int] | None = None,
                  failed_captures: set[int] | None = None,
                  stamp_overhead: dict[tuple[int, str], float] | None = None,
                  tracer: TracerCorrection | None = None,
                  replay_inflation: float = 0.0) -> tuple[tuple[GraphResult, ...], GraphTotals | None]:
    """Per-graph results, the headline's graph first (then by time saved, then replays). `units_by_graph`: per
    graph, eager iterations one replay does the work of (analyzers.inference). `tracer`: the timing pass's
    calibrated tracer cost (analyzers.tracer_cost), taken off its captures. `replay_inflation`: how much too long the
    pass's replays may read (a region's, recorded node by node: analyzers.tracer_cost.NODE_RECORDS_REPLAY_SLOWDOWN),
    which each break-even interval allows for."""
    units_of = units_by_graph or {}
    ids = [g.graph_id for g in sg.graphs] + sorted({int(x) for x in t.graph_id if x and sg.graph(int(x)) is None})
    instantiated = {c.graph_id for c in sg.lifecycle if c.event == "instantiate"}
    results: list[GraphResult] = []
    for gid in ids:  # per graph
        g = sg.graph(gid)
        mine = t.select(t.graph_id == gid)
        if not sg.structure_recorded and (g is None or g.origin == "unknown"):
            label = f"graph {gid} (executable id; its structure was not recorded)"
        else:
            label = g.label if g is not None else f"graph {gid} (built before tracing started)"
        origin = g.origin if g is not None else "unknown"
        replays = int((mine.mode == "graph").sum())
        units = units_of.get(gid, 1)
        eager = period_of(mine, "eager", run)
        warm = int(((mine.mode == "eager") & (mine.role == "warmup")).sum())
        notes: list[Note] = []
        basis: Note | None = None
        if g is not None and g.kernels and eager is not None or warm:
            basis = note("eager_kernel_sequence", kernels=len(g.kernels) // units if g is not None else 0, units_per_replay=units)
        warmups = None
        if eager is None and warm and _only_first_call(mine):
            notes.append(note("only_eager_run_is_first_call"))
        elif eager is None and warm:
            warmups, first_call = _warmups_as_steady(mine)
            eager = period_of(warmups, "eager", run)
            if eager is not None:
                notes.append(note("eager_from_warmups", warmups=warm))
                if first_call is not None:
                    notes.append(note("first_warmup_left_out", first_call_ns=first_call))
        graph = period_of(mine, "graph", run)
        cost = _cost(sg, g, gid, label, mine, tracer)
        if replays and not sg.builds_recorded:
            notes.append(note("one_time_before_trace"))
        for name, p in (("eager", eager), ("replay", graph)):
            if p is not None and (tiny := tiny_sample_note(name, p.iterations)) is not None:
                notes.append(tiny)
        inflation = graph_inflation = spread = 0.0
        cpu_side = ("cpu", "mixed", "single")
        for p in (eager, graph):
            if p is not None and p.run == "timing" and p.work is not None and p.traced_work is not None and p.work.median > 0:
                stamps = (stamp_overhead or {}).get((gid, p.mode))
                notes.append(note("timed_untraced", mode=p.mode, work_ns=p.work.median, traced_work_ns=p.traced_work.median,
                                  stamps_ns=stamps, slowdown_bound=TIMING_RUN_SLOWDOWN_BOUND))
                if p is eager:
                    inflation = TIMING_RUN_SLOWDOWN_BOUND
                else:
                    graph_inflation = TIMING_RUN_SLOWDOWN_BOUND
        for p in (eager, graph):
            if p is not None and p.run == CORRECTED and p.work is not None and p.traced_work is not None:
                notes.append(note("tracer_cost_taken_off", mode=p.mode, work_ns=p.work.median,
                                  traced_work_ns=p.traced_work.median, slowdown_bound=CORRECTED_SLOWDOWN_BOUND))
                if p is eager:
                    spread = CORRECTED_SLOWDOWN_BOUND
                else:
                    graph_inflation = CORRECTED_SLOWDOWN_BOUND
        # an eager period leveled by an untraced window: its own process untraced, other processes either way
        if eager is not None and eager.run == WINDOW:
            spread = max(spread, WINDOW_EAGER_BOUND)
            notes.append(note("eager_window_bound", slowdown_bound=WINDOW_EAGER_BOUND))
        # the one traced run's own figures, where nothing was taken off, have their own measured bounds
        cpu_bound = SINGLE_CPU_BOUND if run == "single" else CPU_BOUND_SLOWDOWN_BOUND
        if eager is not None and timing_traced and eager.bound in cpu_side and eager.run not in ("timing", CORRECTED,
                                                                                                  WINDOW):
            inflation = cpu_bound
            notes.append(note("traced_cpu_bound_eager", slowdown_bound=cpu_bound))
        if graph is not None and timing_traced and graph.bound in cpu_side and graph.run not in ("timing", CORRECTED):
            graph_inflation = cpu_bound
            notes.append(note("traced_cpu_bound_replays", slowdown_bound=cpu_bound))
        if graph is not None:
            graph_inflation = max(graph_inflation, replay_inflation)
        one_time_inflation = one_time_deficit = 0.0
        # the measuring run's parts (the timing run's correction and statements are not of them)
        measured = cost.total_ns - (cost.untraced_correction_ns or 0.0) - (cost.call_ns or 0.0) \
            - (cost.tracer_correction_ns or 0.0) if cost is not None else 0.0
        if cost is not None and cost.untraced_correction_ns is not None and (graph is not None or eager is not None):
            one_time_inflation = TIMING_RUN_SLOWDOWN_BOUND
            statements = tuple(dict.fromkeys(cost.call_lines)) if cost.call_ns is not None else ()
            notes.append(note(
                "one_time_timed_untraced", windowed_ns=measured + cost.untraced_correction_ns, measured_ns=measured,
                capture_lines=tuple(short_loc(x) for x in cost.capture_lines[:2]),
                statement_count=len(cost.call_lines), statement_starts=tuple(short_loc(a) for a, _ in statements),
                statement_ends=tuple(short_loc(b) for _, b in statements), statement_ns=cost.call_ns,
                slowdown_bound=TIMING_RUN_SLOWDOWN_BOUND))
        elif cost is not None and cost.capture_untraced and (graph is not None or eager is not None):
            one_time_inflation, one_time_deficit = UNTRACED_CAPTURE_BOUND, UNTRACED_CAPTURE_LOW_BOUND
            notes.append(note("one_time_capture_untraced", measured_ns=measured, build_ns=cost.build_ns,
                              instantiate_ns=cost.instantiate_ns, slowdown_bound=UNTRACED_CAPTURE_BOUND,
                              low_bound=UNTRACED_CAPTURE_LOW_BOUND, tracer_ns=cost.tracer_gaps_ns,
                              adopted=gid in sg.adopted_captures))
        elif cost is not None and cost.tracer_correction_ns is not None and (graph is not None or eager is not None):
            one_time_inflation, one_time_deficit = CORRECTED_CAPTURE_BOUND, CORRECTED_CAPTURE_LOW_BOUND
            notes.append(note("one_time_tracer_cost_taken_off", measured_ns=measured, taken_off_ns=-cost.tracer_correction_ns,
                              slowdown_bound=CORRECTED_CAPTURE_BOUND, low_bound=CORRECTED_CAPTURE_LOW_BOUND))
        elif cost is not None and timing_traced and (graph is not None or eager is not None):
            one_time_inflation = SINGLE_CAPTURE_BOUND if run == "single" else CAPTURE_SLOWDOWN_BOUND
            notes.append(note("one_time_traced", slowdown_bound=one_time_inflation))
        be = None
        saved_in_run = None
        if graph is not None or eager is not None:
            e_vals = _values(mine, "eager", "steady") if warmups is None else _values(warmups, "eager", "steady")
            be = break_even_series("eager", e_vals, _values(mine, "graph", "steady"), units,
                                   cost.total_ns if cost is not None else None, replays, eager_inflation=inflation,
                                   graph_inflation=graph_inflation, one_time_inflation=one_time_inflation,
                                   eager_spread=spread, one_time_deficit=one_time_deficit)
            if be.saved_per_replay_ns is not None and graph is not None:
                saved_in_run = be.saved_per_replay_ns * graph.iterations
        status = ("replayed" if replays else "built_before_tracing" if g is None
                  else "never_replayed" if gid in instantiated
                  else "capture_failed" if gid in (failed_captures or set()) else "never_instantiated")
        if cost is not None and cost.framework_ns is not None and measured > 0 and cost.framework_ns >= 0.5 * measured:
            notes.append(note("framework_share", framework_ns=cost.framework_ns, measured_ns=measured))
        if status == "never_replayed":
            notes.append(note("never_replayed"))
        results.append(GraphResult(
            graph_id=gid, label=label, site=g.site if g is not None else "", origin=origin, status=status, replays=replays,
            units_per_replay=units, nodes=g.num_nodes if g is not None else 0, eager=eager, graph=graph, eager_basis=basis,
            warmup_iterations=warm, cost=cost, break_even=be, saved_in_run_ns=saved_in_run, notes=tuple(notes)))
    results.sort(key=lambda r: (-(r.saved_in_run_ns or 0.0) if r.saved_in_run_ns is not None and r.saved_in_run_ns > 0 else 0.0,
                                -r.replays, r.graph_id))
    return tuple(results), _totals(results)


def _warmups_as_steady(t: IterationTable) -> tuple[IterationTable, float | None]:
    """A graph's warm-up iterations as its eager baseline (one graph's table): all steady, except the
    first of a warm-up stretch where that stretch has other iterations with a period. The first call of
    a region pays set-up that later calls do not (an all-reduce's first eager step waits while NCCL connects its
    ranks). Returns the table and the period left out
    (the largest, where several stretches lose one; None when none is)."""
    w = t.select((t.mode == "eager") & (t.role == "warmup"))
    role = np.full(w.size, "steady", dtype=object)
    left_out: list[float] = []
    for s in np.unique(w.stretch):
        rows = np.flatnonzero(w.stretch == s)
        rows = rows[np.argsort(w.start_ns[rows], kind="stable")]
        if int(np.isfinite(w.period[rows]).sum()) >= 2 and np.isfinite(w.period[rows[0]]):
            role[rows[0]] = "first_call"
            left_out.append(float(w.period[rows[0]]))
    return dataclasses.replace(w, role=role), (max(left_out) if left_out else None)


def _only_first_call(t: IterationTable) -> bool:
    """The graph's only eager period is that of the first time its work ran in the pass, a warm-up
    (torch.compile's one warm-up run before recording, say; or the first of two warm-ups, whose period
    runs to the second): a first call, not a baseline."""
    eager = (t.mode == "eager") & np.isfinite(t.period)
    if int(eager.sum()) != 1:
        return False
    (row,) = np.flatnonzero(eager)
    return bool(t.role[row] == "warmup" and t.start_ns[row] == t.start_ns.min())


def _values(t: IterationTable, mode: str, role: str) -> np.ndarray:
    sel = (t.mode == mode) & (t.role == role) & np.isfinite(t.work)
    out: np.ndarray = np.asarray(t.work[sel], dtype=np.float64)
    return out


def _totals(results: list[GraphResult]) -> GraphTotals | None:
    if not results:
        return None
    built = [r for r in results if r.origin != "unknown"]
    priced = [r for r in results if r.saved_in_run_ns is not None and r.cost is not None]

    def build(r: GraphResult) -> float:
        c = r.cost
        return sum(x or 0.0 for x in (c.build_ns, c.instantiate_ns, c.upload_ns, c.framework_ns)) if c is not None else 0.0

    saved = sum(r.saved_in_run_ns or 0.0 for r in priced) if priced else None
    one_time_priced = sum(r.cost.total_ns for r in priced if r.cost is not None)
    return GraphTotals(graphs_built=len(built), graphs_replayed=sum(1 for r in results if r.replays),
                       replays=sum(r.replays for r in results), build_ns=float(sum(build(r) for r in results)),
                       one_time_ns=float(sum(r.cost.total_ns for r in results if r.cost is not None)),
                       saved_ns=saved, net_ns=(saved - one_time_priced) if saved is not None else None)
