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
from graphmode.analyzers.results import Pitfall, TraceAnalysis
from graphmode.analyzers.run import Run
from graphmode.analyzers.torch_diagnostics import torch_pitfalls
from graphmode.tracer.store import Trace

# CUresult / cudaError_t values of a broken stream capture (identical in the driver and the runtime).
CAPTURE_ERRORS: dict[int, str] = {
    900: "stream capture unsupported: operation not permitted when stream is capturing",
    901: "stream capture invalidated by an earlier error",
    902: "stream capture merge: two independent captures merged",
    903: "stream capture unmatched: capture did not begin on this stream",
    904: "stream capture unjoined: a forked stream was not joined back",
    905: "stream capture isolation: a dependency crosses the capture boundary",
    906: "implicit stream capture: the legacy default stream was used during capture",
    907: "captured event: an event recorded in the capture was queried or synchronised",
    908: "stream capture wrong thread: another thread broke a global-mode capture",
}
INVALIDATED = 901
# gaps between replays are reported once they eat this share of what replays could save
GAP_SHARE_REPORTED = 0.5
_LIBRARY_PARTS = ("site-packages", "dist-packages", "/lib/python", "<frozen", "<string>")


def _us(ns: float | None) -> str:
    if ns is None:
        return "?"
    return f"{ns / 1e3:,.1f} us" if abs(ns) < 1e7 else f"{ns / 1e6:,.1f} ms"


def _source_column(trace: Trace) -> str:
    """api_calls.source where the trace has it (script traces), else ''."""
    n = trace.rows("SELECT count(*) FROM information_schema.columns WHERE table_name = 'api_calls' AND column_name = 'source'")
    return "source" if n[0][0] else "''"


def _user_frame(trace: Trace) -> str:
    """The innermost frame of the script's exception that is the user's code, as 'file:line function'."""
    exc = (trace.meta.get("script") or {}).get("exception") or {}
    frames = exc.get("frames") or []
    for file, line, function in reversed(frames):
        if not any(p in str(file) for p in _LIBRARY_PARTS):
            return f"{file}:{line} {function}"
    return f"{frames[-1][0]}:{frames[-1][1]} {frames[-1][2]}" if frames else ""


def _capture_advice(code: int, name: str, category: str) -> str:
    if code == 900 and (category == "sync" or "Synchronize" in name or "Query" in name):
        return ("A host synchronisation inside the captured region: move .item(), .cpu(), .tolist(), printing a CUDA tensor, "
                "torch.cuda.synchronize() or stream/event synchronize out of it (read results after the replay).")
    if code == 900 and category == "memory":
        return ("Memory allocated during capture: allocate the static inputs and outputs before capturing; warm the step up "
                "eagerly first (torch.cuda.graph runs warm-up on a side stream so the caching allocator has its blocks).")
    if code == 900 and category == "memcpy":
        return "A blocking copy cannot be captured: use an async copy on the capturing stream (pinned host memory) or move it out."
    advice = {
        904: "Join every forked stream back: record an event on the side stream and make the capturing stream wait on it before ending capture.",
        906: "Use a non-default stream for all captured work (torch.cuda.graph does; CuPy: `with stream:`), never the legacy default stream.",
        907: "Do not query or synchronise an event recorded during capture; order work with stream waits on the event instead.",
        908: ("Another thread made a CUDA call during a global-mode capture: capture in thread-local mode "
              "(torch: capture_error_mode='thread_local', cudaStreamCaptureModeThreadLocal) or keep other threads off CUDA meanwhile."),
    }.get(code)
    if advice:
        return advice
    return ("Warm the step up eagerly before capturing (lazy initialisation such as cuBLAS handles, allocator growth or autotuning "
            "must not happen during capture) and keep host synchronisations and allocations out of the captured region.")


def _capture_failures(trace: Trace, pass_id: int | None, t0: int) -> list[Pitfall]:
    exc = (trace.meta.get("script") or {}).get("exception") or {}
    raised = f"{exc.get('type', '')}: {exc.get('message', '')}".strip(": ") if exc else ""
    rows: list[tuple[Any, ...]] = []
    if pass_id is not None:
        rows = trace.rows(
            f"SELECT name, return_code, start_ns, category, {_source_column(trace)} AS source FROM api_calls "
            f"WHERE pass_id = ? AND return_code BETWEEN 900 AND 908 ORDER BY start_ns", [pass_id])
    user = _user_frame(trace)
    if not rows:
        if raised and "captur" in raised.lower():
            return [Pitfall("capture_failed", "error", "A stream capture failed",
                            f"The script raised {raised} (no failing CUDA call was recorded).", user,
                            _capture_advice(0, "", ""))]
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
        evidence = (f"{name} returned {code} ({CAPTURE_ERRORS[code]}) {len(calls)} time{'s' if len(calls) > 1 else ''}, "
                    f"first {_us(int(first[2]) - t0)} into the run")
        if begin:
            evidence += f", inside the capture begun at {_us(int(begin[0][0]) - t0)}" + (f" by {begin[0][1]}" if begin[0][1] else "")
        evidence += "."
        if invalidated and code != INVALIDATED:
            evidence += f" {invalidated} later call{'s' if invalidated > 1 else ''} returned 901 (capture invalidated)."
        if raised:
            evidence += f" The script raised {raised}" + (f" at {user}." if user else ".")
        out.append(Pitfall("capture_failed", "error", f"Stream capture broken by {name}", evidence, source or user,
                           _capture_advice(code, name, str(first[3]))))
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
        names = ", ".join(key[:3]) + (" …" if len(key) > 3 else "")
        evidence = (f"The same kernel sequence ({len(key)} kernel{'s' if len(key) != 1 else ''}: {names}) was instantiated "
                    f"{len(inst)} times from {len(graphs)} graph{'s' if len(graphs) > 1 else ''} (ids {', '.join(map(str, graphs[:6]))}"
                    f"{' …' if len(graphs) > 6 else ''}); the {len(inst) - 1} repeat{'s' if len(inst) > 2 else ''} cost {_us(cost)} "
                    f"(capture/build {_us(build)} + instantiate {_us(inst_cost)} + upload {_us(upload_cost)})")
        evidence += f", {100 * cost / t_run:.1f}% of the run." if t_run > 0 else "."
        out.append(Pitfall(
            "repeated_instantiation", "warning", f"Graph re-instantiated {len(inst) - 1} time{'s' if len(inst) > 2 else ''}",
            evidence, sources.most_common(1)[0][0] if sources else "",
            "Capture once and replay: keep the instantiated graph and copy new inputs into its static input buffers. For new "
            "shapes, pad or bucket inputs to a few fixed shapes (torch.compile mode='reduce-overhead' re-records per shape); "
            "to change kernel parameters, update the executable graph (cudaGraphExecUpdate) instead of instantiating again.",
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
    basis: str  # where replays_needed comes from


def _subjects(trace: Trace, a: TraceAnalysis) -> list[_Subject]:
    """Script traces: each replayed graph with an eager baseline (analysis.graphs). Bench traces: the
    analysis's own break-even (their eager iterations carry no graph id)."""
    if a.graphs:
        out = []
        for g in a.graphs:  # per graph
            b = g.break_even
            if g.status != "replayed" or b is None or b.eager_ns is None or b.graph_ns is None:
                continue
            out.append(_Subject(g.graph_id, b.eager_ns, b.graph_ns, g.eager.iterations if g.eager else 0,
                                g.graph.iterations if g.graph else 0, b.one_time_ns, g.replays, b.replays,
                                "this graph's own eager and replay periods"))
        return out
    b = a.primary_break_even()
    if b is None or b.eager_ns is None or b.graph_ns is None:
        return []
    base_mode, graph_mode = a.mode(b.baseline), a.mode("graph")
    return [_Subject(0, b.eager_ns, b.graph_ns, base_mode.iterations if base_mode else 0, graph_mode.iterations if graph_mode else 0,
                     b.one_time_ns, b.run_replays, b.replays, "break-even from the analysis")]


def _who(g: int) -> str:
    return f"graph {g}" if g else "the graph"


def _payback_and_speed(subjects: list[_Subject]) -> list[Pitfall]:
    out = []
    for s in subjects:
        saved = s.eager_ns - s.graph_ns
        if saved <= 0:
            out.append(Pitfall(
                "graph_slower", "warning", f"A replay of {_who(s.graph_id)} is slower than the eager work it replaced",
                f"A replay takes {_us(s.graph_ns)} (median of {s.graph_n}) vs {_us(s.eager_ns)} (median of {s.eager_n}) per eager "
                f"iteration: {_us(-saved)} slower, so the one-time cost of {_us(s.one_time_ns)} is never paid back.", "",
                "Graphs remove launch overhead; this work is not launch-bound, or the graph does extra work (copies into static "
                "buffers, memset nodes) or waits between replays (see the other diagnostics). Compare GPU busy time per iteration "
                "and the per-kernel table (record with --detail node); keep this region eager if the graph brings nothing.",
                graph_id=s.graph_id, cost_ns=-saved * s.replays_done))
        elif s.replays_needed is not None and s.replays_done < s.replays_needed and s.one_time_ns is not None:
            loss = s.one_time_ns - s.replays_done * saved
            out.append(Pitfall(
                "never_paid_back", "warning", f"{_who(s.graph_id).capitalize()} was not replayed often enough to pay back its cost",
                f"It was replayed {s.replays_done} times; saving {_us(saved)} per replay (eager {_us(s.eager_ns)} vs replay "
                f"{_us(s.graph_ns)}, medians) it needs {s.replays_needed:,} replays to pay back its one-time cost of "
                f"{_us(s.one_time_ns)} ({s.basis}): the run lost {_us(loss)} net.", "",
                "Graph a region that runs many times (the training or decode loop, not a one-off call), capture it once and keep "
                "replaying it; or leave it eager. Instantiate and upload early, off the critical path, so the one-time cost is hidden.",
                graph_id=s.graph_id, cost_ns=loss))
    return out


def _gaps_between_replays(run: Run, a: TraceAnalysis, subjects: list[_Subject]) -> list[Pitfall]:
    """Replays of a graph in a row (analyzers.periods: one stretch), and the GPU idle time between them."""
    from graphmode.analyzers.periods import _split

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
            share = f"a replay saves {_us(saved)} against eager; without the gaps it could save {_us(potential)}: the gaps eat {100 * idle_med / potential:.0f}% of it."
        else:
            if idle_med < busy_med:
                continue
            share = "there is no eager baseline to compare with; the GPU is idle longer than it works between replays."
        j = np.searchsorted(a0, s_start, side="right") - 1
        inside = (j >= 0) & (s_start < a1[np.maximum(j, 0)])
        with_sync = int(np.unique(j[inside]).size)
        cited: Counter[tuple[Any, Any]] = Counter()
        for name, source, dur in zip(s_name[inside], s_src[inside], s_dur[inside]):  # noqa: B905
            cited[(name, source)] += int(dur)
        calls = Counter(zip(s_name[inside], s_src[inside]))
        top = [f"{n} ×{calls[(n, s)]}" + (f" at {s}" if s else "") for (n, s), _ in cited.most_common(3)]
        evidence = (f"Between consecutive replays of graph {o.graph_id} the GPU had none of its work for a median {_us(idle_med)} "
                    f"per replay (its GPU work: {_us(busy_med)}), over {a0.size} replay intervals; ")
        evidence += (f"{with_sync} of them hold a synchronising call ({'; '.join(top)}); " if with_sync else
                     "none holds a synchronising call, so it is host work; ")
        out.append(Pitfall(
            "gaps_between_replays", "warning", f"Synchronisation or host work between replays of graph {o.graph_id}",
            evidence + share, cited.most_common(1)[0][0][1] if cited else "",
            "Keep the GPU fed: do not synchronise after every replay (.item(), .cpu(), torch.cuda.synchronize(), blocking copies); "
            "keep results on the GPU and read them every N steps, copy with non_blocking=True into pinned memory, and move host "
            "work (data loading, logging) off the replay loop so the next replay is launched while the GPU works.",
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
