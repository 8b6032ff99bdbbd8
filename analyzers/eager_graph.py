"""The CUDA graph that stream capture would make of one eager iteration: nodes, edges, what breaks it.

`build_eager_graph(ops, events)` replays CUDA's stream-capture rules over one iteration's operations
(kernels, copies, memsets, host functions, in launch order) and its cross-stream event calls:

- capture starts on the stream of the first operation (the origin); a stream joins the capture when it
  waits on an event recorded on a capturing stream; work launched on a stream that is not capturing at
  that moment runs eagerly and is not in the graph (reported);
- each stream carries a set of capture dependencies: an operation on it depends on every node in the
  set, which then becomes {that node}; cudaEventRecord gives the event the stream's set at that moment,
  cudaStreamWaitEvent adds the event's set to the waiting stream's set. Stream capture keeps these
  edges as they are (no transitive reduction), so a join kernel that follows a memset on its own stream
  and waits on the branches gets an edge from each;
- at the end every stream must have been joined back into the origin: a node that nothing on the
  origin stream depends on, left on another stream, is reported as unjoined (cudaErrorStreamCaptureUnjoined);
  a wait on an event recorded before the iteration would cross the capture boundary
  (cudaErrorStreamCaptureIsolation) and is reported too.

What the trace lacks: `api_calls` carries no stream or event for cudaEventRecord (CUPTI's API records
have none) and cudaLaunchHostFunc has no GPU span. A record's stream is taken to be the stream of the
last operation its thread launched before it (the usual `launch; record(e, s)` idiom), and each event
id waited on (`synchronizations.event_id` of the `stream_wait_event` records) is matched to the
earliest unmatched record before its first wait (records and first waits in the same order, as a
fork/join loop issues them). `EagerGraph.event_pairing` says 'inferred' when this was needed; CUPTI's
CUDA_EVENT activity (CUpti_ActivityCudaEvent2: correlationId, streamId, eventId) would make it exact.

Everything vectorised over operations; the Python loops run over event calls and streams, a handful per
iteration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.tracer.store import Trace

OP_KINDS = ("kernel", "memcpy", "memset", "host")

_RECORD = re.compile(r"EventRecord")
_HOST_FUNC = re.compile(r"LaunchHostFunc|StreamAddCallback")

# API calls that cannot run inside a stream capture, by kind (docs/metrics.md, "Prediction").
BREAKER_RULES: tuple[tuple[str, str], ...] = (
    ("sync", r"(Stream|Device|Ctx|Event)Synchronize"),
    ("query", r"(Stream|Event)Query"),
    ("host_read", r"Memcpy.*DtoH(?!.*Async)|^cudaMemcpy(_v\d+)?$|^cudaMemcpyFromSymbol(_v\d+)?$"),
    ("blocking_copy", r"^(cu|cuda)Memcpy(?!.*Async)"),
    ("blocking_memset", r"^(cu|cuda)Memset(?!.*Async)"),
    ("allocation", r"^(cudaMalloc(?!Async|FromPool)|cudaHostAlloc|cudaMallocHost|cudaHostRegister|cuMemAlloc(?!Async|FromPool)|cuMemHostAlloc|cuMemHostRegister)"),
    ("free", r"^(cudaFree(?!Async)|cudaFreeHost|cudaHostUnregister|cuMemFree(?!Async)|cuMemFreeHost|cuMemHostUnregister)"),
)


@dataclass(frozen=True)
class EagerOps:
    """One iteration's operations in launch order (columns, aligned by position)."""

    kind: np.ndarray  # object: 'kernel' | 'memcpy' | 'memset' | 'host'
    name: np.ndarray  # object
    stream: np.ndarray  # int64; -1: unknown (host functions: inferred by build_eager_graph)
    launch_ns: np.ndarray  # int64: start of the launching API call
    thread: np.ndarray  # int64

    @property
    def size(self) -> int:
        return int(self.launch_ns.size)


@dataclass(frozen=True)
class EventCalls:
    """cudaEventRecord and cudaStreamWaitEvent calls of one iteration (columns)."""

    record_ns: np.ndarray  # int64
    record_thread: np.ndarray  # int64
    record_stream: np.ndarray  # int64; -1: not recorded by the trace (inferred)
    record_event: np.ndarray  # int64; -1: not recorded by the trace (paired by order)
    wait_ns: np.ndarray  # int64
    wait_stream: np.ndarray  # int64
    wait_event: np.ndarray  # int64

    @staticmethod
    def none() -> EventCalls:
        z = np.zeros(0, dtype=np.int64)
        return EventCalls(z, z, z, z, z, z, z)


@dataclass(frozen=True)
class EagerGraph:
    """The graph a stream capture of the iteration would build (indices refer to `ops`)."""

    ops: EagerOps  # with inferred streams filled in
    captured: np.ndarray  # bool per op: in the graph
    edge_from: np.ndarray  # int64 op index
    edge_to: np.ndarray
    origin_stream: int
    cross_stream_edges: int
    streams: int  # streams with captured work
    event_pairing: str  # 'exact' | 'inferred' (record stream/event guessed, see module doc) | 'none' (no events)
    uncaptured: int  # ops on streams that had not joined the capture
    unjoined_streams: tuple[int, ...]
    external_waits: int  # waits on events recorded before the iteration, on capturing streams

    @property
    def nodes(self) -> int:
        return int(self.captured.sum())

    @property
    def edges(self) -> int:
        return int(self.edge_from.size)

    def counts(self) -> dict[str, int]:
        """Captured nodes per kind (OP_KINDS)."""
        k = self.ops.kind[self.captured]
        return {kind: int(np.count_nonzero(k == kind)) for kind in OP_KINDS}


def _last_before(times: np.ndarray, t: float) -> int:
    """Index of the last entry of sorted `times` strictly before t; -1 if none."""
    return int(np.searchsorted(times, t, side="left")) - 1


def _infer_streams(stream: np.ndarray, launch: np.ndarray, thread: np.ndarray,
                   at: np.ndarray, at_thread: np.ndarray) -> np.ndarray:
    """For each time `at` on thread `at_thread`: the stream of the last op with a known stream that the
    same thread launched before it (-1 if none). Ops are in launch order."""
    out = np.full(at.size, -1, dtype=np.int64)
    known = stream >= 0
    for th in np.unique(at_thread):  # per thread: a handful
        mine = np.flatnonzero(known & (thread == th))
        sel = np.flatnonzero(at_thread == th)
        if mine.size == 0 or sel.size == 0:
            continue
        j = np.searchsorted(launch[mine], at[sel], side="left") - 1
        ok = j >= 0
        out[sel[ok]] = stream[mine[j[ok]]]
    return out


def _fifo_pairing(record_ns: np.ndarray, wait_ns: np.ndarray, wait_event: np.ndarray) -> dict[int, int]:
    """Event id -> index of its record, when records carry no event id: each event (in the order of its
    first wait) takes the earliest record not yet taken that precedes that first wait."""
    first_wait: dict[int, float] = {}
    for t, e in zip(wait_ns.tolist(), wait_event.tolist()):
        first_wait.setdefault(int(e), float(t))
    taken = np.zeros(record_ns.size, dtype=bool)
    out: dict[int, int] = {}
    for e, t in sorted(first_wait.items(), key=lambda kv: kv[1]):  # per event id waited on
        free = np.flatnonzero(~taken & (record_ns < t))
        if free.size:
            out[e] = int(free[0])
            taken[free[0]] = True
    return out


def build_eager_graph(ops: EagerOps, events: EventCalls) -> EagerGraph:
    """The graph stream capture would record from these operations and event calls (module doc)."""
    n = ops.size
    if n and not bool(np.all(np.diff(ops.launch_ns) >= 0)):
        raise ValueError("ops must be in launch order")
    stream = ops.stream.astype(np.int64).copy()
    unknown = np.flatnonzero(stream < 0)
    if unknown.size:  # host functions: the stream of the thread's last launch before them
        stream[unknown] = _infer_streams(stream, ops.launch_ns, ops.thread, ops.launch_ns[unknown], ops.thread[unknown])
    ops = EagerOps(ops.kind, ops.name, stream, ops.launch_ns, ops.thread)
    rec_stream = events.record_stream.astype(np.int64).copy()
    inferred = bool(np.any(rec_stream < 0)) or bool(np.any(events.record_event < 0))
    miss = np.flatnonzero(rec_stream < 0)
    if miss.size:
        rec_stream[miss] = _infer_streams(stream, ops.launch_ns, ops.thread, events.record_ns[miss], events.record_thread[miss])
    fifo = _fifo_pairing(events.record_ns, events.wait_ns, events.wait_event) if np.any(events.record_event < 0) else {}

    origin = int(stream[0]) if n else -1
    by_stream = {int(s): np.flatnonzero(stream == s) for s in np.unique(stream)}  # launch order within each
    capturing_since: dict[int, float] = {origin: -np.inf}
    pending: dict[int, list[tuple[float, frozenset[int]]]] = {}
    record_deps: list[tuple[frozenset[int], bool]] = [(frozenset(), False)] * events.record_ns.size
    last_record_of: dict[int, int] = {}
    src: list[int] = []
    dst: list[int] = []
    external = 0

    def deps_at(s: int, t: float) -> frozenset[int]:
        """The capture dependencies of stream s at time t: its last op, plus waits since then."""
        idx = by_stream.get(s)
        last = _last_before(ops.launch_ns[idx], t) if idx is not None else -1
        lo = float(ops.launch_ns[idx[last]]) if last >= 0 and idx is not None else -np.inf
        deps = {int(idx[last])} if last >= 0 and idx is not None else set()
        for tw, d in pending.get(s, ()):
            if tw > lo:
                deps |= d
        return frozenset(deps)

    # Event calls in time order (a record before a wait at the same time): a few per iteration.
    timeline = sorted([(float(t), 0, i) for i, t in enumerate(events.record_ns.tolist())]
                      + [(float(t), 1, i) for i, t in enumerate(events.wait_ns.tolist())])
    for t, is_wait, i in timeline:
        if not is_wait:
            s = int(rec_stream[i])
            captured = s in capturing_since and capturing_since[s] <= t
            record_deps[i] = (deps_at(s, t) if s >= 0 else frozenset(), captured)
            if events.record_event[i] >= 0:
                last_record_of[int(events.record_event[i])] = i
            continue
        s, e = int(events.wait_stream[i]), int(events.wait_event[i])
        r = fifo.get(e, -1) if events.record_event.size == 0 or np.any(events.record_event < 0) else last_record_of.get(e, -1)
        if r < 0 or events.record_ns[r] > t:
            if s in capturing_since and capturing_since[s] <= t:
                external += 1
            continue
        deps, captured = record_deps[r]
        if not captured:
            continue
        if s not in capturing_since or capturing_since[s] > t:
            capturing_since[s] = t
        pending.setdefault(s, []).append((t, deps))
        idx = by_stream.get(s)
        if idx is not None:
            k = int(np.searchsorted(ops.launch_ns[idx], t, side="right"))
            if k < idx.size:
                src.extend(deps)
                dst.extend([int(idx[k])] * len(deps))

    since = np.array([capturing_since.get(int(s), np.inf) for s in stream], dtype=np.float64) if n else np.zeros(0)
    captured_ops = ops.launch_ns >= since if n else np.zeros(0, dtype=bool)

    # Stream order: consecutive ops on one stream (vectorised).
    order = np.lexsort((ops.launch_ns, stream)) if n else np.zeros(0, dtype=np.int64)
    same = stream[order][1:] == stream[order][:-1]
    e_from = np.concatenate([order[:-1][same], np.asarray(src, dtype=np.int64)]) if n else np.zeros(0, dtype=np.int64)
    e_to = np.concatenate([order[1:][same], np.asarray(dst, dtype=np.int64)]) if n else np.zeros(0, dtype=np.int64)
    keep = captured_ops[e_from] & captured_ops[e_to] & (e_from != e_to) if e_from.size else np.zeros(0, dtype=bool)
    pairs = np.unique(np.stack([e_from[keep], e_to[keep]], axis=1), axis=0) if keep.any() else np.zeros((0, 2), dtype=np.int64)
    e_from, e_to = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)

    # Unjoined: captured sinks on side streams that the origin's final dependency set does not reach.
    has_out = np.zeros(n, dtype=bool)
    has_out[e_from] = True
    joined_at_end = deps_at(origin, np.inf) if n else frozenset()
    sinks = np.flatnonzero(captured_ops & ~has_out & (stream != origin))
    unjoined = sorted({int(stream[i]) for i in sinks if int(i) not in joined_at_end})
    return EagerGraph(
        ops=ops, captured=captured_ops, edge_from=e_from, edge_to=e_to, origin_stream=origin,
        cross_stream_edges=int(np.count_nonzero(stream[e_from] != stream[e_to])) if e_from.size else 0,
        streams=int(np.unique(stream[captured_ops]).size) if n else 0,
        event_pairing=("inferred" if inferred else "exact") if events.wait_ns.size or events.record_ns.size else "none",
        uncaptured=int(np.count_nonzero(~captured_ops)), unjoined_streams=tuple(unjoined), external_waits=external,
    )


# ---------------------------------------------------------------------------------------------- from a trace

# Eager GPU work (not from a graph) joined to its launching call: the earliest call with the span's
# correlation id (a runtime call's work carries the runtime call's id). Host functions have no span:
# their calls are read with the other calls below.
_OPS_SQL = """
WITH launch AS (
  SELECT correlation_id, min(start_ns) AS launch_ns, arg_min(end_ns, start_ns) AS launch_end,
         arg_min(thread_id, start_ns) AS thread_id, max(source) AS source
  FROM api_calls WHERE pass_id = $1 AND start_ns >= $2 AND start_ns < $3 GROUP BY correlation_id
)
SELECT s.kind, s.name, s.stream_id::BIGINT AS stream_id, s.start_ns, s.end_ns, l.launch_ns, l.launch_end, l.thread_id, l.source,
       coalesce(s.grid_x::BIGINT * s.grid_y * s.grid_z, 0) AS blocks
FROM gpu_spans s JOIN launch l ON l.correlation_id = s.correlation_id
WHERE s.pass_id = $1 AND s.graph_id = 0 AND s.kind IN ('kernel', 'memcpy', 'memset')
ORDER BY l.launch_ns, s.start_ns
"""

# Calls that matter to the graph besides launches: event records, host functions, and whatever breaks a
# capture. Waits come from the SYNCHRONIZATION records (they carry the stream and event id).
_CALLS_SQL = """
SELECT name, api, start_ns, end_ns, thread_id, source
FROM api_calls
WHERE pass_id = $1 AND start_ns >= $2 AND start_ns < $3
  AND (category IN ('event', 'sync', 'memory', 'memcpy', 'memset') OR regexp_matches(name, 'LaunchHostFunc|StreamAddCallback|Query'))
ORDER BY start_ns, end_ns DESC
"""

_WAITS_SQL = """
SELECT a.start_ns, a.thread_id, y.stream_id::BIGINT AS stream_id, y.event_id
FROM synchronizations y JOIN api_calls a ON a.pass_id = y.pass_id AND a.correlation_id = y.correlation_id
WHERE y.pass_id = $1 AND y.type = 'stream_wait_event' AND a.start_ns >= $2 AND a.start_ns < $3
ORDER BY a.start_ns
"""


@dataclass(frozen=True)
class WindowActivity:
    """Eager operations and relevant calls of a set of iterations of one pass (columns).

    `op_iteration` / `call_iteration` / `wait_iteration`: index of the iteration whose window holds the
    launching call's start (-1: none). Host functions are ops of kind 'host' with stream -1.
    """

    op_kind: np.ndarray
    op_name: np.ndarray
    op_stream: np.ndarray
    op_start: np.ndarray  # GPU start (host functions: the call's start)
    op_end: np.ndarray  # GPU end (host functions: the call's start, no GPU time)
    op_launch: np.ndarray
    op_launch_end: np.ndarray
    op_thread: np.ndarray
    op_source: np.ndarray
    op_iteration: np.ndarray
    call_name: np.ndarray  # outermost calls only (a driver call inside a runtime call is dropped)
    call_start: np.ndarray
    call_end: np.ndarray
    call_thread: np.ndarray
    call_source: np.ndarray
    call_iteration: np.ndarray
    wait_ns: np.ndarray
    wait_thread: np.ndarray
    wait_stream: np.ndarray
    wait_event: np.ndarray
    wait_iteration: np.ndarray
    op_blocks: np.ndarray | None = None  # a kernel's grid size (blocks); 0 for other ops


def name_mask(names: np.ndarray, pattern: str | re.Pattern[str]) -> np.ndarray:
    """Which names match a regular expression: one match per distinct name, not per call."""
    if names.size == 0:
        return np.zeros(0, dtype=bool)
    uniq, inv = factorize(names)
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    out: np.ndarray = np.array([bool(rx.search(u)) for u in uniq], dtype=bool)[inv]
    return out


def _place(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Iteration index of each time (iterations sorted, not overlapping); -1 outside all of them."""
    j = np.searchsorted(starts, t, side="right") - 1
    ok = (j >= 0) & (t < ends[np.clip(j, 0, max(ends.size - 1, 0))]) if ends.size else np.zeros(t.size, dtype=bool)
    return np.where(ok, j, -1).astype(np.int64)


def _outermost(start: np.ndarray, end: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """Mask of calls not contained in an earlier (or equal, longer) call on their thread. Input sorted by
    start, then end descending, so a runtime call precedes the driver call it makes."""
    keep = np.ones(start.size, dtype=bool)
    for th in np.unique(thread):  # per thread: a handful
        sel = np.flatnonzero(thread == th)
        e = end[sel]
        covered = np.maximum.accumulate(e)
        inner = np.zeros(sel.size, dtype=bool)
        inner[1:] = e[1:] <= covered[:-1]
        keep[sel[inner]] = False
    return keep


def window_activity(trace: Trace, pass_id: int, starts: np.ndarray, ends: np.ndarray) -> WindowActivity:
    """Operations, calls and waits whose launching call starts inside the iterations [starts, ends)."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    lo = int(starts.min()) if starts.size else 0
    hi = int(ends.max()) if ends.size else 0
    o = trace.sql(_OPS_SQL, [pass_id, lo, hi])
    c = trace.sql(_CALLS_SQL, [pass_id, lo, hi])
    w = trace.sql(_WAITS_SQL, [pass_id, lo, hi])
    keep = _outermost(c["start_ns"].astype(np.int64), c["end_ns"].astype(np.int64), c["thread_id"].astype(np.int64))
    c = {k: v[keep] for k, v in c.items()}
    names = c["name"].astype(object)
    host = name_mask(names, _HOST_FUNC)
    h_start = c["start_ns"][host].astype(np.int64)
    kinds = np.concatenate([o["kind"].astype(object), np.full(int(host.sum()), "host", dtype=object)])
    launch = np.concatenate([o["launch_ns"].astype(np.int64), h_start])
    by_launch = np.argsort(launch, kind="stable")

    def cat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.concatenate([a, b])[by_launch])

    op_launch = launch[by_launch]
    op_it = _place(op_launch, starts, ends)
    call_it = _place(c["start_ns"].astype(np.int64), starts, ends)
    wait_it = _place(w["start_ns"].astype(np.int64), starts, ends)
    def remap(j: np.ndarray) -> np.ndarray:  # iteration indices in the caller's order of starts
        out: np.ndarray = np.where(j >= 0, order[np.clip(j, 0, max(order.size - 1, 0))], -1)
        return out

    return WindowActivity(
        op_kind=kinds[by_launch], op_name=cat(o["name"].astype(object), names[host]),
        op_stream=cat(o["stream_id"].astype(np.int64), np.full(h_start.size, -1, dtype=np.int64)),
        op_start=cat(o["start_ns"].astype(np.int64), h_start), op_end=cat(o["end_ns"].astype(np.int64), h_start),
        op_launch=op_launch, op_launch_end=cat(o["launch_end"].astype(np.int64), c["end_ns"][host].astype(np.int64)),
        op_thread=cat(o["thread_id"].astype(np.int64), c["thread_id"][host].astype(np.int64)),
        op_source=cat(o["source"].astype(object), c["source"][host].astype(object)), op_iteration=remap(op_it),
        call_name=names, call_start=c["start_ns"].astype(np.int64), call_end=c["end_ns"].astype(np.int64),
        call_thread=c["thread_id"].astype(np.int64), call_source=c["source"].astype(object), call_iteration=remap(call_it),
        wait_ns=w["start_ns"].astype(np.int64), wait_thread=w["thread_id"].astype(np.int64),
        wait_stream=w["stream_id"].astype(np.int64), wait_event=w["event_id"].astype(np.int64), wait_iteration=remap(wait_it),
        op_blocks=cat(o["blocks"].astype(np.int64), np.zeros(h_start.size, dtype=np.int64)),
    )


def iteration_graph(act: WindowActivity, iteration: int) -> EagerGraph:
    """The graph of one iteration of a window (its ops, records and waits)."""
    s = act.op_iteration == iteration
    ops = EagerOps(act.op_kind[s], act.op_name[s], act.op_stream[s], act.op_launch[s], act.op_thread[s])
    rec = (act.call_iteration == iteration) & name_mask(act.call_name, _RECORD)
    w = act.wait_iteration == iteration
    n_rec = int(rec.sum())
    events = EventCalls(
        record_ns=act.call_start[rec], record_thread=act.call_thread[rec],
        record_stream=np.full(n_rec, -1, dtype=np.int64), record_event=np.full(n_rec, -1, dtype=np.int64),
        wait_ns=act.wait_ns[w], wait_stream=act.wait_stream[w], wait_event=act.wait_event[w],
    )
    return build_eager_graph(ops, events)


def event_call_counts(act: WindowActivity, iteration: int) -> tuple[int, int]:
    """(cudaEventRecord calls, cudaStreamWaitEvent calls) of one iteration: the capture replays them too."""
    rec = int(np.count_nonzero((act.call_iteration == iteration) & name_mask(act.call_name, _RECORD)))
    return rec, int(np.count_nonzero(act.wait_iteration == iteration))


@dataclass(frozen=True)
class BreakerHit:
    """Calls of one kind, name and source line that would break a capture of the region."""

    kind: str
    api: str
    where: str
    calls: int  # over the iterations looked at
    first_only: bool = False  # every one of them in the first iteration looked at


def capture_breakers(act: WindowActivity) -> tuple[list[BreakerHit], int]:
    """Calls inside the iterations that stream capture forbids, grouped by (kind, name, source); and how
    many synchronizations were left out because they end an iteration (after its last launch: they stay
    outside the captured region, as the graph's own launch + synchronize)."""
    n = act.call_name.size
    if n == 0:
        return [], 0
    uniq, inv = factorize(act.call_name)
    kind_of = []
    for name in uniq:  # per distinct API name
        kind_of.append(next((k for k, rx in BREAKER_RULES if re.search(rx, name)), ""))
    kinds = np.asarray(kind_of, dtype=object)[inv]
    inside = (act.call_iteration >= 0) & (kinds != "")
    # A call after the iteration's last launch ends it: it is not inside the region to be captured.
    n_it = int(max(act.op_iteration.max(initial=-1), act.call_iteration.max(initial=-1))) + 1
    last_launch = np.full(max(n_it, 1), np.iinfo(np.int64).min, dtype=np.int64)
    placed = act.op_iteration >= 0
    np.maximum.at(last_launch, act.op_iteration[placed], act.op_launch[placed])
    trailing = inside & (act.call_start > last_launch[np.clip(act.call_iteration, 0, None)])
    hits = inside & ~trailing
    out: dict[tuple[str, str, str], int] = {}
    later: set[tuple[str, str, str]] = set()  # keys with a call after the first iteration
    for k, name, src, it in zip(kinds[hits], act.call_name[hits], act.call_source[hits], act.call_iteration[hits]):  # few
        key = (str(k), str(name), str(src))
        out[key] = out.get(key, 0) + 1
        if int(it) > 0:
            later.add(key)
    return [BreakerHit(k, a, w, c, (k, a, w) not in later) for (k, a, w), c in sorted(out.items(), key=lambda kv: -kv[1])], \
        int(trailing.sum())
