"""The graphs of a user's script and their one-time operations, across the runs of `graphmode run`.

A script trace has one pass per run. The **structure** (which graphs exist, their topology and kernel
sequence, the line that captured or built them) comes from the pass recorded with CUPTI callbacks;
the **timing** (replays, eager work, capture/instantiate/upload durations) from the measuring run,
which has no callbacks and therefore no graph ids of its own: its GPU records carry the CUPTI id of
the executable graph, and its lifecycle calls are bare API records. Both are mapped onto the
structure pass:

- executable ids: CUPTI numbers graphs and executables from one counter in creation order, so a
  program that builds the same graphs in the same order gets the same ids in both runs (seen with
  PyTorch, CuPy, JAX and Triton). An id of the measuring run that the structure pass does
  not know is left unmapped and reported as a graph of unknown origin;
- lifecycle calls: the k-th capture (instantiate, upload, update) of the measuring run is the k-th of
  the structure pass; where the counts differ, the runs did different things and the one-time costs
  of the measuring run are not attributed (a note says so).
A trace with a single pass (a region traced with `graphmode.trace`, `--runs 1`, older recordings) is
its own structure and timing pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.timing_run import timing_run_one_time
from graphmode.analyzers.torch_windows import TorchWindow, run_entry, torch_windows, untraced_capture_graphs
from graphmode.tracer.lifecycle import lifecycle_calls
from graphmode.tracer.store import PassInfo, Trace

@dataclass(frozen=True)
class GraphStructure:
    """One graph the program built, as the structure pass recorded it."""

    graph_id: int
    exec_ids: tuple[int, ...]
    origin: str  # 'capture' | 'explicit' | 'unknown'
    label: str
    site: str  # 'file:line function' of the capture/build call ('' unknown)
    num_nodes: int
    kernels: tuple[str, ...]  # kernel node names in node order (capture order)
    unit: tuple[str, ...]  # the shortest sequence the kernels repeat (one eager iteration's work)
    units_per_replay: int  # len(kernels) / len(unit)


@dataclass(frozen=True)
class LifecycleCall:
    """A capture, explicit build, instantiate, upload or update in the timing pass, attributed to a graph."""

    graph_id: int  # structure-pass graph id; 0 when it could not be attributed
    event: str
    start_ns: int
    end_ns: int
    thread_id: int
    correlation_id: int


@dataclass(frozen=True)
class ScriptGraphs:
    structure_pass: int
    timing_pass: int
    graphs: tuple[GraphStructure, ...]
    exec_to_graph: dict[int, int]  # timing-pass graph/exec id on GPU records -> structure graph id
    lifecycle: tuple[LifecycleCall, ...]  # timing pass, by start
    notes: tuple[Note, ...] = field(default_factory=tuple)
    structure_recorded: bool = True  # a pass recorded the graphs (CUPTI callbacks): names, topology, lines
    # (start, end) of each cudagraph-tree recording or torch.cuda.graph block in the timing pass (PyTorch's own
    # work around the capture)
    recordings: tuple[tuple[int, int], ...] = ()
    # the same windows as the timing run (no CUPTI) heard them, in the same order (its own clock: durations only);
    # () when it heard none or not as many
    untraced_recordings: tuple[tuple[int, int], ...] = ()
    # per window: 'recording' (cudagraph trees) or 'block' (torch.cuda.graph)
    recording_kinds: tuple[str, ...] = ()
    # per window: the script's statement around it as the timing run timed it (analyzers.timing_run.RecordingCall),
    # None where it could not; () without a timing run that heard the windows
    recording_calls: tuple[Any, ...] = ()
    # graph -> its capture through instantiation outside PyTorch, as the timing run timed it
    # (analyzers.timing_run.CaptureSpan)
    capture_spans: dict[int, Any] = field(default_factory=dict)
    # the timing pass recorded a graph being built (a capture, a node added, an instantiation; linked to a graph or
    # not): False where every graph it replayed was built before tracing started (a region traced later). Its lifecycle
    # (and so every graph's one_time_parts) is then empty too.
    builds_recorded: bool = True
    # (start, end) of what the one traced run spent detaching and attaching CUPTI inside the program's capture block,
    # and running its own empty graph (its untraced capture, tracer.untraced_windows.CaptureController): the tracer's,
    # not the program's; left out of every lifecycle call, window and statement that holds it
    tracer_gaps: tuple[tuple[int, int], ...] = ()
    # the graphs whose capture (through PyTorch's capture_end: its end and instantiation) ran with CUPTI detached
    untraced_captures: frozenset[int] = frozenset()
    # of those, the ones that took a window's lingering detached state over (tracer.untraced_windows)
    adopted_captures: frozenset[int] = frozenset()

    def graph(self, graph_id: int) -> GraphStructure | None:
        return next((g for g in self.graphs if g.graph_id == graph_id), None)

    def gaps_in(self, start: int, end: int) -> float:
        """How much of [start, end] the tracer spent detaching and attaching CUPTI (ns)."""
        return float(sum(max(0, min(end, g1) - max(start, g0)) for g0, g1 in self.tracer_gaps))


_T = TypeVar("_T")


def primitive_root(seq: tuple[_T, ...]) -> tuple[_T, ...]:
    """The shortest u with seq == u * k (an unrolled loop's body: Triton's do_bench_cudagraph captures
    the call it times many times over)."""
    n = len(seq)
    for p in range(1, n // 2 + 1):
        if n % p == 0 and seq[:p] * (n // p) == seq:
            return seq[:p]
    return seq


def choose_passes(trace: Trace) -> tuple[PassInfo | None, PassInfo | None]:
    """(structure pass, timing pass) of a script trace: the pass named 'measure' (or 'single', `graphmode run`'s one
    traced run, where a detail run followed it) times, the pass named 'detail' (or 'single', or the only traced pass)
    gives the structure."""
    traced = [p for p in trace.passes if p.detail in ("graph", "node")]
    if not traced:
        return None, None
    measure = next((p for p in traced if p.name == "measure"), None)
    detail = next((p for p in traced if p.name == "detail"), None) or next((p for p in traced if p.name == "single"), None)
    if measure is None and detail is not None and detail.name == "detail":
        measure = next((p for p in traced if p.name == "single"), None)
    if measure is not None and detail is not None:
        return detail, measure
    only = measure or detail or traced[0]
    return only, only


def _has_callbacks(trace: Trace, pass_id: int) -> bool:
    """Whether the pass recorded graph resource callbacks (its graphs table holds graphs it saw built)."""
    n = trace.rows("SELECT count(*) FROM graphs WHERE pass_id = ? AND origin <> 'unknown'", [pass_id])[0][0]
    m = trace.rows("SELECT count(*) FROM graph_events WHERE pass_id = ? AND event <> 'launch'", [pass_id])[0][0]
    return bool(n or m)


def _structures(trace: Trace, pass_id: int) -> list[GraphStructure]:
    rows = trace.rows(
        """SELECT g.graph_id, g.exec_id, g.origin, g.label, g.num_nodes,
                  coalesce((SELECT list(name ORDER BY node_index) FROM graph_nodes n
                            WHERE n.pass_id = g.pass_id AND n.graph_id = g.graph_id AND n.node_type = 'kernel'), []) AS kernels,
                  (SELECT list(DISTINCT exec_id) FROM graph_events e WHERE e.pass_id = g.pass_id AND e.graph_id = g.graph_id
                      AND e.exec_id <> 0) AS execs,
                  (SELECT a.source FROM graph_events e JOIN api_calls a ON a.pass_id = e.pass_id AND a.correlation_id = e.correlation_id
                      WHERE e.pass_id = g.pass_id AND e.graph_id = g.graph_id AND e.event IN ('capture', 'instantiate')
                      AND a.source <> '' ORDER BY e.start_ns LIMIT 1) AS site,
                  (SELECT n.source FROM graph_nodes n WHERE n.pass_id = g.pass_id AND n.graph_id = g.graph_id AND n.source <> ''
                      ORDER BY n.node_index LIMIT 1) AS node_site
           FROM graphs g WHERE g.pass_id = ? ORDER BY g.graph_id""", [pass_id])
    out = []
    for gid, exec_id, origin, label, num_nodes, kernels, execs, site, node_site in rows:
        seq = tuple(str(k) for k in (kernels or ()))
        unit = primitive_root(seq) if seq else ()
        exec_ids = tuple(sorted({int(x) for x in (execs or ())} | ({int(exec_id)} if exec_id else set())))
        out.append(GraphStructure(
            graph_id=int(gid), exec_ids=exec_ids, origin=str(origin), label=str(label), site=str(site or node_site or ""),
            num_nodes=int(num_nodes), kernels=seq, unit=unit, units_per_replay=len(seq) // len(unit) if unit else 1))
    return out


def _bare_lifecycle(trace: Trace, pass_id: int) -> list[tuple[str, int, int, int, int]]:
    """(event, start, end, thread, correlation) of the outermost lifecycle API calls of a pass without
    callbacks; a capture runs from a BeginCapture to the next EndCapture on the same thread."""
    api = trace.sql("SELECT * FROM api_calls WHERE pass_id = ? AND category IN ('capture', 'instantiate', 'upload', "
                    "'update', 'graph_destroy', 'graph_build') ORDER BY start_ns", [pass_id])
    if not api["name"].size:
        return []
    builds = api["category"] == "graph_build"
    calls = lifecycle_calls({k: v[~builds] for k, v in api.items()})
    names = calls["name"].astype(str)
    out: list[tuple[str, int, int, int, int]] = []
    open_capture: dict[int, tuple[int, int]] = {}
    for i in np.argsort(calls["start_ns"], kind="stable"):  # lifecycle calls: a few per graph
        cat, tid = str(calls["category"][i]), int(calls["thread_id"][i])
        s, e, corr = int(calls["start_ns"][i]), int(calls["end_ns"][i]), int(calls["correlation_id"][i])
        if cat == "capture":
            if "BeginCapture" in names[i]:
                open_capture[tid] = (s, corr)
            elif "EndCapture" in names[i] and tid in open_capture:
                s0, c0 = open_capture.pop(tid)
                out.append(("capture", s0, e, tid, c0))
        elif cat in ("instantiate", "upload"):
            out.append((cat, s, e, tid, corr))
        elif cat == "update" and "ExecUpdate" in names[i]:
            out.append(("update", s, e, tid, corr))
    # explicit builds: from a cuGraphCreate to the last node added on that thread before the next instantiate
    if builds.any():
        b = {k: v[builds] for k, v in api.items()}
        bn = b["name"].astype(str)
        inst = sorted((s, tid) for ev, s, _, tid, _ in out if ev == "instantiate")
        for i in np.flatnonzero(np.char.find(bn.astype(str), "GraphCreate") >= 0):
            tid, s = int(b["thread_id"][i]), int(b["start_ns"][i])
            nxt = next((t0 for t0, t in inst if t == tid and t0 >= s), None)
            inside = (b["thread_id"] == tid) & (b["start_ns"] >= s) & ((b["start_ns"] < nxt) if nxt is not None else True)
            out.append(("build", s, int(b["end_ns"][inside].max()), tid, int(b["correlation_id"][i])))
    out.sort(key=lambda r: r[1])
    return out


def script_graphs(trace: Trace, timing_pass: int | None = None,
                  stamps_of: Callable[[int], dict[str, np.ndarray]] | None = None) -> ScriptGraphs | None:
    """The graphs of a script trace mapped onto its timing pass (default: the measuring run; None
    without a traced pass). `stamps_of`: reads a pass's line stamps (default: from the trace)."""
    structure, timing = choose_passes(trace)
    if timing_pass is not None:
        timing = next((p for p in trace.passes if p.pass_id == timing_pass), None)
    if structure is None or timing is None:
        return None
    s_id, t_id = structure.pass_id, timing.pass_id
    graphs = _structures(trace, s_id)
    known = [g for g in graphs if g.origin != "unknown"]
    notes: list[Note] = []
    exec_to_graph: dict[int, int] = {}
    for g in graphs:
        exec_to_graph[g.graph_id] = g.graph_id
        for x in g.exec_ids:
            exec_to_graph.setdefault(x, g.graph_id)
    lifecycle: list[LifecycleCall] = []
    if s_id == t_id or _has_callbacks(trace, t_id):
        rows = trace.rows("SELECT graph_id, event, start_ns, end_ns, thread_id, correlation_id FROM graph_events "
                          "WHERE pass_id = ? AND event IN ('capture', 'build', 'instantiate', 'upload', 'update') "
                          "ORDER BY start_ns", [t_id])
        lifecycle = [LifecycleCall(int(g), str(e), int(s), int(en), int(t), int(c)) for g, e, s, en, t, c in rows]
    else:
        bare = _bare_lifecycle(trace, t_id)
        ref = trace.rows("SELECT graph_id, event FROM graph_events WHERE pass_id = ? AND event IN "
                         "('capture', 'build', 'instantiate', 'upload', 'update') ORDER BY start_ns", [s_id])
        # the k-th of each kind is the k-th of the structure pass
        for event in ("capture", "build", "instantiate", "upload"):
            mine = [r for r in bare if r[0] == event]
            theirs = [int(g) for g, e in ref if e == event]
            if len(mine) != len(theirs) and (mine or theirs):
                notes.append(note("build_mismatch", event=event, measured_calls=len(mine), detail_calls=len(theirs)))
            for k, (ev, s, e, tid, corr) in enumerate(mine):
                lifecycle.append(LifecycleCall(theirs[k] if k < len(theirs) else 0, ev, s, e, tid, corr))
        lifecycle.sort(key=lambda c: c.start_ns)
        launched = {int(r[0]) for r in trace.rows("SELECT DISTINCT graph_id FROM gpu_spans WHERE pass_id = ? AND graph_id <> 0", [t_id])}
        unknown = sorted(launched - set(exec_to_graph))
        if unknown and known:
            notes.append(note("unknown_executables", count=len(unknown), graph_ids=tuple(unknown[:5])))
    # a run made with callbacks recorded whatever graphs there were, none included (an eager-only script)
    recorded = _has_callbacks(trace, s_id) or bool((run_entry(trace, s_id).get("config") or {}).get("callbacks"))
    if not recorded:
        notes.append(note("no_detail_run"))
    heard_windows = torch_windows(trace, t_id, callbacks_pass=s_id == t_id or _has_callbacks(trace, t_id))
    windows = tuple((w.start_ns, w.end_ns) for w in heard_windows)
    heard: tuple[TorchWindow, ...] = ()
    timing = trace.pass_by_detail("stamps")
    if windows and timing is not None:
        heard = torch_windows(trace, timing.pass_id, callbacks_pass=False)
        if len(heard) != len(windows):
            if heard:
                notes.append(note("capture_windows_mismatch", timing_windows=len(heard), measured_windows=len(windows)))
            heard = ()
    untraced = tuple((w.start_ns, w.end_ns) for w in heard)
    calls: tuple[Any, ...] = ()
    spans: dict[int, Any] = {}
    if timing is not None and s_id != t_id:
        calls, spans = timing_run_one_time(trace, s_id, timing.pass_id, heard, stamps_of=stamps_of)
    gaps, detached = untraced_captures(trace, t_id)
    return ScriptGraphs(s_id, t_id, tuple(graphs), exec_to_graph, tuple(lifecycle), tuple(notes), recorded, windows, untraced,
                        tuple(w.kind for w in heard_windows), calls, spans, bool(lifecycle) or builds_recorded(trace, t_id),
                        gaps, detached, untraced_capture_graphs(trace, t_id, adopted=True))


def untraced_captures(trace: Trace, pass_id: int) -> tuple[tuple[tuple[int, int], ...], frozenset[int]]:
    """(the tracer's spans around them, the graphs captured untraced) of the pass's untraced captures (its entry in
    meta.runs, 'untraced_captures'; tracer.untraced_windows.CaptureController). ((), ∅) where it made none. The spans:
    the detach, and the attach with graphmode's own graph, each widened over PyTorch's hooks' memory sample next to it
    where the trace has it (own_start_ns, own_end_ns: traces from session 33 on)."""
    entry = run_entry(trace, pass_id).get("untraced_captures") or {}
    gaps: list[tuple[int, int]] = []
    for c in entry.get("captures") or []:
        start, end = int(c.get("own_start_ns", c["detach_start_ns"])), int(c.get("own_end_ns", c["attach_end_ns"]))
        gaps += [(min(start, int(c["detach_start_ns"])), int(c["begin_ns"])),
                 (int(c["end_ns"]), max(end, int(c["attach_end_ns"])))]
    return tuple(gaps), untraced_capture_graphs(trace, pass_id)


def builds_recorded(trace: Trace, pass_id: int) -> bool:
    """Whether the pass recorded a graph being built: a capture, a node added, an instantiation or upload, linked to
    a graph (graph_events) or not (the API call alone, as a measuring run without callbacks records it). False where
    every graph it replayed was built before tracing started (a region traced later)."""
    return bool(trace.rows(
        "SELECT (SELECT count(*) FROM graph_events WHERE pass_id = ? AND event IN ('capture', 'build', 'instantiate', "
        "'upload')) + (SELECT count(*) FROM api_calls WHERE pass_id = ? AND category IN ('capture', 'graph_build', "
        "'instantiate', 'upload'))", [pass_id, pass_id])[0][0])


def one_time_parts(sg: ScriptGraphs, graph_id: int) -> dict[str, Any]:
    """Durations (ns) of the graph's capture, build, instantiate and upload calls in the timing pass
    (summed when there are several), and how many of each; 'recordings': the (start, end) of each
    cudagraph-tree recording or torch.cuda.graph block whose first capture is this graph's ('recording_kinds':
    'recording' or 'block' each); 'untraced_recordings': the same windows in the timing run, where it heard them
    all; 'recording_calls': the statements around them as the timing run timed them (RecordingCall or None each)."""
    parts: dict[str, Any] = {}
    for c in sg.lifecycle:
        if c.graph_id == graph_id and c.event != "update":
            parts[c.event] = parts.get(c.event, 0.0) + float(c.end_ns - c.start_ns) - sg.gaps_in(c.start_ns, c.end_ns)
            parts[c.event + "_count"] = parts.get(c.event + "_count", 0) + 1
    mine, untraced, kinds, calls = [], [], [], []
    for k, (w0, w1) in enumerate(sg.recordings):
        first = next((c for c in sg.lifecycle if c.event in ("capture", "build") and w0 <= c.start_ns <= w1), None)
        if first is not None and first.graph_id == graph_id:
            mine.append((w0, w1))
            kinds.append(sg.recording_kinds[k] if k < len(sg.recording_kinds) else "")
            if sg.untraced_recordings:
                untraced.append(sg.untraced_recordings[k])
            if sg.recording_calls:
                calls.append(sg.recording_calls[k])
    if mine:
        parts["recordings"] = mine
        parts["recording_kinds"] = kinds
    if untraced:
        parts["untraced_recordings"] = untraced
    if calls:
        parts["recording_calls"] = calls
    return parts


def recording_work(sg: ScriptGraphs, window: tuple[int, int]) -> float:
    """What the CUDA calls of a recording window cost (ns): its captures, builds, instantiations and uploads,
    of any graph (what is left of the window is PyTorch's own work around them)."""
    w0, w1 = window
    return float(sum(c.end_ns - c.start_ns - sg.gaps_in(c.start_ns, c.end_ns) for c in sg.lifecycle
                     if c.event in ("capture", "build", "instantiate", "upload") and w0 <= c.start_ns <= w1))
