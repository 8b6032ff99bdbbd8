"""`graphmode export --format perfetto`: Chrome trace-event JSON that ui.perfetto.dev opens.

Perfetto requires the slices on one track to nest, and GPU spans of one stream can overlap (graph
nodes on parallel branches), as can markers of one thread (an op inside a phase). So every source
of spans is split into as many sub-tracks as its overlaps need (`nesting_tracks`), each its own
`tid` with a thread name. A flow event ('s' inside the launch call, 'f' with binding point 'e' at
the start of the GPU span) joins each launch to the work it caused, by correlation id. Events are
written by DuckDB's JSON writer (which escapes every string), not one Python call per event.
"""

from __future__ import annotations

import heapq
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer.store import Trace

output_file_extension = "json"
HOST_PID = 1
GPU_PID_BASE = 100


def nesting_tracks(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Sub-track per slice such that the slices on each sub-track nest (or do not touch at all).

    Slices are taken by start (longest first on ties); each goes to the lowest sub-track whose open
    slices all contain it after the finished ones are closed.
    """
    n = start.size
    out = np.zeros(n, np.int32)
    if n < 2:
        return out
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    running_end = np.maximum.accumulate(e)
    if np.all(s[1:] >= running_end[:-1]):
        return out
    stacks: list[list[int]] = []  # per sub-track: open slice ends, innermost last
    free: list[int] = []  # heap of sub-track ids that are empty
    track_of = np.zeros(n, np.int32)
    for i in range(n):
        si, ei = int(s[i]), int(e[i])
        placed = -1
        for t, stack in enumerate(stacks):
            while stack and stack[-1] <= si:
                stack.pop()
            if not stack or stack[-1] >= ei:
                placed = t
                break
        if placed < 0:
            placed = heapq.heappop(free) if free else len(stacks)
            if placed == len(stacks):
                stacks.append([])
        stacks[placed].append(ei)
        track_of[i] = placed
    out[order] = track_of
    return out


def _assign(keys: np.ndarray, start: np.ndarray, end: np.ndarray, names: dict[str, str],
            registry: dict[tuple[str, int], int], labels: dict[int, str]) -> np.ndarray:
    """A tid per slice: one track per key, split into nesting sub-tracks."""
    tid = np.zeros(keys.size, np.int64)
    for key in sorted(set(keys.tolist())):
        sel = np.flatnonzero(keys == key)
        sub = nesting_tracks(start[sel], end[sel])
        for t in np.unique(sub):
            reg = (str(key), int(t))
            if reg not in registry:
                registry[reg] = len(registry) + 1
                labels[registry[reg]] = names[str(key)] + (f" ({int(t) + 1})" if t else "")
            tid[sel[sub == t]] = registry[reg]
    return tid


def export_perfetto(trace: Trace, out: Path) -> int:
    """Writes the trace-event JSON; returns the number of events."""
    import duckdb

    con = trace.connection
    t0 = int(con.execute("SELECT coalesce(min(start_ns), 0) FROM passes").fetchone()[0])
    registry: dict[tuple[str, int], int] = {}
    labels: dict[int, str] = {}
    host_pid_real = con.execute("SELECT coalesce(min(process_id), 0) FROM api_calls").fetchone()[0]

    api = trace.sql("SELECT pass_id, correlation_id, api, cbid, name, category, start_ns, end_ns, thread_id, return_code "
                    "FROM api_calls")
    api_key = np.char.add(np.char.add(api["thread_id"].astype(str), "|"), api["api"].astype(str))
    api_names = {k: f"thread {k.split('|')[0]} · CUDA {k.split('|')[1]} API" for k in set(api_key.tolist())}
    api["tid"] = _assign(api_key, api["start_ns"], api["end_ns"], api_names, registry, labels)

    mk = trace.sql("SELECT pass_id, kind, name, mode, iteration, start_ns, end_ns, thread_id, graph_id FROM markers")
    mk_key = np.char.add(np.char.add(mk["thread_id"].astype(str), "|"), mk["kind"].astype(str))
    mk_names = {k: f"thread {k.split('|')[0]} · {k.split('|')[1]} markers" for k in set(mk_key.tolist())}
    mk["tid"] = _assign(mk_key, mk["start_ns"], mk["end_ns"], mk_names, registry, labels)

    gpu = trace.sql("SELECT *, row_number() OVER () AS flow_id FROM gpu_spans")
    gpu_key = np.char.add(np.char.add(np.char.add(gpu["device_id"].astype(str), "|"), gpu["stream_id"].astype(str)),
                          np.where(gpu["kind"].astype(str) == "graph", "|graph", "|work"))
    gpu_names = {k: f"stream {k.split('|')[1]}" + (" · graph launches" if k.endswith("graph") else "")
                 for k in set(gpu_key.tolist())}
    gpu["tid"] = _assign(gpu_key, gpu["start_ns"], gpu["end_ns"], gpu_names, registry, labels)
    gpu["pid"] = GPU_PID_BASE + gpu["device_id"].astype(np.int64)

    tmp = Path(tempfile.mkdtemp(prefix="gm-perfetto-"))
    try:
        mem = duckdb.connect()
        mem.register("api", {k: v for k, v in api.items()})
        mem.register("mk", {k: v for k, v in mk.items()})
        mem.register("gpu", {k: v for k, v in gpu.items()})
        # Flows: each GPU span to the first API call of its pass with its correlation id.
        mem.execute("""CREATE TEMP VIEW flows AS
            SELECT g.flow_id, g.start_ns, g.pid, g.tid, a.start_ns AS launch_start, a.tid AS launch_tid
            FROM gpu g JOIN (SELECT pass_id, correlation_id, min(start_ns) AS start_ns, arg_min(tid, start_ns) AS tid
                             FROM api GROUP BY ALL) a
            ON a.pass_id = g.pass_id AND a.correlation_id = g.correlation_id WHERE g.correlation_id <> 0""")
        ts = f"(start_ns - {t0}) / 1000.0"
        parts = {
            "api": f"""SELECT name, category AS cat, 'X' AS ph, {ts} AS ts, (end_ns - start_ns) / 1000.0 AS dur,
                       {HOST_PID} AS pid, tid, {{'pass_id': pass_id, 'correlation_id': correlation_id, 'api': api,
                       'cbid': cbid, 'return_code': return_code}} AS args FROM api""",
            "markers": f"""SELECT CASE WHEN kind = 'iteration' THEN mode || ' iteration ' || CAST(iteration AS VARCHAR)
                           ELSE name END AS name, kind AS cat, 'X' AS ph, {ts} AS ts, (end_ns - start_ns) / 1000.0 AS dur,
                           {HOST_PID} AS pid, tid, {{'pass_id': pass_id, 'mode': mode, 'iteration': iteration,
                           'graph_id': graph_id}} AS args FROM mk""",
            "gpu": f"""SELECT name, kind AS cat, 'X' AS ph, {ts} AS ts, (end_ns - start_ns) / 1000.0 AS dur, pid, tid,
                       {{'pass_id': pass_id, 'correlation_id': correlation_id, 'stream_id': stream_id,
                       'graph_id': graph_id, 'graph_node_id': graph_node_id,
                       'grid': CAST(grid_x AS VARCHAR) || 'x' || CAST(grid_y AS VARCHAR) || 'x' || CAST(grid_z AS VARCHAR),
                       'block': CAST(block_x AS VARCHAR) || 'x' || CAST(block_y AS VARCHAR) || 'x' || CAST(block_z AS VARCHAR),
                       'bytes': bytes, 'copy_kind': copy_kind}} AS args FROM gpu""",
            "flow_s": f"""SELECT 'launch' AS name, 'launch' AS cat, 's' AS ph, (launch_start - {t0}) / 1000.0 AS ts,
                          {HOST_PID} AS pid, launch_tid AS tid, flow_id AS id FROM flows""",
            "flow_f": f"""SELECT 'launch' AS name, 'launch' AS cat, 'f' AS ph, 'e' AS bp, {ts} AS ts, pid, tid,
                          flow_id AS id FROM flows""",
        }
        files = []
        for name, query in parts.items():
            f = tmp / f"{name}.ndjson"
            mem.execute(f"COPY ({query}) TO '{f}' (FORMAT json)")
            files.append(f)
        mem.close()
        meta_events = _metadata_events(labels, gpu, host_pid_real, trace)
        count = len(meta_events)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8") as w:
            w.write('{"displayTimeUnit":"ns","otherData":')
            w.write(json.dumps({"source": "graphmode", "trace": str(trace.path), "workload": str(trace.meta.get("workload", "")),
                                "time_origin_ns": t0}))
            w.write(',"traceEvents":[\n')
            w.write(",\n".join(json.dumps(e) for e in meta_events))
            for f in files:
                body = f.read_text(encoding="utf-8").strip()
                if body:
                    w.write(",\n")
                    w.write(body.replace("\n", ",\n"))
                    count += body.count("\n") + 1
            w.write("\n]}\n")
        return count
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _metadata_events(labels: dict[int, str], gpu: dict[str, np.ndarray], host_pid: Any, trace: Trace) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0, "args": {"name": f"host process {host_pid}"}},
        {"ph": "M", "name": "process_sort_index", "pid": HOST_PID, "tid": 0, "args": {"sort_index": 0}},
    ]
    gpu_name = str(trace.meta.get("gpu_name", ""))
    for dev in sorted(set(gpu["device_id"].tolist())):
        pid = GPU_PID_BASE + int(dev)
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"GPU {dev}" + (f" ({gpu_name})" if gpu_name else "")}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 1 + int(dev)}})
    gpu_tids = set(gpu["tid"].tolist())
    for tid, label in sorted(labels.items()):
        pid = HOST_PID
        if tid in gpu_tids:
            pid = int(gpu["pid"][np.flatnonzero(gpu["tid"] == tid)[0]])
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    return events
