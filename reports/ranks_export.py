"""`graphmode export` on the traces of a multi-process job: one Perfetto file, or Parquet partitioned by rank.

Both put every rank on the job's timeline: a rank's timestamps plus its clock offset
(`ClockAlignment.offsets`, zero for ranks on one host). Ranks are read one at a time and written
by DuckDB's COPY, so memory stays that of one rank.

- Perfetto: one process per rank ('rank R · host · GPU'), a track per host thread (CUDA API calls)
  and per GPU stream, split into nesting sub-tracks where spans overlap (reports.perfetto).
- Parquet: `<table>/rank=R/data.parquet` (Hive partitioning: DuckDB, pandas and pyarrow read a
  table's folder as one dataset with a `rank` column), timestamps aligned, and `ranks.parquet` with
  each rank's host, GPU, trace path and the offset added (subtract it for the rank's own clock).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from graphmode.analyzers.rank_results import RankSetAnalysis
from graphmode.reports.notes import word
from graphmode.reports.output import open_output
from graphmode.reports.perfetto import nesting_tracks
from graphmode.tracer.schema import TABLES
from graphmode.tracer.store import load

TIMED = {name for name, cols in TABLES.items() if any(c == "start_ns" for c, _ in cols)}
GPU_TID_BASE = 1_000_000  # GPU stream tracks of a rank: tid = base + stream * 100 + sub-track


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def export_ranks_parquet(a: RankSetAnalysis, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for s in a.ranks:
        r, off = s.identity.rank, int(a.offset_of(s.identity.rank))
        with load(s.identity.path) as trace:
            for table, cols in TABLES.items():
                folder = out_dir / table / f"rank={r}"
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / "data.parquet"
                names = [c for c, _ in cols]
                select = ", ".join(f"{c} + {off} AS {c}" if c in ("start_ns", "end_ns") else c for c in names)
                trace.connection.execute(f"COPY (SELECT {select} FROM {table}) TO '{_quoted(path)}' (FORMAT parquet)")
                written.append(path)
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE ranks (rank INTEGER, host VARCHAR, gpu_index INTEGER, gpu_uuid VARCHAR, gpu_name VARCHAR, "
                "path VARCHAR, status VARCHAR, offset_ns BIGINT)")
    con.executemany("INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        [s.identity.rank, s.identity.host, s.identity.gpu_index, s.identity.gpu_uuid, s.identity.gpu_name, s.identity.path,
         s.identity.status, int(a.offset_of(s.identity.rank))] for s in a.ranks])
    path = out_dir / "ranks.parquet"
    con.execute(f"COPY ranks TO '{_quoted(path)}' (FORMAT parquet)")
    con.close()
    written.append(path)
    return written


def _subtracks(keys: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per span, its sub-track within its key's track (thread or stream): spans on one sub-track nest."""
    sub = np.zeros(keys.size, np.int64)
    for key in np.unique(keys):
        sel = np.flatnonzero(keys == key)
        sub[sel] = nesting_tracks(start[sel], end[sel])
    return sub


def export_ranks_perfetto(a: RankSetAnalysis, out: Path) -> int:
    """Writes one Chrome trace-event JSON with a process per rank; returns the number of events."""
    import duckdb

    t0 = min(s.start_ns + a.offset_of(s.identity.rank) for s in a.ranks)
    tmp = Path(tempfile.mkdtemp(prefix="gm-ranks-perfetto-"))
    files: list[Path] = []
    meta_events: list[dict[str, object]] = []
    try:
        for s in a.ranks:
            r, off, pid = s.identity.rank, int(a.offset_of(s.identity.rank)), s.identity.rank + 1
            gpu = f" · GPU {s.identity.gpu_index} {s.identity.gpu_name}" if s.identity.gpu_index is not None else ""
            meta_events += [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"rank {r} · {s.identity.host}{gpu}"}},
                            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": r}}]
            with load(s.identity.path) as trace:
                api = trace.sql("SELECT name, category, start_ns, end_ns, thread_id, correlation_id FROM api_calls WHERE pass_id = ?",
                                [s.pass_id])
                gpu_sp = trace.sql("SELECT name, kind, start_ns, end_ns, stream_id, graph_id, correlation_id FROM gpu_spans "
                                   "WHERE pass_id = ?", [s.pass_id])
            # a host thread's track is its OS thread id (sub-tracks above 2**40); a GPU stream's is above GPU_TID_BASE
            sub = _subtracks(api["thread_id"], api["start_ns"], api["end_ns"])
            api["tid"] = api["thread_id"].astype(np.int64) + (sub << 40)
            sub = _subtracks(gpu_sp["stream_id"], gpu_sp["start_ns"], gpu_sp["end_ns"])
            gpu_sp["tid"] = GPU_TID_BASE + gpu_sp["stream_id"].astype(np.int64) * 100 + sub
            for tid in np.unique(api["tid"]):
                thread, k = int(tid) & ((1 << 40) - 1), int(tid) >> 40
                meta_events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": int(tid),
                                    "args": {"name": f"thread {thread} · CUDA API" + (f" ({k + 1})" if k else "")}})
            for tid in np.unique(gpu_sp["tid"]):
                stream, k = divmod(int(tid) - GPU_TID_BASE, 100)
                meta_events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": int(tid),
                                    "args": {"name": f"GPU stream {stream}" + (f" ({k + 1})" if k else "")}})
            mem = duckdb.connect()
            mem.register("api", api)
            mem.register("gpu", gpu_sp)
            ts = f"(start_ns + {off} - {t0}) / 1000.0"
            for part, query in (
                ("api", f"""SELECT name, category AS cat, 'X' AS ph, {ts} AS ts, (end_ns - start_ns) / 1000.0 AS dur,
                            {pid} AS pid, tid, {{'correlation_id': correlation_id}} AS args FROM api"""),
                ("gpu", f"""SELECT name, kind AS cat, 'X' AS ph, {ts} AS ts, (end_ns - start_ns) / 1000.0 AS dur,
                            {pid} AS pid, tid, {{'correlation_id': correlation_id, 'graph_id': graph_id}} AS args FROM gpu""")):
                f = tmp / f"{r}-{part}.ndjson"
                mem.execute(f"COPY ({query}) TO '{_quoted(f)}' (FORMAT json)")
                files.append(f)
            mem.close()
        count = len(meta_events)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open_output(out) as w:
            w.write('{"displayTimeUnit":"ns","otherData":')
            w.write(json.dumps({"source": "graphmode", "ranks": len(a.ranks), "time_origin_ns": t0,
                                "alignment": a.alignment.method, "note": word(a.alignment.note)}))
            w.write(',"traceEvents":[\n')
            w.write(",\n".join(json.dumps(e) for e in meta_events))
            for f in files:
                with open(f, encoding="utf-8") as body:
                    for line in body:  # streamed: one rank's events are never all in memory as text
                        line = line.strip()
                        if line:
                            w.write(",\n" + line)
                            count += 1
            w.write("\n]}\n")
        return count
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
