"""Turns one pass's recordings (host markers, topology, raw CUPTI activity) into trace rows."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from graphmode.tracer.cupti_session import RawActivity
from graphmode.tracer.decode import decode, drop_untimed_spans, lookup
from graphmode.tracer.store import PassInfo, TraceWriter


def _resolve(mapping: dict[int, int], ids: np.ndarray) -> np.ndarray:
    """Follows clone -> original links (possibly several deep) for every id in `ids`."""
    out: np.ndarray = np.asarray(ids.copy())
    for _ in range(8):
        nxt = np.array([mapping.get(int(i), int(i)) for i in out], dtype=np.int64) if len(out) else out
        if np.array_equal(nxt, out):
            break
        out = nxt
    return out


def map_graph_ids(spans: dict[str, Any], raw: RawActivity, known_nodes: dict[int, int],
                   exec_to_graph: dict[int, int]) -> None:
    """Rewrites activity graph/node ids to the ids of the recorded topology.

    CUPTI reports the cloning that instantiation does (GRAPHNODE_CLONED, GRAPH_CLONED); records of a
    replay may carry a clone's ids. Map them back to the node/graph the user built.
    """
    node_clone = {e.node_id: e.original_node_id for e in raw.resource_events
                  if e.cbid == "GRAPHNODE_CLONED" and e.node_id and e.original_node_id}
    graph_clone = {e.graph_id: e.original_graph_id for e in raw.resource_events
                   if e.cbid == "GRAPH_CLONED" and e.graph_id and e.original_graph_id}
    # GRAPH_TRACE records carry the id of the executable graph (seen on H200, CUPTI 13.0): map an
    # exec id to the graph it was instantiated from.
    graph_clone.update(exec_to_graph)
    # Only kernel, memcpy and memset records carry node ids: a pass whose GPU work is all whole-graph
    # spans (graph detail, graphs of memset nodes) has no such column yet.
    for col in ("graph_id", "graph_node_id"):
        if col not in spans:
            spans[col] = np.zeros(len(spans["start_ns"]), dtype=np.int64)
    nid = spans["graph_node_id"].astype(np.int64)
    gid = spans["graph_id"].astype(np.int64)
    if len(nid) == 0:
        return
    uniq_n, inv_n = np.unique(nid, return_inverse=True)
    mapped_n = _resolve(node_clone, uniq_n)
    spans["graph_node_id"] = mapped_n[inv_n]
    uniq_g, inv_g = np.unique(gid, return_inverse=True)
    mapped_g = _resolve(graph_clone, uniq_g)
    gid = mapped_g[inv_g]
    # A node we know fixes its graph, whatever id the record carried.
    node_graph = np.array([known_nodes.get(int(n), -1) for n in mapped_n], dtype=np.int64)[inv_n]
    has = node_graph >= 0
    gid[has] = node_graph[has]
    spans["graph_id"] = gid


def launch_events(api: dict[str, Any], spans: dict[str, Any] | None) -> dict[str, Any] | None:
    """One 'launch' lifecycle row per graph launch call, its graph found through correlation."""
    is_launch = api["category"] == "graph_launch"
    if not is_launch.any() or spans is None:
        return None
    with_graph = spans["graph_id"] != 0
    # correlation id -> graph id of the work it launched (sorted search, no loop per span)
    keys, first = np.unique(spans["correlation_id"][with_graph], return_index=True)
    values = spans["graph_id"][with_graph][first]
    corr = api["correlation_id"][is_launch]
    pos = np.clip(np.searchsorted(keys, corr), 0, max(len(keys) - 1, 0))
    graphs = np.where(keys[pos] == corr, values[pos], 0).astype(np.int64) if len(keys) else np.zeros(len(corr), dtype=np.int64)
    keep = graphs != 0  # the runtime wrapper of a driver launch has no GPU work of its own
    n = int(keep.sum())
    return {
        "graph_id": graphs[keep], "exec_id": np.zeros(n, dtype=np.int64), "event": np.full(n, "launch", dtype=object),
        "start_ns": api["start_ns"][is_launch][keep], "end_ns": api["end_ns"][is_launch][keep],
        "correlation_id": corr[keep], "thread_id": api["thread_id"][is_launch][keep],
        "return_code": api["return_code"][is_launch][keep] if "return_code" in api else np.zeros(n, dtype=np.int32),
    }


def write_pass(writer: TraceWriter, rec: Any, raw: RawActivity | None, info: PassInfo) -> None:
    pid = info.pass_id

    def put(table: str, parts: list[dict[str, Any]]) -> None:
        for p in parts:
            n = len(next(iter(p.values())))
            writer.append(table, {**p, "pass_id": [pid] * n})

    put("markers", rec.markers)
    put("graphs", rec.graphs)
    put("graph_nodes", rec.nodes)
    put("graph_edges", rec.edges)
    if raw is not None:
        labels = {int(g["graph_id"][0]): str(g["label"][0]) for g in rec.graphs}
        tables = decode(raw, pid, labels)
        if (note := drop_untimed_spans(tables, pid)) is not None:
            writer.add_note(note)
        known_nodes = {int(n): int(g) for part in rec.nodes for n, g in zip(part["node_id"], part["graph_id"])}
        spans = tables.get("gpu_spans")
        if spans is not None:
            exec_to_graph = {int(g["exec_id"][0]): int(g["graph_id"][0]) for g in rec.graphs}
            exec_to_graph.update({e.exec_id: e.graph_id for e in raw.resource_events
                                  if e.cbid == "GRAPHEXEC_CREATED" and e.exec_id and e.graph_id})
            map_graph_ids(spans, raw, known_nodes, exec_to_graph)
            if (spans["kind"] == "graph").any():
                gl = spans["kind"] == "graph"
                spans["name"][gl] = lookup(spans["graph_id"][gl], labels, lambda g: f"graph {g}")
        for table, cols in tables.items():
            writer.append(table, cols)
        if "api_calls" in tables:
            launches = launch_events(tables["api_calls"], spans)
            if launches is not None:
                writer.append("graph_events", {**launches, "pass_id": np.full(len(launches["graph_id"]), pid)})
        debug_dir = os.environ.get("GRAPHMODE_DEBUG_DIR")
        if debug_dir:
            with open(os.path.join(debug_dir, f"resource_events_pass{pid}.json"), "w") as f:
                json.dump([e.__dict__ for e in raw.resource_events], f, indent=0)
    put("graph_events", rec.events)
    writer.add_pass(info)
