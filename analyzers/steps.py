"""Steps, not just graphs: the program's recurring step as a sequence of segments (docs/metrics.md, "Steps and
segments").

A step that replays several graphs (a forward and a backward graph from `make_graphed_callables`, a graph per
layer, the partitions of a graph break) recurs once per loop iteration, and so does each of its graphs: the
period between two replays of one graph is the whole step's, not the graph's. So each graph is measured as a
**segment** of the step: from its first GPU work to the next segment's (the next graph, or the eager work between
graphs, which both modes run). The segments of a step add up to its period, in the eager step (each graph's
eager twin: the same kernels at the same place) and in the graphed step alike. Then

- per graph: saved = its eager twin's span minus its replay's span;
- per step: saved = eager step minus graphed step, with the one-time cost of all the step's graphs;
- the invariant: the graphs' savings plus the change in the eager stretches equal the step's saving, up to the
  noise of the trimmed means (`invariant_residual_ns`).

CPU-bound periods come from the timing run (untraced) where it timed the step (analyzers.untraced); a segment's
span is then its measuring-run span scaled by the step's untraced over traced period, so the segments still add
up to the step.

One graph replayed once per step (a whole step captured) is its own step with one segment: its per-graph answer
(analyzers.per_graph) is already the step's and is kept as it is.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from graphmode.analyzers.break_even import (
    CAPTURE_SLOWDOWN_BOUND,
    CORRECTED_CAPTURE_BOUND,
    CORRECTED_CAPTURE_LOW_BOUND,
    CORRECTED_SLOWDOWN_BOUND,
    CPU_BOUND_SLOWDOWN_BOUND,
    TIMING_RUN_SLOWDOWN_BOUND,
    WINDOW_EAGER_BOUND,
    break_even_series,
    smallest_replays,
)
from graphmode.analyzers.notes import note
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.results import (
    BreakEven,
    GraphCost,
    GraphResult,
    ModeMetrics,
    OtherWay,
    Period,
    Stat,
    StepResult,
    StepSegment,
    trimmed_mean,
)
from graphmode.analyzers.repetition import REPEAT_SOURCE, parse_repeat
from graphmode.analyzers.run import StampsOf
from graphmode.analyzers.script_graphs import ScriptGraphs
from graphmode.analyzers.stamps import line_stamps
from graphmode.analyzers.tracer_cost import CORRECTED, TracerCorrection, window_extra
from graphmode.analyzers.untraced import starting_lines, timing_pass_id
from graphmode.analyzers.untraced_windows import WINDOW
from graphmode.tracer.store import Trace

MIN_STEPS = 2  # a step pattern recurs at least this often in graph mode
MIN_PATTERN_SHARE = 0.5  # ... and covers at least this share of its first graph's replays
# A graphing statement (make_graphed_callables) is timed by the timing run between its line's stamp and the next
# stamp it made; a span of which the detail run spent less than this share making the graphs is not used (the next
# stamp lies too far on).
MIN_REGION_SHARE = 0.5
CPU_SIDE = ("cpu", "mixed", "single")


@dataclass(frozen=True)
class StepInstances:
    """The occurrences of one step pattern in one mode: per occurrence, its rows (indices of the iteration table,
    in pattern order) and its period (untraced where the timing run gave it), and per segment key its span."""

    rows: np.ndarray  # (n, len(pattern)) row indices
    period: np.ndarray  # (n,) ns, NaN where the next occurrence does not follow
    spans: dict[tuple[int, str], np.ndarray]  # (position, 'graph' | 'eager') -> (n,) ns, scaled to `period`
    timed: bool  # periods from the timing run, or with the tracer's calibrated cost taken off
    source: str = ""  # 'timing' | 'corrected' (analyzers.tracer_cost) | '' (as traced)


def _on_main_stream(t: IterationTable, rows: np.ndarray) -> np.ndarray:
    """The rows on the stream most of them ran on. One step runs on one stream: two threads' loops on their own
    streams interleave in time but are two loops, while autograd's thread launches a backward graph on the stream
    of its forward."""
    if not rows.size:
        return rows
    streams, counts = np.unique(t.stream_id[rows], return_counts=True)
    out: np.ndarray = rows[t.stream_id[rows] == streams[np.argmax(counts)]]
    return out


def step_pattern(t: IterationTable) -> tuple[int, ...] | None:
    """The graphs replayed in each step, in order, where a step replays two or more graphs: the replays (first
    launches included) on the stream that replays most are cut at each replay of the graph replayed most (the
    earliest of those tied), and the most common run of graphs between two such cuts is the step. None where that run is one graph (a graph per
    step: its per-graph answer is the step's) or recurs fewer than MIN_STEPS times."""
    g = np.flatnonzero(t.mode == "graph")
    if g.size < 2 * MIN_STEPS:
        return None
    g = _on_main_stream(t, g)
    g = g[np.argsort(t.gpu_start_ns[g], kind="stable")]
    seq = t.graph_id[g].astype(np.int64)
    ids, first, counts = np.unique(seq, return_index=True, return_counts=True)
    if ids.size < 2:  # one graph on the stream: a step of one graph
        return None
    most = counts == counts.max()
    anchor = int(ids[most][np.argmin(first[most])])
    cuts = np.flatnonzero(seq == anchor)
    runs = Counter(tuple(int(x) for x in seq[a:b]) for a, b in zip(cuts[:-1], cuts[1:]))
    if not runs:
        return None
    pattern, n = runs.most_common(1)[0]
    if len(pattern) < 2 or n < MIN_STEPS or n < MIN_PATTERN_SHARE * cuts.size:
        return None
    return pattern


def _occurrences(t: IterationTable, mode: str, pattern: tuple[int, ...], roles: tuple[str, ...]) -> np.ndarray:
    """(n, len(pattern)) rows of `mode` where the pattern's graphs follow one another in order (by GPU start)."""
    sel = _on_main_stream(t, np.flatnonzero((t.mode == mode) & np.isin(t.graph_id, pattern) & np.isin(t.role, roles)))
    sel = sel[np.argsort(t.gpu_start_ns[sel], kind="stable")]
    seq = t.graph_id[sel].astype(np.int64)
    m = len(pattern)
    if seq.size < m:
        return np.zeros((0, m), dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(seq, m)
    starts = np.flatnonzero((windows == np.asarray(pattern)).all(axis=1))
    # occurrences do not overlap (a pattern such as (1, 1, 2) could match at two offsets)
    keep: list[int] = []
    for s in starts:
        if not keep or s >= keep[-1] + m:
            keep.append(int(s))
    idx = np.asarray(keep, dtype=np.int64)
    return sel[idx[:, None] + np.arange(m)[None, :]] if idx.size else np.zeros((0, m), dtype=np.int64)


def _eager_span_starts(trace: Trace, pass_id: int) -> np.ndarray:
    """GPU start of every span of eager work in the pass (kernels, copies, memsets launched outside graphs), sorted."""
    s = trace.sql("SELECT start_ns FROM gpu_spans WHERE pass_id = ? AND kind <> 'graph' AND graph_id = 0 ORDER BY start_ns",
                  [pass_id])
    out: np.ndarray = s["start_ns"].astype(np.int64)
    return out


def instances(t: IterationTable, occ: np.ndarray, eager_starts: np.ndarray) -> StepInstances:
    """Periods and segment spans of the occurrences `occ` (rows of `t`). Segment boundaries: each graph's (or eager
    twin's) GPU start, and after each one the first eager GPU span that starts after its GPU work ended and before
    the next boundary (the eager stretch between graphs); the last segment ends at the next occurrence's start."""
    n, m = occ.shape
    start = t.gpu_start_ns[occ].astype(np.float64)  # (n, m)
    end = t.gpu_end_ns[occ].astype(np.float64)
    nxt = np.full(n, np.nan)
    if n > 1:
        # the next occurrence follows when its first row comes right after this one's last (no other row of these
        # graphs in between: a pause, another phase) in the same stretch of the first graph
        follows = t.stretch[occ[1:, 0]] == t.stretch[occ[:-1, 0]]
        nxt[:-1] = np.where(follows, start[1:, 0], np.nan)
    traced_period = nxt - start[:, 0]
    period = t.period[occ[:, 0]].astype(np.float64)
    # timed by the timing run, or the tracer's calibrated cost taken off (analyzers.tracer_cost)
    by = t.timed_by[occ[:, 0]]
    timed = np.isin(by, ("timing", CORRECTED, WINDOW))
    source = "timing" if (by == "timing").any() else WINDOW if (by == WINDOW).any() else CORRECTED if (by == CORRECTED).any() else ""
    # where the timing run did not time it, the step's period is the measured one between the occurrences
    period = np.where(timed, period, traced_period)
    scale = np.where(timed & (traced_period > 0), period / traced_period, 1.0)
    bounds = np.concatenate([start, nxt[:, None]], axis=1)  # (n, m + 1): each segment's next boundary
    spans: dict[tuple[int, str], np.ndarray] = {}
    for i in range(m):
        hi = bounds[:, i + 1]
        j = np.searchsorted(eager_starts, end[:, i], side="right")
        cand = np.where(j < eager_starts.size, eager_starts[np.minimum(j, eager_starts.size - 1)], np.inf).astype(np.float64)
        rem = np.where(cand < hi, cand, np.nan)  # NaN: no eager stretch after this segment
        seg_end = np.where(np.isfinite(rem), rem, hi)
        spans[(i, "graph")] = (seg_end - start[:, i]) * scale
        spans[(i, "eager")] = np.where(np.isfinite(rem), hi - rem, 0.0) * scale
    return StepInstances(occ, period, spans, bool(timed.any()), source)


def _tm(x: np.ndarray) -> float | None:
    v = x[np.isfinite(x)]
    return trimmed_mean(v)[0] if v.size else None


def _sub(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def graphing_statement(trace: Trace, sg: ScriptGraphs, pattern: tuple[int, ...], stamps_of: StampsOf | None = None,
                       tracer: TracerCorrection | None = None,
                       captures_taken_ns: float = 0.0) -> tuple[str, float, str] | None:
    """('file:line', ns, basis) of the one statement that made all the step's graphs, warm-ups included (a
    `make_graphed_callables` call: it runs its callables on sample inputs, throws the results away, then captures).
    Found from the pass that stamped every line (the detail run, or the one traced run): the captures of all the step's
    graphs lie in one execution of one line, and that execution's span to the next stamped line is mostly the graphs'
    making (MIN_REGION_SHARE). Timed by the timing run from its stamp of that line to the next stamp it made (basis
    'statement'); without a timing run, by the one traced run's own stamps, less what its tracing added there (`tracer`:
    the warm-ups' launches and the stamps, tracer_cost.window_extra; `captures_taken_ns`: the graphs' capture
    corrections, taken off already from their own costs), basis 'statement_corrected'. None without either, or where
    the runs executed the line differently."""
    tp = timing_pass_id(trace)
    one_run = tp is None and sg.structure_pass == sg.timing_pass and tracer is not None
    if not one_run and (tp is None or sg.structure_pass == sg.timing_pass):
        return None
    ev = trace.rows("SELECT min(start_ns), max(end_ns), count(DISTINCT graph_id), min(thread_id), max(thread_id) "
                    "FROM graph_events WHERE pass_id = ? AND event IN ('capture', 'instantiate', 'upload') AND graph_id IN "
                    f"({', '.join('?' * len(set(pattern)))})", [sg.structure_pass, *sorted(set(pattern))])
    if not ev or ev[0][0] is None or int(ev[0][2]) != len(set(pattern)) or ev[0][3] != ev[0][4]:
        return None
    r0, r1, thread = int(ev[0][0]), int(ev[0][1]), int(ev[0][3])
    read = stamps_of or partial(line_stamps, trace)
    d = read(sg.structure_pass)
    mine = np.flatnonzero(d["thread_id"] == thread)
    if not mine.size:
        return None
    i = int(np.searchsorted(d["ts_ns"][mine], r0, side="right")) - 1
    if i < 0 or i + 1 >= mine.size or d["ts_ns"][mine[i + 1]] < r1:
        return None  # the captures are not inside one execution of one line
    a = mine[i]
    loc, k = str(d["loc"][a]), int(d["seq"][a])
    if one_run:
        assert tracer is not None
        lo, hi = int(d["ts_ns"][a]), int(d["ts_ns"][mine[i + 1]])
        if r1 - lo < MIN_REGION_SHARE * (hi - lo):
            return None
        # the tracer's detach and attach around an untraced capture (tracer.untraced_windows) are not the program's
        made = (hi - lo) - sg.gaps_in(lo, hi) - window_extra(trace, sg.structure_pass, lo, hi, tracer) - captures_taken_ns
        return (loc, float(made), "statement_corrected") if made > 0 else None
    assert tp is not None  # not one_run: a timing run stamped the line
    t = read(tp)
    if not t["ts_ns"].size:
        return None
    name = str(d["thread_name"][a])
    on = t["thread_name"] == name
    t_at = np.flatnonzero(on & (t["loc"] == loc))
    if t_at.size != int(((d["thread_id"] == thread) & (d["loc"] == loc)).sum()) or k >= t_at.size:
        return None
    ta = t_at[k]
    t_on = np.flatnonzero(on)
    after = t_on[t_on > ta]
    if not after.size:
        return None
    tb = after[0]
    next_loc, next_k = str(t["loc"][tb]), int(t["seq"][tb])
    d_next = np.flatnonzero((d["thread_id"] == thread) & (d["loc"] == next_loc) & (d["seq"] == next_k))
    if not d_next.size:
        return None
    d_span = float(d["ts_ns"][d_next[0]] - d["ts_ns"][a])
    region = float(r1 - d["ts_ns"][a])
    if d_span <= 0 or region < MIN_REGION_SHARE * d_span:
        return None
    # the timing run's span whole: scaling it by the detail run's share (region / d_span) read 0.86x the program's own
    # clock on one process (benchmarks/notes/s15), the whole span 0.97-1.0x: the detail run's callbacks slow the
    # statement's tail (after its last instantiation) more than its making
    return loc, float(t["ts_ns"][tb] - t["ts_ns"][ta]), "statement"


def _inflations(results: dict[int, GraphResult], pattern: tuple[int, ...], eager_source: str,
                graph_source: str) -> tuple[float, float]:
    """How much longer than untraced the step's eager and graphed periods may be (the per-graph rule), by where
    their periods come from ('timing', 'corrected', 'window', '': as traced); an eager step's corrected or windowed
    period is allowed either way instead (_spread)."""
    first = results.get(pattern[0])

    def of(p: Period | None, source: str, graphed: bool = False) -> float:
        if source == "timing":
            return TIMING_RUN_SLOWDOWN_BOUND
        if source == CORRECTED and graphed:  # the graphed step's: too long (the per-graph rule for replays)
            return CORRECTED_SLOWDOWN_BOUND
        if source in (CORRECTED, WINDOW):
            return 0.0  # the eager step's either way: _spread
        return CPU_BOUND_SLOWDOWN_BOUND if p is not None and p.bound in CPU_SIDE else 0.0

    return (of(first.eager if first else None, eager_source), of(first.graph if first else None, graph_source, True))


def _spread(source: str) -> float:
    """How far either way a step's eager period may be from untraced: a corrected one's (analyzers.tracer_cost), one
    leveled by an untraced window (analyzers.untraced_windows)."""
    return CORRECTED_SLOWDOWN_BOUND if source == CORRECTED else WINDOW_EAGER_BOUND if source == WINDOW else 0.0


def find_steps(trace: Trace, sg: ScriptGraphs, t: IterationTable, graphs: tuple[GraphResult, ...], run: str,
               step_line_rows: Callable[[int], tuple[np.ndarray, np.ndarray, bool] | None] | None = None,
               stamps_of: StampsOf | None = None,
               tracer: TracerCorrection | None = None) -> tuple[tuple[StepResult, ...], tuple[GraphResult, ...]]:
    """The run's recurring steps that replay graphs, and the per-graph results with the graphs of a multi-graph
    step measured as its segments. `t`: the timing pass's iteration table (untraced periods applied); `graphs`:
    analyzers.per_graph's results; `run`: the timing pass's name; `step_line_rows(graph)`: rows of `t` where that
    graph's eager twin started at an execution of the line that starts its replays' steps (one row a step), or None
    (`eager_step_rows`); `tracer`: the one traced run's correction, where it was applied (graphing_statement).

    Where the eager steps hold the step's graphs' kernels in another order or interleaved (autograd runs a whole
    model's backward, not a layer's at a time), no eager twin is found kernel for kernel; the eager step is then the
    step's first graph's eager twin, where each starts at an execution of the same line as a graphed step (the
    step's line): the step's saving is measured, its graphs' are not."""
    by_id = {g.graph_id: g for g in graphs}
    steps: list[StepResult] = []
    pattern = step_pattern(t)
    if pattern is not None:
        eager_starts = _eager_span_starts(trace, t.pass_id)
        g_occ = _occurrences(t, "graph", pattern, ("steady", "first_launch"))
        e_occ = _occurrences(t, "eager", pattern, ("steady",))
        g_inst = instances(t, g_occ, eager_starts)
        e_inst = instances(t, e_occ, eager_starts) if e_occ.shape[0] else None
        e_steps = None
        if e_inst is None and step_line_rows is not None:
            found = step_line_rows(pattern[0])
            if found is not None and int(np.isfinite(found[1]).sum()) >= MIN_STEPS:
                e_steps = found[1], found[2]
        step, graphs = _multi_graph_step(trace, sg, pattern, g_inst, e_inst, e_steps, by_id, graphs, run, stamps_of, tracer)
        steps.append(step)
    in_steps = set(pattern or ())
    for g in graphs:  # a graph replayed once per step: its own step
        if g.graph_id not in in_steps and g.replays and g.break_even is not None:
            steps.append(_one_graph_step(len(steps) + 1, g, run))
    return tuple(steps), graphs


def _one_graph_step(step_id: int, g: GraphResult, run: str) -> StepResult:
    be = g.break_even
    assert be is not None
    e = g.eager.work if g.eager is not None else None
    w = g.graph.work if g.graph is not None else None
    seg = StepSegment(0, "graph", g.graph_id, e, w, be.saved_per_replay_ns)
    basis = "measured" if g.eager is not None else "predicted" if be.basis == "predicted" else "none"
    period_source = g.eager.run if (g.eager is not None and g.eager.run in ("timing", WINDOW)) else run
    return StepResult(
        step_id=step_id, label=f"step of graph {g.graph_id}", graphs=(g.graph_id,), eager=e, graphed=w,
        eager_steps=g.eager.iterations if g.eager else 0, graphed_steps=g.graph.iterations if g.graph else 0,
        eager_ns=be.eager_ns, graphed_ns=be.graph_ns, saved_ns=be.saved_per_replay_ns,
        one_time_ns=g.cost.total_ns if g.cost is not None else None, one_time_basis="graphs", one_time_statement="",
        break_even=be, basis=basis, period_source=period_source, segments=(seg,),
        graphs_saved_ns=be.saved_per_replay_ns, remainder_saved_ns=0.0 if be.saved_per_replay_ns is not None else None,
        invariant_residual_ns=0.0 if be.saved_per_replay_ns is not None else None, saved_in_run_ns=g.saved_in_run_ns)


def _multi_graph_step(trace: Trace, sg: ScriptGraphs, pattern: tuple[int, ...], g_inst: StepInstances,
                      e_inst: StepInstances | None, e_steps: tuple[np.ndarray, bool] | None,
                      by_id: dict[int, GraphResult], graphs: tuple[GraphResult, ...],
                      run: str, stamps_of: StampsOf | None = None,
                      tracer: TracerCorrection | None = None) -> tuple[StepResult, tuple[GraphResult, ...]]:
    m = len(pattern)
    segments: list[StepSegment] = []
    for i in range(m):
        for kind in ("graph", "eager"):
            gs = g_inst.spans[(i, kind)]
            es = e_inst.spans[(i, kind)] if e_inst is not None else np.zeros(0)
            if kind == "eager" and not (np.nan_to_num(gs) > 0).any() and not (np.nan_to_num(es) > 0).any():
                continue  # no eager stretch after this graph in either mode
            saved = _sub(_tm(es), _tm(gs)) if e_inst is not None else None
            segments.append(StepSegment(len(segments), kind, pattern[i] if kind == "graph" else 0,
                                        Stat.of_finite(es) if e_inst is not None else None, Stat.of_finite(gs), saved))
    e_period = e_inst.period if e_inst is not None else e_steps[0] if e_steps is not None else np.zeros(0)
    e_timed = e_inst.timed if e_inst is not None else e_steps[1] if e_steps is not None else False
    e_source = e_inst.source if e_inst is not None else "timing" if e_timed else ""
    has_eager = bool(np.isfinite(e_period).any())
    eager_ns, graphed_ns = _tm(e_period), _tm(g_inst.period)
    saved = _sub(eager_ns, graphed_ns)
    seg_graphs = [s.saved_ns for s in segments if s.kind == "graph"]
    seg_rest = [s.saved_ns for s in segments if s.kind == "eager"]
    graphs_saved = float(sum(x for x in seg_graphs if x is not None)) if seg_graphs and None not in seg_graphs else None
    rest_saved = float(sum(x for x in seg_rest if x is not None)) if None not in seg_rest else None
    residual = (saved - graphs_saved - rest_saved) if saved is not None and graphs_saved is not None \
        and rest_saved is not None else None

    costs = [by_id[g].cost for g in dict.fromkeys(pattern) if g in by_id]
    taken = -float(sum((c.tracer_correction_ns or 0.0) for c in costs if c is not None))  # the captures' (negative) corrections
    statement = graphing_statement(trace, sg, pattern, stamps_of, tracer, taken)
    excess = float(sum((c.first_launch_excess_ns or 0.0) for c in costs if c is not None))
    if statement is not None:
        one_time: float | None = statement[1] + excess
        one_basis, where = statement[2], statement[0]
    else:
        one_time = float(sum(c.total_ns for c in costs if c is not None)) if costs and None not in costs else None
        one_basis, where = "graphs", ""
    graphed_steps = int(g_inst.rows.shape[0])
    eager_infl, graph_infl = _inflations(by_id, pattern, e_source, g_inst.source)
    timed_cost = (statement is not None and statement[2] == "statement") or any(
        c is not None and c.untraced_correction_ns is not None for c in costs)
    be: BreakEven | None = None
    if has_eager:
        corrected_cost = not timed_cost and (statement is not None or any(
            c is not None and (c.tracer_correction_ns is not None or c.capture_untraced) for c in costs))
        be = break_even_series("eager", e_period, g_inst.period, 1, one_time, graphed_steps, eager_inflation=eager_infl,
                               graph_inflation=graph_infl,
                               eager_spread=_spread(e_source),
                               one_time_inflation=TIMING_RUN_SLOWDOWN_BOUND if timed_cost else CORRECTED_CAPTURE_BOUND
                               if corrected_cost else CAPTURE_SLOWDOWN_BOUND,
                               one_time_deficit=CORRECTED_CAPTURE_LOW_BOUND if corrected_cost else 0.0)
    step = StepResult(
        step_id=1, label="step of graphs " + ", ".join(str(g) for g in pattern), graphs=pattern, eager=Stat.of_finite(e_period),
        graphed=Stat.of_finite(g_inst.period), eager_steps=int(np.isfinite(e_period).sum()),
        graphed_steps=graphed_steps, eager_ns=eager_ns, graphed_ns=graphed_ns, saved_ns=saved, one_time_ns=one_time,
        one_time_basis=one_basis, one_time_statement=where, break_even=be,
        basis="measured" if has_eager else "none",
        period_source="timing" if "timing" in (g_inst.source, e_source) else WINDOW if WINDOW in (g_inst.source, e_source)
        else CORRECTED if CORRECTED in (g_inst.source, e_source) else run,
        segments=tuple(segments), graphs_saved_ns=graphs_saved, remainder_saved_ns=rest_saved,
        invariant_residual_ns=residual, saved_in_run_ns=saved * graphed_steps if saved is not None else None)
    return step, tuple(_as_segment(g, pattern, g_inst, e_inst, eager_infl, graph_infl) for g in graphs)


def _as_segment(g: GraphResult, pattern: tuple[int, ...], g_inst: StepInstances, e_inst: StepInstances | None,
                eager_infl: float, graph_infl: float) -> GraphResult:
    """A graph of a multi-graph step, measured as its segment: its eager twin's span and its replay's span in the
    step replace the periods between its replays (which are the whole step's)."""
    if g.graph_id not in pattern or pattern.count(g.graph_id) != 1:
        return g
    i = pattern.index(g.graph_id)
    gs = g_inst.spans[(i, "graph")]
    es = e_inst.spans[(i, "graph")] if e_inst is not None else None

    def period(p: Period | None, x: np.ndarray | None, source: str) -> Period | None:
        if p is None or x is None:
            return p
        st = Stat.of_finite(x)
        return dataclasses.replace(p, period=st, work=st, iterations=int(np.isfinite(x).sum()), run=source or p.run)

    eager = period(g.eager, es, e_inst.source if e_inst is not None else "")
    graph = period(g.graph, gs, g_inst.source)
    # without an eager twin segment (only the step's eager period is known), the graph's own saving is unknown: its
    # eager period between replays is the whole step's
    be = break_even_series("eager", es if es is not None else np.zeros(0), gs, 1,
                           g.cost.total_ns if g.cost is not None else None, g.replays,
                           eager_inflation=eager_infl, graph_inflation=graph_infl,
                           eager_spread=_spread(e_inst.source if e_inst is not None else ""))
    if es is None:
        eager = None
    saved = be.saved_per_replay_ns if be is not None else None
    return dataclasses.replace(
        g, eager=eager, graph=graph, break_even=be,
        eager_basis=note("step_segment", position=i + 1, of=len(pattern)) if es is not None else None,
        saved_in_run_ns=saved * g.replays if saved is not None and graph is not None else None)


def eager_step_rows(trace: Trace, detail: IterationTable, t: IterationTable,
                    stamps_of: StampsOf | None = None) -> Callable[[int], tuple[np.ndarray, np.ndarray, bool] | None]:
    """`find_steps`'s step_line_rows: for a graph, (the rows of `t`, the timing pass's table, of its steady eager twin
    that started at an execution of the line that starts its replays; their periods; whether those are untraced).

    The line is the one that runs once between consecutive replays (analyzers.untraced.starting_lines, from the
    detail run's stamps of every line). The detail and timing tables hold one graph's eager rows in the same order
    (analyzers.untraced); where their counts differ, None. A row's period is the timing run's, untraced: from its
    stamp of that execution of the line to its stamp of the next, where the next row started at the next execution
    and the timing run stamped the line as often as the detail run ran it; else the row's own. The stamps are read
    when asked (find_steps asks once, where a step has no eager twin), not for every script."""

    def rows(graph_id: int) -> tuple[np.ndarray, np.ndarray, bool] | None:
        read = stamps_of or partial(line_stamps, trace)
        d_stamps = read(detail.pass_id)
        loc, seq = starting_lines(trace, detail, d_stamps)
        tp = timing_pass_id(trace)
        stamps = read(tp) if tp is not None else None
        dg = np.flatnonzero((detail.graph_id == graph_id) & (detail.mode == "graph"))
        de = np.flatnonzero((detail.graph_id == graph_id) & (detail.mode == "eager") & (detail.role == "steady"))
        if not dg.size or not de.size:
            return None
        line = Counter(str(x) for x in loc[dg]).most_common(1)[0][0]
        if not line:
            return None
        de = de[np.argsort(detail.start_ns[de], kind="stable")]
        te = np.flatnonzero((t.graph_id == graph_id) & (t.mode == "eager") & (t.role == "steady"))
        te = te[np.argsort(t.start_ns[te], kind="stable")]
        if te.size != de.size:
            return None
        on_line = loc[de] == line
        chosen, k = te[on_line], seq[de][on_line]
        period = t.period[chosen].astype(np.float64)
        timed = False
        if stamps is not None:
            thread = detail.thread_id[de[on_line][0]] if on_line.any() else -1
            names = d_stamps["thread_name"][d_stamps["thread_id"] == thread]
            if names.size:
                ts = stamps["ts_ns"][(stamps["thread_name"] == names[0]) & (stamps["loc"] == line)]
                runs = int(((d_stamps["thread_id"] == thread) & (d_stamps["loc"] == line)).sum())
                if ts.size == runs and k.size >= 2:
                    nxt = np.append(k[1:] == k[:-1] + 1, False) & (k + 1 < ts.size)
                    untraced = np.full(k.size, np.nan)
                    untraced[nxt] = (ts[k[nxt] + 1] - ts[k[nxt]]).astype(np.float64)
                    if nxt.any():
                        period, timed = untraced, True
        return chosen, period, timed

    return rows


def runner_step(eager: ModeMetrics, graph: ModeMetrics, b: BreakEven, costs: Sequence[GraphCost]) -> StepResult | None:
    """A runner trace (`graphmode bench`, `graphmode.compare`) in the run model: its one graph's replays against the
    eager iterations of the break-even's baseline are one step of one graph, whose figures are the break-even's
    (medians: the headline's), so a bench and a script trace state their steps alike. None unless the run built
    exactly one graph."""
    ids = sorted({c.graph_id for c in costs})
    if len(ids) != 1:
        return None
    saved = b.saved_per_replay_ns
    e = eager.wall if eager.wall is not None else eager.traced_wall
    w = graph.wall if graph.wall is not None else graph.traced_wall
    return StepResult(
        step_id=1, label=f"step of graph {ids[0]}", graphs=(ids[0],), eager=e, graphed=w, eager_steps=eager.iterations,
        graphed_steps=graph.iterations, eager_ns=b.eager_ns, graphed_ns=b.graph_ns, saved_ns=saved,
        one_time_ns=b.one_time_ns, one_time_basis="graphs", one_time_statement="", break_even=b,
        basis="measured" if b.eager_ns is not None else "none", period_source=graph.wall_source,
        segments=(StepSegment(0, "graph", ids[0], e, w, saved),), graphs_saved_ns=saved,
        remainder_saved_ns=0.0 if saved is not None else None, invariant_residual_ns=0.0 if saved is not None else None,
        saved_in_run_ns=saved * b.run_replays if saved is not None else None)


def with_other_ways(trace: Trace, sg: ScriptGraphs, detail: IterationTable, t: IterationTable,
                    steps: tuple[StepResult, ...], stamps_of: StampsOf | None = None) -> tuple[StepResult, ...]:
    """The steps with no eager twin, each with the same step run another way where the program ran one (OtherWay): a
    loop of other eager work (graph 0's iterations: analyzers.repetition.loops_beside_graphs) whose steps start at the
    same line as the step's graphed steps (analyzers.untraced.starting_lines, from the stamps of the user's lines in
    `detail`, the pass that recorded them; its table and `t`, the timing pass's with its periods corrected, are the same
    table in the one traced run, or hold graph 0's rows in the same order). Of several such loops, the one with the
    most steps. Steps unchanged where none qualifies (no stamps, no such loop, another line)."""
    def steady_loop(table: IterationTable) -> np.ndarray:  # graph 0's steady eager rows: the loops beside the graphs
        rows: np.ndarray = (table.graph_id == 0) & np.isin(table.mode, ("eager", "eager_sync_each")) & (table.role == "steady")
        return rows

    wanted = {s.step_id for s in steps if s.basis != "measured" and s.graphed_ns}
    zero = steady_loop(detail)
    if not wanted or not zero.any():
        return steps
    loc, _ = starting_lines(trace, detail, (stamps_of or partial(line_stamps, trace))(detail.pass_id))
    loops: dict[str, tuple[str, np.ndarray]] = {}  # source -> (its line, its rows in detail)
    for src in np.unique(detail.source[zero]):  # per loop beside the graphs: one or a few
        rows = np.flatnonzero(zero & (detail.source == src))
        lines = Counter(str(x) for x in loc[rows] if x)
        if lines:
            loops[str(src)] = lines.most_common(1)[0][0], rows
    t_zero = steady_loop(t)
    kernels = {g.graph_id: len(g.kernels) for g in sg.graphs}
    out = []
    for s in steps:
        graphed = np.flatnonzero((detail.graph_id == s.graphs[0]) & (detail.mode == "graph"))
        lines = Counter(str(x) for x in loc[graphed] if x)
        line = lines.most_common(1)[0][0] if lines and s.step_id in wanted else ""
        src = max((src for src, (at, rows) in loops.items() if line and at == line), key=lambda x: loops[x][1].size,
                  default=None)
        if src is None:
            out.append(s)
            continue
        rows = np.flatnonzero(t_zero & (t.source == src))
        period = t.work[rows].astype(np.float64)
        eager_ns, stat = _tm(period), Stat.of_finite(period)
        if eager_ns is None or stat is None or s.graphed_ns is None:
            out.append(s)
            continue
        by = {str(x) for x in t.timed_by[rows]}
        source = CORRECTED if CORRECTED in by else "timing" if "timing" in by else WINDOW if WINDOW in by else \
            next((p.name for p in trace.passes if p.pass_id == t.pass_id), "")
        saved = eager_ns - s.graphed_ns
        replays = smallest_replays(s.one_time_ns, saved) if s.one_time_ns is not None and saved > 0 else None
        length = parse_repeat(src)[0] if src.startswith(REPEAT_SOURCE) else 0
        out.append(dataclasses.replace(s, other_way=OtherWay(
            line=line, source=src, eager=stat, eager_ns=eager_ns, graphed_ns=s.graphed_ns, saved_ns=saved,
            eager_kernels=length, graph_kernels=sum(kernels.get(g, 0) for g in s.graphs), period_source=source,
            break_even=replays)))
    return tuple(out)
