"""Predict whether a CUDA graph would pay off, from eager work only (and the converse for graph work).

For each repeated region of a trace (analyzers.regions: eager iterations, the runner's or inferred or
NVTX `graphmode:eager` ranges; any NVTX range name repeated at least 3 times; or lines the user
names), `predict` builds the graph a stream capture would make of one iteration
(analyzers.eager_graph), and prices it with the GPU's cost model (analyzers.costmodel):

- one-time cost = capture + instantiate + upload + first-launch excess (+ the first-graph-of-a-process
  extra when no graph was instantiated before the region);
- replay period = the iteration's GPU work as measured eagerly plus the model's per-node cost, bounded
  below by the critical path across streams, plus the replay's host overhead (launch + synchronize) when
  the eager iterations synchronize, else the larger of the launch call and the GPU span;
- saving per iteration = measured eager period - predicted replay period; break-even = the smallest n
  with n * saving >= one-time cost, with a 95% interval from 2000 draws of the model's spread and
  bootstrap medians of the eager sample.

A graph that the trace replays without any eager twin (XLA runs everything as graphs) gets the converse:
its nodes launched eagerly, priced with the model's per-launch costs. docs/metrics.md, "Prediction",
gives every formula.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers.capture_advice import advise
from graphmode.analyzers.break_even import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CORRECTED_SLOWDOWN_BOUND,
    SINGLE_CPU_BOUND,
    TIMING_RUN_SLOWDOWN_BOUND,
    WINDOW_EAGER_BOUND,
    bootstrap_medians,
    replay_interval,
    replays_per_draw,
    smallest_replays,
)
from graphmode.analyzers.cpu_speed import cpu_speeds, slower_run
from graphmode.analyzers.costmodel import (GPU_NODE_TYPES, CostModel, ModelChoice, Spread, cold_wait, find_model,
                                           torch_capture_spreads)
from graphmode.analyzers.counterfactual import dispatch_ns, framework_of
from graphmode.analyzers.critical_path import _backtrack, longest_path, node_durations
from graphmode.analyzers.inference import MIN_SYNC_ITERATIONS
from graphmode.analyzers.eager_graph import (
    EagerGraph,
    WindowActivity,
    capture_breakers,
    event_call_counts,
    iteration_graph,
    name_mask,
    window_activity,
)
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.regions import Region, line_regions, marker_regions, nvtx_regions
from graphmode.analyzers.run import Run, build_run
from graphmode.analyzers.torch_windows import run_entry, torch_windows
from graphmode.analyzers.untraced import timing_pass_id
from graphmode.analyzers.untraced_windows import WINDOW
from graphmode.analyzers.tracer_cost import TracerCorrection, tracer_correction
from graphmode.analyzers.step_memory import (cublas_workspace_bytes, kept_workspaces, memory_events, memory_unknown,
                                             step_memory, with_workspaces)
from graphmode.analyzers.results import (
    CaptureBreaker,
    Estimate,
    PredictedGraph,
    Prediction,
    RegionPrediction,
    ShapeGroup,
    TraceAnalysis,
)
from graphmode.tracer.store import Trace

MAX_REGIONS = 20
MAX_WINDOWS = 1000  # iterations read per region for the graph and node durations (all of them give the period)
# A capture breaker seen only in a region's first iteration is a first call's one-off where the region ran at least this
# many iterations: the warm-up iterations PyTorch's documentation runs before torch.cuda.graph (3), and one captured
WARMUP_ITERATIONS = 4
# Graph node types (graph_nodes.node_type) as the cost model counts them.
_NODE_TYPE = {"kernel": "kernel", "memcpy": "memcpy", "memset": "memset", "host": "host",
              "event_record": "event", "wait_event": "event", "ext_semas_signal": "event", "ext_semas_wait": "event"}

# the trace records no stream or event for cudaEventRecord: cross-stream edges pair records and waits by order
EVENT_GAP_NOTE = note("event_pairing_inferred")


# ---------------------------------------------------------------------------------------------- estimates


def _estimate(draws: np.ndarray, point: float, floor: float | None = 0.0) -> Estimate:
    """Point and 95% interval of the draws. Durations and costs cannot be negative: the point and the interval's ends
    are held at `floor` (None: a difference, such as a saving, which may be)."""
    finite = draws[np.isfinite(draws)]
    if floor is not None:
        point = max(floor, point)
    if finite.size == 0:
        return Estimate(point, point, point)
    lo, hi = np.percentile(finite, [2.5, 97.5])
    if floor is not None:
        lo, hi = max(floor, float(lo)), max(floor, float(hi))
    return Estimate(float(point), float(lo), float(hi))


def _normal(rng: np.random.Generator, mean: float, sd: float, n: int) -> np.ndarray:
    out: np.ndarray = mean + sd * rng.standard_normal(n)
    return out


def _from_samples(rng: np.random.Generator, s: Spread, n: int) -> np.ndarray:
    """Draws for a new process of a probe-measured quantity: Spread.draw (analyzers.costmodel)."""
    return s.draw(rng, n)


# ---------------------------------------------------------------------------------------------- one region


@dataclass(frozen=True)
class _Matched:
    """The iterations whose operations match the representative one, position by position."""

    rep: int  # iteration index of the representative
    rows: np.ndarray  # (k, m) op indices into the WindowActivity, one row per matching iteration
    iterations: np.ndarray  # iteration index of each row


def _matched(act: WindowActivity, n_it: int) -> _Matched | None:
    placed = np.flatnonzero(act.op_iteration >= 0)
    if placed.size == 0:
        return None
    order = placed[np.lexsort((act.op_launch[placed], act.op_iteration[placed]))]
    it = act.op_iteration[order]
    counts = np.bincount(it, minlength=n_it)
    present = counts[counts > 0]
    vals, freq = np.unique(present, return_counts=True)
    m = int(vals[np.argmax(freq)])  # the most common number of ops per iteration
    cand = np.flatnonzero(counts == m)
    first = np.searchsorted(it, cand, side="left")
    rows = order[first[:, None] + np.arange(m)[None, :]]
    _, codes = factorize(act.op_name[rows])
    codes = codes.reshape(rows.shape)
    ref = codes[1] if cand.size >= 3 else codes[0]  # skip the first as a possible warm-up
    match = np.all(codes == ref, axis=1)
    rep = int(cand[1] if cand.size >= 3 else cand[0])
    return _Matched(rep, rows[match], cand[match])


def _busy(act: WindowActivity, rows: np.ndarray) -> np.ndarray:
    """GPU busy (union of the op spans) per row, vectorised over the (k, m) matrix."""
    s = act.op_start[rows].astype(np.float64)
    e = act.op_end[rows].astype(np.float64)
    order = np.argsort(s, axis=1, kind="stable")
    s, e = np.take_along_axis(s, order, 1), np.take_along_axis(e, order, 1)
    run = np.maximum.accumulate(e, axis=1)
    covered = s.copy()
    covered[:, 1:] = np.maximum(s[:, 1:], run[:, :-1])
    out: np.ndarray = np.maximum(e - covered, 0.0).sum(axis=1)
    return out


def _issue_time(act: WindowActivity, rows: np.ndarray, iterations: np.ndarray) -> np.ndarray:
    """Host time to issue each matching iteration's work: first launch call's start to last launch call's
    end, less the time in synchronizations between them (a fixed capture would not have them)."""
    first = act.op_launch[rows].min(axis=1)
    last = act.op_launch_end[rows].max(axis=1)
    out: np.ndarray = (last - first).astype(np.float64)
    is_sync = name_mask(act.call_name, "Synchronize")
    if not is_sync.any():
        return out
    pos = np.full(int(max(act.call_iteration.max(initial=-1), iterations.max(initial=-1))) + 1, -1, dtype=np.int64)
    pos[iterations] = np.arange(iterations.size)  # iteration index -> row
    row = np.where(act.call_iteration >= 0, pos[np.clip(act.call_iteration, 0, None)], -1)
    sel = is_sync & (row >= 0)
    sel &= (act.call_start >= first[np.clip(row, 0, None)]) & (act.call_end <= last[np.clip(row, 0, None)])
    out -= np.bincount(row[sel], weights=(act.call_end - act.call_start)[sel].astype(np.float64), minlength=iterations.size)
    return out


# Eager kernels ran, but no repeated region was found in them (analyzers.inference, docs/metrics.md).
NO_REGION_NOTE = note("no_region", min_iterations=MIN_SYNC_ITERATIONS)

# The prediction says so when the first (or second) graph's extra is at least this share of the one-time cost.
FIRST_GRAPH_SHARE_NOTE = 0.25


def _graphs_before(trace: Trace, before_ns: int) -> int:
    """How many graphs the process instantiated before `before_ns`: the region's graph would be its next."""
    n = trace.rows("SELECT (SELECT count(*) FROM graph_events WHERE event = 'instantiate' AND start_ns < ?)"
                   " + (SELECT count(*) FROM markers WHERE kind = 'op' AND name = 'instantiate' AND start_ns < ?)",
                   [before_ns, before_ns])[0][0]
    return int(n)


def _first_probe(trace: Trace) -> dict[str, Any]:
    """meta.first_graph_probe (what `graphmode run` measured in the script's own process after it ended,
    tracer.first_graph_probe) where its graphs were the process's first: not where the code had instantiated a graph
    before it (`execs_before`, counted by the run; where the run could not count, any graph instantiated in the
    trace): the probe's graphs then came later, and say nothing of the first. {} where the trace has none."""
    p = trace.meta.get("first_graph_probe")
    if not isinstance(p, dict):
        return {}
    before = p.get("execs_before")
    return p if (before if isinstance(before, int) else _graphs_before(trace, 2**62)) == 0 else {}


def _process_probe(trace: Trace) -> float | None:
    """The first-graph extra of `_first_probe` (its `extra_ns`); None where there is none, or the probe failed."""
    v = _first_probe(trace).get("extra_ns")
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return max(float(v), 0.0)


def _process_torch_probe(trace: Trace) -> dict[str, Spread]:
    """torch.cuda.graph's own work and first graph's extra as `graphmode run` measured them in a PyTorch program's own
    process after it ended (`_first_probe`'s `torch`: the calibration's torch probe, tracer.first_graph_probe),
    read as the calibration reads its probes (costmodel.torch_capture_spreads: 'first', 'later', 'first_graph_extra',
    ...); {} where there is none, or it failed."""
    t = _first_probe(trace).get("torch")
    if not isinstance(t, dict):
        return {}
    try:
        return torch_capture_spreads([t])
    except (TypeError, ValueError, KeyError):
        return {}


def _torch_probe_waited(trace: Trace) -> tuple[float, int, float] | None:
    """(waited ns, major page faults, first_ns as measured) where the in-process torch probe's first capture block waited
    as a cold process's does (costmodel.cold_wait: its figure, torch_capture_spreads' 'first', leaves the wait out),
    else None."""
    t = _first_probe(trace).get("torch")
    if not isinstance(t, dict) or (w := cold_wait(t)) is None:
        return None
    return w[0], w[1], float(t["first_ns"])


def _probe_cost_note(p: dict[str, Any], torch_work_ns: float | None = None, first: bool = True,
                     waited: tuple[float, int, float] | None = None) -> Note:
    """What measuring the first-graph extra (or, with `torch_work_ns`, torch.cuda.graph's own work around the process's
    first or later capture) cost the run that did it (meta.first_graph_probe: 'run', 'probe_ns'); `waited`: where that
    first capture's block waited (_torch_probe_waited), how long, its major page faults and the figure as measured."""
    took = p.get("probe_ns")
    cold = dict(waited_ns=waited[0], major_faults=waited[1], as_measured_ns=waited[2]) if waited is not None else {}
    return note("probe_cost", measured="torch_capture_work" if torch_work_ns is not None else "first_graph_extra",
                torch_work_ns=torch_work_ns, first=first, probe_ns=float(took) if isinstance(took, (int, float)) else None,
                run=str(p.get("run")), **cold)


# A measured first-graph extra stands for another graph's (the program's own, or a bench process's own where a twin
# measured it): its draws spread at least this much (log sd), as the programs' own first graphs varied between
# processes of one workload, more than the calibration probes' (docs/metrics.md, "Prediction").
MEASURED_EXTRA_LOG_SD = 0.2
_UNIT_Z = np.array([-2.0, -1.0, 0.0, 1.0, 2.0]) / math.sqrt(2.5)  # median 0, sample sd 1


def _around(value: float, spread: Spread | None) -> Spread:
    """A single measurement given the relative spread of `spread`'s samples around their median (the calibration
    probes' process-to-process spread of the same quantity), widened where its log sd is under
    MEASURED_EXTRA_LOG_SD to samples of that log sd around the value (median the value); the value alone where there
    is no spread to borrow or the value is not positive."""
    if spread is None or spread.median <= 0 or len(spread.samples) < 2 or value <= 0:
        return Spread.of([value])  # type: ignore[return-value]
    rel = np.asarray(spread.samples, dtype=np.float64) / spread.median
    if (rel > 0).all() and float(np.log(rel).std(ddof=1)) >= MEASURED_EXTRA_LOG_SD:
        return Spread.of(rel * value)  # type: ignore[return-value]
    return Spread.of(value * np.exp(MEASURED_EXTRA_LOG_SD * _UNIT_Z))  # type: ignore[return-value]


# PyTorch's caching allocator grows its pool with cudaMalloc, and under stream capture it does so in relaxed capture mode
# (c10/cuda/CUDACachingAllocator.cpp, cudaMallocMaybeCapturing: the graph gets the new addresses, replays allocate
# nothing): in a PyTorch program such a call is the pool growing, not a call that would break torch.cuda.graph's capture
TORCH_POOL_MALLOC = re.compile(r"^cudaMalloc(_v\d+)?$")


def _breakers(act: WindowActivity, graph: EagerGraph, n_it: int, torch_program: bool = False, from_first: bool = False
              ) -> tuple[list[CaptureBreaker], int, list[Note]]:
    """The region's capture breakers, how many synchronizations end its iterations, and notes: in a PyTorch program, for
    the cudaMalloc calls of its caching allocator (not breakers: TORCH_POOL_MALLOC); and, where the iterations looked
    at start with the region's first (`from_first`) and there are at least WARMUP_ITERATIONS of them, for the calls that
    ran in that first iteration only: a first call's one-off (a library's workspace, its autotuning), which a capture
    made after warm-up iterations (as PyTorch's documentation for torch.cuda.graph says) never sees."""
    hits, trailing = capture_breakers(act)
    pool = [h for h in hits if torch_program and h.kind == "allocation" and TORCH_POOL_MALLOC.match(h.api)]
    hits = [h for h in hits if h not in pool]
    notes = [note("torch_pool_grew", calls=sum(h.calls for h in pool), iterations=n_it)] if pool else []
    first = [h for h in hits if h.first_only and from_first and n_it >= WARMUP_ITERATIONS]
    if first:
        hits = [h for h in hits if h not in first]
        notes.append(note("breakers_first_iteration_only", apis=tuple(dict.fromkeys(h.api for h in first)),
                          calls=sum(h.calls for h in first), iterations=n_it))
    out = [CaptureBreaker(h.kind, h.api, h.where, h.calls, h.calls / max(n_it, 1)) for h in hits]
    # Stream-level findings are read from the representative iteration: once per iteration.
    if graph.uncaptured:
        out.append(CaptureBreaker("uncaptured_stream", "", "", graph.uncaptured, float(graph.uncaptured)))
    for s in graph.unjoined_streams:
        out.append(CaptureBreaker("unjoined_stream", f"stream {s}", "", 1, 1.0))
    if graph.external_waits:
        out.append(CaptureBreaker("external_event", "cudaStreamWaitEvent", "", graph.external_waits, float(graph.external_waits)))
    return out, trailing, notes


def _measured(trace: Trace, analysis: TraceAnalysis | None, region: Region, wall_pass: int | None,
              eager_median: float) -> tuple[float | None, float | None, int | None]:
    """One-time cost, replay period and break-even of the graph this trace built for the region's work."""
    if analysis is None:
        return None, None, None
    if region.runner:
        be = next((b for b in analysis.break_even if b.baseline == region.mode), None)
        if be is None:
            return None, None, None
        return be.one_time_ns, be.graph_ns, be.replays
    if not region.graph_id:
        return None, None, None
    g = next((g for g in analysis.graphs if g.graph_id == region.graph_id), None)
    if g is not None:  # a script trace: the per-graph answer (analyzers.per_graph), periods from the measuring run
        be = g.break_even
        replay_tm = g.graph.work.trimmed_mean if g.graph is not None and g.graph.work is not None else None
        return (g.cost.total_ns if g.cost is not None else None, replay_tm,
                be.replays if be is not None else None)
    cost = next((c.total_ns for c in analysis.graph_costs if c.graph_id == region.graph_id), None)
    replay = None
    if wall_pass is not None:
        r = trace.rows("SELECT median(end_ns - start_ns) FROM markers WHERE pass_id = ? AND kind = 'iteration' AND mode = 'graph' "
                       "AND graph_id = ?", [wall_pass, region.graph_id])[0][0]
        replay = float(r) if r is not None else None
    be_n = smallest_replays(cost, eager_median - replay) if cost is not None and replay is not None and eager_median > replay else None
    return cost, replay, be_n


def _script_eager(analysis: TraceAnalysis | None, region: Region) -> tuple[float, str] | None:
    """(median eager work, the run it comes from) of the graph a script's eager region does the work of; for the
    loop of a script that built no graph, the headline's eager period (analyzers.script_analysis), the loop's, times the
    region's share of it where the loop is several regions (Region.loop_share)."""
    if analysis is None or region.runner or region.mode != "eager":
        return None
    if not region.graph_id:
        m = analysis.mode("eager")
        if analysis.graphs or not region.loop or m is None or m.wall is None or m.wall.median <= 0:
            return None
        return m.wall.median * region.loop_share, m.wall_source
    g = next((g for g in analysis.graphs if g.graph_id == region.graph_id), None)
    if g is None or g.eager is None or g.eager.work is None or g.eager.work.median <= 0:
        return None
    return g.eager.work.median, g.eager.run


# the program's cudaMalloc calls (a driver's cuMemAlloc where no runtime call was recorded)
_MALLOC = re.compile(r"^(cudaMalloc|cuMemAlloc)(_v\d+)?$")


def malloc_cost(trace: Trace, pass_id: int) -> Spread | None:
    """What one of the pass's cudaMalloc calls took (traced; PyTorch's caching allocator growing its segments), or None
    where it recorded none."""
    rows = trace.rows("SELECT name, end_ns - start_ns FROM api_calls WHERE pass_id = ? AND (name LIKE 'cudaMalloc%' OR "
                      "name LIKE 'cuMemAlloc%')", [pass_id])
    calls = [(str(n), float(d)) for n, d in rows if _MALLOC.match(str(n))]
    runtime = [d for n, d in calls if n.startswith("cuda")]
    return Spread.of(runtime or [d for _, d in calls])


def _to_graph(trace: Trace, region: Region, traced_id: int, model: CostModel | None, analysis: TraceAnalysis | None,
              wall_pass: int | None, seed: int, torch_program: bool = False, trees: bool = False,
              tree_starts: Sequence[int] = (), method: str = "capture", method_from_trace: bool = False,
              nth_graph: int | None = None,
              correction_of: Callable[[int], TracerCorrection | None] = lambda pass_id: None,
              pool: tuple[int, Spread] | None = None) -> RegionPrediction | None:
    """The region's graph, priced (module doc). `nth_graph`: price it as the process's nth graph (a step's later input
    shapes, _price_shapes) instead of after the graphs the trace instantiated before the region. `correction_of`: a
    pass's tracer correction (analyzers.tracer_cost.tracer_correction), None where it has none. `pool`: the segments a
    PyTorch capture of the step would allocate for its private pool (analyzers.step_memory) and what one of the run's
    cudaMalloc calls took (malloc_cost), None where either is unknown."""
    starts, ends = region.starts, region.ends
    wall_same_windows = region.wall_traced and region.wall.size == starts.size
    subsampled = starts.size > MAX_WINDOWS
    if subsampled:  # the graph and per-node durations from a contiguous block in the middle
        order = np.argsort(starts, kind="stable")
        keep = order[starts.size // 2 - MAX_WINDOWS // 2:][:MAX_WINDOWS]
        starts, ends = starts[keep], ends[keep]
        if wall_same_windows:
            region = dataclasses.replace(region, starts=starts, ends=ends, wall=region.wall[keep])
    n_it = int(starts.size)
    act = window_activity(trace, traced_id, starts, ends)
    matched = _matched(act, n_it)
    if matched is None or matched.rows.shape[0] == 0:
        return None  # no eager GPU work in these iterations: nothing to capture
    graph = iteration_graph(act, matched.rep)
    breakers, trailing, breaker_notes = _breakers(act, graph, n_it, torch_program, from_first=not subsampled)
    advice = advise(trace, traced_id, int(starts[matched.rep]), int(ends[matched.rep]), act.op_name[matched.rows[0]].astype(str).tolist(),
                    region.basis, region.graph_id, breakers, torch_program, (starts, ends))
    notes: list[Note] = list(breaker_notes)
    rows = matched.rows
    dur = np.median((act.op_end[rows] - act.op_start[rows]).astype(np.float64), axis=0)  # per op position
    busy = _busy(act, rows)
    issue = _issue_time(act, rows, matched.iterations)
    synchronized = trailing >= 0.5 * n_it
    counts = graph.counts()
    n_rec, n_wait = event_call_counts(act, matched.rep)
    kinds = graph.ops.kind.astype(str)
    cap = graph.captured
    wall = region.wall.astype(np.float64)
    if wall_same_windows:  # the same windows: drop iterations with no eager GPU work
        has_ops = np.bincount(act.op_iteration[act.op_iteration >= 0], minlength=n_it) > 0
        wall = wall[has_ops]
    t_e = float(np.median(wall))
    script_eager = _script_eager(analysis, region)
    eager_run = ""  # the run the eager period's level comes from, where a script's analysis gave it
    timing_left_out = False  # the timing run read the loop, but on a slower CPU: its reading is not in the level
    found: tuple[float, str] | None = None
    if script_eager is not None and region.wall_traced and t_e > 0:
        # A script: the detail run's iterations give the shape of the spread; their level is the per-graph
        # answer's eager period (the measuring run's, or the timing run's where it timed CPU-bound iterations),
        # so that the prediction and the measured graph compare against the same eager baseline.
        level, level_run = script_eager
        if level_run == "timing" and (other := _one_run_level(correction_of(traced_id), graph, t_e, float(np.median(busy)))):
            # Two processes read the loop: the timing run (untraced) and the one traced run that found its step (its
            # tracer's calibrated cost taken off). A process of the same program on the lent H200 read a loop 0.56-1.75x
            # the next one; the mean of the two readings was 11% from the untraced processes' median on session 19's
            # eager-only programs, each alone 23% and 25% (benchmarks/notes/s19). Where one of the two ran on a CPU
            # VARIED_AT slower than the other's (their samples of the CPU's speed, analyzers.cpu_speed), its reading is
            # left out (benchmarks/notes/s23).
            timing_id = timing_pass_id(trace)
            speeds = analysis.cpu_speed if analysis is not None else cpu_speeds(trace)
            slow = slower_run(speeds, timing_id, traced_id) if timing_id is not None else None
            if slow is None:
                notes.append(note("eager_two_runs", timing_ns=level, one_run_ns=other))
                level, level_run = (level + other) / 2, TWO_RUNS
            else:
                traced_name = next(p.name for p in trace.passes if p.pass_id == traced_id)
                slow_run, kept_run = ("timing", traced_name) if slow[0] == timing_id else (traced_name, "timing")
                notes.append(note("eager_slow_cpu_run_left_out", run=slow_run, kept_run=kept_run, ratio=slow[1],
                                  timing_ns=level, one_run_ns=other))
                if slow[0] == timing_id:
                    level, level_run = other, traced_name
                    timing_left_out = True
        found = level, level_run
    elif (not region.graph_id and region.mode == "eager" and not region.runner and region.wall_traced and t_e > 0
          and (corrected := _one_run_level(correction_of(traced_id), graph, t_e, float(np.median(busy)))) is not None):
        # a loop the script's analysis gives no eager period for (one beside its graphs, analyzers.repetition
        # .loops_beside_graphs): the one traced run's own reading, its tracer's calibrated cost taken off
        found = corrected, next(p.name for p in trace.passes if p.pass_id == traced_id)
        notes.append(note("eager_period_corrected", traced_ns=t_e, taken_off_ns=t_e - corrected,
                          kernels=int((graph.ops.kind.astype(str) == "kernel").sum())))
    if found is not None:
        level, level_run = found
        scale = level / t_e
        wall = wall * scale
        t_e = float(np.median(wall))
        region = dataclasses.replace(region, wall_traced=False, correction=region.correction * scale)
        eager_run = level_run
        if script_eager is not None:
            notes.append(note("eager_period_scaled", per_graph=bool(region.graph_id), run=level_run, scale=scale))
    if rows.shape[0] < n_it:
        notes.append(note("iterations_left_out", left_out=n_it - int(rows.shape[0]), iterations=n_it))
    if region.wall_traced:
        notes.append(note("traced_eager_period"))
    if wall.size < 5:
        notes.append(note("eager_period_tiny_sample", iterations=int(wall.size)))

    # Critical path across streams with the model's per-node cost added to each node's eager duration. A
    # kernel's per-node cost mixes the calibration's short, ~5 us and wide kernels by its duration and its grid
    # (costmodel.CostModel.kernel_shares).
    is_kernel = kinds == "kernel"
    blocks = act.op_blocks[rows[0]] if act.op_blocks is not None else np.zeros(dur.size, dtype=np.int64)
    if model is not None:
        tiny_sh, spin_sh, wide_sh = (np.where(is_kernel, x, 0.0) for x in model.kernel_shares(dur, blocks))
    else:
        tiny_sh, spin_sh, wide_sh = is_kernel.astype(np.float64), np.zeros(dur.size), np.zeros(dur.size)
    ov_cost = model.costs["replay_gpu_overhead"] if model is not None else None
    per_node = np.zeros(dur.size)
    if ov_cost is not None:
        per_node = (tiny_sh * ov_cost.coefficient("path_kernel_tiny") + spin_sh * ov_cost.coefficient("path_kernel_spin")
                    + wide_sh * ov_cost.coefficient("path_kernel_wide"))
        for k in ("memcpy", "memset", "host"):
            per_node = np.where(kinds == k, ov_cost.coefficient(f"path_{k}"), per_node)
    weights = np.where(cap, dur + per_node, 0.0)
    dist, _ = longest_path(weights, graph.edge_from, graph.edge_to)
    path = _path(dist, weights, graph.edge_from, graph.edge_to)
    on_path = np.zeros(dur.size, dtype=bool)
    on_path[path] = True
    off = cap & ~on_path
    gpu_path = kinds[np.sort(path)]
    gpu_path = gpu_path[np.isin(gpu_path, GPU_NODE_TYPES)]
    path_counts = {"path_kernel_tiny": float(tiny_sh[on_path].sum()), "path_kernel_spin": float(spin_sh[on_path].sum()),
                   "path_kernel_wide": float(wide_sh[on_path].sum()),
                   **{f"path_{k}": float(np.count_nonzero(kinds[on_path] == k)) for k in ("memcpy", "memset", "host")},
                   "path_switches": float(np.count_nonzero(gpu_path[1:] != gpu_path[:-1])),
                   "off_nodes": float(np.count_nonzero(off)), "off_wide_ns": float((wide_sh * dur)[off].sum()),
                   "edges": float(graph.edges)}
    path_dur = float(dur[path].sum())
    pgraph = PredictedGraph(
        nodes=graph.nodes, edges=graph.edges, kernels=counts["kernel"], memcpys=counts["memcpy"], memsets=counts["memset"],
        host_nodes=counts["host"], streams=graph.streams, cross_stream_edges=graph.cross_stream_edges,
        event_pairing=graph.event_pairing, serial_ns=float(dur[cap].sum()), critical_path_ns=float(dist.max()) if dist.size else 0.0,
        critical_path_nodes=int(path.size),
    )
    measured = _measured(trace, analysis, region, wall_pass, t_e)
    if measured[0] is not None and region.wall_traced:
        notes.append(note("traced_measured_one_time"))
    base = dict(label=region.label, basis=region.basis, direction="to_graph", mode=region.mode, graph_id=region.graph_id,
                iterations=int(wall.size), synchronized=bool(synchronized), graph=pgraph, gpu_work_ns=float(np.median(busy)),
                measured_one_time_ns=measured[0], measured_replay_ns=measured[1], measured_break_even=measured[2],
                breakers=tuple(breakers), advice=advice)
    B = BOOTSTRAP_RESAMPLES
    rng = np.random.default_rng(seed)
    t_e_draw = bootstrap_medians(wall, B, rng)
    if model is None:
        return RegionPrediction(**base, capture=None, instantiate=None, upload=None, first_launch_excess=None,  # type: ignore[arg-type]
                                first_graph_extra=None, one_time=None, eager_period=_estimate(t_e_draw, t_e), replay_period=None,
                                saved_per_iteration=None, break_even=None, break_even_low=None, break_even_high=None,
                                break_even_high_never=False, never=False, notes=tuple(notes))

    c = model.costs
    gcounts = {**{k: float(v) for k, v in counts.items()}, "event": 0.0, "edges": float(graph.edges)}
    ccounts = {**{k: float(v) for k, v in counts.items()}, "record_calls": float(n_rec), "wait_calls": float(n_wait)}

    # Capture runs the iteration's host code once more, each call in capture mode: the eager issue time
    # (corrected to the untraced pass where there is one) plus what capture adds per call; never less than
    # the model's own capture of the same calls from a plain loop. A node-API build instead adds one node per
    # operation from Python (the model's build_api, from the same graphs built so).
    api = method == "node_api"
    if api and "build_api" not in c:
        notes.append(note("node_api_unmeasured"))
        api = False
    issue_med = float(np.median(issue)) * region.correction
    z = rng.standard_normal(B)
    cap_model, cap_sd = c["capture"].mean(ccounts), c["capture"].sd(ccounts)
    captured = max(cap_model, issue_med + cap_model - c["eager_issue"].mean(ccounts))
    if api:
        cap_point = c["build_api"].mean(gcounts)
        cap_draw = np.maximum(cap_point + c["build_api"].sd(gcounts) * z, 0.0)
        notes.append(note("node_api_build", as_traced=method_from_trace, build_ns=cap_point, capture_ns=captured))
    else:
        cap_point = captured
        cap_draw = np.maximum(cap_point + cap_sd * z, 0.0)
    # A PyTorch program issues its step in capture mode through PyTorch, which costs it more host time per op than
    # eagerly (its private memory pool, capture-mode checks): the torch probe's ratio of the two, where larger. The
    # probe's step is dispatch alone; a program's step also runs Python of its own (modules, a cache's bookkeeping),
    # which a capture runs at the same speed: the ratio's excess applies to the step's dispatch only, its kernels
    # priced by their launchers (`graphmode calibrate`'s launch probes), at most the issue time.
    # Where the step's allocations are known, the excess is the pool's instead (session 34, benchmarks/notes/s34): a
    # capture into a new private pool allocates the pool's segments inside it, each a cudaMalloc (26 of them, 6 ms, in
    # a traced make_graphed_callables capture of MobileNetV3), while issuing the step's calls costs what it costs
    # eagerly (the decode step's capture bodies 0.87-1.12x its eager step). Priced by this pass's own cudaMalloc calls,
    # it read session 24's four programs' graphed one-time costs at 0.90-1.13x (the ratio: 0.94-1.21x).
    ratio = model.torch_capture.get("capture_ratio") if torch_program and not api else None
    if pool is not None and torch_program and not api:
        pool_segments, malloc = pool
        if issue_med + pool_segments * malloc.median > cap_point:
            cap_point = issue_med + pool_segments * malloc.median
            # each draw sums pool_segments calls resampled from the run's own, one by one (independent calls: one
            # call's spread times the count would take them as one), times how much one capture's body varies from
            # another's (the torch probe's capture ratio over its median, where the model has it)
            calls = rng.choice(np.asarray(malloc.samples, dtype=np.float64), size=(B, pool_segments))
            spread = _from_samples(rng, ratio, B) / ratio.median if ratio is not None and ratio.median > 0 else 1.0
            cap_draw = np.maximum((issue_med + calls.sum(axis=1)) * spread, cap_draw)
            notes.append(note("torch_capture_segments", issue_ns=issue_med, segments=pool_segments,
                              malloc_ns=malloc.median, mallocs=malloc.n))
    elif ratio is not None:
        names = [str(n) for n, k in zip(act.op_name[matched.rows[0]], kinds) if k == "kernel"]
        others = int(np.count_nonzero(np.isin(kinds, ("memcpy", "memset"))))
        priced = dispatch_ns(names, others, framework_of(names, torch_program), model)
        dispatch = min(issue_med, priced) if priced is not None else issue_med
        if issue_med + (ratio.median - 1.0) * dispatch > cap_point:
            cap_point = issue_med + (ratio.median - 1.0) * dispatch
            cap_draw = np.maximum(issue_med + (_from_samples(rng, ratio, B) - 1.0) * dispatch, cap_draw)
            notes.append(note("torch_capture_ratio", issue_ns=issue_med, ratio=ratio.median, dispatch_ns=dispatch))
    inst = _normal(rng, c["instantiate"].mean(gcounts), c["instantiate"].sd(gcounts), B)
    upl = _normal(rng, c["upload"].mean(gcounts), c["upload"].sd(gcounts), B)
    exc = _normal(rng, c["first_launch_excess"].mean(gcounts), c["first_launch_excess"].sd(gcounts), B)
    # The process's first graph costs more than later ones, and its second still somewhat more (docs/metrics.md): the
    # model's extra over the steady state for the nth graph. A PyTorch program's (torch.cuda.graph, not trees) is the
    # torch probe's instantiate + first replay extra, where the model has it: its first capture's share is in the
    # framework term below.
    nth = _graphs_before(trace, region.wall_start) + 1 if nth_graph is None else nth_graph
    first = nth == 1
    use_tree = trees and bool(model.tree_capture)
    extra_key = {1: "first_graph_extra", 2: "second_graph_extra"}.get(nth, "")
    torch_extra = model.torch_capture.get(extra_key) if torch_program and not use_tree else None
    # measured in this program's process (a PyTorch program's probe run): torch.cuda.graph's own work and the first
    # graph's extra
    in_process = _process_torch_probe(trace) if torch_program and not use_tree else {}
    probe = _process_probe(trace) if first and torch_extra is None else None
    if torch_extra is not None and extra_key in in_process:
        extra_spread: Spread | None = _around(in_process[extra_key].median, torch_extra)
        extra_from = "this_process"
    elif torch_extra is not None:
        extra_spread = torch_extra
        extra_from = "torch_probe"
    else:
        extra_spread = ((api and model.first_graph_extra(api=True, nth=nth)) or model.first_graph_extra(nth=nth)) if nth <= 2 else None
        extra_from = "model" if extra_spread is not None else ""
        if probe is not None:
            # Measured in this very process (`graphmode run`'s probe), with the calibration probes' relative spread.
            extra_spread, extra_from = _around(probe, extra_spread), "this_process"
            notes.append(_probe_cost_note(trace.meta["first_graph_probe"]))
        elif first and api and not model.first_graph_api:
            notes.append(note("node_api_first_graph_unmeasured"))
    extra = _from_samples(rng, extra_spread, B) if extra_spread is not None else np.zeros(B)
    if first and extra_spread is None:
        notes.append(note("first_graph_unmeasured"))
    if nth == 2 and extra_spread is not None:
        notes.append(note("second_graph_extra", extra_ns=extra_spread.median))
    # A PyTorch program captures through torch.cuda.graph or cudagraph trees (where the trace shows it uses them),
    # which add their own work around the capture: the process's first costs far more than later ones
    # (docs/metrics.md). Its replays go through PyTorch too: torch.cuda.CUDAGraph.replay, or a tree's call.
    # For trees, 'first' is the process's first tree recording (whatever graphs came before it): the tree's own
    # set-up is what makes it dearer (tracer.calibrate.tree_probe).
    fw_table = (model.tree_capture if use_tree else model.torch_capture) if torch_program else {}
    fw_first = not any(t < region.wall_start for t in tree_starts) if use_tree and nth_graph is None else first
    fw_spread = fw_table.get("first" if fw_first else "later") or (fw_table.get("first") if use_tree else None)
    if (fw_key := "first" if fw_first else "later") in in_process:
        fw_spread = _around(in_process[fw_key].median, fw_spread)
        waited = _torch_probe_waited(trace) if fw_first else None
        notes.append(_probe_cost_note(trace.meta["first_graph_probe"], in_process[fw_key].median, fw_first, waited))
    else:
        waited = None
    if trees and not model.tree_capture:
        notes.append(note("trees_unmeasured"))
    fw = _from_samples(rng, fw_spread, B) if fw_spread is not None else np.zeros(B)
    if waited is not None and fw_spread is not None and fw_spread.median > 0:
        # A cold process's first capture: its work is the figure; one draw in (samples + 1) is the figure as measured
        # (the work's draw scaled to it), so the interval's upper end reaches it while its lower end stays the work's.
        cold = rng.random(B) < 1.0 / (len(fw_spread.samples) + 1)
        fw = np.where(cold, fw * (waited[2] / fw_spread.median), fw)
    one_point = (cap_point + c["instantiate"].mean(gcounts) + c["upload"].mean(gcounts) + c["first_launch_excess"].mean(gcounts)
                 + (extra_spread.median if extra_spread is not None else 0.0) + (fw_spread.median if fw_spread is not None else 0.0))
    one_draw = cap_draw + np.maximum(inst, 0.0) + np.maximum(upl, 0.0) + exc + extra + fw
    if extra_spread is not None and one_point > 0 and extra_spread.median >= FIRST_GRAPH_SHARE_NOTE * one_point:
        notes.append(note("first_graph_share", extra_ns=extra_spread.median, one_time_ns=one_point,
                          in_this_process=extra_from == "this_process", first=first))

    # Replay: GPU span = the critical path's eager durations + the model's overhead of the path's nodes, of the nodes
    # beside it and of the wide kernels there (which take SMs from the path), never less than the path itself.
    ov = c["replay_gpu_overhead"]
    span_point = max(path_dur + ov.mean(path_counts), path_dur)
    span_draw = np.maximum(span_point + ov.sd(path_counts, scale=span_point) * rng.standard_normal(B), path_dur)
    # The host's part: the model's cuGraphLaunch (+ synchronize), or PyTorch's replay where the program replays
    # through it (measured by the cost model's PyTorch probes): a tree's call is its host floor either way.
    tree_call = model.tree_capture.get("call_host") if trees else None
    torch_host = model.torch_capture.get("replay_host" if synchronized else "replay_call") if torch_program else None
    host_spread = tree_call or torch_host
    if host_spread is not None:
        host_draw, host_point = _from_samples(rng, host_spread, B), host_spread.median
    else:
        hq = c["replay_host" if synchronized else "launch_call"]
        host_point = hq.mean(gcounts)
        host_draw = _normal(rng, host_point, hq.sd(gcounts), B)
    if synchronized:
        t_g_draw = host_draw + span_draw
        t_g = host_point + span_point
    else:
        t_g_draw = np.maximum(host_draw, span_draw)
        t_g = max(host_point, span_point)
    if tree_call is not None:
        notes.append(note("tree_call_host", call_ns=tree_call.median))
    saved_draw = t_e_draw - t_g_draw
    saved = t_e - t_g
    low, high, high_never = replay_interval(replays_per_draw(one_draw, saved_draw))
    never = saved <= 0
    bound, both = _eager_bound(trace, eager_run, correction_of)
    if bound and not never:
        # The eager period is one process's: the timing run's (untraced, but another process than the one the graph
        # would run in: on the lent H200 one process ran a loop 0.56-1.75x the next untraced one, benchmarks/notes/s19)
        # or the one traced run's (its tracer's calibrated cost taken off, or not calibrated). The interval allows an
        # eager period `bound` shorter (upper end) and, but for an uncorrected traced period (only ever too long),
        # that much longer (lower end), the lower end also where the upper is already "never".
        widened = high is not None or (both and low is not None)  # what the note below says was allowed for
        if high is not None:
            deflated = t_e / (1 + bound) - t_g
            wider = smallest_replays(one_point, deflated) if deflated > 0 else None
            high, high_never = (max(high, wider), False) if wider is not None else (None, True)
        if both and low is not None:
            inflated = smallest_replays(one_point, t_e * (1 + bound) - t_g)
            low = min(low, inflated) if inflated is not None else low
        if widened and eager_run in ("timing", TWO_RUNS, WINDOW):
            notes.append(note("prediction_eager_timed", slowdown_bound=bound, either_way=both, two_runs=eager_run == TWO_RUNS,
                              **({"window": True} if eager_run == WINDOW else {})))
        elif widened:
            notes.append(note("prediction_eager_one_run", slowdown_bound=bound, either_way=both,
                              **({"timing_left_out": True} if timing_left_out else {})))
    if breakers:
        notes.append(note("capture_breakers_assumed_fixed"))
    return RegionPrediction(
        **base,  # type: ignore[arg-type]
        capture=_estimate(cap_draw, cap_point), instantiate=_estimate(inst, c["instantiate"].mean(gcounts)),
        upload=_estimate(upl, c["upload"].mean(gcounts)), first_launch_excess=_estimate(exc, c["first_launch_excess"].mean(gcounts)),
        first_graph_extra=_estimate(extra, extra_spread.median) if extra_spread is not None else None,
        one_time=_estimate(one_draw, one_point), eager_period=_estimate(t_e_draw, t_e), replay_period=_estimate(t_g_draw, t_g),
        saved_per_iteration=_estimate(saved_draw, saved, floor=None), break_even=None if never else smallest_replays(one_point, saved),
        break_even_low=low, break_even_high=high, break_even_high_never=high_never, never=never, notes=tuple(notes),
        framework=_estimate(fw, fw_spread.median) if fw_spread is not None else None, build="node_api" if api else "capture",
        first_graph_from=extra_from,
    )


# The eager level of a script that built no graph where both its runs read the loop: their mean (_to_graph)
TWO_RUNS = "two_runs"


def _one_run_level(c: TracerCorrection | None, graph: EagerGraph, traced_ns: float, busy_ns: float) -> float | None:
    """What the one traced run read of a region's eager period (`traced_ns`, its median), less what its tracing added to
    an iteration: each of the region's kernels at its launcher's calibrated cost (as analyzers.tracer_cost takes it off a
    period; its stamps, a few microseconds an iteration, are left in), never below the iteration's GPU busy time
    (`busy_ns`). `c`: the traced pass's correction; None where it is not the calibrated one traced run (a detail run),
    and None returned then, or where nothing was taken off."""
    if c is None:
        return None
    kernels = [str(n) for n in graph.ops.name[graph.ops.kind.astype(str) == "kernel"]]
    # priced by the region's own launcher: a loop of ATen kernels beside Inductor's graphs is PyTorch's eager launch
    framework = framework_of(kernels, c.framework in ("torch", "inductor"))
    extra = float(sum(c.per_launch(n, framework) for n in kernels))
    if extra <= 0:
        return None
    return max(traced_ns - extra, busy_ns)


def _eager_bound(trace: Trace, eager_run: str, correction_of: Callable[[int], TracerCorrection | None]) -> tuple[float, bool]:
    """(how far the prediction's eager period may be from the program's in another process, whether either way) by the
    run its level comes from: the timing run's TIMING_RUN_SLOWDOWN_BOUND either way; an untraced window's
    WINDOW_EAGER_BOUND either way; the one traced run's, its tracer's
    calibrated cost taken off, CORRECTED_SLOWDOWN_BOUND either way; as traced (not calibrated), SINGLE_CPU_BOUND, too
    long only; (0, False) for a runner's or a detail run's period (its own notes say what slowed it)."""
    if eager_run == WINDOW:  # untraced, in the same process (at another moment): as measured against other processes
        return WINDOW_EAGER_BOUND, True
    if eager_run in ("timing", TWO_RUNS):  # untraced
        return TIMING_RUN_SLOWDOWN_BOUND, True
    one_run = next((p.pass_id for p in trace.passes if p.name == eager_run), None) if eager_run in ("single", "measure") else None
    if one_run is not None:
        if correction_of(one_run) is not None:
            return CORRECTED_SLOWDOWN_BOUND, True
        return SINGLE_CPU_BOUND, False
    return 0.0, False


def _path(dist: np.ndarray, weights: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Node indices of one heaviest path (analyzers.critical_path's backtrack, on these weights)."""
    if dist.size == 0:
        return np.zeros(0, dtype=np.int64)

    return np.asarray(_backtrack(dist, weights, src, dst), dtype=np.int64)


# ---------------------------------------------------------------------------------------------- converse


def _to_eager(trace: Trace, graph_id: int, traced_id: int, traced_detail: str, wall_pass: int, model: CostModel | None,
              analysis: TraceAnalysis | None, seed: int) -> RegionPrediction | None:
    """What the replays of a graph would cost launched eagerly (a graph-only trace: XLA, or a graph
    whose eager twin is not in the trace)."""
    it = trace.sql("SELECT start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration' AND mode = 'graph' AND graph_id = ? "
                   "ORDER BY start_ns", [wall_pass, graph_id])
    wall = (it["end_ns"] - it["start_ns"]).astype(np.float64)
    if wall.size == 0:
        return None
    nodes = trace.sql("SELECT node_id, node_type FROM graph_nodes WHERE pass_id = ? AND graph_id = ?", [traced_id, graph_id])
    if nodes["node_id"].size == 0:
        return None
    types = [_NODE_TYPE.get(str(t), "") for t in nodes["node_type"]]
    counts = {k: float(types.count(k)) for k in ("kernel", "memcpy", "memset", "host", "event")}
    edges = int(trace.rows("SELECT count(*) FROM graph_edges WHERE pass_id = ? AND graph_id = ?", [traced_id, graph_id])[0][0])
    notes: list[Note] = []
    other = len(types) - int(sum(counts.values()))
    if other:
        notes.append(note("node_types_unpriced", nodes=other))
    if traced_detail == "node":
        d = node_durations(trace, traced_id, graph_id)
        gpu_serial = float(sum(d.values()))
    else:
        r = trace.rows("SELECT median(end_ns - start_ns) FROM gpu_spans WHERE pass_id = ? AND kind = 'graph' AND graph_id = ?",
                       [traced_id, graph_id])[0][0]
        gpu_serial = float(r) if r is not None else 0.0
        notes.append(note("graph_detail_eager_span"))
    tw = trace.sql("SELECT start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration' AND mode = 'graph' AND graph_id = ? "
                   "ORDER BY start_ns", [traced_id, graph_id])
    sync_t = trace.sql("SELECT start_ns FROM api_calls WHERE pass_id = ? AND category = 'sync' ORDER BY start_ns", [traced_id])["start_ns"]
    j = np.searchsorted(tw["start_ns"], sync_t, side="right") - 1  # the replay window each synchronization starts in
    inside = (j >= 0) & (sync_t < tw["end_ns"][np.clip(j, 0, None)]) if tw["start_ns"].size else np.zeros(0, dtype=bool)
    synchronized = np.unique(j[inside]).size >= 0.5 * max(tw["start_ns"].size, 1)
    label = str(trace.rows("SELECT coalesce(max(label), '') FROM graphs WHERE graph_id = ?", [graph_id])[0][0])
    cost = next((c.total_ns for c in analysis.graph_costs if c.graph_id == graph_id), None) if analysis is not None else None
    t_g = float(np.median(wall))
    base = dict(label=f"graph {graph_id} {label}".strip(), basis=note("basis_graph_replays"), direction="to_eager",
                mode="graph", graph_id=graph_id, iterations=int(wall.size), synchronized=bool(synchronized), graph=None,
                gpu_work_ns=gpu_serial, measured_one_time_ns=cost, measured_replay_ns=t_g, measured_break_even=None, breakers=())
    if model is None:
        return RegionPrediction(**base, capture=None, instantiate=None, upload=None, first_launch_excess=None,  # type: ignore[arg-type]
                                first_graph_extra=None, one_time=None, eager_period=None, replay_period=None,
                                saved_per_iteration=None, break_even=None, break_even_low=None, break_even_high=None,
                                break_even_high_never=False, never=False, notes=tuple(notes))
    c = model.costs
    ccounts = {**{k: counts[k] for k in ("kernel", "memcpy", "memset", "host")}, "record_calls": 0.0, "wait_calls": 0.0}
    if edges > len(types) - 1:
        notes.append(note("parallel_branches_unpriced"))
    B = BOOTSTRAP_RESAMPLES
    rng = np.random.default_rng(seed)
    issue_point, issue_sd = c["eager_issue"].mean(ccounts), c["eager_issue"].sd(ccounts)
    gpu_eager = gpu_serial + sum(counts[k] * model.eager_gap_ns.get(k, 0.0) for k in ("kernel", "memcpy", "memset"))
    tail = model.eager_tail
    issue = _normal(rng, issue_point, issue_sd, B)
    tail_draw = _from_samples(rng, tail, B) if synchronized and tail is not None else np.zeros(B)
    t_e_draw = np.maximum(issue, gpu_eager) + tail_draw
    t_e = max(issue_point, gpu_eager) + (tail.median if synchronized and tail is not None else 0.0)
    t_g_draw = bootstrap_medians(wall, B, rng)
    saved_draw = t_e_draw - t_g_draw
    saved = t_e - t_g
    never = saved <= 0
    low = high = None
    high_never = False
    be = None
    if cost is not None:
        low, high, high_never = replay_interval(replays_per_draw(np.full(B, cost), saved_draw))
        be = None if never else smallest_replays(cost, saved)
    else:
        notes.append(note("graph_one_time_unrecorded"))
    return RegionPrediction(
        **base,  # type: ignore[arg-type]
        capture=None, instantiate=None, upload=None, first_launch_excess=None, first_graph_extra=None,
        one_time=Estimate(cost, cost, cost) if cost is not None else None, eager_period=_estimate(t_e_draw, t_e),
        replay_period=_estimate(t_g_draw, t_g), saved_per_iteration=_estimate(saved_draw, saved, floor=None), break_even=be,
        break_even_low=low, break_even_high=high, break_even_high_never=high_never, never=never, notes=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------- input shapes

SHAPE_VALUES = ("shape", "shapes", "kernels", "recurrences")  # basis values that differ between the shapes of one step


def _shape_steps(regions: Sequence[Region]) -> list[list[Region]]:
    """The regions of each step that changes input shape (regions whose basis has `shapes`, analyzers.repetition's
    split), shape 1 first (by first iteration). A step's regions share their basis but for SHAPE_VALUES (a step of
    several repeated blocks, analyzers.repetition.shape_steps, has one block per shape)."""
    steps: dict[tuple[str, tuple[tuple[str, Any], ...]], list[Region]] = {}
    for r in regions:
        if isinstance(r.basis.get("shapes"), int):
            key = (r.basis.kind, tuple(sorted((k, v) for k, v in r.basis.values.items() if k not in SHAPE_VALUES)))
            steps.setdefault(key, []).append(r)
    return [sorted(members, key=lambda r: r.wall_start) for members in steps.values()]


def _price_shapes(trace: Trace, members: Sequence[Region], price: Callable[[Region, int | None], RegionPrediction | None]
                  ) -> list[tuple[Region, RegionPrediction]]:
    """A step's shapes priced as one graph each, as the capture advice says: its first (priced) shape as any region,
    shape k as the process's k-th graph after those instantiated before the step, with a note, so that the first-graph
    extra and PyTorch's first-capture work count once."""
    out: list[tuple[Region, RegionPrediction]] = []
    before = 0
    for r in members:  # per shape: a handful
        if not out:
            p = price(r, None)
            before = _graphs_before(trace, r.wall_start)
        else:
            nth = before + len(out) + 1
            p = price(r, nth)
            if p is not None:
                p = dataclasses.replace(p, notes=p.notes + (note("shape_later_graph", shape=len(out) + 1, nth=nth),))
        if p is not None:
            out.append((r, p))
    return out


def _shape_group(members: Sequence[tuple[Region, RegionPrediction]]) -> ShapeGroup:
    """A step that changes input shape, its shapes priced (_price_shapes): their one-time costs together, the sum of
    each graph's point and interval ends (every region's draws share one seed); the group's basis is its first shape's,
    without the shape. Memory: the sum of each shape's graph's pool (analyzers.step_memory: each graph its own pool, as
    torch.cuda.graph makes it) and the largest one's (graphs sharing one pool); unknown (with the first shape's
    reason) where a shape's is."""
    first = members[0][0].basis
    costs = [p.one_time for _, p in members]
    total = None if any(c is None for c in costs) else Estimate(
        sum(c.ns for c in costs if c is not None), sum(c.low_ns for c in costs if c is not None),
        sum(c.high_ns for c in costs if c is not None))
    mems = [p.memory for _, p in members]
    known = [m.bytes for m in mems if m is not None]
    unknown = next((p.memory_unknown for _, p in members if p.memory is None), None)
    return ShapeGroup(basis=Note(first.kind, {k: v for k, v in first.values.items() if k not in ("shape", "shapes")}),
                      labels=tuple(p.label for _, p in members),
                      shapes=n if isinstance(n := first.get("shapes"), int) else len(members), one_time=total,
                      memory_bytes=sum(known) if len(known) == len(mems) else None,
                      memory_unknown=unknown if len(known) < len(mems) else None,
                      memory_largest_bytes=max(known) if len(known) == len(mems) else None)


def _first_graph_workspaces(trace: Trace, pass_id: int, regions: Sequence[Region], out: list[RegionPrediction],
                            groups: list[ShapeGroup]) -> tuple[list[RegionPrediction], list[ShapeGroup]]:
    """The process's first graph (the earliest to-graph region with a memory figure, where no graph was instantiated
    before it) holds, besides its step, the cuBLAS workspaces its capture stream allocates: as many as the eager run
    kept (analyzers.step_memory.kept_workspaces); its shape group's totals with them."""
    by_label = {r.label: r for r in regions}
    firsts = sorted((by_label[p.label].wall_start, i) for i, p in enumerate(out)
                    if p.memory is not None and p.label in by_label and p.direction == "to_graph")
    if not firsts or _graphs_before(trace, firsts[0][0]) != 0:
        return out, groups
    i = firsts[0][1]
    said = run_entry(trace, pass_id).get("allocator_history")
    config = said.get("cublas_workspace_config") if isinstance(said, dict) else None
    size = cublas_workspace_bytes(str(trace.meta.get("compute_capability", "")), config if isinstance(config, str) else None)
    extra = kept_workspaces(trace, pass_id, size) * size
    memory = out[i].memory
    if not extra or memory is None:
        return out, groups
    first_memory = with_workspaces(memory, extra)
    out = out[:i] + [dataclasses.replace(out[i], memory=first_memory)] + out[i + 1:]
    groups = [dataclasses.replace(g, memory_bytes=g.memory_bytes + extra,
                                  memory_largest_bytes=max(g.memory_largest_bytes, first_memory.bytes))
              if out[i].label in g.labels and g.memory_bytes is not None and g.memory_largest_bytes is not None else g
              for g in groups]
    return out, groups


# ---------------------------------------------------------------------------------------------- entry point


def uses_torch(trace: Trace) -> bool:
    """The program imported torch (the tracer heard it), is a graphmode.compare of a PyTorch step, or ran ATen's
    kernels (at::native)."""
    params = trace.meta.get("params")
    return (bool(trace.meta.get("torch")) or (isinstance(params, dict) and params.get("framework") == "torch")
            or any(isinstance(r, dict) and r.get("torch") for r in trace.meta.get("runs", []) or [])
            or bool(trace.rows("SELECT count(*) FROM (SELECT 1 FROM gpu_spans WHERE kind = 'kernel' AND "
                               "name LIKE '%at6native%' LIMIT 1)")[0][0]))


def uses_trees(trace: Trace) -> bool:
    """Whether PyTorch recorded cudagraph trees (torch.compile's "reduce-overhead") in any run of the trace, as its
    hooks heard (meta.torch, meta.runs[].torch)."""
    def heard(torch: Any) -> bool:
        events = torch.get("events") if isinstance(torch, dict) else None
        return isinstance(events, dict) and "start_cudagraph_recording" in (events.get("kind") or [])

    return heard(trace.meta.get("torch")) or any(isinstance(r, dict) and heard(r.get("torch")) for r in trace.meta.get("runs", []) or [])


def pytorch_note(analysis: TraceAnalysis | None, torch_program: bool, model: CostModel | None = None,
                 priced: bool = False) -> Note | None:
    """What the predicted one-time costs say of PyTorch's own work around a capture (synchronizations, emptying
    its cache, its memory pool's bookkeeping, Python): included from the cost model's torch.cuda.graph probe
    (`priced`), or left out where the model has none; with what this trace measured where it heard cudagraph-tree
    recordings (GraphCost.framework_ns). None for a program that never imported torch (`torch_program`:
    uses_torch)."""
    spent = sorted(g.cost.framework_ns for g in (analysis.graphs if analysis is not None else ())
                   if g.cost is not None and g.cost.framework_ns is not None)
    if not spent and not torch_program:
        return None
    spread = {"spent_first_ns": spent[0] if spent else None, "spent_last_ns": spent[-1] if spent else None}
    tc = model.torch_capture if model is not None else {}
    if priced and tc:
        trees = model.tree_capture if model is not None else {}
        return note("pytorch_work_priced", gpu=model.gpu_name if model else "", **spread,
                    **_spreads(tc, "capture"), **_spreads(trees if trees.get("first") else {}, "tree"))
    return note("pytorch_work_unpriced", **spread)


def _spreads(table: dict[str, Spread], what: str) -> dict[str, tuple[float, ...]]:
    """A model's 'first' and 'later' spreads as note values: '<what>_first': (median, p10, p90), () where missing."""
    return {f"{what}_{key}": (s.median, s.p10, s.p90) if (s := table.get(key)) else () for key in ("first", "later")}


BUILDS = ("auto", "capture", "node_api")


def check_build(build: str) -> None:
    """ValueError, saying the choices, unless `build` is one of BUILDS."""
    if build not in BUILDS:
        raise ValueError(f"prediction build {build!r}: choose one of {', '.join(BUILDS)}")


def _built_by_api(trace: Trace, region: Region, traced_id: int) -> bool:
    """The graph this trace built for the region's work was made with the explicit node API (graphs.origin
    'explicit'): the region's graph, or for graphmode's runner (bench, compare) the one graph of its traced pass."""
    if region.graph_id:
        return bool(trace.rows("SELECT count(*) FROM graphs WHERE graph_id = ? AND origin = 'explicit'", [region.graph_id])[0][0])
    return region.runner and bool(trace.rows("SELECT count(*) FROM graphs WHERE pass_id = ? AND origin = 'explicit'", [traced_id])[0][0])


def predict(source: Trace | Run, analysis: TraceAnalysis | None = None, choice: ModelChoice | None = None,
            lines: Sequence[str] = (), seed: int = BOOTSTRAP_SEED, build: str = "auto") -> Prediction:
    """Graph predictions for every repeated region of the trace (module doc). `analysis`, when given,
    supplies the measured graph of each region for comparison (and `source` the command's Run, whose iterations it reads); `choice` the cost model (default: the
    installed model for the trace's GPU, analyzers.costmodel.find_model); `lines` user-named regions. `build`: how
    the predicted graphs are made, 'capture' (stream capture of the eager work), 'node_api' (the explicit node API),
    or 'auto': the node API for a region whose graph this trace built so, else a capture (a PyTorch program always
    captures)."""
    check_build(build)
    run = source if isinstance(source, Run) else build_run(source)
    trace = run.trace
    choice = choice if choice is not None else find_model(trace.meta)
    model = choice.model
    notes: list[Note] = []
    traced = trace.pass_by_detail("node", "graph")
    if analysis is not None and analysis.traced_pass_id is not None:
        # a script trace: the pass that recorded every call (the detail run), not the measuring run
        traced = next((p for p in trace.passes if p.pass_id == analysis.traced_pass_id), traced)
    timing = trace.pass_by_detail("timing")

    torch_program = uses_torch(trace)

    def result(regions: list[RegionPrediction], groups: Sequence[ShapeGroup] = ()) -> Prediction:
        if any(r.graph is not None and r.graph.event_pairing == "inferred" for r in regions):
            notes.append(EVENT_GAP_NOTE)
        priced = any(r.framework is not None for r in regions)
        if any(r.direction == "to_graph" for r in regions) and (torch_note := pytorch_note(analysis, torch_program, model, priced)) is not None:
            notes.append(torch_note)
        return Prediction(
            model_gpu=model.gpu_name if model else "", model_driver=model.driver_version if model else "",
            model_cuda=model.cuda_driver_version if model else 0, model_path=model.path if model else "",
            model_match=choice.match, model_note=choice.note, regions=tuple(regions), notes=tuple(notes), shape_groups=tuple(groups))

    if traced is None:
        notes.append(note("prediction_needs_traced_pass"))
        return result([])
    timing_id = timing.pass_id if timing is not None and trace.rows(
        "SELECT count(*) FROM markers WHERE pass_id = ? AND kind = 'iteration'", [timing.pass_id])[0][0] else None
    wall_pass = timing_id if timing_id is not None else traced.pass_id
    regions = marker_regions(run, traced.pass_id, timing_id) + nvtx_regions(trace, traced.pass_id)
    extra, line_notes = line_regions(trace, traced.pass_id, lines) if lines else ([], [])
    regions += extra
    notes += line_notes
    if len(regions) > MAX_REGIONS:
        notes.append(note("regions_truncated", regions=len(regions), limit=MAX_REGIONS))
        regions = regions[:MAX_REGIONS]
    trees = torch_program and uses_trees(trace)
    tree_starts = [w.start_ns for w in torch_windows(trace, traced.pass_id, True) if w.kind == "recording"] if trees else []
    out = []

    # each pass's tracer correction, derived once for all its regions (the one run's: its eager level and interval)
    correction_of = functools.cache(lambda pass_id: tracer_correction(trace, pass_id, model, torch_program, run.line_stamps))

    events = functools.cache(lambda: memory_events(trace, traced.pass_id))
    mallocs = functools.cache(lambda: malloc_cost(trace, traced.pass_id) if torch_program else None)

    def price(r: Region, nth: int | None = None) -> RegionPrediction | None:
        from_trace = build == "auto" and not torch_program and _built_by_api(trace, r, traced.pass_id)
        method = "node_api" if build == "node_api" or from_trace else "capture"
        # the memory its graph would hold: a PyTorch program's allocator history (analyzers.step_memory); a capture
        # allocates its pool's segments (priced in _to_graph)
        mem = step_memory(events(), r.starts, r.ends) if torch_program else None
        malloc = mallocs()
        p = _to_graph(trace, r, traced.pass_id, model, analysis, wall_pass, seed, torch_program, trees, tree_starts,
                      method, from_trace, nth, correction_of,
                      (mem.segments, malloc) if mem is not None and malloc is not None else None)
        if p is None or p.direction != "to_graph":
            return p
        return dataclasses.replace(p, memory=mem, memory_unknown=None if mem is not None else
                                   memory_unknown(events(), torch_program))

    # a step that changes input shape: one graph per shape, shape k priced as the process's k-th graph
    steps = _shape_steps(regions)
    shaped = [_price_shapes(trace, members, price) for members in steps]
    groups = [_shape_group(members) for members in shaped if members]
    in_steps = {id(r) for members in steps for r in members}
    by_region = {id(r): p for members in shaped for r, p in members}
    for r in regions:  # per region: at most MAX_REGIONS
        if (p := by_region.get(id(r)) if id(r) in in_steps else price(r)) is not None:
            out.append(p)
    out, groups = _first_graph_workspaces(trace, traced.pass_id, regions, out, groups)
    # The converse, for graphs replayed with no eager twin in the trace (the runner's graph always has one).
    if not any(r.runner for r in regions):
        twinned = {r.graph_id for r in regions}
        for (gid,) in trace.rows("SELECT DISTINCT graph_id FROM markers WHERE pass_id = ? AND kind = 'iteration' AND mode = 'graph' "
                                 "AND graph_id <> 0 ORDER BY graph_id", [wall_pass]):
            if int(gid) in twinned:
                continue
            p = _to_eager(trace, int(gid), traced.pass_id, traced.detail, wall_pass, model, analysis, seed)
            if p is not None:
                out.append(p)
    if not out and trace.rows("SELECT count(*) FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' AND graph_id = 0",
                                  [traced.pass_id])[0][0]:
        to_graph = [r for r in regions if r.mode != "graph"]
        if to_graph and not trace.rows("SELECT count(*) FROM (SELECT 1 FROM api_calls WHERE pass_id = ? AND category = "
                                       "'kernel_launch' LIMIT 1)", [traced.pass_id])[0][0]:
            # the step was found (from its kernels), but the pass recorded no launch call to build its graph from: the
            # one traced run alone (--runs 1, one rank of a job) keeps only the graph lifecycle's and synchronizations'
            r = max(to_graph, key=lambda r: r.starts.size)
            notes.append(note("prediction_needs_launch_records", region=r.label, iterations=int(r.starts.size),
                              pass_name=traced.name))
        else:
            notes.append(NO_REGION_NOTE)
    return result(out, groups)
