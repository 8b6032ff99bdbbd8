"""Graphs and their lifecycle in a user's program, from CUPTI resource callbacks and API records.

The built-in workloads know their graph; a user's script does not tell us. What CUPTI shows
(H200, CUPTI 13.0):
- GRAPH_CREATED for every graph, including the ones the driver creates *inside* an instantiation
  (between GRAPHEXEC_CREATE_STARTING and GRAPHEXEC_CREATED on the same thread): those are internal
  and not the user's;
- a graph made by stream capture is created inside the cuStreamBeginCapture call;
- GRAPHEXEC_CREATED carries the graph and the new exec's ids; GRAPH_TRACE records carry the exec id.
Lifecycle calls (capture, instantiate, upload, update, destroy) are tied to a graph by the resource
event that fired inside them on the same thread; launches by correlation with their GPU records.
cuGraphUpload and cuGraphExecUpdate fire no resource event: they are given to the executable graph
most recently instantiated on the calling thread, which is right for the usual
instantiate-then-upload pattern and stated as such in docs/trace-format.md.

A graph the one traced run captured with CUPTI detached (tracer.untraced_windows, CaptureController: a PyTorch
capture, its end and instantiation untraced too) fires no resource callback: its replays' kernel records carry an
executable's id that no GRAPHEXEC_CREATED named. It is **adopted**: the id PyTorch's CUDAGraph gave for its executable
(raw_cuda_graph_exec, read once CUPTI attached again), else the lowest such id not yet taken that was launched after
the capture ended on its thread (CUPTI numbers executables in the order they are made), is that capture's graph (one
never replayed while traced is not adopted, and without PyTorch's id may take the next one's); its nodes are the node
records of its first replay in the order they ran (no edges: they were not recorded); its capture and instantiation
are the program's capture_begin to capture_end and capture_end itself (PyTorch's, which ends the capture and
instantiates), by the host clock. graphmode's own empty graph, run right after that session attached, fires no
callback the session records (CuptiSession.own_work).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphmode.tracer.cupti_session import RawActivity, ResourceEvent
from graphmode.tracer.topology import node_type_name


@dataclass
class ScriptGraphs:
    graphs: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in (
        "graph_id", "exec_id", "origin", "label", "mode", "num_nodes", "num_edges")})
    nodes: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in (
        "graph_id", "node_id", "node_index", "node_type", "name", "source")})
    edges: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in ("graph_id", "from_node_id", "to_node_id")})
    events: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in (
        "graph_id", "exec_id", "event", "start_ns", "end_ns", "correlation_id", "thread_id", "return_code")})
    exec_to_graph: dict[int, int] = field(default_factory=dict)
    # each untraced capture's begin (as passed to derive_graphs) -> the graph adopted for it (0: none found)
    untraced: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplayNodes:
    """The node records of a graph's first replay seen in a session without GRAPH_TRACE (tracer.decode, folded
    after)."""

    first_ns: int  # its first node's start (GPU)
    launch_ns: int  # the launch call's start (CPU; 0 where not recorded)
    thread_id: int  # the launching thread (0 where not recorded)
    nodes: tuple[tuple[int, str, str], ...]  # (node id, node type, name) in the order they started


def _node_type_name(value: int) -> str:
    try:
        from cuda.bindings import driver as cu

        return node_type_name(cu.CUgraphNodeType(value))
    except Exception:
        return f"type{value}"


def _inside(ev: ResourceEvent, start: np.ndarray, end: np.ndarray, tid: np.ndarray) -> int:
    """Index of the call (on the event's thread) whose span holds the event, -1 if none."""
    hit = np.nonzero((tid == ev.thread_id) & (start <= ev.ts) & (end >= ev.ts))[0]
    return int(hit[0]) if len(hit) else -1


LIFECYCLE_CATEGORIES = ("capture", "instantiate", "upload", "update", "graph_destroy")


def lifecycle_calls(api: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Graph lifecycle calls of both APIs, outermost only.

    PyTorch and CuPy call the runtime; with CUDA 13 the runtime mostly enters the driver through
    internal entry points that CUPTI does not record as driver calls, so the runtime record is often
    the only one. Where a driver call is recorded inside a runtime call of the same kind on the same
    thread, the runtime call stands for both.
    """
    m = np.isin(api["category"], LIFECYCLE_CATEGORIES)
    calls = {k: v[m] for k, v in api.items()}
    is_rt = calls["api"] == "runtime"
    keep = np.ones(len(is_rt), dtype=bool)
    rt_idx = np.nonzero(is_rt)[0]
    for i in np.nonzero(~is_rt)[0]:
        nested = rt_idx[(calls["thread_id"][rt_idx] == calls["thread_id"][i])
                        & (calls["category"][rt_idx] == calls["category"][i])
                        & (calls["start_ns"][rt_idx] <= calls["start_ns"][i])
                        & (calls["end_ns"][rt_idx] >= calls["end_ns"][i])]
        keep[i] = len(nested) == 0
    return {k: v[keep] for k, v in calls.items()}


def derive_graphs(raw: RawActivity, api: dict[str, np.ndarray] | None, untraced_captures: Sequence[Mapping[str, Any]] = (),
                  replay_nodes: Mapping[int, ReplayNodes] | None = None) -> ScriptGraphs:
    """`untraced_captures`: the captures the run made with CUPTI detached (the run's entry in meta.runs,
    'untraced_captures', on CUPTI's clock: thread_id, begin_ns, body_end_ns, end_ns, source, reason); `replay_nodes`:
    the first replay's node records of each graph id the session's kernel records carry (tracer.decode). Module doc."""
    out = ScriptGraphs()
    evs = raw.resource_events
    for e in evs:
        if e.cbid == "GRAPHEXEC_CREATED" and e.exec_id and e.graph_id:
            out.exec_to_graph[e.exec_id] = e.graph_id
    calls = lifecycle_calls(api) if api is not None and len(api["name"]) else None

    def sub(mask: np.ndarray) -> dict[str, np.ndarray]:
        assert calls is not None
        return {k: v[mask] for k, v in calls.items()}

    inst = begins = None
    if calls is not None:
        inst = sub(calls["category"] == "instantiate")
        begins = sub(np.array(["BeginCapture" in str(n) for n in calls["name"]], dtype=bool))

    def internal(e: ResourceEvent) -> bool:
        # Instantiation creates graphs of its own (the executable's); they are not the user's.
        return inst is not None and _inside(e, inst["start_ns"], inst["end_ns"], inst["thread_id"]) >= 0

    user_graphs = [e for e in evs if e.cbid in ("GRAPH_CREATED", "GRAPH_CLONED") and e.graph_id and not internal(e)]
    user_ids = {e.graph_id for e in user_graphs}

    node_sources = {e.node_id: e.stack for e in evs if e.cbid == "GRAPHNODE_CREATED" and e.stack}
    for g in user_graphs:
        gid = g.graph_id
        origin, site = "explicit", ""
        if begins is not None and (k := _inside(g, begins["start_ns"], begins["end_ns"], begins["thread_id"])) >= 0:
            origin = "capture"
            site = str(begins["source"][k]) if "source" in begins else ""  # the line that began the capture
        topo = raw.topologies.get(gid)
        if topo is not None:
            nodes = [(nid, idx, t, name) for nid, idx, t, name in topo.nodes]
            edges = list(topo.edges)
        else:
            created = [e for e in evs if e.cbid == "GRAPHNODE_CREATED" and e.graph_id == gid]
            nodes = [(e.node_id, i, _node_type_name(e.node_type), "") for i, e in enumerate(created)]
            edges = [(e.dependency_id, e.node_id) for e in evs
                     if e.cbid == "GRAPHNODE_DEPENDENCY_CREATED" and e.graph_id == gid and e.dependency_id]
        site = site or next((node_sources.get(n[0], "") for n in nodes if node_sources.get(n[0])), "")
        exec_ids = [x for x, gg in out.exec_to_graph.items() if gg == gid]
        where = f" at {site.split(' ')[0]}" if site else ""
        label = f"graph {gid} ({'captured' if origin == 'capture' else 'built'}{where})"
        for key, val in (("graph_id", gid), ("exec_id", exec_ids[-1] if exec_ids else 0), ("origin", origin),
                         ("label", label), ("mode", "graph"), ("num_nodes", len(nodes)), ("num_edges", len(edges))):
            out.graphs[key].append(val)
        for nid, idx, t, name in nodes:
            for key, val in (("graph_id", gid), ("node_id", nid), ("node_index", idx), ("node_type", t),
                             ("name", name or t), ("source", node_sources.get(nid, ""))):
                out.nodes[key].append(val)
        for a, b2 in edges:
            for key, val in (("graph_id", gid), ("from_node_id", a), ("to_node_id", b2)):
                out.edges[key].append(val)

    if calls is not None:
        _lifecycle_events(out, evs, calls, begins, user_ids)
    _adopt(out, untraced_captures, replay_nodes or {})
    return out


def _adopt(out: ScriptGraphs, captures: Sequence[Mapping[str, Any]], replays: Mapping[int, ReplayNodes]) -> None:
    """The graphs of the untraced captures (module doc), added to `out`."""
    taken = set(out.exec_to_graph) | set(out.exec_to_graph.values()) | set(out.graphs["graph_id"])
    for c in sorted(captures, key=lambda c: int(c["begin_ns"])):
        begin = int(c["begin_ns"])
        out.untraced[begin] = 0
        if c.get("reason") != "capture_end":
            continue  # it failed, or never ended: no graph
        end, tid = int(c["end_ns"]), int(c["thread_id"])
        exec_id = int(c.get("exec_id") or 0)
        if exec_id:  # PyTorch named its executable (tracer.script._exec_id): that one, where it was replayed
            if exec_id not in replays or exec_id in taken:
                continue
            gid = exec_id
        else:  # the lowest executable id not yet taken that was replayed after the capture ended on its thread:
            # CUPTI numbers executables in the order they are made, so captures in turn take ids in turn, whatever
            # order the program replays them in
            mine = [g for g, r in replays.items() if g not in taken and r.first_ns >= end and (r.thread_id in (0, tid))]
            if not mine:
                continue  # never replayed while traced
            gid = min(mine)
        taken.add(gid)
        out.untraced[begin] = gid
        out.exec_to_graph[gid] = gid
        site = str(c.get("source") or "")
        where = f" at {site.split(' ')[0]}" if site else ""
        nodes = replays[gid].nodes
        for key, val in (("graph_id", gid), ("exec_id", gid), ("origin", "capture"),
                         ("label", f"graph {gid} (captured{where})"), ("mode", "graph"), ("num_nodes", len(nodes)),
                         ("num_edges", 0)):
            out.graphs[key].append(val)
        for idx, (nid, kind, name) in enumerate(nodes):
            for key, val in (("graph_id", gid), ("node_id", nid), ("node_index", idx), ("node_type", kind),
                             ("name", name or kind), ("source", "")):
                out.nodes[key].append(val)
        body_end = int(c.get("body_end_ns") or end)
        _add_event(out, gid, gid, "capture", begin, body_end, 0, tid)
        if body_end < end:
            _add_event(out, gid, gid, "instantiate", body_end, end, 0, tid)


def _add_event(out: ScriptGraphs, gid: int, xid: int, event: str, start: int, end: int, corr: int, tid: int,
               rc: int = 0) -> None:
    for key, val in (("graph_id", gid), ("exec_id", xid), ("event", event), ("start_ns", start), ("end_ns", end),
                     ("correlation_id", corr), ("thread_id", tid), ("return_code", rc)):
        out.events[key].append(val)


def _lifecycle_events(out: ScriptGraphs, evs: list[ResourceEvent], calls: dict[str, np.ndarray],
                      begins: dict[str, np.ndarray] | None, user_ids: set[int]) -> None:
    """`calls`: the outermost lifecycle calls (lifecycle_calls)."""
    cat = calls["category"]
    # Stream capture: each begin is closed by the next end on the same thread.
    if begins is not None and len(begins["start_ns"]):
        ends_m = (cat == "capture") & np.array(["EndCapture" in str(n) for n in calls["name"]], dtype=bool)
        for i in range(len(begins["start_ns"])):
            tid, s = int(begins["thread_id"][i]), int(begins["start_ns"][i])
            cand = np.nonzero(ends_m & (calls["thread_id"] == tid) & (calls["start_ns"] >= s))[0]
            e = int(calls["end_ns"][cand[np.argmin(calls["start_ns"][cand])]]) if len(cand) else s
            created = [ev for ev in evs if ev.cbid == "GRAPH_CREATED" and ev.thread_id == tid
                       and s <= ev.ts <= int(begins["end_ns"][i])]
            gid = created[0].graph_id if created else 0
            if gid in user_ids:
                _add_event(out, gid, 0, "capture", s, e, int(begins["correlation_id"][i]), tid)
    # Instantiate / destroy: the resource event inside the call names the graph.
    last_exec: dict[int, tuple[int, int]] = {}  # thread -> (graph, exec), for upload/update
    sel = np.nonzero(np.isin(cat, ["instantiate", "upload", "update", "graph_destroy"]))[0]
    for i in sel[np.argsort(calls["start_ns"][sel], kind="stable")]:
        c = str(cat[i])
        tid, s, e = int(calls["thread_id"][i]), int(calls["start_ns"][i]), int(calls["end_ns"][i])
        corr = int(calls["correlation_id"][i])
        # an update that failed (e.g. CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910) is kept with its code:
        # the program then usually instantiates again, and the report can say why
        rc = int(calls["return_code"][i]) if "return_code" in calls else 0
        inside = [ev for ev in evs if ev.thread_id == tid and s <= ev.ts <= e]
        if c == "instantiate":
            made = [ev for ev in inside if ev.cbid == "GRAPHEXEC_CREATED"]
            if made and made[0].graph_id in user_ids:
                last_exec[tid] = (made[0].graph_id, made[0].exec_id)
                _add_event(out, made[0].graph_id, made[0].exec_id, "instantiate", s, e, corr, tid, rc)
        elif c in ("upload", "update"):
            gid, xid = last_exec.get(tid, (0, 0))
            if gid:
                _add_event(out, gid, xid, c, s, e, corr, tid, rc)
        else:
            gone = [ev for ev in inside if ev.cbid in ("GRAPH_DESTROY_STARTING", "GRAPHEXEC_DESTROY_STARTING")]
            for ev in gone[:1]:
                gid = ev.graph_id if ev.cbid == "GRAPH_DESTROY_STARTING" else out.exec_to_graph.get(ev.exec_id, 0)
                if gid in user_ids:
                    _add_event(out, gid, ev.exec_id, "destroy", s, e, corr, tid, rc)
