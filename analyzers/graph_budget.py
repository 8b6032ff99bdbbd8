"""Memory and start-up time per graph: which graphs are not worth what they hold (docs/metrics.md).

Start-up time comes from graph_events (capture or explicit build, instantiate, upload); replays from its
launch rows; memory from the samples the tracer took around each graph's capture and instantiation
(meta.graph_memory, tracer.graph_memory) and PyTorch's pools (analyzers.torch_graphs). A sample is tied
to a graph by thread and time: the last 'before' sample at or before the graph's capture ends (a
capture-begin sample) or its instantiation starts (an explicit graph), and the first 'after' sample
taken at or after its instantiation started. Loops run per graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.coverage_results import GraphBudget, GraphBudgetRow, TorchGraphs
from graphmode.analyzers.results import TraceAnalysis
from graphmode.analyzers.script_graphs import builds_recorded
from graphmode.tracer.store import Trace

MAX_ROWS = 500
_AFTER = ("instantiate_end", "torch_capture_end")
_MEMORY_INT = ("ts_ns", "end_ns", "thread_id", "correlation_id", "free_bytes", "graph_used_bytes", "pool_reserved_bytes")

_GRAPHS_SQL = """
WITH ev AS (
  SELECT graph_id,
         sum(end_ns - start_ns) FILTER (WHERE event IN ('capture', 'build'))::DOUBLE AS build_ns,
         sum(end_ns - start_ns) FILTER (WHERE event = 'instantiate')::DOUBLE AS instantiate_ns,
         sum(end_ns - start_ns) FILTER (WHERE event = 'upload')::DOUBLE AS upload_ns,
         count(*) FILTER (WHERE event = 'launch') AS launches,
         min(start_ns) FILTER (WHERE event IN ('capture', 'build')) AS build_start,
         max(end_ns) FILTER (WHERE event IN ('capture', 'build')) AS build_end,
         min(start_ns) FILTER (WHERE event = 'instantiate') AS inst_start,
         min(end_ns) FILTER (WHERE event = 'instantiate') AS inst_end,
         arg_min(thread_id, start_ns) FILTER (WHERE event IN ('capture', 'build', 'instantiate')) AS thread_id,
         list(correlation_id) FILTER (WHERE event IN ('capture', 'instantiate') AND correlation_id <> 0) AS corrs
  FROM graph_events WHERE pass_id = $1 GROUP BY graph_id
), site AS (  -- only the lifecycle calls' lines: grouping every call of a --launch-sources pass would cost seconds
  SELECT correlation_id, max(source) AS source FROM api_calls WHERE pass_id = $1 AND source <> '' AND correlation_id IN
    (SELECT correlation_id FROM graph_events WHERE pass_id = $1 AND event IN ('capture', 'instantiate') AND correlation_id <> 0)
  GROUP BY correlation_id
), node_site AS (
  SELECT graph_id, arg_min(source, node_index) FILTER (WHERE source <> '') AS source FROM graph_nodes WHERE pass_id = $1 GROUP BY graph_id
)
SELECT g.graph_id, g.label, g.origin, g.num_nodes, e.build_ns, e.instantiate_ns, e.upload_ns, coalesce(e.launches, 0) AS launches,
       e.build_start, e.build_end, e.inst_start, e.inst_end, coalesce(e.thread_id, 0) AS thread_id,
       coalesce((SELECT max(s.source) FROM site s WHERE list_contains(e.corrs, s.correlation_id)), n.source, '') AS site
FROM graphs g LEFT JOIN ev e USING (graph_id) LEFT JOIN node_site n USING (graph_id)
WHERE g.pass_id = $1 ORDER BY g.graph_id
"""


def memory_samples(trace: Trace) -> dict[str, np.ndarray] | None:
    """meta.graph_memory as numpy columns; None when the trace has no samples."""
    m = trace.meta.get("graph_memory")
    if not isinstance(m, dict) or not m.get("event"):
        return None
    cols = {k: np.asarray(m.get(k, []), dtype=np.int64) for k in _MEMORY_INT}
    cols["event"] = np.asarray(m["event"], dtype=object)
    cols["pool"] = np.asarray([str(p) for p in m.get("pool", [""] * len(m["event"]))], dtype=object)
    return cols


def _pick(s: dict[str, np.ndarray], events: tuple[str, ...], thread: int, *, at_or_before: int | None = None,
          at_or_after: int | None = None) -> int:
    """Index of the last sample at or before a time, or the first at or after one; -1 if none."""
    m = np.isin(s["event"], events) & (s["thread_id"] == thread)
    if at_or_before is not None:
        hit = np.flatnonzero(m & (s["ts_ns"] <= at_or_before))
        return int(hit[-1]) if hit.size else -1
    hit = np.flatnonzero(m & (s["ts_ns"] >= (at_or_after or 0)))
    return int(hit[0]) if hit.size else -1


def _diff(s: dict[str, np.ndarray], col: str, before: int, after: int, sign: int = 1) -> int | None:
    if before < 0 or after < 0 or s[col][before] < 0 or s[col][after] < 0:
        return None
    return int(sign * (s[col][after] - s[col][before]))


def _saved_per_replay(analysis: TraceAnalysis) -> dict[int, float]:
    """graph id -> eager minus replay median from the per-graph analysis, where it exists (issue 9 fields)."""
    out: dict[int, float] = {}
    for g in getattr(analysis, "graphs", ()) or ():
        be = getattr(g, "break_even", None)
        saved = getattr(be, "saved_per_replay_ns", None) if be is not None else None
        if saved is not None:
            out[int(g.graph_id)] = float(saved)
    return out


def _timed_costs(analysis: TraceAnalysis, pass_id: int) -> dict[int, Any]:
    """graph id -> its GraphCost where another pass (the measuring run) timed it: the detail run's callbacks
    slow capture and instantiation many times over, so the budget takes the figures the per-graph headline
    takes."""
    out: dict[int, Any] = {}
    costs = [getattr(g, "cost", None) for g in getattr(analysis, "graphs", ()) or ()]
    if not costs:  # a built-in workload: its timing pass's costs, under the traced pass's ids (analyzers.runner_analysis.on_traced_ids)
        costs = list(getattr(analysis, "graph_costs", ()) or ())
    for c in costs:
        if c is not None and c.pass_id != pass_id and (c.build_ns is not None or c.instantiate_ns is not None):
            out[int(c.graph_id)] = c
    return out


def _verdict(replays: int, net: float | None, nodes: int, origin: str) -> str:
    if replays == 0 and nodes == 0 and origin != "unknown":
        return "empty graph"
    if replays == 0:
        return "never replayed"
    if net is None:
        return f"replayed {replays:,} times"
    return "paid back" if net >= 0 else "did not pay back its start-up time"


def _sampling_inside(trace: Trace, pass_id: int, s: dict[str, np.ndarray]) -> float:
    """Sampling time that fell inside recorded capture and instantiate calls (it is included in their times)."""
    spans = trace.sql("SELECT start_ns, end_ns, thread_id FROM graph_events WHERE pass_id = ? AND event IN ('capture', 'instantiate')",
                      [pass_id])
    total = 0.0
    for a, b, t in zip(spans["start_ns"], spans["end_ns"], spans["thread_id"]):  # per graph lifecycle call
        m = (s["thread_id"] == t) & (s["ts_ns"] >= a) & (s["end_ns"] <= b)
        total += float((s["end_ns"][m] - s["ts_ns"][m]).sum())
    return total


def graph_budget(trace: Trace, pass_id: int | None, torch_graphs: TorchGraphs | None,
                 analysis: TraceAnalysis) -> GraphBudget | None:
    """One row per graph built in the pass; None without graphs."""
    if pass_id is None:
        return None
    graphs = trace.rows(_GRAPHS_SQL, [pass_id])  # one row per graph: NULL stays None
    if not graphs:
        return None
    s = memory_samples(trace)
    pools = {gid: p.pool for p in (torch_graphs.pools if torch_graphs else ()) for gid in p.graph_ids}
    shared = sum(1 for p in (torch_graphs.pools if torch_graphs else ()) if len(p.graph_ids) > 1)
    saved = _saved_per_replay(analysis)
    timed = _timed_costs(analysis, pass_id)
    rows = []
    for (gid, label, origin, nodes, build_ns, inst_ns, up_ns, launches, build_start, build_end, inst_start, inst_end, thread,
         site) in graphs:
        framework = None
        if int(gid) in timed:
            c = timed[int(gid)]
            build_ns, inst_ns, up_ns, framework = c.build_ns, c.instantiate_ns, c.upload_ns, c.framework_ns
        startup = sum(float(x) for x in (build_ns, inst_ns, up_ns, framework) if x is not None)
        device = graph_mem = pool_bytes = None
        if s is not None and thread and inst_start is not None:
            captured = origin == "capture" and build_end is not None
            before = (_pick(s, ("capture_begin", "torch_capture_begin"), thread, at_or_before=int(build_end)) if captured
                      else _pick(s, ("instantiate_begin",), thread, at_or_before=int(inst_end)))
            # a 'before' sample older than the previous graph's 'after' sample belongs to that graph
            if before >= 0 and before < _pick(s, _AFTER, thread, at_or_before=int(build_start if captured else inst_start)):
                before = -1
            after = _pick(s, _AFTER, thread, at_or_after=int(inst_start))
            device = _diff(s, "free_bytes", before, after, sign=-1)
            graph_mem = _diff(s, "graph_used_bytes", before, after)
            t_after = _pick(s, ("torch_capture_end",), thread, at_or_after=int(inst_start))
            if t_after >= 0 and s["pool_reserved_bytes"][t_after] >= 0:
                t_before = _pick(s, ("torch_capture_begin",), thread, at_or_before=int(build_end)) if captured else -1
                same = t_before >= 0 and s["pool"][t_before] == s["pool"][t_after] and s["pool_reserved_bytes"][t_before] >= 0
                pool_bytes = int(s["pool_reserved_bytes"][t_after] - (s["pool_reserved_bytes"][t_before] if same else 0))
        replays = int(launches)
        per = saved.get(int(gid))
        net = replays * per - startup if per is not None else None
        rows.append(GraphBudgetRow(
            graph_id=int(gid), label=str(label), site=str(site), pool=pools.get(int(gid), ""),
            capture_ns=_num(build_ns), instantiate_ns=_num(inst_ns), upload_ns=_num(up_ns), startup_ns=startup, replays=replays,
            device_bytes=device, pool_bytes=pool_bytes, graph_mem_bytes=graph_mem,
            bytes=pool_bytes if pool_bytes is not None else device, saved_ns=per, net_ns=net,
            verdict=_verdict(replays, net, int(nodes), str(origin)), nodes=int(nodes)))
    rows.sort(key=lambda r: (r.bytes is None, -(r.bytes or 0), -r.startup_ns, r.graph_id))
    sizes = [r.bytes for r in rows if r.bytes is not None]
    source = ("pytorch pools" if any(r.pool_bytes is not None for r in rows)
              else "device free memory" if any(r.device_bytes is not None for r in rows) else "not sampled")
    notes: list[Note] = []
    if not builds_recorded(trace, pass_id):  # replayed in the trace, built before it (a region traced later)
        notes.append(note("budget_built_before_trace", graphs=len(rows)))
    empty = sum(1 for r in rows if r.verdict == "empty graph")
    if empty:
        notes.append(note("budget_empty_graphs", graphs=empty))
    if source == "not sampled":
        notes.append(note("budget_no_memory_samples"))
    elif source == "device free memory":
        notes.append(note("budget_device_memory"))
    with_framework = sum(1 for r in rows if r.graph_id in timed and timed[r.graph_id].framework_ns is not None)
    if with_framework:
        notes.append(note("budget_framework_startup", graphs=with_framework))
    n_timed = sum(1 for r in rows if r.graph_id in timed)
    if n_timed == len(rows):
        notes.append(note("startup_from_measuring_run"))
    elif n_timed:
        notes.append(note("startup_partly_from_measuring_run", timed=n_timed, graphs=len(rows)))
    else:
        notes.append(note("startup_from_traced_pass"))
    if s is not None and n_timed < len(rows):  # some start-up times are the traced pass's, which the sampling is inside
        inside = _sampling_inside(trace, pass_id, s)
        if inside > 0:
            notes.append(note("memory_sampling_inside", sampling_ns=inside))
    return GraphBudget(
        rows=tuple(rows[:MAX_ROWS]), graphs=len(rows), total_startup_ns=float(sum(r.startup_ns for r in rows)),
        total_bytes=int(sum(sizes)) if sizes else None, memory_source=source,
        never_replayed=sum(1 for r in rows if r.verdict == "never replayed"), shared_pools=shared, notes=tuple(notes))


def _num(v: Any) -> float | None:
    """A SQL value as float, None for NULL/NaN."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f
