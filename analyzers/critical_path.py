"""Critical path of a graph's recorded topology against its measured replay span.

Node durations are the medians of the node's GPU spans over replays (node-detail passes only);
nodes with no GPU work (empty, event record/wait, host) count as 0. The longest path is found by
relaxing all edges at once with numpy until nothing changes (one round per level of the DAG), so the
work is over the topology's edges, vectorised, never per event.
"""

from __future__ import annotations

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.results import CriticalPath, Stat
from graphmode.analyzers.torch_windows import untraced_capture_graphs
from graphmode.tracer.store import Trace

# One replay = the node spans of one graph inside one graph-mode iteration with one correlation id
# (a kernel launched from a graph carries the correlation id of the cudaGraphLaunch that ran it).
_REPLAY_SQL = """
WITH iters AS (
  SELECT row_number() OVER (ORDER BY start_ns) AS idx, start_ns AS it_start, end_ns AS it_end FROM markers
  WHERE pass_id = $1 AND kind = 'iteration' AND mode = 'graph'
)
SELECT s.graph_id, (max(s.end_ns) - min(s.start_ns))::BIGINT AS span
FROM gpu_spans s ASOF JOIN iters i ON s.start_ns >= i.it_start
WHERE s.pass_id = $1 AND s.graph_id <> 0 AND s.graph_node_id <> 0 AND s.start_ns < i.it_end
GROUP BY s.graph_id, i.idx, s.correlation_id
ORDER BY s.graph_id
"""

_NODE_SQL = """
SELECT graph_id, graph_node_id, median(end_ns - start_ns)::DOUBLE AS dur
FROM gpu_spans WHERE pass_id = ? AND graph_id <> 0 AND graph_node_id <> 0 AND (graph_id = ? OR ? IS NULL)
GROUP BY graph_id, graph_node_id
"""


def node_durations(trace: Trace, pass_id: int, graph_id: int | None = None) -> dict[tuple[int, int], float]:
    """Median GPU duration (ns) over replays of each graph node that has spans, keyed by (graph_id, node_id).

    Node-detail passes only (graph-detail passes record no node spans: the result is empty). Nodes with
    no GPU work (empty, event, host) have no entry; the critical path weighs them 0. `graph_id`: only
    that graph's nodes.
    """
    return {(int(g), int(n)): float(d) for g, n, d in trace.rows(_NODE_SQL, [pass_id, graph_id, graph_id])}


def longest_path(weights: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, bool]:
    """Per node, the heaviest path ending at it (node weights included); (dist, acyclic).

    `src`/`dst` are edge endpoints as node indices. Converges after depth+1 rounds on a DAG; a cycle
    never converges and is reported after n+1 rounds.
    """
    dist = weights.astype(np.float64).copy()
    for _ in range(weights.size + 1):
        new = weights.astype(np.float64).copy()
        np.maximum.at(new, dst, dist[src] + weights[dst])
        if np.array_equal(new, dist):
            return dist, True
        dist = new
    return dist, False


def critical_paths(trace: Trace, pass_id: int) -> tuple[list[CriticalPath], list[Note]]:
    """Critical paths of the pass's graphs that have nodes; also statements of what was skipped."""
    return _critical_paths(trace, pass_id, measured=True)


def critical_path_notes(trace: Trace, pass_id: int) -> list[Note]:
    """What critical_paths says it skipped, without the replays' measured spans (the one costly query: a join of
    every node span with its iteration): for an analysis that shows no critical path (analyzers.ranks)."""
    return _critical_paths(trace, pass_id, measured=False)[1]


def _critical_paths(trace: Trace, pass_id: int, measured: bool) -> tuple[list[CriticalPath], list[Note]]:
    """critical_paths; `measured` False: the paths without their measured replay spans."""
    notes: list[Note] = []
    node_dur = node_durations(trace, pass_id)
    replay = trace.sql(_REPLAY_SQL, [pass_id]) if measured else {"graph_id": np.zeros(0, np.int64)}
    labels = dict(trace.rows("SELECT graph_id, label FROM graphs WHERE pass_id = ?", [pass_id]))
    out: list[CriticalPath] = []
    edges_unknown = untraced_capture_graphs(trace, pass_id)  # captured with CUPTI detached: no path without edges
    for (graph_id,) in trace.rows("SELECT DISTINCT graph_id FROM graph_nodes WHERE pass_id = ? ORDER BY graph_id", [pass_id]):
        graph_id = int(graph_id)
        if graph_id in edges_unknown:
            notes.append(note("critical_path_edges_unknown", graph_id=graph_id, label=labels.get(graph_id, "")))
            continue
        nodes = trace.sql("SELECT node_id, name FROM graph_nodes WHERE pass_id = ? AND graph_id = ? ORDER BY node_id", [pass_id, graph_id])
        edges = trace.sql("SELECT from_node_id, to_node_id FROM graph_edges WHERE pass_id = ? AND graph_id = ?", [pass_id, graph_id])
        ids = nodes["node_id"].astype(np.int64)
        if ids.size == 0:
            continue
        weights = np.array([node_dur.get((graph_id, int(i)), 0.0) for i in ids])  # per node of the topology
        if not any((graph_id, int(i)) in node_dur for i in ids):
            notes.append(note("critical_path_no_spans", graph_id=graph_id, label=labels.get(graph_id, "")))
            continue
        src = np.searchsorted(ids, edges["from_node_id"].astype(np.int64))
        dst = np.searchsorted(ids, edges["to_node_id"].astype(np.int64))
        dist, acyclic = longest_path(weights, src, dst)
        depth, _ = longest_path(np.ones(ids.size), src, dst)
        if not acyclic:
            notes.append(note("critical_path_cycle", graph_id=graph_id, label=labels.get(graph_id, "")))
            continue
        path = _backtrack(dist, weights, src, dst)
        serial = float(weights.sum())
        critical = float(dist.max())
        spans = Stat.of(replay["span"][replay["graph_id"] == graph_id]) if replay["graph_id"].size else None
        delivered = (serial - spans.median) / (serial - critical) if spans is not None and serial > critical else None
        names = nodes["name"]
        out.append(
            CriticalPath(
                pass_id=pass_id, graph_id=graph_id, label=str(labels.get(graph_id, "")),
                nodes=int(ids.size), edges=int(src.size), has_parallel_branches=bool(depth.max() < ids.size),
                serial_ns=serial, critical_path_ns=critical, measured_span=spans, parallelism_delivered=delivered,
                path_node_ids=tuple(int(ids[i]) for i in path), path_names=tuple(str(names[i]) for i in path),
            )
        )
    return out, notes


def _backtrack(dist: np.ndarray, weights: np.ndarray, src: np.ndarray, dst: np.ndarray) -> list[int]:
    """Node indices of one heaviest path, first to last (a loop over the path's nodes)."""
    v = int(np.argmax(dist))
    path = [v]
    while True:
        preds = src[(dst == v) & np.isclose(dist[src] + weights[v], dist[v])]
        if preds.size == 0:
            break
        v = int(preds[np.argmax(dist[preds])])
        path.append(v)
    return path[::-1]
