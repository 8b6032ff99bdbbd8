"""Decodes raw CUPTI activity buffers into the trace's columns, after the run.

A completed buffer is a run of records laid end to end, each starting with its 32-bit kind; the
record's size follows from the kind (cupti-python's numpy dtypes mirror the C structs, which CUPTI
packs with 8-byte alignment). We walk the kinds once, then gather all records of one kind with a
single fancy-index and view them through the dtype: no per-record attribute access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from graphmode.tracer.cupti_records import api_category, cupti_module, records_by_kind
from graphmode.tracer.cupti_session import RawActivity
from graphmode.tracer.lifecycle import ReplayNodes

_COPY_KINDS = {
    1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP",
}
_SYNC_TYPES = {0: "unknown", 1: "event", 2: "stream_wait_event", 3: "stream", 4: "context"}

def _sources_for(sources: dict[tuple[str, int], str], api: str, corr: np.ndarray) -> np.ndarray:
    """Call sites recorded by API callbacks, joined on correlation id (sorted search, no loop per call)."""
    out = np.full(len(corr), "", dtype=object)
    items = sorted((c, s) for (a, c), s in sources.items() if a == api)
    if not items or not len(corr):
        return out
    keys = np.array([c for c, _ in items], dtype=np.int64)
    vals = np.array([s for _, s in items], dtype=object)
    pos = np.clip(np.searchsorted(keys, corr), 0, len(keys) - 1)
    hit = keys[pos] == corr
    out[hit] = vals[pos[hit]]
    return out


def lookup(values: np.ndarray, table: Mapping[int, Any], default: Callable[[int], Any], dtype: Any = object) -> np.ndarray:
    """table[v] (or default(v)) for every v: one dict access per distinct value, not per record."""
    uniq, inverse = np.unique(np.asarray(values), return_inverse=True)
    mapped = np.array([table[int(u)] if int(u) in table else default(int(u)) for u in uniq], dtype=dtype)
    return np.asarray(mapped[inverse.reshape(-1)]) if len(uniq) else np.zeros(0, dtype=dtype)


def _names_for(ptrs: np.ndarray, names: dict[int, str]) -> np.ndarray:
    uniq, inverse = np.unique(ptrs, return_inverse=True)
    table = np.array([names.get(int(p), "") for p in uniq], dtype=object)
    return table[inverse]


def _api_names(recs: np.ndarray, domain: int) -> np.ndarray:
    """API names from cupti-python's callback-id enums (the names cuptiGetCallbackName returns):
    decoding runs after the session detached CUPTI, and a CUPTI call would attach it again."""
    cupti = cupti_module()
    D = cupti.CallbackDomain
    enum = cupti.driver_api_trace_cbid if domain == int(D.DRIVER_API) else cupti.runtime_api_trace_cbid
    uniq, inverse = np.unique(recs["cbid"], return_inverse=True)
    table = []
    for cbid in uniq:
        try:
            table.append(enum(int(cbid)).name)
        except ValueError:  # an id newer than this cupti-python's enum
            try:
                table.append(str(cupti.get_callback_name(domain, int(cbid))))
            except Exception:
                table.append(f"cbid_{int(cbid)}")
    return np.array(table, dtype=object)[inverse]


def decode(raw: RawActivity, pass_id: int, graph_labels: dict[int, str] | None = None,
           replay_nodes: dict[int, ReplayNodes] | None = None) -> dict[str, dict[str, Any]]:
    """Turns one pass's raw activity into columns for api_calls, gpu_spans, synchronizations, markers.
    `replay_nodes`: filled, where a session without GRAPH_TRACE folds its replays' node records, with each graph id's
    first replay (tracer.lifecycle.ReplayNodes: how a graph captured while CUPTI was detached is known)."""
    cupti = cupti_module()
    K = cupti.ActivityKind
    D = cupti.CallbackDomain
    recs = records_by_kind(raw.chunks)
    out: dict[str, dict[str, Any]] = {}

    # -- API calls ------------------------------------------------------------------------------
    api_parts = []
    for kind, domain, api in ((int(K.DRIVER), int(D.DRIVER_API), "driver"), (int(K.RUNTIME), int(D.RUNTIME_API), "runtime")):
        if kind not in recs:
            continue
        r = recs[kind]
        names = _api_names(r, domain)
        uniq, inv = np.unique(names.astype(str), return_inverse=True)
        cats = np.array([api_category(n) for n in uniq], dtype=object)[inv]
        api_parts.append(
            {
                "correlation_id": r["correlation_id"].astype(np.int64),
                "api": np.full(len(r), api, dtype=object),
                "cbid": r["cbid"].astype(np.int32),
                "name": names,
                "category": cats,
                "start_ns": r["start"].astype(np.int64),
                "end_ns": r["end"].astype(np.int64),
                "process_id": r["process_id"].astype(np.int32),
                "thread_id": r["thread_id"].astype(np.int64),
                "return_code": r["return_value"].astype(np.int32),
                "source": _sources_for(raw.api_sources, api, r["correlation_id"].astype(np.int64)),
            }
        )
    if api_parts:
        out["api_calls"] = _drop_own_calls(_concat(api_parts, pass_id), raw.own_spans)

    # -- GPU spans --------------------------------------------------------------------------------
    spans = []
    for kind in (int(K.CONCURRENT_KERNEL), int(K.KERNEL)):
        if kind not in recs:
            continue
        r = recs[kind]
        n = len(r)
        spans.append(
            {
                "kind": np.full(n, "kernel", dtype=object),
                "name": _names_for(r["name"], raw.names),
                **_common_span_columns(r),
                "graph_id": r["graph_id"].astype(np.int64),
                "graph_node_id": r["graph_node_id"].astype(np.int64),
                "grid_x": r["grid_x"],
                "grid_y": r["grid_y"],
                "grid_z": r["grid_z"],
                "block_x": r["block_x"],
                "block_y": r["block_y"],
                "block_z": r["block_z"],
                "static_shared_memory": r["static_shared_memory"],
                "dynamic_shared_memory": r["dynamic_shared_memory"],
                "registers_per_thread": r["registers_per_thread"].astype(np.int32),
            }
        )
    if int(K.MEMCPY) in recs:
        r = recs[int(K.MEMCPY)]
        kinds = lookup(r["copy_kind"], _COPY_KINDS, lambda k: f"kind{k}")
        spans.append(
            {
                "kind": np.full(len(r), "memcpy", dtype=object),
                "name": lookup(r["copy_kind"], {k: f"memcpy {v}" for k, v in _COPY_KINDS.items()}, lambda k: f"memcpy kind{k}"),
                "copy_kind": kinds,
                "bytes": r["bytes"].astype(np.int64),
                **_common_span_columns(r),
                "graph_id": r["graph_id"].astype(np.int64),
                "graph_node_id": r["graph_node_id"].astype(np.int64),
            }
        )
    if int(K.MEMSET) in recs:
        r = recs[int(K.MEMSET)]
        spans.append(
            {
                "kind": np.full(len(r), "memset", dtype=object),
                "name": np.full(len(r), "memset", dtype=object),
                "bytes": r["bytes"].astype(np.int64),
                **_common_span_columns(r),
                "graph_id": r["graph_id"].astype(np.int64),
                "graph_node_id": r["graph_node_id"].astype(np.int64),
            }
        )
    if int(K.GRAPH_TRACE) in recs:
        r = recs[int(K.GRAPH_TRACE)]
        labels = graph_labels or {}
        gids = r["graph_id"].astype(np.int64)
        spans.append(
            {
                "kind": np.full(len(r), "graph", dtype=object),
                "name": lookup(gids, labels, lambda g: f"graph {g}"),
                **_common_span_columns(r),
                "graph_id": gids,
            }
        )
    if spans:
        out["gpu_spans"] = _concat(spans, pass_id)
        if raw.graph_from_nodes and int(K.GRAPH_TRACE) not in recs:
            calls = out.get("api_calls")
            launches = (np.asarray(calls["correlation_id"])[np.asarray(calls["category"]) == "graph_launch"]
                        if calls is not None else np.zeros(0, dtype=np.int64))
            if replay_nodes is not None:
                replay_nodes.update(first_replays(out["gpu_spans"], calls))
            out["gpu_spans"] = fold_graph_nodes(out["gpu_spans"], launches, graph_labels or {})

    if int(K.SYNCHRONIZATION) in recs:
        r = recs[int(K.SYNCHRONIZATION)]
        out["synchronizations"] = {
            "pass_id": np.full(len(r), pass_id, dtype=np.int32),
            "type": lookup(r["type"], _SYNC_TYPES, str),
            "start_ns": r["start"].astype(np.int64),
            "end_ns": r["end"].astype(np.int64),
            "correlation_id": r["correlation_id"].astype(np.int64),
            "context_id": r["context_id"].astype(np.int32),
            "stream_id": r["stream_id"].astype(np.int32),
            "event_id": r["cuda_event_id"].astype(np.int64),
        }

    if int(K.MARKER) in recs:
        out["markers"] = _nvtx_ranges(recs[int(K.MARKER)], raw.names, pass_id)
    return out


# The driver runs some copy and set nodes of a graph as kernels of its own (a PyTorch decode step's device-to-device
# memcpy node ran as a kernel named 'memcpy32_post', H200, driver 580): such a record is the node it carries out
_DRIVER_COPY_KERNEL = re.compile(r"^(memcpy|memset)\w*$")


def _node_kind(kind: str, name: str) -> str:
    if kind == "kernel" and (m := _DRIVER_COPY_KERNEL.match(name)):
        return m.group(1)
    return kind


def first_replays(spans: dict[str, Any], calls: dict[str, Any] | None) -> dict[int, ReplayNodes]:
    """Graph id -> the node records of its first replay (tracer.lifecycle.ReplayNodes), from a session's unfolded GPU
    records: the first launch (correlation id) whose records carry that graph id, its records by start (a kernel of the
    driver's own that carries out a copy or set node is that node: _DRIVER_COPY_KERNEL)."""
    kind = np.asarray(spans["kind"], dtype=object)
    gid = np.asarray(spans["graph_id"], dtype=np.int64)
    node = np.isin(kind, ("kernel", "memcpy", "memset")) & (gid != 0)
    if not node.any():
        return {}
    corr = np.asarray(spans["correlation_id"], dtype=np.int64)
    start = np.asarray(spans["start_ns"], dtype=np.int64)
    launch_at: dict[int, tuple[int, int]] = {}
    if calls is not None and len(calls["correlation_id"]):
        is_launch = np.asarray(calls["category"]) == "graph_launch"
        launch_at = {int(c): (int(s), int(t)) for c, s, t in zip(np.asarray(calls["correlation_id"])[is_launch],
                                                                 np.asarray(calls["start_ns"])[is_launch],
                                                                 np.asarray(calls["thread_id"])[is_launch])}
    out: dict[int, Any] = {}
    idx = np.flatnonzero(node)
    for g in np.unique(gid[idx]):
        mine = idx[gid[idx] == g]
        first_corr = corr[mine[np.argmin(start[mine])]]
        rows = mine[corr[mine] == first_corr]
        rows = rows[np.argsort(start[rows], kind="stable")]
        at, tid = launch_at.get(int(first_corr), (0, 0))
        out[int(g)] = ReplayNodes(first_ns=int(start[rows[0]]), launch_ns=at, thread_id=tid, nodes=tuple(
            (int(spans["graph_node_id"][r]), _node_kind(str(kind[r]), str(spans["name"][r])), str(spans["name"][r]))
            for r in rows))
    return out


def fold_graph_nodes(spans: dict[str, Any], launch_correlations: np.ndarray, labels: Mapping[int, str]) -> dict[str, Any]:
    """A graph-detail pass recorded without GRAPH_TRACE (RawActivity.graph_from_nodes): the kernel, copy and memset
    records of each replay's nodes become one whole-graph span, as GRAPH_TRACE would have given it (from the first
    node's start to the last node's end, on the first node's stream), and leave the table. A node record is one with
    a graph id, or whose correlation id is a graph launch's (`launch_correlations`). A replay is the node records of
    one correlation id (one launch call)."""
    kind = np.asarray(spans["kind"], dtype=object)
    corr = np.asarray(spans["correlation_id"], dtype=np.int64)
    gid = np.asarray(spans["graph_id"], dtype=np.int64)
    node = np.isin(kind, ("kernel", "memcpy", "memset")) & ((gid != 0) | np.isin(corr, launch_correlations))
    if not node.any():
        return spans
    idx = np.flatnonzero(node)
    start = np.asarray(spans["start_ns"], dtype=np.int64)
    end = np.asarray(spans["end_ns"], dtype=np.int64)
    order = idx[np.lexsort((start[idx], corr[idx]))]  # by launch, then by start: each launch's first node first
    keys, first = np.unique(corr[order], return_index=True)
    lead = order[first]  # each launch's first node
    g_start = start[lead]
    g_end = np.maximum.reduceat(end[order], first)
    g_id = np.maximum.reduceat(gid[order], first)
    folded: dict[str, Any] = {}
    for k, v in spans.items():
        col = np.asarray(v)
        if k == "kind":
            folded[k] = np.full(len(keys), "graph", dtype=object)
        elif k == "name":
            folded[k] = lookup(g_id, labels, lambda g: f"graph {g}")
        elif k == "start_ns":
            folded[k] = g_start
        elif k == "end_ns":
            folded[k] = g_end
        elif k == "graph_id":
            folded[k] = g_id
        elif k in ("device_id", "context_id", "stream_id", "correlation_id", "pass_id"):
            folded[k] = col[lead]
        else:  # what is a node's own (grid, bytes, node id): none for a whole-graph span
            folded[k] = np.full(len(keys), "" if col.dtype == object else 0, dtype=col.dtype)
    keep = ~node
    return {k: np.concatenate([np.asarray(v)[keep], folded[k]]) for k, v in spans.items()}


def drop_untimed_spans(tables: dict[str, dict[str, Any]], pass_id: int) -> str | None:
    """Removes GPU records that CUPTI could not time (start 0, or an end before the start: seen on the H200 for
    every record still buffered when a device-side assert broke the context) from `tables['gpu_spans']`, in
    place; returns a note that says how many of each kind were left out (None when all were timed). Kept,
    their zero times would sort them before all real work and break the iteration order."""
    spans = tables.get("gpu_spans")
    if not spans:
        return None
    start, end = np.asarray(spans["start_ns"]), np.asarray(spans["end_ns"])
    bad = (start <= 0) | (end < start)
    if not bad.any():
        return None
    kinds, counts = np.unique(np.asarray(spans["kind"])[bad].astype(str), return_counts=True)
    tables["gpu_spans"] = {k: np.asarray(v)[~bad] for k, v in spans.items()}
    what = ", ".join(f"{int(n):,} {k}" for k, n in zip(kinds, counts))
    return (f"pass {pass_id}: {int(bad.sum()):,} of {bad.size:,} GPU records had no timestamps ({what}): CUPTI gives none "
            "for work it could not time, as after a device-side error; they are left out of the GPU spans")


def _drop_own_calls(api: dict[str, Any], own: list[tuple[int, int, int]]) -> dict[str, Any]:
    """Removes the API records of graphmode's own calls (topology reads) made while tracing."""
    if not own:
        return api
    mine = np.zeros(len(api["start_ns"]), dtype=bool)
    for tid, t0, t1 in own:  # one bracket per graph read: few
        mine |= (api["thread_id"] == tid) & (api["start_ns"] >= t0) & (api["end_ns"] <= t1)
    return {k: v[~mine] for k, v in api.items()}


def _common_span_columns(r: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "start_ns": r["start"].astype(np.int64),
        "end_ns": r["end"].astype(np.int64),
        "device_id": r["device_id"].astype(np.int32),
        "context_id": r["context_id"].astype(np.int32),
        "stream_id": r["stream_id"].astype(np.int32),
        "correlation_id": r["correlation_id"].astype(np.int64),
    }


def _concat(parts: list[dict[str, Any]], pass_id: int) -> dict[str, Any]:
    keys: list[str] = []
    for p in parts:
        keys.extend(k for k in p if k not in keys)
    out: dict[str, Any] = {}
    lengths = [len(next(iter(p.values()))) for p in parts]
    for k in keys:
        cols = []
        for p, n in zip(parts, lengths):
            if k in p:
                cols.append(np.asarray(p[k]))
            else:
                sample = next((q[k] for q in parts if k in q), None)
                is_str = sample is not None and np.asarray(sample).dtype == object
                cols.append(np.full(n, "" if is_str else 0, dtype=object if is_str else np.int64))
        out[k] = np.concatenate(cols)
    out["pass_id"] = np.full(sum(lengths), pass_id, dtype=np.int32)
    return out


def _nvtx_ranges(r: np.ndarray, names: dict[int, str], pass_id: int) -> dict[str, Any]:
    """Pairs NVTX push/pop (or start/end) MARKER records by id into ranges; instant marks have zero length."""
    cupti = cupti_module()
    F = cupti.ActivityFlag
    start_flag, inst_flag = int(F.MARKER_START), int(F.MARKER_INSTANTANEOUS)
    flags = r["flags_"].astype(np.int64)
    ids = r["id"].astype(np.int64)
    ts = r["timestamp"].astype(np.int64)
    tids = r["object_id"]["pt"]["thread_id"].astype(np.int64)
    is_start = (flags & start_flag) != 0
    is_inst = (flags & inst_flag) != 0
    opens = is_start | is_inst
    # An end record carries its range's id: find each start's end by id (sorted search).
    end_ids, end_ts = ids[~opens], ts[~opens]
    order = np.argsort(end_ids, kind="stable")
    end_ids, end_ts = end_ids[order], end_ts[order]
    pos = np.clip(np.searchsorted(end_ids, ids[opens]), 0, max(len(end_ids) - 1, 0))
    found = (end_ids[pos] == ids[opens]) & is_start[opens] if len(end_ids) else np.zeros(int(opens.sum()), dtype=bool)
    starts = ts[opens]
    n = len(starts)
    return {
        "pass_id": np.full(n, pass_id, dtype=np.int32),
        "kind": np.full(n, "nvtx", dtype=object),
        "name": _names_for(r["name"][opens], names),
        "mode": np.full(n, "", dtype=object),
        "iteration": np.full(n, -1, dtype=np.int32),
        "start_ns": starts,
        "end_ns": np.where(found, end_ts[pos] if len(end_ids) else starts, starts),
        "thread_id": tids[opens],
        "graph_id": np.zeros(n, dtype=np.int64),
    }
