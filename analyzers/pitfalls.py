"""Diagnostics: the problems people hit with CUDA Graphs, each with its evidence, source line and advice.

`find_pitfalls(run, analysis)` reads the traced pass; the rules and thresholds are in
docs/metrics.md ("Diagnostics"). Graph-level loops only: every per-event step is SQL or numpy.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphmode.analyzers.break_even import smallest_replays
from graphmode.analyzers.diagnostics_common import _user_frame
from graphmode.analyzers.inference import graph_replays
from graphmode.analyzers.notes import note
from graphmode.analyzers.periods import _split
from graphmode.analyzers.results import Pitfall, TraceAnalysis
from graphmode.analyzers.run import Run
from graphmode.analyzers.torch_diagnostics import torch_pitfalls
from graphmode.analyzers.torch_windows import run_entry
from graphmode.tracer.store import Trace

# CUresult / cudaError_t values of a broken stream capture, 900-908 (identical in the driver and the runtime;
# reports/pitfall_words.py names each)
CAPTURE_ERROR_CODES = range(900, 909)
INVALIDATED = 901
# gaps between replays are reported once they eat this share of what replays could save
GAP_SHARE_REPORTED = 0.5


def _source_column(trace: Trace) -> str:
    """api_calls.source where the trace has it (script traces), else ''."""
    n = trace.rows("SELECT count(*) FROM information_schema.columns WHERE table_name = 'api_calls' AND column_name = 'source'")
    return "source" if n[0][0] else "''"




def _capture_failures(trace: Trace, pass_id: int | None, t0: int) -> list[Pitfall]:
    exc = (trace.meta.get("script") or {}).get("exception") or {}
    raised = f"{exc.get('type', '')}: {exc.get('message', '')}".strip(": ") if exc else ""
    rows: list[tuple[Any, ...]] = []
    if pass_id is not None:
        rows = trace.rows(
            f"SELECT name, return_code, start_ns, category, {_source_column(trace)} AS source FROM api_calls "
            f"WHERE pass_id = ? AND return_code BETWEEN 900 AND 908 ORDER BY start_ns", [pass_id])
    user = _user_frame(trace)
    # the one run's untraced capture (tracer.untraced_windows.CaptureController): it ran with CUPTI detached through
    # PyTorch's capture_end, so the call that broke it is not recorded, only what capture_begin or capture_end raised
    failed = [c for c in (run_entry(trace, pass_id).get("untraced_captures") or {}).get("captures") or []
              if str(c.get("reason", "")).endswith("_failed")] if pass_id is not None else []
    if failed and not rows:
        return [Pitfall("capture_failed", "error", note("capture_failed_unrecorded", raised=raised or str(
            failed[0].get("error", "")), untraced_capture=True), user)]
    if not rows:
        if raised and "captur" in raised.lower():
            return [Pitfall("capture_failed", "error", note("capture_failed_unrecorded", raised=raised,
                                                            untraced_capture=False), user)]
        return []
    invalidated = sum(1 for r in rows if r[1] == INVALIDATED)
    culprits = [r for r in rows if r[1] != INVALIDATED] or rows[:1]
    groups: dict[tuple[str, int, str], list[tuple[Any, ...]]] = {}
    for r in culprits:  # failing calls: a handful
        groups.setdefault((str(r[0]), int(r[1]), str(r[4] or "")), []).append(r)
    out = []
    for (name, code, source), calls in groups.items():
        first = calls[0]
        begin = trace.rows(
            f"SELECT start_ns, {_source_column(trace)} FROM api_calls WHERE pass_id = ? AND name LIKE '%BeginCapture%' "
            "AND start_ns <= ? ORDER BY start_ns DESC LIMIT 1", [pass_id, int(first[2])])
        facts = note("capture_failed", call=name, code=code, calls=len(calls), first_at_ns=int(first[2]) - t0,
                     capture_begun_at_ns=int(begin[0][0]) - t0 if begin else None,
                     capture_begun_by=str(begin[0][1] or "") if begin else "",
                     invalidated=invalidated if code != INVALIDATED else 0, raised=raised, raised_at=user,
                     category=str(first[3]))
        out.append(Pitfall("capture_failed", "error", facts, source or user))
    return out


def _repeated_instantiation(trace: Trace, pass_id: int, t_run: float) -> list[Pitfall]:
    """Graphs of one kernel sequence instantiated more than once in the pass."""
    sigs = dict(trace.rows(
        "SELECT graph_id, list(name ORDER BY node_index) FILTER (WHERE node_type = 'kernel') FROM graph_nodes "
        "WHERE pass_id = ? GROUP BY graph_id", [pass_id]))
    src = _source_column(trace)
    events = trace.rows(
        f"SELECT e.graph_id, e.event, e.end_ns - e.start_ns, coalesce(a.source, '') FROM graph_events e "
        # only the calls of lifecycle events: grouping all of a 5 M-call pass by correlation id cost ~0.7 s
        f"LEFT JOIN (SELECT correlation_id, max({src}) AS source FROM api_calls WHERE pass_id = ? AND correlation_id IN "
        "(SELECT correlation_id FROM graph_events WHERE pass_id = ? AND correlation_id <> 0) GROUP BY correlation_id) a "
        "ON e.correlation_id <> 0 AND a.correlation_id = e.correlation_id "
        "WHERE e.pass_id = ? AND e.event IN ('capture', 'build', 'instantiate', 'upload') ORDER BY e.start_ns",
        [pass_id, pass_id, pass_id])
    by_sig: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for row in events:  # lifecycle rows: a few per graph
        key = tuple(sigs.get(row[0]) or ()) or (f"graph {row[0]}",)
        by_sig.setdefault(key, []).append(row)
    out = []
    for key, rows in by_sig.items():
        inst = [r for r in rows if r[1] == "instantiate"]
        if len(inst) < 2:
            continue
        graphs = list(dict.fromkeys(int(r[0]) for r in rows))
        first_graph = graphs[0]
        build = sum(float(r[2]) for r in rows if r[1] in ("capture", "build") and r[0] != first_graph)
        uploads = [r for r in rows if r[1] == "upload"]
        inst_cost = sum(float(r[2]) for r in inst[1:])
        upload_cost = sum(float(r[2]) for r in uploads[1:])
        cost = build + inst_cost + upload_cost
        sources = Counter(str(r[3]) for r in inst[1:] if r[3])
        facts = note("repeated_instantiation", kernels=len(key), kernel_names=key[:3], instantiations=len(inst),
                     graphs=len(graphs), graph_ids=tuple(graphs[:6]), cost_ns=cost, build_ns=build,
                     instantiate_ns=inst_cost, upload_ns=upload_cost, run_ns=t_run)
        out.append(Pitfall("repeated_instantiation", "warning", facts, sources.most_common(1)[0][0] if sources else "",
                           graph_id=graphs[0], cost_ns=cost))
    return out


@dataclass(frozen=True)
class _Subject:
    """One eager-vs-graph comparison: a graph (graph_id) or, for bench traces, the run's graphs together (0)."""

    graph_id: int
    eager_ns: float
    graph_ns: float
    eager_n: int
    graph_n: int
    one_time_ns: float | None
    replays_done: int
    replays_needed: int | None  # None: never or unknown
    basis: str  # where replays_needed comes from: 'graph_periods' (the graph's own) or 'analysis' (a bench trace's)


def _subjects(trace: Trace, a: TraceAnalysis) -> list[_Subject]:
    """Script traces: each replayed graph with an eager baseline (analysis.graphs). Bench traces: the
    analysis's own break-even (their eager iterations carry no graph id)."""
    if a.graphs:
        out = []
        for g in a.graphs:  # per graph
            b = g.break_even
            if g.status != "replayed" or b is None or b.eager_ns is None or b.graph_ns is None:
                continue
            if b.basis == "predicted":  # no eager iteration ran: the headline states the predicted verdict, marked so
                continue
            out.append(_Subject(g.graph_id, b.eager_ns, b.graph_ns, g.eager.iterations if g.eager else 0,
                                g.graph.iterations if g.graph else 0, b.one_time_ns, g.replays, b.replays,
                                "graph_periods"))
        return out
    b = a.primary_break_even()
    if b is None or b.eager_ns is None or b.graph_ns is None:
        return []
    base_mode, graph_mode = a.mode(b.baseline), a.mode("graph")
    return [_Subject(0, b.eager_ns, b.graph_ns, base_mode.iterations if base_mode else 0, graph_mode.iterations if graph_mode else 0,
                     b.one_time_ns, b.run_replays, b.replays, "analysis")]


def _payback_and_speed(subjects: list[_Subject]) -> list[Pitfall]:
    out = []
    for s in subjects:
        saved = s.eager_ns - s.graph_ns
        if saved <= 0:
            facts = note("graph_slower", graph_id=s.graph_id, graph_ns=s.graph_ns, graph_n=s.graph_n, eager_ns=s.eager_ns,
                         eager_n=s.eager_n, one_time_ns=s.one_time_ns)
            out.append(Pitfall("graph_slower", "warning", facts, "", graph_id=s.graph_id, cost_ns=-saved * s.replays_done))
        elif s.replays_needed is not None and s.replays_done < s.replays_needed and s.one_time_ns is not None:
            loss = s.one_time_ns - s.replays_done * saved
            facts = note("never_paid_back", graph_id=s.graph_id, replays=s.replays_done, eager_ns=s.eager_ns, graph_ns=s.graph_ns,
                         replays_needed=s.replays_needed, one_time_ns=s.one_time_ns, basis=s.basis, lost_ns=loss)
            out.append(Pitfall("never_paid_back", "warning", facts, "", graph_id=s.graph_id, cost_ns=loss))
    return out


def _gaps_between_replays(run: Run, a: TraceAnalysis, subjects: list[_Subject]) -> list[Pitfall]:
    """Replays of a graph in a row (analyzers.periods: one stretch), and the GPU idle time between them."""
    trace = run.trace
    sg = run.script_graphs() if a.graphs else run.script_graphs(timing_pass=a.traced_pass_id)
    if sg is None:
        return []
    pid = sg.timing_pass
    breaks = np.array([c.start_ns for c in sg.lifecycle if c.event in ("capture", "build", "instantiate")], dtype=np.int64)
    src = _source_column(trace)
    sync = trace.sql(
        f"SELECT start_ns, end_ns, name, {src} AS source, api = 'runtime' AS rt FROM api_calls WHERE pass_id = ? AND "
        "(category = 'sync' OR (category = 'memcpy' AND name NOT LIKE '%Async%')) ORDER BY start_ns", [pid])
    # a runtime call and the driver call inside it are one wait: cite runtime calls where there are any
    keep = sync["rt"] if sync["rt"].any() else np.ones(sync["rt"].size, dtype=bool)
    s_start, s_dur = sync["start_ns"][keep].astype(np.int64), (sync["end_ns"] - sync["start_ns"])[keep].astype(np.int64)
    s_name, s_src = sync["name"][keep].astype(str), sync["source"][keep].astype(str)
    by_graph = {s.graph_id: s for s in subjects}
    # the graphs of a step of several replay one after another each step: between two replays of one of them lie the
    # others and the eager work of the step (analyzers.steps), not host work that starves it
    in_steps = {g for st in a.steps if len(st.graphs) > 1 for g in st.graphs}
    out = []
    for o in run.replays(sg):  # per graph and stream
        if o.gpu_start.size < 2 or (o.launch < 0).any() or o.graph_id in in_steps:
            continue
        stretch = _split(o, breaks)
        ok = stretch[1:] == stretch[:-1]
        a0, a1 = o.launch[:-1][ok], o.launch[1:][ok]
        if a0.size == 0:
            continue
        busy = o.gpu_busy[:-1][ok].astype(np.float64)  # the replay's own GPU work, by correlation
        idle = np.clip((a1 - a0) - busy, 0, None)
        idle_med, busy_med = float(np.median(idle)), float(np.median(busy))
        subject = by_graph.get(o.graph_id) or by_graph.get(0)
        saved = subject.eager_ns - subject.graph_ns if subject is not None else None
        if saved is not None:
            potential = saved + idle_med
            if potential <= 0 or idle_med / potential < GAP_SHARE_REPORTED:
                continue
        elif idle_med < busy_med:
            continue
        j = np.searchsorted(a0, s_start, side="right") - 1
        inside = (j >= 0) & (s_start < a1[np.maximum(j, 0)])
        with_sync = int(np.unique(j[inside]).size)
        cited: Counter[tuple[Any, Any]] = Counter()
        for name, source, dur in zip(s_name[inside], s_src[inside], s_dur[inside]):  # noqa: B905
            cited[(name, source)] += int(dur)
        calls = Counter(zip(s_name[inside], s_src[inside]))
        top = cited.most_common(3)  # the synchronising calls that waited longest: name, count, source line
        facts = note("gaps_between_replays", graph_id=o.graph_id, idle_ns=idle_med, busy_ns=busy_med, intervals=int(a0.size),
                     with_sync=with_sync, sync_calls=tuple(str(n) for (n, _), _ in top),
                     sync_counts=tuple(int(calls[key]) for key, _ in top), sync_sources=tuple(str(s or "") for (_, s), _ in top),
                     saved_ns=saved, potential_ns=saved + idle_med if saved is not None else None)
        out.append(Pitfall("gaps_between_replays", "warning", facts, cited.most_common(1)[0][0][1] if cited else "",
                           graph_id=o.graph_id, cost_ns=float(idle.sum())))
    return out


def find_pitfalls(run: Run, analysis: TraceAnalysis) -> tuple[Pitfall, ...]:
    """Every diagnostic the run supports, errors first, from its analysis's metrics (break-even, medians)."""
    trace = run.trace
    pid = analysis.traced_pass_id
    p = next((x for x in trace.passes if x.pass_id == pid), None)
    t0 = p.start_ns if p is not None else 0
    run_ns = float(p.end_ns - p.start_ns) if p is not None else 0.0
    found = _capture_failures(trace, pid, t0)
    if pid is not None:
        found += _repeated_instantiation(trace, pid, run_ns)
        subjects = _subjects(trace, analysis)
        found += _payback_and_speed(subjects)
        found += _gaps_between_replays(run, analysis, subjects)
    found += torch_pitfalls(trace, analysis)  # PyTorch graph mode (analyzers/torch_diagnostics.py)
    return tuple(sorted(found, key=lambda x: x.severity != "error"))
