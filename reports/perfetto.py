"""`graphmode export --format perfetto`: Perfetto's native protobuf trace, written as a stream.

Perfetto's own tooling prefers its protobuf format at scale: a 10M-event trace as Chrome JSON was
3 GB that took 7.8 GB of memory to write and more to open. Here every TracePacket is built with the
message classes of Google's `perfetto` package (perfetto.protos...perfetto_trace_pb2) and written
in chunks, so memory stays bounded whatever the trace's size: DuckDB streams the rows in the order
they are drawn (sorting with a memory limit, spilling to the temporary folder), and only a chunk of
packets is held at a time.

The layout is the one Perfetto documents for synthetic TrackEvent traces
(perfetto.dev/docs/reference/synthetic-track-event): a process track for the host and one per
GPU, a child track per source (a thread's runtime/driver API calls, its markers, a stream's work,
its graph launches), and slices as SLICE_BEGIN/SLICE_END pairs. Perfetto requires slices on one
track to nest, and GPU spans of one stream can overlap (graph nodes on parallel branches), as can
markers of one thread: each source is split into as many sub-tracks as its overlaps need
(`NestingTracks`). A flow joins each launch call to the first GPU span it caused (by correlation
id). Event and annotation names are interned (written once per trace). Times are nanoseconds
from the earliest record of the trace (the CUPTI clock value of that origin is in the host
track's description).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.analyzers.untraced import short_loc
from graphmode.analyzers.untraced_windows import untraced_windows
from graphmode.reports.names import printable
from graphmode.reports.output import open_output
from graphmode.tracer.store import Trace

output_file_extension = "pftrace"
SEQUENCE_ID = 1
HOST_UUID = 1
GPU_UUID_BASE = 100
FIRST_TRACK_UUID = 1000
FETCH_ROWS = 50_000  # rows fetched from DuckDB at a time
PACKETS_PER_WRITE = 20_000
DUCKDB_MEMORY_LIMIT = "400MB"  # the export's sorts spill past this instead of growing


@dataclass(frozen=True)
class PerfettoExport:
    path: Path
    events: int  # slices written
    flows: int  # launch -> GPU work arrows
    bytes: int
    note: str  # what was left out, '' if nothing


class NestingTracks:
    """Sub-track per slice such that the slices on each sub-track nest (or do not touch at all).

    Slices come in order of start (longest first on ties); each goes to the lowest sub-track whose
    open slices all contain it once the finished ones are closed. `place` returns the sub-track and
    the slices it closed on the way ((sub-track, end) pairs, innermost first), whose SLICE_END
    events must be written before this slice's SLICE_BEGIN."""

    def __init__(self) -> None:
        self.stacks: list[list[int]] = []  # per sub-track: open slice ends, innermost last

    def place(self, start: int, end: int) -> tuple[int, list[tuple[int, int]]]:
        closed: list[tuple[int, int]] = []
        for t, stack in enumerate(self.stacks):
            while stack and stack[-1] <= start:
                closed.append((t, stack.pop()))
            if not stack or stack[-1] >= end:
                stack.append(end)
                return t, closed
        self.stacks.append([end])
        return len(self.stacks) - 1, closed

    def close_all(self) -> list[tuple[int, int]]:
        out = [(t, e) for t, stack in enumerate(self.stacks) for e in reversed(stack)]
        self.stacks = []
        return out


def nesting_tracks(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Sub-track of each slice (in the arrays' order) such that the slices of one sub-track nest: the
    placement NestingTracks makes, for exporters that write whole columns (reports/ranks_export.py)."""
    out = np.zeros(start.size, np.int32)
    if start.size < 2:
        return out
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    if np.all(s[1:] >= np.maximum.accumulate(e)[:-1]):
        return out  # nothing overlaps: one track
    tracks = NestingTracks()
    placed = np.fromiter((tracks.place(int(a), int(b))[0] for a, b in zip(s, e)), dtype=np.int32, count=s.size)
    out[order] = placed
    return out


class _Writer:
    """Packets into chunks of a Trace message, appended to the file chunk by chunk."""

    def __init__(self, f: Any) -> None:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

        self.pb = pb
        self.f = f
        self.chunk = pb.Trace()
        self.first = True
        self.names: dict[str, int] = {}
        self.categories: dict[str, int] = {}
        self.annotations: dict[str, int] = {}
        self.tracks: dict[tuple[str, int], int] = {}  # (source key, sub-track) -> track uuid
        self.slices = 0
        self.flows = 0
        self.bytes = 0  # written so far (a FIFO or a device has no size to stat afterwards)

    def packet(self) -> Any:
        if len(self.chunk.packet) >= PACKETS_PER_WRITE:
            self.flush()
        p = self.chunk.packet.add()
        p.trusted_packet_sequence_id = SEQUENCE_ID
        if self.first:
            p.sequence_flags = self.pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            p.first_packet_on_sequence = True
            self.first = False
        else:
            p.sequence_flags = self.pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        return p

    def flush(self) -> None:
        """A serialized Trace is its packets (field 1) back to back: chunks concatenate into one Trace."""
        if len(self.chunk.packet):
            data = self.chunk.SerializeToString()
            self.f.write(data)
            self.bytes += len(data)
            self.chunk = self.pb.Trace()

    def _iid(self, table: dict[str, int], text: str, packet: Any, field: str) -> int:
        iid = table.get(text)
        if iid is None:
            iid = table[text] = len(table) + 1
            entry = getattr(packet.interned_data, field).add()
            entry.iid = iid
            entry.name = text
        return iid

    def process(self, uuid: int, pid: int, name: str, rank: int, description: str = "") -> None:
        d = self.packet().track_descriptor
        d.uuid = uuid
        d.process.pid = pid
        d.process.process_name = name
        d.child_ordering = self.pb.TrackDescriptor.EXPLICIT
        d.sibling_order_rank = rank
        if description:
            d.description = description

    def track(self, key: str, sub: int, parent: int, label: str) -> int:
        uuid = self.tracks.get((key, sub))
        if uuid is None:
            uuid = self.tracks[(key, sub)] = FIRST_TRACK_UUID + len(self.tracks)
            d = self.packet().track_descriptor
            d.uuid = uuid
            d.parent_uuid = parent
            d.name = label + (f" ({sub + 1})" if sub else "")
            d.sibling_order_rank = uuid
        return uuid

    def begin(self, ts: int, track: int, name: str, category: str, args: list[tuple[str, int]],
              flow: int = 0, terminating: int = 0) -> None:
        p = self.packet()
        p.timestamp = ts
        e = p.track_event
        e.type = self.pb.TrackEvent.TYPE_SLICE_BEGIN
        e.track_uuid = track
        e.name_iid = self._iid(self.names, name, p, "event_names")
        e.category_iids.append(self._iid(self.categories, category, p, "event_categories"))
        for key, value in args:
            a = e.debug_annotations.add()
            a.name_iid = self._iid(self.annotations, key, p, "debug_annotation_names")
            a.int_value = value
        if flow:
            e.flow_ids.append(flow)
            self.flows += 1
        if terminating:
            e.terminating_flow_ids.append(terminating)
        self.slices += 1

    def end(self, ts: int, track: int) -> None:
        p = self.packet()
        p.timestamp = ts
        p.track_event.type = self.pb.TrackEvent.TYPE_SLICE_END
        p.track_event.track_uuid = track


def _batches(con: Any, query: str) -> Iterator[list[tuple[Any, ...]]]:
    result = con.execute(query)
    while True:
        batch = result.fetchmany(FETCH_ROWS)
        if not batch:
            return
        yield batch


class _Links:
    """Which launches caused GPU work, and the first GPU span of each (the flow's two ends).

    Keyed by pass and correlation id packed in one int64 (correlation ids are 32-bit in CUPTI);
    two sorted numpy arrays of the ids with GPU work and a recorded call, not a join over the
    tables, so that memory stays at 16 bytes per launch."""

    def __init__(self, con: Any) -> None:
        import numpy as np

        g = con.execute("""SELECT (CAST(pass_id AS BIGINT) << 40) | correlation_id AS k, min(start_ns) AS first
                           FROM gpu_spans WHERE correlation_id <> 0 GROUP BY ALL ORDER BY k""").fetchnumpy()
        api = np.sort(con.execute("SELECT (CAST(pass_id AS BIGINT) << 40) | correlation_id AS k FROM api_calls "
                                  "WHERE correlation_id <> 0").fetchnumpy()["k"].astype(np.int64))
        keys = np.asarray(g["k"], dtype=np.int64)
        pos = np.clip(np.searchsorted(api, keys), 0, max(len(api) - 1, 0))
        linked = api[pos] == keys if len(api) else np.zeros(len(keys), dtype=bool)
        self.keys = keys[linked]
        self.first = np.asarray(g["first"], dtype=np.int64)[linked]

    def find(self, keys: list[int]) -> tuple[Any, Any]:
        """(linked?, first GPU start) for each key."""
        import numpy as np

        k = np.asarray(keys, dtype=np.int64)
        pos = np.clip(np.searchsorted(self.keys, k), 0, max(len(self.keys) - 1, 0))
        hit = self.keys[pos] == k if len(self.keys) else np.zeros(len(k), dtype=bool)
        return hit, self.first[pos] if len(self.keys) else np.zeros(len(k), dtype=np.int64)


def _key(pass_id: int, correlation_id: int) -> int:
    """Pass and correlation id in one int64; -1 (no flow) for ids out of range (a foreign file)."""
    if not 0 <= int(pass_id) < 1 << 22 or not 0 < int(correlation_id) < 1 << 40:
        return -1
    return (int(pass_id) << 40) | int(correlation_id)


def _flow_id(key: int) -> int:
    return key + 1  # flow ids are 1 and up


def _emit(w: _Writer, rows: Iterator[tuple[Any, ...]], t0: int,
          describe: Any) -> None:
    """Rows ordered by (key, start, end desc): (key, start, end, name, category, args, flow, terminating).
    `describe(key)` gives (parent uuid, track label)."""
    key = None
    nesting = NestingTracks()

    def close(closed: list[tuple[int, int]]) -> None:
        for sub, end in closed:
            w.end(end - t0, w.tracks[(str(key), sub)])

    for k, start, end, name, category, args, flow, terminating in rows:
        if k != key:
            close(nesting.close_all())
            key, nesting = k, NestingTracks()
        sub, closed = nesting.place(start, end)
        close(closed)
        parent, label = describe(k)
        track = w.track(str(k), sub, parent, label)
        w.begin(start - t0, track, name, category, args, flow, terminating)
    close(nesting.close_all())


def export_perfetto(trace: Trace, out: Path) -> PerfettoExport:
    """Writes the trace as a Perfetto protobuf trace; the file appears only when complete
    (reports.output: a FIFO or a device is written as a stream)."""
    con = trace.connection
    (t0,) = con.execute("""SELECT coalesce(min(t), 0) FROM (
        SELECT min(start_ns) AS t FROM passes UNION ALL SELECT min(start_ns) FROM api_calls
        UNION ALL SELECT min(start_ns) FROM gpu_spans UNION ALL SELECT min(start_ns) FROM markers)""").fetchone()
    t0 = int(t0)
    (host_pid,) = con.execute("SELECT coalesce(min(process_id), 0) FROM api_calls").fetchone()
    devices = [int(d) for (d,) in con.execute("SELECT DISTINCT device_id FROM gpu_spans ORDER BY 1").fetchall()]
    gpu_name = str(trace.meta.get("gpu_name", "") or "")
    (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone()
    try:
        con.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
        with open_output(out, binary=True) as f:
            w = _Writer(f)
            w.process(HOST_UUID, int(host_pid) if 0 < int(host_pid) < 0x7FFF_0000 else 1, f"host process {host_pid}", 0,
                      f"graphmode trace {printable(trace.path.name)}; times in ns from CUPTI clock {t0}")
            for i, dev in enumerate(devices):
                # a pid of its own per GPU, clear of real ones
                w.process(GPU_UUID_BASE + i, 0x7FFF_0000 + (dev & 0xFFFF), f"GPU {dev}" + (f" ({gpu_name})" if gpu_name else ""), 1 + i)
            gpu_uuid = {dev: GPU_UUID_BASE + i for i, dev in enumerate(devices)}
            links = _Links(con)
            _emit(w, _api_rows(con, links), t0, lambda k: (HOST_UUID, f"thread {k[0]} · CUDA {k[1]} API"))
            _emit(w, _marker_rows(con), t0, lambda k: (HOST_UUID, f"thread {k[0]} · {k[1]} markers"))
            # the one run's untraced windows: nothing recorded there (CUPTI detached), said on a track of its own
            _emit(w, _window_rows(trace), t0, lambda k: (HOST_UUID, "untraced windows (CUPTI detached: nothing recorded)"))
            _emit(w, _gpu_rows(con, links), t0,
                  lambda k: (gpu_uuid[k[0]], f"stream {k[1]}" + (" · graph launches" if k[2] else "")))
            w.flush()
    finally:
        con.execute(f"SET memory_limit = '{limit}'")
    note = ("; ".join(trace.notes) + ": not in the export") if trace.notes else ""
    return PerfettoExport(out, w.slices, w.flows, w.bytes, note)


def _api_rows(con: Any, links: _Links) -> Iterator[tuple[Any, ...]]:
    query = """SELECT thread_id, api, start_ns, end_ns, name, category, correlation_id, return_code, pass_id
               FROM api_calls ORDER BY thread_id, api, start_ns, end_ns DESC"""
    for batch in _batches(con, query):
        keys = [_key(r[8], r[6]) for r in batch]
        linked, _ = links.find(keys)
        for (tid, api, start, end, name, category, corr, rc, _pid), key, flow in zip(batch, keys, linked.tolist()):
            args = [("correlation_id", corr)] + ([("return_code", rc)] if rc else [])
            yield (tid, api), start, end, name, category, args, _flow_id(key) if flow else 0, 0


def _marker_rows(con: Any) -> Iterator[tuple[Any, ...]]:
    query = """SELECT thread_id, kind, start_ns, end_ns,
                 CASE WHEN kind = 'iteration' THEN mode || ' iteration ' || CAST(iteration AS VARCHAR) ELSE name END,
                 graph_id, pass_id
               FROM markers ORDER BY thread_id, kind, start_ns, end_ns DESC"""
    for batch in _batches(con, query):
        for tid, kind, start, end, name, graph, pid in batch:
            args = [("pass_id", pid)] + ([("graph_id", graph)] if graph else [])
            yield (tid, kind), start, end, name, kind, args, 0, 0


def _window_rows(trace: Trace) -> Iterator[tuple[Any, ...]]:
    """Each pass's untraced windows (analyzers.untraced_windows: meta.runs[].untraced_windows)."""
    for p in trace.passes:
        for w in untraced_windows(trace, p.pass_id):
            yield (("untraced", p.pass_id), w.start_ns, w.untraced_end_ns,
                   f"untraced window: {w.iterations:,} iterations of {short_loc(w.anchor)} timed by line stamps",
                   "untraced_window", [("pass_id", p.pass_id), ("iterations", w.iterations)], 0, 0)


def _gpu_rows(con: Any, links: _Links) -> Iterator[tuple[Any, ...]]:
    query = """SELECT device_id, stream_id, kind = 'graph' AS launches, start_ns, end_ns, name, kind, correlation_id,
                 graph_id, graph_node_id, bytes, pass_id
               FROM gpu_spans ORDER BY device_id, stream_id, launches, start_ns, end_ns DESC"""
    for batch in _batches(con, query):
        keys = [_key(r[11], r[7]) for r in batch]
        linked, first = links.find(keys)
        for row, key, flow, first_start in zip(batch, keys, linked.tolist(), first.tolist()):
            dev, stream, launches, start, end, name, kind, corr, graph, node, nbytes, _pid = row
            args = [("correlation_id", corr)]
            if graph:
                args.append(("graph_id", graph))
            if node:
                args.append(("graph_node_id", node))
            if nbytes:
                args.append(("bytes", nbytes))
            # the flow ends at the first span of the launch (the same start twice: both, a rare tie)
            terminating = _flow_id(key) if flow and start == first_start else 0
            yield (dev, stream, launches), start, end, name, kind, args, 0, terminating
