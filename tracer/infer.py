"""Iterations of a user script, found in what CUPTI recorded (a script writes no iteration markers).

Call it on a traced pass after its calls, spans, graphs and graph_events are written:

    cols = infer_iterations(writer.as_trace(), pass_id)   # or on any loaded Trace
    writer.append("markers", cols)                         # kind='iteration' rows

The rules (docs/metrics.md, "Iterations of a user script"):

- **graph**: each `launch` row of `graph_events` is one replay of its graph. The iteration runs from
  the launch call's start to the next launch of the same graph, so host work and synchronizations
  between replays count; the last launch of a stretch ends when its GPU work ends (the latest end of
  a GPU span with the launch's correlation id). A stretch ends where a capture, explicit build or
  instantiation starts, or where an eager occurrence of the graph's work starts.
- **eager**: the graph's kernel sequence (kernel nodes by `node_index`, i.e. capture order) is
  looked for in the stream of eager kernels (`gpu_spans` with graph_id 0, joined to their launching
  API call by correlation id, ordered by the call's start, launches inside a capture window left
  out). Each non-overlapping occurrence (leftmost first) is one eager iteration of the work the graph
  replaced, from its first launch call's start to the next occurrence's first launch start; the
  last of a stretch ends at its GPU end. Graphs with the same kernel sequence share occurrences,
  labelled with the first such graph.
- **NVTX**: ranges named `graphmode:eager`, `graphmode:eager_sync_each` or `graphmode:graph` (or
  starting with those) are explicit iterations of that mode. A mode with explicit ranges uses only
  them (name 'nvtx'); inferred ones are named 'inferred'.

Iterations are numbered from 0 per (mode, graph_id) in start order. Iterations of different graphs
may overlap in time (graphs replayed in turn); those of one graph and mode never do.
Everything is vectorised over events; the only Python loops run per graph or per kernel node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphmode.tracer.store import Trace

NVTX_PREFIX = "graphmode:"
# longest prefix first: 'graphmode:eager_sync_each' must not be read as 'eager'
NVTX_MODES = ("eager_sync_each", "eager", "graph")
MARKER_COLUMNS = ("pass_id", "kind", "name", "mode", "iteration", "start_ns", "end_ns", "thread_id", "graph_id")

_LAUNCHES_SQL = """
WITH gpu AS (  -- only the launches' spans: grouping every span of the pass by correlation id is most of the cost
  SELECT correlation_id, max(end_ns) AS gpu_end FROM gpu_spans WHERE pass_id = $1 AND correlation_id IN
    (SELECT correlation_id FROM graph_events WHERE pass_id = $1 AND event = 'launch' AND correlation_id <> 0)
  GROUP BY correlation_id)
SELECT e.graph_id, e.start_ns, e.end_ns, e.thread_id, e.correlation_id, coalesce(g.gpu_end, 0)::BIGINT AS gpu_end
FROM graph_events e LEFT JOIN gpu g ON e.correlation_id <> 0 AND g.correlation_id = e.correlation_id
WHERE e.pass_id = $1 AND e.event = 'launch' ORDER BY e.graph_id, e.start_ns
"""

_BREAKS_SQL = """
SELECT start_ns FROM graph_events WHERE pass_id = $1 AND event IN ('capture', 'build', 'instantiate') ORDER BY start_ns
"""

# Eager kernels in launch order. A kernel's correlation id may match a runtime and a driver call
# (a runtime call's kernel carries the runtime call's id; cuda-python's direct driver calls their own):
# the earliest call with that id is the launch.
_EAGER_SQL = """
WITH launch AS (
  SELECT correlation_id, min(start_ns) AS launch_ns, arg_min(thread_id, start_ns) AS thread_id
  FROM api_calls WHERE pass_id = $1 GROUP BY correlation_id
), captures AS (
  SELECT start_ns, end_ns FROM graph_events WHERE pass_id = $1 AND event = 'capture'
)
SELECT s.name, l.launch_ns, l.thread_id, s.end_ns
FROM gpu_spans s JOIN launch l ON l.correlation_id = s.correlation_id
WHERE s.pass_id = $1 AND s.kind = 'kernel' AND s.graph_id = 0
  AND NOT EXISTS (SELECT 1 FROM captures c WHERE l.launch_ns >= c.start_ns AND l.launch_ns < c.end_ns)
ORDER BY l.launch_ns, s.start_ns
"""

_SEQUENCES_SQL = """
SELECT graph_id, list(name ORDER BY node_index) AS names
FROM graph_nodes WHERE pass_id = $1 AND node_type = 'kernel' GROUP BY graph_id ORDER BY graph_id
"""

_NVTX_SQL = """
SELECT name, start_ns, end_ns, thread_id FROM markers
WHERE pass_id = $1 AND kind = 'nvtx' AND starts_with(name, 'graphmode:') ORDER BY start_ns
"""


@dataclass(frozen=True)
class Occurrences:
    """Iterations of one mode for one graph: starts, ends, threads (sorted by start)."""

    graph_id: int
    start: np.ndarray
    end: np.ndarray
    thread: np.ndarray


def _ends(starts: np.ndarray, own_end: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """Each start's iteration ends at the next start, unless a break lies between (then at its own end)."""
    if starts.size == 0:
        return np.asarray(starts.copy())
    end = own_end.copy()
    nxt = starts[1:]
    # a break b with starts[i] < b < starts[i+1] ends the stretch after i
    broken = np.searchsorted(breaks, starts[:-1], side="right") != np.searchsorted(breaks, nxt, side="left")
    end[:-1] = np.where(broken, own_end[:-1], nxt)
    return np.asarray(np.maximum(end, starts))


def find_sequence(codes: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """Start positions of the non-overlapping occurrences of `pattern` in `codes`, leftmost first.

    Candidates shrink one pattern position at a time (a loop over the pattern, not the events).
    """
    n, m = codes.size, pattern.size
    if m == 0 or n < m:
        return np.zeros(0, dtype=np.int64)
    cand = np.flatnonzero(codes[: n - m + 1] == pattern[0])
    for k in range(1, m):
        if cand.size == 0:
            break
        cand = cand[codes[cand + k] == pattern[k]]
    if cand.size <= 1 or np.all(np.diff(cand) >= m):
        return cand.astype(np.int64)
    # A self-overlapping pattern (e.g. one kernel repeated): keep the leftmost, skip what overlaps it.
    nxt = np.searchsorted(cand, cand + m, side="left")
    keep, i = [], 0
    while i < cand.size:  # one step per occurrence kept (per iteration), not per event
        keep.append(i)
        i = int(nxt[i])
    return cand[np.asarray(keep, dtype=np.int64)].astype(np.int64)


def graph_replays(trace: Trace, pass_id: int) -> list[Occurrences]:
    """Launches per graph; `end` is each launch's own end (its GPU work's end, at least its call's)."""
    launches = trace.sql(_LAUNCHES_SQL, [pass_id])
    gid = launches["graph_id"].astype(np.int64)
    out = []
    for g in np.unique(gid):  # per graph
        sel = gid == g
        start = launches["start_ns"][sel].astype(np.int64)
        own = np.maximum(launches["gpu_end"][sel].astype(np.int64), launches["end_ns"][sel].astype(np.int64))
        out.append(Occurrences(int(g), start, own, launches["thread_id"][sel].astype(np.int64)))
    return out


def eager_occurrences(trace: Trace, pass_id: int) -> list[Occurrences]:
    """Eager occurrences per distinct graph kernel sequence; `end` is each one's own GPU end."""
    eager = trace.sql(_EAGER_SQL, [pass_id])
    names = eager["name"].astype(str)
    if names.size == 0:
        return []
    vocab, codes = np.unique(names, return_inverse=True)
    launch_ns = eager["launch_ns"].astype(np.int64)
    gpu_end = np.append(eager["end_ns"].astype(np.int64), 0)  # sentinel: reduceat may index the stream's end
    seen: set[tuple[str, ...]] = set()
    out = []
    for graph_id, seq in trace.rows(_SEQUENCES_SQL, [pass_id]):  # per graph
        key = tuple(str(s) for s in seq)
        if not key or key in seen:
            continue
        seen.add(key)
        wanted = np.asarray(key, dtype=vocab.dtype)
        idx = np.minimum(np.searchsorted(vocab, wanted), vocab.size - 1)
        if np.any(vocab[idx] != wanted):
            continue  # some kernel of the graph never ran eagerly
        pos = find_sequence(codes, idx)
        if pos.size == 0:
            continue
        bounds = np.empty(2 * pos.size, dtype=np.int64)
        bounds[0::2], bounds[1::2] = pos, pos + len(key)
        own = np.maximum.reduceat(gpu_end, bounds)[0::2]
        start = launch_ns[pos]
        out.append(Occurrences(int(graph_id), start, np.maximum(own, start), eager["thread_id"][pos].astype(np.int64)))
    return out


def stretch_breaks(trace: Trace, pass_id: int) -> np.ndarray:
    """Starts of captures, explicit builds and instantiations: no iteration reaches across one."""
    return trace.sql(_BREAKS_SQL, [pass_id])["start_ns"].astype(np.int64)


def infer_iterations(trace: Trace, pass_id: int) -> dict[str, np.ndarray]:
    """Markers columns (kind='iteration') for the eager stretches and graph replays of one pass.

    `trace` is a loaded Trace or `TraceWriter.as_trace()`; the result goes to
    `TraceWriter.append("markers", cols)` as is (it carries pass_id). Zero rows when nothing is found.
    """
    breaks = stretch_breaks(trace, pass_id)
    graph_its = graph_replays(trace, pass_id)
    eager_its = eager_occurrences(trace, pass_id)
    # An eager occurrence of a graph's work ends a replay stretch of that graph, and any launch an eager stretch.
    eager_starts = {o.graph_id: o.start for o in eager_its}
    all_launches = np.concatenate([breaks, *(o.start for o in graph_its)])
    parts: list[tuple[str, str, Occurrences]] = []
    for o in graph_its:  # per graph
        b = np.sort(np.concatenate([breaks, eager_starts.get(o.graph_id, breaks[:0])]))
        parts.append(("graph", "inferred", Occurrences(o.graph_id, o.start, _ends(o.start, o.end, b), o.thread)))
    for o in eager_its:  # per graph sequence
        b = np.sort(all_launches)
        parts.append(("eager", "inferred", Occurrences(o.graph_id, o.start, _ends(o.start, o.end, b), o.thread)))

    explicit = _nvtx_iterations(trace, pass_id, graph_its, eager_its)
    explicit_modes = {mode for mode, _, _ in explicit}
    parts = [p for p in parts if p[0] not in explicit_modes] + explicit
    return _columns(pass_id, parts)


def _nvtx_iterations(trace: Trace, pass_id: int, graph_its: list[Occurrences],
                     eager_its: list[Occurrences]) -> list[tuple[str, str, Occurrences]]:
    """Explicit iterations from NVTX ranges named graphmode:<mode>…, labelled with the graph they hold."""
    r = trace.sql(_NVTX_SQL, [pass_id])
    names = r["name"].astype(str) if r["name"].size else np.zeros(0, dtype=str)
    out: list[tuple[str, str, Occurrences]] = []
    rest = np.char.lstrip(np.char.replace(names, NVTX_PREFIX, "", count=1)) if names.size else names
    taken = np.zeros(names.size, dtype=bool)
    for mode in NVTX_MODES:  # per mode
        sel = np.char.startswith(rest, mode) & ~taken if names.size else taken
        taken |= sel
        if not sel.any():
            continue
        start, end = r["start_ns"][sel].astype(np.int64), r["end_ns"][sel].astype(np.int64)
        # the graph of the first launch (graph mode) or eager occurrence (eager modes) inside the range
        src = graph_its if mode == "graph" else eager_its
        graph = np.zeros(start.size, dtype=np.int64)
        first_at = np.full(start.size, np.iinfo(np.int64).max)
        for o in src:  # per graph
            j = np.searchsorted(o.start, start, side="left")
            hit = j < o.start.size
            at = np.where(hit, o.start[np.minimum(j, o.start.size - 1)], np.iinfo(np.int64).max)
            better = hit & (at < end) & (at < first_at)
            graph = np.where(better, o.graph_id, graph)
            first_at = np.where(better, at, first_at)
        for g in np.unique(graph):  # per graph
            gs = graph == g
            out.append((mode, "nvtx", Occurrences(int(g), start[gs], end[gs], r["thread_id"][sel][gs].astype(np.int64))))
    return out


def _numbered(mode: np.ndarray, graph: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order by start, and iteration numbers from 0 per (mode, graph) in start order (aligned with the input)."""
    order = np.lexsort((start, graph, mode))
    m, g = mode[order], graph[order]
    new_group = np.ones(order.size, dtype=bool)
    new_group[1:] = (m[1:] != m[:-1]) | (g[1:] != g[:-1])
    first = np.maximum.accumulate(np.where(new_group, np.arange(order.size), 0))
    number = np.empty(order.size, dtype=np.int64)
    number[order] = np.arange(order.size) - first
    return np.argsort(start, kind="stable"), number


def _columns(pass_id: int, parts: list[tuple[str, str, Occurrences]]) -> dict[str, np.ndarray]:
    if not parts:
        return {c: np.zeros(0, dtype=object if c in ("kind", "name", "mode") else np.int64) for c in MARKER_COLUMNS}
    mode = np.concatenate([np.full(o.start.size, m, dtype=object) for m, _, o in parts])
    name = np.concatenate([np.full(o.start.size, n, dtype=object) for _, n, o in parts])
    graph = np.concatenate([np.full(o.start.size, o.graph_id, dtype=np.int64) for _, _, o in parts])
    start = np.concatenate([o.start for _, _, o in parts]).astype(np.int64)
    end = np.concatenate([o.end for _, _, o in parts]).astype(np.int64)
    thread = np.concatenate([o.thread for _, _, o in parts]).astype(np.int64)
    order, number = _numbered(mode.astype(str), graph, start)
    n = start.size
    return {
        "pass_id": np.full(n, pass_id, dtype=np.int32), "kind": np.full(n, "iteration", dtype=object),
        "name": name[order], "mode": mode[order], "iteration": number[order].astype(np.int32),
        "start_ns": start[order], "end_ns": end[order], "thread_id": thread[order], "graph_id": graph[order],
    }
